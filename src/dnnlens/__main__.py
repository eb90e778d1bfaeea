"""``python -m dnnlens``: the same as the ``dnnlens`` command."""

from dnnlens.cli import main

main()
