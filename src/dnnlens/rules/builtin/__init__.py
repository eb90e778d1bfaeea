"""The built-in rules, one module each, found by scanning this package
(:func:`dnnlens.rules.registry.add_builtins`): a new rule is one module here and its YAML
cases. Modules whose name starts with ``_`` are helpers, not rules."""
