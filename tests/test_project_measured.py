"""``dnnlens project`` leads with what the log measured; estimates come after, labelled.

Hand counts (no dnnlens), from the logs' own lines:

* ``sample_logs/convnet_nchw_infer.log``: 11 passes of 15 exec lines, steady passes 4-10
  (tests/test_projection.py); reorders at positions 0, 2, 3, 4, 6, 7, 8, 10, 11, 12, 14.
  Removing every reorder saves the sum of their per-position medians over passes 4-10.
* ``tests/data/projection/lstm_ref_and_jit_train.log`` (``scripts/make_projection_logs.py``):
  8 passes of 11 exec lines; pass sums 41.60 (creates every primitive), 3.72, 4.17, 2.20,
  1.83, 1.76, 1.75, 1.84 ms: none over 3 x the median, so passes 1-7 are steady. Position 2
  is ``rnn,brgemm:avx512_core,forward_inference`` and position 5 ``rnn,ref,
  forward_training`` of the same problem ``l1t20mb8sic256slc64dhc256dic256``; position 7 is
  ``rnn,ref,backward``, which no optimised kernel runs anywhere.
* ``sample_logs/lstm_train.log``: ``rnn,ref,forward_training`` of
  ``l1t20mb4sic64slc32dhc64dic64`` and ``l1t20mb4sic64slc64dhc64dic64``; FLOPs (LSTM, 4
  gates, docs/cost-model.md 2.4) 2*4*64*4*(64+32)*20 = 3,932,160 and 2*4*64*4*(64+64)*20 =
  5,242,880; the optimised rnn of the other log: 2*4*256*8*(256+64)*20 = 104,857,600.
* ``tests/data/projection/cache_capacity_zero_infer.log``: ``ONEDNN_PRIMITIVE_CACHE_
  CAPACITY=0``: 88 exec lines (8 passes of 11) and 88 ``create:cache_miss`` lines, no cache
  hit. Every pass misses, so none is steady and the whole log is the iteration; the first
  pass ends at the 11th exec line, after which 77 miss lines follow.
"""

from __future__ import annotations

import json
import statistics
from pathlib import Path

import pytest
from typer.testing import CliRunner

from dnnlens.analysis.analysis import Analysis
from dnnlens.analysis.projection import CHANGES, project
from dnnlens.cli import app
from dnnlens.reading import load
from dnnlens.report import projection_report

ROOT = Path(__file__).resolve().parent.parent
NCHW = ROOT / "sample_logs" / "convnet_nchw_infer.log"
LSTM_TRAIN = ROOT / "sample_logs" / "lstm_train.log"
DATA = ROOT / "tests" / "data" / "projection"
REF_AND_JIT = DATA / "lstm_ref_and_jit_train.log"
CACHE0 = DATA / "cache_capacity_zero_infer.log"
NCHW_REORDERS = (0, 2, 3, 4, 6, 7, 8, 10, 11, 12, 14)
runner = CliRunner()


def exec_lines(path: Path) -> list[str]:
    return [x for x in path.read_text().splitlines() if ",exec," in x]


def medians(path: Path, period: int, steady_from: int) -> list[float]:
    """Per position of a pass: the median time over the steady passes."""
    times = [float(x.rsplit(",", 1)[1]) for x in exec_lines(path)]
    passes = [times[i : i + period] for i in range(0, len(times), period)]
    return [statistics.median(p[k] for p in passes[steady_from:]) for k in range(period)]


def projected(path: Path, *measured: Path):
    return project(
        Analysis(load([str(path)])), list(CHANGES), [Analysis(load([str(m)])) for m in measured]
    )


def test_headline_of_the_nchw_sample_is_its_reorders():
    med = medians(NCHW, 15, 4)
    p = projected(NCHW)
    head = p.headline
    assert head is not None and p.changes[0] is head
    assert (head.change, head.basis) == ("remove:reorders", "measured")
    assert head.saving_ms == pytest.approx(sum(med[i] for i in NCHW_REORDERS))  # 0.676 ms
    # bf16 on this AVX2 machine is not projected (no bf16 kernels: slower, not faster), so
    # no estimate saves anything
    assert p.best_estimate is None
    bf16 = next(c for c in p.changes if c.change == "dtype:bf16")
    assert bf16.basis == "unknown"
    doc = json.loads(projection_report.render_json(p))
    assert doc["headline"]["change"] == "remove:reorders"
    assert doc["headline"]["saving_ms"] == pytest.approx(head.saving_ms)
    assert doc["estimate"] is None
    assert doc["changes"][0]["basis"] == "measured"
    assert doc["machine"]["peak_basis"]["f32"] == "assumed"


def test_terminal_leads_with_the_measured_change():
    res = runner.invoke(app, ["project", str(NCHW)], env={"COLUMNS": "300"})
    assert res.exit_code == 0, res.output
    lines = res.stdout.splitlines()
    assert lines[0] == (
        "Measured in the log: remove:reorders would save 0.68 ms per iteration (2.09 ms -> 1.41 ms)"
    )
    # no estimate line: the one estimate (bf16) cannot be projected on AVX2, and the table
    # says so too
    assert not lines[1].startswith("Estimate")
    row = next(x for x in lines if x.startswith("│ dtype:bf16"))
    assert "unknown" in row and "1.19x" not in row


def test_reference_kernel_takes_the_optimised_time_measured_in_the_log():
    med = medians(REF_AND_JIT, 11, 1)
    p = projected(REF_AND_JIT)
    ref = next(c for c in p.changes if c.change == "replace:reference-kernels")
    adj = {a.position: a for a in ref.adjustments}
    # forward_training (ref) at position 5 -> forward_inference (brgemm) at position 2
    assert adj[5].before_ms == pytest.approx(med[5]) and adj[5].source == "measured"
    assert adj[5].after_ms == pytest.approx(med[2])
    assert "ref -> brgemm:avx512_core" in adj[5].detail
    # no optimised backward rnn anywhere: kept, and said so
    assert adj[7].source == "assumed" and adj[7].after_ms == adj[7].before_ms
    assert ref.basis == "measured"
    # measured, and it says so even when it would not save anything (0.373 -> 0.413 ms)
    assert ref.projected_ms == pytest.approx(ref.baseline_ms - med[5] + med[2])


def test_reference_kernel_scaled_from_another_shape_is_an_estimate():
    med = medians(REF_AND_JIT, 11, 1)
    p = projected(LSTM_TRAIN, REF_AND_JIT)
    ref = next(c for c in p.changes if c.change == "replace:reference-kernels")
    scaled = {a.problem: a for a in ref.adjustments if a.source == "scaled"}
    # both problems are compute bound: the roof ratio is the FLOP ratio
    one = scaled["l1t20mb4sic64slc32dhc64dic64"]
    two = scaled["l1t20mb4sic64slc64dhc64dic64"]
    assert one.after_ms == pytest.approx(med[2] * 3_932_160 / 104_857_600)
    assert two.after_ms == pytest.approx(med[2] * 5_242_880 / 104_857_600)
    assert ref.basis == "estimate" and "scaled" in ref.sources
    assert not any("another machine" in n for n in p.table.notes)  # same ISA and threads


def test_cache_misses_in_every_pass_by_hand():
    """With the cache off every one of the 8 passes creates its 11 primitives: none is
    warm-up (no pass creates more than the others), so the creations per steady pass are
    all 88 ``create:cache_miss`` times summed, over 8."""
    lines = CACHE0.read_text().splitlines()
    execs = [x for x in lines if ",exec," in x]
    misses = [float(x.rsplit(",", 1)[1]) for x in lines if "create:cache_miss" in x]
    assert len(execs) == 88 and len(misses) == 88
    p = projected(CACHE0)
    miss = next(c for c in p.changes if c.change == "remove:cache-misses")
    assert miss.basis == "measured" and miss.sources == ["log"]
    # executions unchanged; the creations come off on top of the baseline (no hit: 0 ms)
    assert miss.projected_ms == pytest.approx(miss.baseline_ms)
    assert miss.creation_saving_ms == pytest.approx(sum(misses) / 8)
    assert miss.saving_ms == pytest.approx(sum(misses) / 8)
    assert p.table.creations.misses == 88
    assert any("no cache hit" in x for x in miss.assumptions)
    assert p.headline is miss  # creation per pass: more than any other measured change


def test_cache_misses_of_a_log_whose_steady_passes_hit_the_cache():
    p = projected(NCHW)
    miss = next(c for c in p.changes if c.change == "remove:cache-misses")
    assert miss.basis == "none" and miss.saving_ms == 0.0
    assert "no primitive cache miss in the 7 steady passes" in miss.warnings[0]


def test_cli_project_replace_and_remove_cache_misses():
    res = runner.invoke(
        app,
        ["project", str(CACHE0), "--remove", "cache-misses", "--replace", "reference-kernels",
         "-f", "json"],
    )  # fmt: skip
    assert res.exit_code == 0, res.output
    doc = json.loads(res.stdout)
    assert [c["change"] for c in doc["changes"]] == [
        "remove:cache-misses",
        "replace:reference-kernels",
    ]
    assert doc["baseline"]["creation_misses"] == 88  # every pass, none warm-up
    assert runner.invoke(app, ["project", str(NCHW), "--replace", "x"]).exit_code == 2
