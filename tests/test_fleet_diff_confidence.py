"""``fleet diff``: each run's confidence and the gate, as ``dnnlens diff`` judges one diff,
against hand counts of real logs.

The dataset is built with ``dnnlens fleet build`` from the NCHW sample
(``sample_logs/convnet_nchw_infer.log``) and copies of it whose every exec time is scaled
(``test_fleet_logs.write_copy``: the last field of each exec line times a factor), the
LSTM sample, and a real recording of the NCHW net slowed by other processes
(``tests/data/noise/contended_nice19_infer.log``, see its README).

Pass sums by hand (``grep ,exec, sample_logs/convnet_nchw_infer.log | awk -F, '{s+=$NF; if
(++n % 15 == 0) {printf "%.3f ", s; s=0}}'``): the warm-up 102.970 102.261 102.303 30.189,
then the 7 steady passes 2.246 4.261 2.104 1.990 2.706 3.033 2.023 (tests/test_diff_confidence.py
too): a range of 1.990 to 4.261 ms. A copy x3 takes 5.970 to 12.782 ms: every pass slower
than every pass of the sample, chance 2 / C(7 + 7, 7) = 2 / 3432 = 0.00058 <= 5%: high. A
copy x2 takes 3.980 to 8.521 ms: 3.980 < 4.261, the ranges overlap, so its 100% slowdown
cannot be told from the sample's own pass-to-pass spread (its slowest pass is 2.14x its
fastest).

Too few passes: the SSE4.1 sample (``sample_logs/isa_sse41_infer.log``, 15 exec lines a
pass) cut after its first 75 exec lines, five passes: 101.692 107.188 (warm-up) 11.541
15.344 19.254. Its copy x3: 34.624 46.033 57.762, every pass slower than every pass of the
cut sample, but three passes a side fall apart by chance 2 / C(3 + 3, 3) = 2/20 = 10% of
the time (> 5%): low.
"""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path

import pytest

from dnnlens.fleet.dataset import Dataset
from test_fleet_logs import SAMPLE_LOGS, build, invoke, write_copy

pytest.importorskip("duckdb")

NOISE = Path(__file__).resolve().parent / "data" / "noise"
#: The NCHW sample's steady passes, summed by hand (module docstring).
STEADY = [2.246, 4.261, 2.104, 1.990, 2.706, 3.033, 2.023]


def first_passes(path: Path, name: str, passes: int, period: int, factor: float) -> Path:
    """Sample log ``name`` cut after its first ``passes`` passes of ``period`` exec lines,
    every exec time times ``factor``."""
    lines = (SAMPLE_LOGS / f"{name}.log").read_text().splitlines()
    execs = [i for i, line in enumerate(lines) if ",exec," in line]
    kept = []
    for line in lines[: execs[passes * period - 1] + 1]:
        if line.startswith("onednn_verbose,v1,primitive,exec,"):
            head, _, time = line.rpartition(",")
            line = f"{head},{float(time) * factor!r}"
        kept.append(line)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(kept) + "\n")
    return path


@pytest.fixture(scope="module")
def dataset(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("diffconf")
    logs = root / "logs"
    write_copy(logs / "base.log", "convnet_nchw_infer", 1.0)
    same = write_copy(logs / "same.log", "convnet_nchw_infer", 1.0)
    same.write_text("the same log under another name\n" + same.read_text())
    write_copy(logs / "x2.log", "convnet_nchw_infer", 2.0)
    write_copy(logs / "x3.log", "convnet_nchw_infer", 3.0)
    first_passes(logs / "sse-base.log", "isa_sse41_infer", 5, 15, 1.0)
    first_passes(logs / "sse-x3.log", "isa_sse41_infer", 5, 15, 3.0)
    shutil.copy(SAMPLE_LOGS / "isa_sse41_infer.log", logs / "sse41.log")
    shutil.copy(SAMPLE_LOGS / "lstm_infer.log", logs / "lstm.log")
    shutil.copy(NOISE / "contended_nice19_infer.log", logs / "contended.log")
    out = root / "ds"
    result = build(str(logs / "*.log"), "-o", str(out), "-q")
    assert result.exit_code == 0, result.stderr
    return out


def fleet_diff(dataset: Path, *args: str):  # noqa: ANN201 - click Result
    return invoke("fleet", "diff", str(dataset), "--baseline", "base", *args)


def doc_of(dataset: Path, *args: str) -> tuple[int, dict, str]:
    result = fleet_diff(dataset, *args, "--format", "json")
    return result.exit_code, json.loads(result.stdout), result.stderr


def one_line(stderr: str) -> str:
    lines = stderr.strip().splitlines()
    assert len(lines) == 1, stderr
    return lines[0]


def test_a_real_slowdown_with_separated_passes_fails(dataset) -> None:
    code, doc, stderr = doc_of(dataset, "--run", "x3")
    assert code == 1, stderr
    (run,) = doc["runs"]
    c = run["confidence"]
    assert c["level"] == "high" and c["reasons"] == []
    assert (c["base_steady"], c["new_steady"]) == (7, 7)
    assert c["chance"] == pytest.approx(2 / math.comb(14, 7))  # 2 / 3432 = 0.00058
    assert c["base_range_ms"] == pytest.approx([min(STEADY), max(STEADY)], abs=5e-4)
    assert c["new_range_ms"] == pytest.approx([3 * min(STEADY), 3 * max(STEADY)], abs=2e-3)
    assert c["workload_overlap"] == pytest.approx(1.0)
    assert run["gate"] == "fail" and run["change"] == pytest.approx(2.0)
    assert doc["gate"] == "fail" and doc["slower"] is True
    assert [r["run"] for r in doc["slower_runs"]] == ["x3"]
    assert doc["slower_primitives"] and not any(
        p["informational"] for p in doc["slower_primitives"]
    )
    line = one_line(stderr)
    assert "1 run(s) slower than base by more than 5%" in line and "x3 (+200.0%)" in line


def test_a_real_recording_pair_with_a_real_slowdown_fails(dataset) -> None:
    """The same net recorded on an SSE4.1-only dispatch (``isa_sse41_infer``): its steady
    passes 11.541 15.344 19.254 112.314 (the last a stall) are all slower than the NCHW
    sample's 1.990 to 4.261 ms; 4 and 7 passes: chance 2 / C(11, 4) = 2/330 = 0.0061."""
    code, doc, stderr = doc_of(dataset, "--run", "sse41")
    assert code == 1, stderr
    (run,) = doc["runs"]
    c = run["confidence"]
    assert c["level"] == "high" and (c["base_steady"], c["new_steady"]) == (7, 4)
    assert c["chance"] == pytest.approx(2 / math.comb(11, 4))
    assert c["new_range_ms"] == pytest.approx([11.541, 112.314], abs=5e-4)
    assert run["gate"] == "fail"


def test_the_same_log_under_two_names_passes(dataset) -> None:
    code, doc, stderr = doc_of(dataset, "--run", "same")
    assert code == 0, stderr
    (run,) = doc["runs"]
    assert run["change"] == 0.0 and run["gate"] == "pass"
    assert run["confidence"]["level"] == "low"  # identical passes: the ranges overlap
    assert "within the noise" in run["confidence"]["reason"]
    assert doc["gate"] == "pass" and doc["slower_runs"] == [] and stderr == ""


def test_a_slowdown_within_the_noise_cannot_be_decided(dataset) -> None:
    """x2: +100% by the typical iterations, but its passes (3.980 to 8.521 ms) overlap the
    sample's (1.990 to 4.261 ms)."""
    code, doc, stderr = doc_of(dataset, "--run", "x2")
    assert code == 2, stderr
    (run,) = doc["runs"]
    assert run["gate"] == "refused" and run["beyond_threshold"] is True
    assert run["confidence"]["level"] == "low"
    assert run["confidence"]["new_range_ms"][0] < run["confidence"]["base_range_ms"][1]
    assert doc["gate"] == "refused" and doc["slower"] is False
    assert all(p["informational"] for p in doc["slower_primitives"])
    line = one_line(stderr)
    assert "cannot decide on 1 run(s): x2:" in line
    assert "x2 looks 100.0% slower" in line and "within the noise" in line


def test_too_few_steady_passes_is_low_and_does_not_fail(dataset) -> None:
    """Three steady passes a side, every one of the x3 copy slower: chance 2 / C(6, 3) =
    0.10 > 5%, so the 200% slowdown is not decided (exit 2), and not a failed gate."""
    result = invoke(
        "fleet", "diff", str(dataset), "--baseline", "sse-base", "--run", "sse-x3",
        "--format", "json",
    )  # fmt: skip
    assert result.exit_code == 2, result.stderr
    doc = json.loads(result.stdout)
    (run,) = doc["runs"]
    c = run["confidence"]
    assert c["level"] == "low" and (c["base_steady"], c["new_steady"]) == (3, 3)
    assert c["chance"] == pytest.approx(2 / math.comb(6, 3))
    assert c["base_range_ms"] == pytest.approx([11.541, 19.254], abs=5e-4)
    assert c["new_range_ms"] == pytest.approx([34.624, 57.762], abs=2e-3)
    assert c["reasons"] == [c["reason"]] and "too few steady passes" in c["reason"]
    assert run["gate"] == "refused" and doc["gate"] == "refused"
    assert "too few steady passes to tell a change from noise: BASE 3, NEW 3" in one_line(
        result.stderr
    )


def test_a_run_of_another_workload_is_refused(dataset) -> None:
    """The LSTM sample shares no (kind, direction, shape) with the convnet."""
    code, doc, stderr = doc_of(dataset, "--run", "lstm")
    assert code == 2, stderr
    (run,) = doc["runs"]
    c = run["confidence"]
    assert c["level"] == "none" and c["different_workloads"] is True
    assert c["workload_overlap"] == 0.0
    assert run["gate"] == "refused"
    assert "different workloads" in one_line(stderr)


def test_untrustworthy_times_are_refused(dataset) -> None:
    """The contended recording: the NCHW net at nice 19 beside four CPU hogs."""
    rows = Dataset.open(dataset).read("runs", ["run", "timing_confidence"]).to_pylist()
    trust = {r["run"]: r["timing_confidence"] for r in rows}
    assert trust["contended"] == "low" and trust["base"] == "high"
    code, doc, stderr = doc_of(dataset, "--run", "contended")
    assert code == 2, stderr
    (run,) = doc["runs"]
    assert run["gate"] == "refused" and run["confidence"]["level"] == "low"
    assert "NEW's timings are not trustworthy" in run["confidence"]["reason"]
    assert "not trustworthy" in one_line(stderr)


def test_one_failed_run_fails_the_dataset_and_the_others_are_named(dataset) -> None:
    """Every run of the baseline's workload (the SSE4.1 recordings run the same net): x3
    and the SSE4.1 runs fail (the cut one: 3 steady passes against 7, chance 2 / C(10, 3)
    = 2/120 = 0.017); x2 and the contended run cannot be decided; the same log passes.
    One failed run is exit 1, whatever the others."""
    code, doc, stderr = doc_of(dataset)
    assert code == 1, stderr
    gates = {r["run"]: r["gate"] for r in doc["runs"]}
    assert gates == {
        "contended": "refused", "same": "pass", "sse-base": "fail", "sse-x3": "fail",
        "sse41": "fail", "x2": "refused", "x3": "fail",
    }  # fmt: skip
    assert doc["gate"] == "fail"
    informational = {p["run"]: p["informational"] for p in doc["slower_primitives"]}
    assert informational["x3"] is False and informational["x2"] is True
    line = one_line(stderr)
    assert line.startswith("dnnlens: error: 4 run(s) slower than base by more than 5%")
    assert "x3 (+200.0%)" in line and line.endswith("; 2 more not decided")


def test_the_text_shows_each_run_confidence_and_the_verdict(dataset) -> None:
    result = fleet_diff(dataset, "--run", "x*", "--run", "same", "--width", "200")
    assert result.exit_code == 1, result.stderr
    out = result.stdout
    assert "confidence" in out and "gate" in out
    assert "x3: Confidence: high: every steady pass of one side is beyond" in out
    assert "x2: Confidence: low: within the noise" in out
    assert "informational" in out
    assert out.rstrip().splitlines()[-1].startswith("Gate fail: 1 run(s) slower than base")


def test_the_text_lists_every_run_that_matters_and_top_runs_that_pass(tmp_path: Path) -> None:
    """Twelve copies of the NCHW sample at x1.0000 to x1.0275 (under the 5% threshold: pass) and
    one at x3 (fail): ``--top 4`` lists the failed run and three that pass, the largest
    changes first, and says how many more pass; JSON lists all 13."""
    logs = tmp_path / "logs"
    write_copy(logs / "base.log", "convnet_nchw_infer", 1.0)
    for k in range(12):
        copy = write_copy(logs / f"c{k:02d}.log", "convnet_nchw_infer", 1.0 + k / 400)
        copy.write_text(copy.read_text() + f"copy {k}\n")  # a content of its own
    write_copy(logs / "x3.log", "convnet_nchw_infer", 3.0)
    out = tmp_path / "ds"
    assert build(str(logs / "*.log"), "-o", str(out), "-q").exit_code == 0
    text = invoke("fleet", "diff", str(out), "--baseline", "base", "--top", "4", "--width", "200")
    assert text.exit_code == 1, text.stderr
    cells = [line.split() for line in text.stdout.splitlines()]
    rows = [c[0] for c in cells if len(c) == 5 and c[4] in ("pass", "fail")]  # the run rows
    assert rows == ["x3", "c11", "c10", "c09"], text.stdout
    assert "9 more run(s) that pass (--top, or --format json for all)" in text.stdout
    doc = invoke("fleet", "diff", str(out), "--baseline", "base", "--format", "json")
    assert len(json.loads(doc.stdout)["runs"]) == 13


def test_runs_written_before_timing_trust_was_stored_are_not_distrusted(
    dataset: Path, tmp_path: Path
) -> None:
    """A dataset whose ``runs`` files lack ``timing_confidence`` (an older dnnlens wrote
    them): the columns read NULL, which distrusts nothing (docs/fleet.md), so the contended
    recording is judged by its passes alone, and x3 still fails the gate."""
    import pyarrow.parquet as pq

    out = tmp_path / "ds"
    shutil.copytree(dataset, out)
    dropped = ["timing_confidence", "timing_confidence_reason"]
    for path in (out / "runs").glob("*.parquet"):
        pq.write_table(pq.read_table(path).drop_columns(dropped), path)
    x3 = invoke("fleet", "diff", str(out), "--baseline", "base", "--run", "x3", "-f", "json")
    assert x3.exit_code == 1, x3.stderr
    assert json.loads(x3.stdout)["runs"][0]["confidence"]["level"] == "high"
    code, doc, _ = doc_of(out, "--run", "contended")
    reasons = doc["runs"][0]["confidence"]["reasons"]
    assert not any("not trustworthy" in r for r in reasons), reasons


@pytest.mark.parametrize("run", ["x3", "x2", "same", "sse41", "lstm", "contended"])
def test_fleet_diff_and_diff_give_one_confidence(dataset: Path, run: str) -> None:
    """One pair, one verdict, whatever the command: ``diff base.log RUN.log`` and ``fleet
    diff --baseline base --run RUN`` on the dataset built from the same files say the same
    level, reasons, passes, ranges, chance and overlap (the dataset's figures are copies of
    analyze's, to the last bit)."""
    logs = dataset.parent / "logs"
    direct = invoke("diff", str(logs / "base.log"), str(logs / f"{run}.log"), "-f", "json")
    assert direct.exit_code in (0, 1), direct.stderr
    mine = json.loads(direct.stdout)["confidence"]
    _, doc, _ = doc_of(dataset, "--run", run)
    theirs = doc["runs"][0]["confidence"]
    assert theirs == mine
    gated = invoke(
        "diff", str(logs / "base.log"), str(logs / f"{run}.log"), "--fail-if-slower", "5%"
    )  # the gate's decision too: exit 1 fail, 2 refused, 0 pass
    assert {1: "fail", 2: "refused", 0: "pass"}[gated.exit_code] == doc["runs"][0]["gate"]
