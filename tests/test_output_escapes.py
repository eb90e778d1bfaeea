"""Terminal escapes and injections carried by log text: never raw on a terminal, never a
benchdnn option (docs/input-policy.md, "Text from a log on the terminal").

The hostile log is made here: the sample log's reorder and convolution lines with an OSC 52
clipboard write, an OSC 0 title, ``ESC[2J``, ``ESC[8m``, a C1 CSI and a bidi override in
their fields, and benchdnn options appended to a problem descriptor.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from dnnlens.cli import app
from dnnlens.reading import load
from dnnlens.report.benchdnn import Unsupported, benchdnn_case, check_tokens
from dnnlens.textsafe import safe, safe_lines

ESC = "\x1b"
OSC52 = ESC + "]52;c;SGVsbG8=\x07"
TITLE = ESC + "]0;pwned\x07"
NASTY = OSC52 + ESC + "[2J" + ESC + "[8m" + "\x9b31m" + "\u202e" + "\r"
REORDER = (
    "onednn_verbose,v1,primitive,exec,cpu,reorder,jit:uni{impl},undef,"
    "src:f32::blocked:abcd::f0 dst:f32::blocked:Acdb8a::f0,attr-scratchpad:user,,"
    "16x3x3x3{problem},0.25"
)
CONV = (
    "onednn_verbose,v1,primitive,exec,cpu,convolution,jit:avx2{impl},forward_training,"
    "src:f32:a:blocked:abcd::f0 wei:f32:a:blocked:Acdb8a::f0 bia:undef::undef::: "
    "dst:f32:a:blocked:aBcd8b::f0,attr-scratchpad:user,alg:convolution_direct,"
    "mb4_ic3oc16_ih64oh64kh3sh1dh0ph1_iw64ow64kw3sw1dw0pw1{problem},5.9"
)


def assert_terminal_safe(text: str) -> None:
    """Every character printable, line ends apart."""
    bad = sorted({c for c in text if not c.isprintable() and c != "\n"})
    assert not bad, bad


@pytest.fixture
def evil_log(tmp_path: Path) -> Path:
    lines = []
    for _ in range(3):
        lines.append(REORDER.format(impl=NASTY, problem=ESC + "[8m\u202e"))
        lines.append(CONV.format(impl=TITLE, problem=" --batch=/etc/passwd --engine=gpu"))
    path = tmp_path / "evil.log"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def invoke(*args: str):  # noqa: ANN201 - click Result
    result = CliRunner().invoke(app, list(args))
    assert "Traceback" not in result.stderr
    assert result.exception is None or isinstance(result.exception, SystemExit)
    return result


def test_safe_shows_every_control_as_an_escape() -> None:
    assert safe("a\x1b[2Jb") == "a\\x1b[2Jb"
    assert safe("\x9b\u202e\u2066\x00\x7f\r\n\t") == "\\x9b\\u202e\\u2066\\x00\\x7f\\r\\n\\t"
    assert safe("\U000e0041") == "\\U000e0041"  # a tag character (invisible)
    assert safe("conv jit:avx2 é 漢 ✓") == "conv jit:avx2 é 漢 ✓"
    assert safe_lines("one\ntwo\x07") == "one\ntwo\\x07"
    assert safe(3) == "3"


def test_export_benchdnn_to_stdout(evil_log: Path) -> None:
    result = invoke("export", "benchdnn", str(evil_log))
    assert result.exit_code == 0
    assert_terminal_safe(result.stdout)
    assert "\\x1b]52;c;SGVsbG8=\\x07" in result.stdout  # shown, not acted on
    batch_lines = [x for x in result.stdout.splitlines() if x and not x.startswith("#")]
    assert batch_lines == []  # neither primitive is one benchdnn can take from this log


def test_injected_options_never_reach_a_batch_line(evil_log: Path, tmp_path: Path) -> None:
    out = tmp_path / "batches"
    result = invoke("export", "benchdnn", str(evil_log), "-o", f"{out}/")
    assert result.exit_code == 0
    for batch in out.glob("*.batch"):
        for line in batch.read_text().splitlines():
            if not line.startswith("#"):
                assert "--batch" not in line and "/etc/passwd" not in line


@pytest.mark.parametrize(
    "problem",
    [
        "mb1ic3 --batch=/etc/passwd",
        "mb1ic3\t--engine=gpu",
        "--batch=/etc/passwd",
        "1x2;rm",
        "mb1`id`",
        "-1x3",
    ],
)
def test_a_problem_that_is_not_one_token_is_not_reproduced(problem: str) -> None:
    with pytest.raises(Unsupported):
        check_tokens(["--reset"], problem)


@pytest.mark.parametrize(
    "option", ["--batch=/etc/passwd", "--engine=gpu --batch=x", "--alg=a/b", "--alpha=$(id)"]
)
def test_an_option_benchdnn_would_misread_is_not_reproduced(option: str) -> None:
    with pytest.raises(Unsupported):
        check_tokens([option], "mb1ic3")


def test_real_primitives_still_reproduce() -> None:
    """The sample log's lines all give batch lines, as before (tests/test_benchdnn.py)."""
    log = load([str(Path(__file__).parent.parent / "sample_logs" / "convnet_nchw_infer.log")])
    cases = [benchdnn_case(r) for r in log.records if r.line_kind == "event"]
    assert cases and all(c.line for c in cases)


@pytest.mark.parametrize("fmt", ["dot", "mermaid", "json", "graphml"])
def test_graph_exports_are_terminal_safe(evil_log: Path, fmt: str) -> None:
    result = invoke("graph", str(evil_log), "-f", fmt)
    assert result.exit_code == 0
    assert_terminal_safe(result.stdout)
    if fmt == "dot":
        assert all(line.endswith(("{", "}", ";")) for line in result.stdout.splitlines())
    if fmt == "json":
        json.loads(result.stdout)


def test_mermaid_labels_escape_its_syntax(tmp_path: Path) -> None:
    path = tmp_path / "m.log"
    path.write_text(REORDER.format(impl='"]; click n0 "#x<b>', problem="") + "\n")
    result = invoke("graph", str(path), "-f", "mermaid")
    assert result.exit_code == 0
    node = next(x for x in result.stdout.splitlines() if x.startswith("  n0_reorder["))
    assert '"]' not in node[len('  n0_reorder["') : -2] and "<b>" not in node


RULE = """\
name: shows-impl
code: "T\\e[2J"
summary: "clears \\e]0;title\\a the screen"
description: "line one\\nline \\e[8mtwo"
severity: info
group_by: impl
when: count() > 0
message: "impl {impl}"
tests:
  - name: "case \\e[2J"
    log_file: evil.log
    expect: []
"""


@pytest.mark.parametrize(
    "command",
    [
        ["rules", "list", "--rules", "{rule}"],
        ["rules", "explain", "shows-impl", "--rules", "{rule}"],
        ["rules", "test", "-v", "{rule}"],
    ],
    ids=["list", "explain", "test"],
)
def test_rules_commands_are_terminal_safe(evil_log: Path, command: list[str]) -> None:
    rule = evil_log.with_name("rule.yaml")
    rule.write_text(RULE)
    result = invoke(*[a.format(rule=rule) for a in command])
    assert result.exit_code in (0, 1)
    assert_terminal_safe(result.stdout)
    assert "\\x1b" in result.stdout


def test_error_messages_escape_c1_and_bidi(tmp_path: Path) -> None:
    name = tmp_path / "run\u202egol.\x9b2J.log"
    result = invoke("analyze", str(name))
    assert result.exit_code == 2
    assert_terminal_safe(result.stderr)
    assert "run\\u202egol.\\x9b2J.log" in result.stderr
