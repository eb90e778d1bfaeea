"""The framework view of a PyTorch profile: steps, phases, ops, modules and threads.

``analyze_framework(data, events=None)`` gives a :class:`FrameworkAnalysis`; the framework
rules read it through ``RuleContext.framework``. Definitions in ``docs/framework.md``.
"""

from dnnlens.analysis.framework.names import PHASES
from dnnlens.analysis.framework.view import FrameworkAnalysis, analyze_framework

__all__ = ["PHASES", "FrameworkAnalysis", "analyze_framework"]
