"""docs/ci.md's GitHub Actions and GitLab CI examples, run offline as far as they go.

Every ``dnnlens`` step of both files runs as written, in a directory laid out as the page
says: ``perf/reference.log`` a bundled log, ``perf/baseline.json`` its accepted findings, and
``perf/smoke_train.py`` a program that prints the lines of a bundled log (the training smoke
test needs torch and a network; ``dnnlens run`` starts it as it would start the real one).
The install step is left out. A smoke test that prints the reference log passes every gate
(the diff gate is one-sided: overlapping passes are no measurable slowdown, usage.md
"Confidence of a diff"); one that prints the same net run slower
(oneDNN capped at SSE4.1) fails the baseline gate (new findings) and the diff gate; one that
prints another model's log is a different workload, which the diff gate refuses (exit 2).
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import jsonschema
import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
S = ROOT / "sample_logs"
PAGE = (ROOT / "docs" / "ci.md").read_text(encoding="utf-8")
SCHEMA = json.loads((ROOT / "tests" / "data" / "sarif" / "sarif-schema-2.1.0.json").read_text())


def _files() -> dict[str, object]:
    out = {}
    for block in re.findall(r"```yaml\n(.*?)```", PAGE, flags=re.S):
        first = block.splitlines()[0]
        assert first.startswith("# file: "), first
        out[first.removeprefix("# file: ")] = yaml.safe_load(block)
    return out


def _steps(name: str) -> list[str]:
    doc = _files()[name]
    if name.endswith("perf.yml"):
        return [s["run"] for s in doc["jobs"]["dnnlens"]["steps"] if "run" in s]
    return list(doc["perf"]["script"])


def _layout(tmp: Path, smoke_log: Path) -> None:
    perf = tmp / "perf"
    perf.mkdir()
    shutil.copy(S / "convnet_nchw_infer.log", perf / "reference.log")
    (perf / "smoke_train.py").write_text(
        f"import sys\nsys.stdout.write(open({str(smoke_log)!r}).read())\n"
    )
    _dnnlens(tmp, "dnnlens analyze perf/reference.log --write-baseline perf/baseline.json -q")


def _dnnlens(cwd: Path, line: str) -> subprocess.CompletedProcess[str]:
    argv = shlex.split(line)
    assert argv[0] == "dnnlens", line
    argv = [sys.executable if a == "python" else a for a in argv[1:]]
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src"), "NO_COLOR": "1"}
    return subprocess.run(
        [sys.executable, "-m", "dnnlens", *argv],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


def _run_steps(name: str, tmp: Path) -> list[tuple[str, subprocess.CompletedProcess[str]]]:
    done = []
    for line in _steps(name):
        if line.startswith("pip install"):
            continue  # offline: dnnlens is the tree under test
        done.append((line, _dnnlens(tmp, line)))
    return done


def test_the_page_has_both_files_with_dnnlens_steps():
    files = _files()
    assert set(files) == {".github/workflows/perf.yml", ".gitlab-ci.yml"}
    for name in files:
        assert sum(s.startswith("dnnlens ") for s in _steps(name)) == 3


@pytest.mark.parametrize("name", [".github/workflows/perf.yml", ".gitlab-ci.yml"])
def test_a_run_like_the_reference_passes_every_gate(name, tmp_path):
    _layout(tmp_path, S / "convnet_nchw_infer.log")
    for line, result in _run_steps(name, tmp_path):
        if line.startswith("dnnlens diff") and "-f github" in line:  # no slowdown: a notice
            assert result.stdout.startswith("::notice title=dnnlens diff::")
        assert result.returncode == 0, (line, result.stderr)
    perf = tmp_path / "perf"
    assert (perf / "run.log").exists()
    sarif = perf / "dnnlens.sarif"
    assert sarif.exists()
    doc = json.loads(sarif.read_text())
    jsonschema.Draft4Validator(SCHEMA).validate(doc)
    if name == ".gitlab-ci.yml":
        assert doc["runs"][0]["results"] == []  # the baseline's findings are left out
        root = ET.parse(perf / "dnnlens.xml").getroot()
        assert root.get("failures") == "1"  # the run's own report: DL002, the warning
    else:
        assert [r["ruleId"] for r in doc["runs"][0]["results"]] == ["DL002", "DL003"]


@pytest.mark.parametrize("name", [".github/workflows/perf.yml", ".gitlab-ci.yml"])
def test_a_run_of_another_model_is_refused_by_the_diff_gate(name, tmp_path):
    _layout(tmp_path, S / "resnet18_nchw_train.log")
    codes = {line.split()[1]: r for line, r in _run_steps(name, tmp_path)}
    assert codes["analyze"].returncode == 1  # new findings at warning
    assert codes["diff"].returncode == 2, codes["diff"].stderr
    assert "different workloads" in codes["diff"].stderr


@pytest.mark.parametrize("name", [".github/workflows/perf.yml", ".gitlab-ci.yml"])
def test_a_run_with_new_findings_and_a_slowdown_fails_the_gates(name, tmp_path):
    _layout(tmp_path, S / "isa_sse41_infer.log")
    codes = {line.split()[1]: r for line, r in _run_steps(name, tmp_path)}
    assert codes["run"].returncode == 0  # the program's own code
    assert codes["analyze"].returncode == 1  # new findings at warning
    assert codes["diff"].returncode == 1, codes["diff"].stderr  # slower than the reference
    if name.endswith("perf.yml"):
        annotations = codes["analyze"].stdout.splitlines()
        assert annotations and all(a.startswith(("::warning ", "::notice ")) for a in annotations)
        assert codes["diff"].stdout.startswith("::error title=dnnlens diff::")
