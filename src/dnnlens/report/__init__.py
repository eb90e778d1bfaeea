"""Reporters: one module per output format, each taking an :class:`~dnnlens.analysis.result.Analysis`."""
