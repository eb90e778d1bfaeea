"""The built-in rules, one module each; registered as entry points in ``pyproject.toml``."""
