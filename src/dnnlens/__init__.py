"""dnnlens: why is a deep-learning workload slow on a CPU? Read oneDNN verbose logs and find out."""

__version__ = "0.1.0"
