"""Defaults that several layers and commands share, named once (no imports: every layer,
the command line's start-up included, may read them)."""

#: Events the sequence analyses (iterations, op graph, rules, charts) look at, and the raw
#: events reading keeps once the inputs are too large to keep them all (``--window``).
DEFAULT_WINDOW_EVENTS = 200_000
