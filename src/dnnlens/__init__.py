"""dnnlens: why is a deep-learning workload slow on a CPU? Read oneDNN verbose logs and find out."""

__version__ = "0.1.0"

# issue 3: `with dnnlens.capture("out/run"):` (the module imports torch only when entered)
from dnnlens.capture import capture as capture  # noqa: E402
