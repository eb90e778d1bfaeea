"""Reporters: one module per output format, each taking an ``Analysis``."""
