"""The command line as a CI gate: ``-V``, code prefixes in ``--select``/``--ignore``,
``--exit-zero``, ``--statistics``, a baseline of accepted findings, ``--show-settings``, and
an unknown rule in a discovered configuration named by its file and line.

Hand counts (``dnnlens analyze LOG`` read by eye): ``convnet_nchw_infer.log`` has DL002 (a
warning, DL001 folded into it) and DL003 (info); ``resnet18_nchw_train.log`` has DL002 and
DL013 (warnings, DL001 folded into DL013) and DL009 (info), its reorders on ResNet-18's
shapes (64 channels at 56x56 and more), none of which the small convnet has.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from dnnlens import __version__
from dnnlens.cli import app

S = Path(__file__).resolve().parents[1] / "sample_logs"
NCHW = str(S / "convnet_nchw_infer.log")
RESNET = str(S / "resnet18_nchw_train.log")


def _run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(app, list(args))
    assert result.exception is None or isinstance(result.exception, SystemExit), result.output
    return result.exit_code, result.stdout, result.stderr


def _codes(*args: str) -> list[str]:
    code, out, _ = _run("analyze", *args, "-f", "json", "-q")
    assert code in (0, 1)
    return [f["code"] for f in json.loads(out)["findings"]]


def test_version_short_and_long():
    for flag in ("-V", "--version"):
        code, out, _ = _run(flag)
        assert code == 0 and out.strip() == f"dnnlens {__version__}"


def test_code_prefixes_select_and_ignore_groups():
    assert _codes(NCHW) == ["DL002", "DL003"]
    assert _codes(NCHW, "--select", "DL1") == []  # framework rules: no trace here
    assert _codes(NCHW, "--select", "DL0") == ["DL002", "DL003"]
    assert _codes(NCHW, "--select", "ALL") == ["DL002", "DL003"]
    assert _codes(NCHW, "--ignore", "DL00") == []  # DL001..DL009
    assert _codes(NCHW, "--select", "DL0", "--ignore", "DL002") == ["DL001", "DL003"]
    code, _, err = _run("analyze", NCHW, "--select", "DL9")
    assert code == 2 and "--select: unknown rule 'DL9'" in err


def test_an_unknown_rule_in_a_found_configuration_is_named_by_file_and_line(tmp_path, monkeypatch):
    (tmp_path / "pyproject.toml").write_text(
        '[project]\nname = "x"\n\n[tool.dnnlens]\nignore = [\n  "DL002",\n  "no-such-rule",\n]\n'
    )
    monkeypatch.chdir(tmp_path)
    code, _, err = _run("analyze", NCHW, "-q")
    assert code == 2
    assert err.strip() == (
        f"dnnlens: error: {tmp_path / 'pyproject.toml'}:7: unknown rule 'no-such-rule'; "
        "see dnnlens rules list"
    )


def test_exit_zero_keeps_the_report_and_input_errors():
    assert _run("analyze", NCHW, "--fail-on", "warning", "-q")[0] == 1
    code, out, _ = _run("analyze", NCHW, "--fail-on", "warning", "--exit-zero", "-q")
    assert code == 0 and "reorder-overhead" in out
    code, _, _ = _run("analyze", NCHW, "/no/such.log", "--exit-zero", "-q")
    assert code == 2


def test_statistics_count_findings_per_rule():
    code, out, _ = _run("analyze", RESNET, "--statistics", "-q")
    assert code == 0
    assert out.splitlines() == [
        "1  DL002    layout-round-trip (warning)",
        "1  DL009    tiny-primitives (info)",
        "1  DL013    weight-reorder-training (warning)",
    ]  # most first, then by code
    producers = str(S / "producers")
    code, out, _ = _run("analyze", producers, "--statistics", "-f", "json", "-q")
    counts = json.loads(out)
    runs = json.loads(_run("analyze", producers, "-f", "json", "-q")[1])["runs"]
    assert sum(c["count"] for c in counts) == sum(len(r["findings"]) for r in runs)
    assert [c["count"] for c in counts] == sorted((c["count"] for c in counts), reverse=True)


def test_a_baseline_leaves_out_known_findings_and_keeps_new_ones(tmp_path):
    base = tmp_path / "baseline.json"
    code, _, err = _run("analyze", NCHW, "--write-baseline", str(base))
    assert code == 0 and "wrote 2 finding(s) to the baseline" in err
    doc = json.loads(base.read_text())
    assert [e["rule"] for e in doc["findings"]] == ["DL002", "DL003"]
    assert all(e["primitives"] for e in doc["findings"])  # reorders, by identity
    # the same run again: nothing new, the gate passes, a note counts what was left out
    code, out, _ = _run("analyze", NCHW, "--baseline", str(base), "--fail-on", "warning", "-q")
    assert code == 0
    assert "2 finding(s) in the baseline" in out
    doc = json.loads(_run("analyze", NCHW, "--baseline", str(base), "-f", "json", "-q")[1])
    assert doc["findings"] == [] and any("baseline" in n for n in doc["notes"])
    # another model's reorders are new findings (other shapes), and so is DL013
    assert _codes(RESNET, "--baseline", str(base)) == _codes(RESNET)
    assert _run("analyze", RESNET, "--baseline", str(base), "--fail-on", "warning")[0] == 1


def test_a_bad_baseline_is_one_line_before_anything_is_read(tmp_path):
    bad = tmp_path / "b.json"
    bad.write_text('{"findings": []}')
    code, out, err = _run("analyze", NCHW, "--baseline", str(bad))
    assert code == 2 and out == ""
    assert err.strip() == (
        f"dnnlens: error: --baseline {bad}: not a dnnlens baseline (write one with "
        "--write-baseline)"
    )
    code, _, err = _run("analyze", NCHW, "--baseline", str(tmp_path / "none.json"))
    assert code == 2 and "cannot read" in err and len(err.strip().splitlines()) == 1


def test_show_settings_names_the_configuration_and_reads_nothing(tmp_path, monkeypatch):
    (tmp_path / "dnnlens.toml").write_text(
        'select = ["DL0"]\n\n[rules.reorder-overhead]\nseverity = "error"\nshare = 0.2\n'
    )
    monkeypatch.chdir(tmp_path)
    code, out, err = _run("analyze", "never-read.log", "--show-settings", "--fail-on", "error")
    assert code == 0, err
    lines = out.splitlines()
    assert lines[0] == f"configfile: {tmp_path / 'dnnlens.toml'} (found from the current directory)"
    assert "  fail-on: error" in lines
    assert "rules (13 of 20 run):" in lines
    dl001 = next(line for line in lines if "reorder-overhead" in line)
    assert f"error ({tmp_path / 'dnnlens.toml'}:3)" in dl001
    assert f"share=0.2 ({tmp_path / 'dnnlens.toml'}:5)" in dl001
    assert not (tmp_path / "never-read.log").exists()
    code, _, err = _run("analyze", "x.log", "--show-settings", "--select", "nope")
    assert code == 2 and "unknown rule 'nope'" in err


@pytest.mark.parametrize("fmt", ["github", "junit"])
def test_diff_speaks_the_ci_formats(fmt):
    import xml.etree.ElementTree as ET

    sse41 = str(S / "isa_sse41_infer.log")  # the same net, every steady pass slower
    code, out, _ = _run("diff", NCHW, sse41, "-f", fmt, "--fail-if-slower", "5", "-q")
    assert code == 1
    if fmt == "github":
        assert out.startswith("::error title=dnnlens diff::NEW is 9.73x slower")
        assert "%25" in out and out.count("\n") == 1
    else:
        root = ET.fromstring(out)
        assert root.get("failures") == "1"
        assert root.find(".//failure").get("message").startswith("NEW is 9.73x slower")
    code, out, _ = _run("diff", sse41, NCHW, "-f", fmt, "--fail-if-slower", "5", "-q")
    assert code == 0
    assert ("::notice" in out) if fmt == "github" else ('failures="0"' in out)
    # channels_last against NCHW: the passes overlap, so the gate is not applied (exit 2)
    cl = str(S / "convnet_cl_infer.log")
    code, out, err = _run("diff", cl, NCHW, "-f", fmt, "--fail-if-slower", "5", "-q")
    assert code == 2 and "confidence is low" in err
    if fmt == "github":
        assert out.startswith("::warning title=dnnlens diff::NEW is 1.31x slower")
    else:
        root = ET.fromstring(out)
        assert root.get("failures") == "0" and root.find(".//skipped") is not None


def test_run_writes_ci_formats_beside_the_log_and_annotations_to_stderr(tmp_path):
    """``dnnlens run`` (a program that prints a bundled log's lines): JUnit goes beside the
    kept log as ``.xml``; workflow annotations go to standard error (standard output is
    the program's), where a CI reads them as well; ``--exit-zero`` keeps the gate open."""
    import subprocess
    import sys

    program = [sys.executable, "-c", f"import sys; sys.stdout.write(open({NCHW!r}).read())"]
    env = {"PYTHONPATH": str(S.parent / "src"), "PATH": "/usr/bin:/bin", "NO_COLOR": "1"}
    log = tmp_path / "r.log"
    base = [sys.executable, "-m", "dnnlens", "run", "--log", str(log), "-q"]
    done = subprocess.run(
        [*base, "-f", "junit", "--fail-on", "warning", "--exit-zero", "--", *program],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    import xml.etree.ElementTree as ET

    assert ET.parse(tmp_path / "r.xml").getroot().get("failures") == "1"
    done = subprocess.run(
        [*base, "-f", "github", "--fail-on", "warning", "--", *program],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert done.returncode == 1
    annotations = [line for line in done.stderr.splitlines() if line.startswith("::")]
    assert [a.split()[0] for a in annotations] == ["::warning", "::notice"]
    assert not any(line.startswith("::") for line in done.stdout.splitlines())


def test_an_unknown_option_is_named_at_its_own_rule_table(tmp_path, monkeypatch):
    """Two rule tables set a key of one name; the one reorder-overhead has not is named at
    reorder-overhead's line (line 9), not at the first line holding the key (line 5)."""
    (tmp_path / "pyproject.toml").write_text(
        '[project]\nname = "x"\n\n[tool.dnnlens.rules.layout-round-trip]\nmin_share = 0.01\n\n'
        "[tool.dnnlens.rules.reorder-overhead]\nshare = 0.2\nmin_share = 0.5\n"
    )
    monkeypatch.chdir(tmp_path)
    code, _, err = _run("analyze", NCHW, "-q")
    assert code == 2
    assert err.strip() == (
        f"dnnlens: error: {tmp_path / 'pyproject.toml'}:9: rule 'reorder-overhead' has no "
        "option 'min_share' (its options: share)"
    )
