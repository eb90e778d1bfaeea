"""End to end: `dnnlens analyze` with rules, and `dnnlens rules list|explain|test`."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from dnnlens.cli import app

ROOT = Path(__file__).resolve().parent.parent
NCHW = str(ROOT / "sample_logs" / "convnet_nchw_infer.log")
FROZEN = str(ROOT / "sample_logs" / "compile_freezing_infer.log")
runner = CliRunner(env={"NO_COLOR": "1", "COLUMNS": "80"})


def invoke(*args: str):
    return runner.invoke(app, list(args))


def findings(*args: str) -> list[dict]:
    result = invoke("analyze", *args, "--format", "json")
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)["findings"]


def test_analyze_json_has_findings_of_the_builtin_rules() -> None:
    found = findings(NCHW)
    rules = [f["rule"] for f in found]
    assert {"layout-round-trip", "weight-reorder-per-iteration"} <= set(rules)
    # reorder-overhead is folded into the round trips, 96% of its time (rules/duplicates.py)
    assert "reorder-overhead" not in rules
    trips = next(f for f in found if f["rule"] == "layout-round-trip")
    assert trips["data"]["includes"]["code"] == "DL001"
    for f in found:
        assert set(f) >= {"rule", "code", "severity", "message", "evidence", "data", "fix"}
        assert f["evidence"] and f["evidence"][0]["path"] == NCHW


def test_fail_on_warning_exits_1_and_clean_logs_exit_0() -> None:
    assert invoke("analyze", NCHW, "--fail-on", "warning").exit_code == 1
    assert invoke("analyze", NCHW, "--fail-on", "error").exit_code == 0
    assert invoke("analyze", FROZEN, "--fail-on", "info").exit_code == 0


def test_select_and_ignore() -> None:
    assert [f["rule"] for f in findings(NCHW, "--select", "layout-round-trip")] == [
        "layout-round-trip"
    ]
    assert [f["rule"] for f in findings(NCHW, "--select", "DL001")] == ["reorder-overhead"]
    # both selected: one cause, one finding (rules/duplicates.py)
    assert [f["rule"] for f in findings(NCHW, "--select", "DL001", "--select", "DL002")] == [
        "layout-round-trip"
    ]
    rest = [f["rule"] for f in findings(NCHW, "--ignore", "unstable-timing")]
    assert "unstable-timing" not in rest and "layout-round-trip" in rest
    # selecting away every warning makes --fail-on pass
    assert (
        invoke("analyze", NCHW, "--select", "tiny-primitives", "--fail-on", "warning").exit_code
        == 0
    )


def test_a_bad_rule_file_is_exit_2_and_one_line(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text(
        "rules:\n  - name: bad\n    where: kind == 'reorder' and tim_ms > 1\n"
        "    when: count() > 0\n    message: x\n"
    )
    result = invoke("analyze", NCHW, "--rules", str(bad))
    assert result.exit_code == 2
    lines = [ln for ln in result.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1, result.stderr
    assert f"{bad}:3:" in lines[0] and "tim_ms" in lines[0] and "time_ms" in lines[0]


def test_unknown_rule_name_is_exit_2() -> None:
    result = invoke("analyze", NCHW, "--select", "no-such-rule")
    assert result.exit_code == 2 and "no-such-rule" in result.stderr


def test_rules_from_a_config_file(tmp_path: Path) -> None:
    cfg = tmp_path / "dnnlens.toml"
    cfg.write_text('select = ["reorder-overhead"]\n[rules.reorder-overhead]\nshare = 0.99\n')
    assert findings(NCHW, "--config", str(cfg)) == []
    cfg.write_text('[rules.reorder-overhead]\nshare = "lots"\n')
    result = invoke("analyze", NCHW, "--config", str(cfg))
    assert result.exit_code == 2 and "share" in result.stderr


def test_rules_list_and_json() -> None:
    result = invoke("rules", "list")
    assert result.exit_code == 0
    codes = re.findall(r"^(DL\d{3})\s+(\S+)", result.stdout, re.M)
    assert len(codes) == 20 and codes[0] == ("DL001", "reorder-overhead")  # 13 + 7 framework
    data = json.loads(invoke("rules", "list", "--json").stdout)
    assert {d["name"] for d in data} >= {"no-onednn-lines", "low-efficiency"}
    assert data[0]["options"] == {"share": 0.1}


def test_rules_list_includes_a_rule_file(tmp_path: Path) -> None:
    path = tmp_path / "r.yaml"
    path.write_text("name: mine\ncode: M1\nsummary: Mine.\nwhen: true\nmessage: m\n")
    result = invoke("rules", "list", "--rules", str(path))
    assert result.exit_code == 0 and re.search(r"^M1\s+mine .*Mine\.", result.stdout, re.M)


def test_rules_explain(tmp_path: Path) -> None:
    result = invoke("rules", "explain", "layout-round-trip")
    assert result.exit_code == 0
    assert "DL002 layout-round-trip" in result.stdout and "Fix:" in result.stdout
    assert "min_share = 0.02" in result.stdout
    cfg = tmp_path / "dnnlens.toml"
    cfg.write_text("[rules.DL002]\nmin_share = 0.5\n")
    result = invoke("rules", "explain", "DL002", "--config", str(cfg))
    assert "min_share = 0.5 (default 0.02)" in result.stdout
    assert invoke("rules", "explain", "nope").exit_code == 2


def test_rules_test_passes_fails_and_breaks(tmp_path: Path) -> None:
    ok = invoke("rules", "test", str(ROOT / "tests" / "rules" / "team_rules.yaml"))
    assert ok.exit_code == 0 and "4 passed, 0 failed" in ok.stdout
    failing = tmp_path / "t.yaml"
    failing.write_text(f"cases:\n  - name: wrong\n    log_file: {NCHW}\n    expect: []\n")
    result = invoke("rules", "test", str(failing))
    assert result.exit_code == 1 and "FAIL wrong" in result.stdout
    assert "unexpected finding layout-round-trip" in result.stdout
    broken = tmp_path / "b.yaml"
    broken.write_text("cases:\n  - name: x\n    expect: []\n")
    result = invoke("rules", "test", str(broken))
    assert result.exit_code == 2 and "b.yaml:2" in result.stderr


@pytest.mark.parametrize("name", ["builtin_snippets.yaml", "builtin_logs.yaml"])
def test_rules_test_on_the_builtin_cases(name: str) -> None:
    result = invoke("rules", "test", str(ROOT / "tests" / "rules" / name))
    assert result.exit_code == 0, result.stdout
