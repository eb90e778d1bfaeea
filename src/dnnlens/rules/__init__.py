"""Rules: built-in bottleneck rules, Python plugins and declarative rule files.

Writing a Python rule (a plugin file passed with ``--rules``, or an entry point in the
``dnnlens.rules`` group)::

    from dnnlens.rules import Rule

    class SlowConvs(Rule):
        \"\"\"Convolutions take most of the time. Fix: check their implementation.\"\"\"

        name = "slow-convs"
        code = "X001"
        severity = "info"
        defaults = {"share": 0.5}

        def check(self, ctx):
            conv = ctx.execs[ctx.execs["kind"] == "convolution"]
            share = conv["time_ms"].sum() / ctx.total_ms if ctx.total_ms else 0.0
            if share >= self.options["share"]:
                yield self.finding(f"convolutions take {share:.0%}", ctx.evidence(conv),
                                   data={"share": share})

See ``docs/rules.md`` for rule files and the context API.
"""

from dnnlens.analysis.findings import Evidence, Finding
from dnnlens.rules.base import Rule, Saving
from dnnlens.rules.context import RuleContext
from dnnlens.rules.engine import RuleOptions, RuleSetupError, run_rules

__all__ = [
    "Evidence",
    "Finding",
    "Rule",
    "RuleContext",
    "RuleOptions",
    "RuleSetupError",
    "Saving",
    "run_rules",
]
