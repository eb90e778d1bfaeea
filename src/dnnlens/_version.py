"""The package version, in a module every layer may import."""

__version__ = "0.1.0"
