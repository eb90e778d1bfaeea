"""Reading inputs into a :class:`~dnnlens.model.ParsedLog`: the one front door for parsing."""

from dnnlens.reading.load import load, load_lines, load_text

__all__ = ["load", "load_lines", "load_text"]
