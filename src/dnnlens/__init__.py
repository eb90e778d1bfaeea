"""dnnlens: why is a deep-learning workload slow on a CPU? Read oneDNN verbose logs and find out."""

from dnnlens._version import __version__ as __version__

# `with dnnlens.capture("out/run"):` (the module imports torch only when entered)
from dnnlens.capture import capture as capture  # noqa: E402
