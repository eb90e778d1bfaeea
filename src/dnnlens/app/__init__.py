"""The application layer: what an analysis of some inputs is, for the command line and for
Python callers alike (run grouping, the window and skip policy, the rules, the verdict)."""
