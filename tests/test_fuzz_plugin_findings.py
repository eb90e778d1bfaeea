"""Fuzzing what a Python plugin returns: a finding whose fields are huge, negative or NaN
numbers, control characters, very long strings or values of the wrong type (or no finding
at all) is kept or refused as one error finding of that rule; the run ends with 0 or 1 (2
at most), never 3, and no character of it reaches the terminal unescaped (docs/rules.md,
"Limits"; docs/input-policy.md, "Rule files and plugins").

The log is the first 40 lines of ``sample_logs/convnet_nchw_infer.log`` (16 exec lines,
``head -40 | grep -c ,exec,``), analysed once; each example runs the rules engine (the
plugin in its child process) and renders the JSON and terminal reports, and a few chosen
cases run the whole command for its exit code. The plugin yields exactly one thing, so the
report holds exactly one finding of it.
"""

from __future__ import annotations

import base64
import contextlib
import io
import json
import os
import pickle
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from rich.console import Console
from typer.testing import CliRunner

from dnnlens.analysis.analysis import Analysis
from dnnlens.analysis.findings import Evidence
from dnnlens.cli import EXIT_FINDINGS, EXIT_OK, app
from dnnlens.reading import load
from dnnlens.report.json_report import render_json
from dnnlens.report.terminal import render_terminal
from dnnlens.rules.base import Rule
from dnnlens.rules.config import load_config
from dnnlens.rules.engine import RuleOptions, build_registry, run_selected, selected_rules
from dnnlens.rules.verdict import report_order

ROOT = Path(__file__).resolve().parent.parent
NCHW = ROOT / "sample_logs" / "convnet_nchw_infer.log"
HEAD_LINES, HEAD_EXECS = 40, 16
SPEC = "DNNLENS_TEST_ODD_FINDING"

PLUGIN = f'''
import base64
import os
import pickle

from dnnlens.rules import Rule


class Odd(Rule):
    """Yields the one finding the test chose."""

    name = "odd-plugin"
    code = "T900"

    def check(self, ctx):
        spec = pickle.loads(base64.b64decode(os.environ["{SPEC}"]))
        if "whole" in spec:
            yield spec["whole"]
            return
        found = self.finding("placeholder")
        for key, value in spec.items():
            setattr(found, key, value)
        yield found
'''

HOSTILE_TEXT = [
    "\x1b]52;c;aGk=\x07",
    "\x1b[2J",
    "\x9b31m",
    "\u202e",
    "\r\n",
    "\x00",
    "[red]x[/red]",
    "\ud800",
    "=cmd|' /C calc'!A0",
]
texts = st.one_of(
    st.text(max_size=30),
    st.sampled_from(HOSTILE_TEXT),
    st.tuples(st.sampled_from(HOSTILE_TEXT + ["x"]), st.sampled_from([1_000, 100_000])).map(
        lambda t: t[0] * t[1]
    ),
)
numbers = st.one_of(
    st.floats(),
    st.integers(-(10**30), 10**30),
    st.sampled_from([1e308, -1e308, 5e-324, -0.0, float("nan"), float("inf")]),
)
wrong = st.one_of(
    st.none(),
    st.booleans(),
    st.binary(max_size=8),
    st.lists(st.integers(), max_size=3),
    st.sets(st.integers(), max_size=3),
    st.complex_numbers(max_magnitude=10),
)
values = st.one_of(numbers, texts, wrong)
evidence = st.builds(
    Evidence,
    path=st.one_of(texts, wrong),
    line=st.one_of(st.integers(-(2**70), 2**70), numbers, wrong),
    op=st.one_of(st.none(), texts),
)
fields: dict[str, st.SearchStrategy[Any]] = {
    "message": st.one_of(texts, wrong),
    "severity": st.one_of(st.sampled_from(["info", "warning", "error"]), texts, wrong),
    "fix": st.one_of(texts, wrong),
    "title": st.one_of(texts, wrong),
    "code": st.one_of(texts, wrong),
    "impact_ms_per_iteration": st.one_of(numbers, wrong),
    "basis": st.one_of(
        st.sampled_from(["iteration", "step", "mean_pass", "with_creations"]), texts, wrong
    ),
    "data": st.one_of(
        st.dictionaries(st.one_of(texts, st.integers()), values, max_size=4),
        st.recursive(values, lambda inner: st.lists(inner, max_size=3), max_leaves=6),
    ),
    "evidence": st.one_of(st.lists(evidence, max_size=3), values),
}
#: right types, hostile content: a finding that is kept, so its text reaches the reports
well_typed = st.fixed_dictionaries(
    {"message": texts},
    optional={
        "fix": texts,
        "title": texts,
        "impact_ms_per_iteration": numbers,
        "data": st.dictionaries(texts, st.one_of(numbers, texts), max_size=3),
        "evidence": st.lists(
            st.builds(Evidence, path=texts, line=st.integers(1, 10**6)), max_size=2
        ),
    },
)
specs = st.one_of(
    well_typed,
    st.fixed_dictionaries({}, optional=fields),
    st.builds(lambda v: {"whole": v}, values),
)


def _strict(text: str) -> Any:
    def refuse(name: str) -> Any:
        raise AssertionError(f"not strict JSON: {name}")

    return json.loads(text, parse_constant=refuse)


def _shown_safely(text: str) -> bool:
    return all(c == "\n" or c.isprintable() for c in text)


@contextlib.contextmanager
def _chosen(spec: dict[str, Any]) -> Iterator[None]:
    """The plugin's finding, for the plugin (its child process inherits the environment)."""
    os.environ[SPEC] = base64.b64encode(pickle.dumps(spec)).decode()
    try:
        yield
    finally:
        del os.environ[SPEC]


@pytest.fixture(scope="module")
def setup(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    where = tmp_path_factory.mktemp("odd")
    log = where / "head.log"
    log.write_text("".join(NCHW.read_text().splitlines(keepends=True)[:HEAD_LINES]))
    plugin = where / "odd.py"
    plugin.write_text(PLUGIN)
    return log, plugin


@pytest.fixture(scope="module")
def analysis(setup: tuple[Path, Path]) -> Analysis:
    return Analysis(load([str(setup[0])])).prepare()


@pytest.fixture(scope="module")
def rules(setup: tuple[Path, Path]) -> list[Rule]:
    """The plugin, loaded once (the engine's rule list, as ``--rules odd.py --select``)."""
    options = RuleOptions(
        rule_paths=[str(setup[1])],
        select=["odd-plugin"],
        search_config=False,
        announce_python=False,
    )
    cfg = load_config(None, False)
    return selected_rules(build_registry(options, cfg), options, cfg)


@settings(
    max_examples=int(os.environ.get("DNNLENS_FUZZ_EXAMPLES", "20")),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(spec=specs)
def test_whatever_a_plugin_returns_is_one_finding_reports_can_hold(
    analysis: Analysis,
    rules: list[Rule],
    capsys: pytest.CaptureFixture[str],
    spec: dict[str, Any],
) -> None:
    with _chosen(spec):
        found = run_selected(analysis, rules)
    analysis.findings = report_order(found, analysis.impact_per_basis)
    assert len(found) == 1, found
    doc = _strict(render_json(analysis))
    assert doc["inputs"][0]["lines"] == HEAD_LINES
    assert doc["summary"]["exec_count"] == HEAD_EXECS
    assert len(doc["findings"]) == 1
    text = io.StringIO()
    console = Console(file=text, width=100, no_color=True, color_system=None, highlight=False)
    render_terminal(analysis, console)
    said = capsys.readouterr()  # what the plugin printed, said on stderr
    assert _shown_safely(text.getvalue()), text.getvalue()[-300:]
    assert _shown_safely(said.err) and _shown_safely(said.out)


CHOSEN = {
    "escapes in every text": {
        "message": "\x1b]52;c;aGk=\x07 \x1b[2J \u202e",
        "fix": "\x9b31m",
        "title": "\r\x00",
        "data": {"\x1b[8m": "\x1b[2J"},
        "evidence": [Evidence("\x1b]0;pwned\x07.log", 3)],
    },
    "a NaN impact": {"impact_ms_per_iteration": float("nan")},
    "a negative impact": {"impact_ms_per_iteration": -1e308},
    "not a finding": {"whole": {"message": "a dict"}},
    "a very long message": {"message": "x" * 1_000_000},
}


@pytest.mark.parametrize(
    ("case", "fmt"),
    [
        ("escapes in every text", "terminal"),
        ("escapes in every text", "json"),
        ("a NaN impact", "json"),
        ("a negative impact", "terminal"),
        ("not a finding", "terminal"),
        ("a very long message", "json"),
    ],
)
def test_the_command_ends_with_0_or_1_whatever_the_plugin_returns(
    setup: tuple[Path, Path], case: str, fmt: str
) -> None:
    log, plugin = setup
    args = ["analyze", "-f", fmt, str(log), "--rules", str(plugin), "--select", "odd-plugin"]
    with _chosen(CHOSEN[case]):
        result = CliRunner().invoke(app, [*args, "--fail-on", "error"])
    assert result.exception is None or isinstance(result.exception, SystemExit)
    assert result.exit_code in (EXIT_OK, EXIT_FINDINGS), result.stderr
    assert "internal error" not in result.stderr and "Traceback" not in result.stderr
    assert _shown_safely(result.stdout) and _shown_safely(result.stderr)
    if fmt == "json":
        mine = [f for f in _strict(result.stdout)["findings"] if f["rule"] == "odd-plugin"]
        assert len(mine) == 1
