"""The error a user's rule setup raises: one readable line, exit code 2 in the CLI."""

from __future__ import annotations


class RuleSetupError(Exception):
    """A user mistake in rule setup (bad rule file, unknown rule name): one readable line."""
