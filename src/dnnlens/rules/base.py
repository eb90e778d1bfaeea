"""The rule interface: what a built-in rule, a Python plugin and a rule file all provide.

A rule has a kebab-case ``name`` (the JSON ``findings[].rule``), a ``code`` (``DL001``), a
default ``severity``, ``defaults`` (its thresholds, each overridable from configuration) and
a docstring that states the rationale and the fix (``dnnlens rules explain NAME`` prints it).
``check(ctx)`` returns the findings; shared, expensive facts (the op graph, iterations,
parsed descriptors) come from the :class:`~dnnlens.rules.context.RuleContext`,
computed once per run.
"""

from __future__ import annotations

import functools
import inspect
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

from dnnlens.analysis.findings import SEVERITIES, Evidence, Finding

if TYPE_CHECKING:
    from dnnlens.rules.context import RuleContext


@dataclass(frozen=True)
class Saving:
    """What a finding's fix would save per unit of its basis (``ms``, at most its impact)
    and what that rests on (``basis``: a key of ``findings.SAVING_BASES``), in a few words
    (``note``). A rule states why in its docstring (docs/rules.md, "Savings")."""

    ms: float | None
    basis: str
    note: str = ""

    @classmethod
    def unknown(cls, note: str = "") -> Saving:
        """No figure: what the fix saves is not in the inputs (``note`` says why)."""
        return cls(None, "unknown", note)

    @classmethod
    def removal(cls, ms: float, note: str = "") -> Saving:
        """The fix removes the work: its whole time."""
        return cls(ms, "removal", note)


NAME_RE = re.compile(r"^[a-z][a-z0-9]*(?:-[a-z0-9]+)*$")


class Rule:
    """Base class of every rule. Subclasses set the class attributes and ``check``.

    Instances carry the effective options (defaults updated by configuration) and the
    effective severity, so one class can run with different thresholds.
    """

    name: ClassVar[str] = ""
    code: ClassVar[str] = ""
    severity: ClassVar[str] = "warning"
    #: Threshold name -> default value (float, int, str or bool); configurable.
    defaults: ClassVar[Mapping[str, Any]] = {}
    #: Where the rule came from (``builtin``, a distribution name, a file path).
    source: str = "builtin"
    #: The broader rule whose time this rule's findings are a part of (``reorder-overhead``
    #: for the rules of one reorder cause): :mod:`dnnlens.rules.duplicates` folds the two.
    part_of: ClassVar[str] = ""

    def __init__(
        self, options: Mapping[str, Any] | None = None, severity: str | None = None
    ) -> None:
        self.options: dict[str, Any] = dict(self.defaults)
        self.options.update(options or {})
        self.level: str = severity or type(self).severity

    # -- what subclasses implement ---------------------------------------------------------
    def check(self, ctx: RuleContext) -> Iterable[Finding]:
        """The findings of this rule on the analysis behind ``ctx``."""
        raise NotImplementedError

    # -- helpers ------------------------------------------------------------------------------
    @property
    def rule_name(self) -> str:
        """The name (an instance attribute in rule files, a class attribute otherwise)."""
        return self.name

    @property
    def rule_code(self) -> str:
        """The code."""
        return self.code

    def describe(self) -> str:
        """Rationale and fix: the class docstring, dedented (``code`` shown as `code`)."""
        return _described(type(self).__doc__ or "")

    def summary(self) -> str:
        """The first line of the description."""
        text = self.describe()
        return text.splitlines()[0] if text else ""

    def finding(
        self,
        message: str,
        evidence: Iterable[Evidence] = (),
        data: Mapping[str, Any] | None = None,
        fix: str = "",
        severity: str | None = None,
        impact_ms: float | None = None,
        basis: str = "iteration",
        saving: Saving | None = None,
    ) -> Finding:
        """A finding of this rule (its name, code and effective severity).

        ``impact_ms`` is the steady time per typical iteration the finding accounts for
        (a part of :attr:`RuleContext.typical_iteration_ms`, or with ``basis="step"`` of the
        framework view's typical step); ``None`` for a finding that is not about time.
        ``saving`` is what the fix would save, in the same unit, and what that figure
        rests on (:class:`Saving`; none: ``unknown``). Reports rank findings by it first.
        """
        saving = saving if saving is not None and impact_ms is not None else Saving.unknown()
        return Finding(
            rule=self.rule_name,
            code=self.rule_code,
            severity=severity or self.level,
            message=message,
            evidence=list(evidence),
            data=dict(data or {}),
            fix=fix or self.fix_text(),
            impact_ms_per_iteration=None if impact_ms is None else float(impact_ms),
            title=self.summary(),
            basis=basis,
            saving_ms_per_iteration=_within(saving.ms, impact_ms),
            saving_basis=saving.basis,
            saving_note=saving.note,
        )

    def fix_text(self) -> str:
        """The ``Fix:`` paragraph of the docstring, on one line."""
        text = self.describe()
        _, sep, fix = text.partition("Fix:")
        return " ".join(fix.split()) if sep else ""


def _within(saving_ms: float | None, impact_ms: float | None) -> float | None:
    """A saving as a part of its impact: at least 0, at most the time the finding spends."""
    if saving_ms is None or impact_ms is None or saving_ms != saving_ms:
        return None
    return min(max(float(saving_ms), 0.0), float(impact_ms))


def validate_rule_class(rule: type[Rule] | Rule, where: str) -> str | None:
    """Why a rule class is unusable (bad name, severity ...), or ``None`` when it is fine."""
    name = rule.rule_name if isinstance(rule, Rule) else rule.name
    severity = rule.level if isinstance(rule, Rule) else rule.severity
    if not isinstance(name, str) or not NAME_RE.match(name):
        return f"{where}: rule name {name!r} is not kebab-case (like 'my-rule')"
    if severity not in SEVERITIES:
        return f"{where}: rule {name!r}: severity {severity!r} is not one of {SEVERITIES}"
    if not isinstance(rule, Rule) and rule.check is Rule.check:
        return f"{where}: rule {name!r} does not implement check(ctx)"
    return None


@functools.lru_cache(maxsize=1024)
def _described(doc: str) -> str:
    """A rule's docstring as :meth:`Rule.describe` gives it, made once per docstring (the
    findings of every run ask for it again)."""
    return inspect.cleandoc(doc).replace("``", "`")
