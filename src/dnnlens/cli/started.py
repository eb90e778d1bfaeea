"""Imported first by :mod:`dnnlens.cli`: the kernel's CPU times as the command starts, before
its imports, for the default ``-j`` (:mod:`dnnlens.io.idle_cpus`; reads ``/proc/stat``,
imports nothing)."""

from dnnlens.io.idle_cpus import mark_start

mark_start()
