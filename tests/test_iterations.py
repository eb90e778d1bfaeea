"""Iteration detection on the real sample logs.

The expected numbers were counted by hand, not taken from dnnlens:

* passes: ``sample_logs/MANIFEST.json`` (warmup + timed = total_passes), which each log also
  prints on its last line (``done: <scenario> passes=<N>``);
* exec rows: ``grep -c ',exec,' LOG``; the period is exec rows / passes;
* pass starts: ``grep -n`` of the first primitive a pass executes (commands below);
* warm-up: the passes holding ``create:cache_miss`` lines (``grep -n cache_miss LOG | tail -1``
  is inside the first pass in every log) or extra exec rows.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from dnnlens.analysis.iterations import (
    TIME_COLUMNS,
    find_iterations,
    find_period,
)
from dnnlens.reading import load

SAMPLES = Path(__file__).parent.parent / "sample_logs"
LEGACY = sorted((SAMPLES / "legacy").glob("*.log"))

# file: (count, warmup, period_exec)
EXPECTED = {
    # 1 + 10 passes; 165 exec rows = 11 x 15; cache misses end at line 36, pass 2 starts at 40
    "convnet_nchw_infer.log": (11, 1, 15),
    # 1 + 10 passes; 88 exec rows = 11 x 8 (4 weight reorders + 4 convolutions)
    "convnet_cl_infer.log": (11, 1, 8),
    # 1 + 5 steps; 252 exec rows = 6 x 42 (forward, backward_data, backward_weights)
    "convnet_nchw_train.log": (6, 1, 42),
    # 1 + 5 steps; 132 exec rows = 6 x 22
    "convnet_cl_train.log": (6, 1, 22),
    # 1 + 10 passes; 66 exec rows = 11 x 6 (2 x (weight reorders for layer, iter) + rnn)
    "lstm_infer.log": (11, 1, 6),
    # 2 + 10 passes; 52 exec rows = 4 weight reorders once + 12 x 4 convolutions. Only the
    # first warm-up pass is told apart (cache misses end at line 22, the one-time reorders);
    # the second runs exactly what the timed passes run, with cache hits only.
    "compile_freezing_infer.log": (12, 1, 4),
    # 1 + 5 passes; 90 exec rows = 6 x 15 (ONEDNN_VERBOSE=all: check/dispatch lines are not
    # events)
    "all_timestamps_infer.log": (6, 1, 15),
    # 1 + 5 passes; 90 exec rows = 6 x 15
    "isa_sse41_infer.log": (6, 1, 15),
    # 1 + 30 passes; 465 exec rows = 31 x 15 (noisy times, same primitives)
    "contended_infer.log": (31, 1, 15),
    # 1 + 5 passes; 90 exec rows = 6 x 15; ONEDNN_VERBOSE=1 prints no create lines, so the
    # warm-up pass cannot be told apart (warmup 0)
    "profile_nchw_infer.log": (6, 0, 15),
    # 1 + 5 passes; 36 exec rows = 6 x 6
    "profile_lstm_infer.log": (6, 0, 6),
    # 1 + 3 passes; 60 exec rows = 4 x 15, a profiler table after the verbose lines
    "profile_combined_infer.log": (4, 0, 15),
    # no oneDNN line at all (bf16 refused on this CPU): 0 exec rows
    "convnet_bf16_autocast_infer.log": (0, 0, 0),
    "profile_bf16_train.log": (0, 0, 0),
    # training logs recorded on an AVX-512 machine (tests/data/training_hand_counts.md):
    # 1 + 9 steps; 2340 exec rows = 10 x 234 (20 forward, 19 backward_data and 20
    # backward_weights convolutions, 175 reorders); cache misses end at line 474, in step 1
    "resnet18_nchw_train.log": (10, 1, 234),
    # 1 + 9 steps; 1180 exec rows = 10 x 118 (59 convolutions, 59 weight reorders); cache
    # misses end at line 242, in step 1
    "resnet18_cl_train.log": (10, 1, 118),
    # 1 + 10 steps; 154 exec rows = 11 x 14 (2 rnn forward, 2 rnn backward, 10 weight
    # reorders); cache misses end at line 30, in step 1
    "lstm_train.log": (11, 1, 14),
    # 1 + 5 steps; 252 exec rows = 6 x 42; cache misses end at line 90, in step 1
    "convnet_bf16_autocast_train.log": (6, 1, 42),
    # one model.fit of 3 epochs x 4 steps; 180 exec rows = 12 x 15; cache misses end at line
    # 41, in the first step (which traces the train function)
    "keras_cnn_train.log": (12, 1, 15),
}


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_sample_iterations(name: str) -> None:
    count, warmup, period = EXPECTED[name]
    it = find_iterations(load([str(SAMPLES / name)]).events)
    assert (it.count, it.warmup_structural, it.period_exec) == (count, warmup, period)
    assert len(it.times) == count
    assert list(it.times.columns) == list(TIME_COLUMNS)


def test_counts_equal_manifest_total_passes() -> None:
    import json

    manifest = json.loads((SAMPLES / "MANIFEST.json").read_text())
    totals = {f["file"]: f["total_passes"] for f in manifest["files"]}
    for name, (count, _, _) in EXPECTED.items():
        if count:  # logs with oneDNN lines
            assert count == totals[name], name


@pytest.mark.parametrize("path", LEGACY, ids=lambda p: p.name)
def test_legacy_iterations(path: Path) -> None:
    # the probe runs 3 iterations (README); 47 exec rows = 2 one-time int8 reorders (src and
    # weights, before the loop) + 3 x 15; the first iteration holds the cache misses
    it = find_iterations(load([str(path)]).events)
    assert (it.count, it.warmup_structural, it.period_exec) == (3, 1, 15)
    assert it.times["exec_count"].tolist() == [17, 15, 15]


def test_pass_starts_and_rows() -> None:
    # grep -n ',exec,cpu,reorder,.*,16x3x3x3,' convnet_nchw_infer.log: a pass starts with the
    # first conv's weight reorder, every 30 lines from line 10
    log = load([str(SAMPLES / "convnet_nchw_infer.log")])
    it = find_iterations(log.events)
    assert it.times["first_line"].tolist() == list(range(10, 311, 30))
    assert it.times["exec_count"].tolist() == [15] * 11
    assert it.times["structural_warmup"].tolist() == [True] + [False] * 10
    assert it.times["regular"].all()
    ev = log.events
    is_exec = (ev["operation"].astype(str) == "exec").to_numpy()
    assert len(it.iteration) == len(ev)
    assert (it.iteration >= 0).all()
    # create lines belong to the pass of the exec that follows: line 8 (conv create) -> 0
    lines = ev["line"].to_numpy()
    assert it.iteration[lines == 8][0] == 0
    assert it.iteration[lines == 38][0] == 1  # pass 2's first create (cache hit)
    # time table: totals add up to the exec times, reorder part to the reorder exec times
    t = ev["time_ms"].to_numpy()
    reorder = (ev["kind"].astype(str) == "reorder").to_numpy()
    assert it.times["time_ms"].sum() == pytest.approx(t[is_exec].sum())
    assert it.times["reorder_ms"].sum() == pytest.approx(t[is_exec & reorder].sum())
    # pass 0 (lines 8..37) is the structural warm-up: it creates with cache misses
    assert it.warmup_structural == 1
    assert it.times["structural_warmup"].tolist() == [True] + [False] * 10


def test_other_pass_starts() -> None:
    # grep -n ',exec,cpu,reorder,.*,16x3x3x3,' convnet_cl_infer.log
    it = find_iterations(load([str(SAMPLES / "convnet_cl_infer.log")]).events)
    assert it.times["first_line"].tolist() == list(range(10, 171, 16))
    # grep -n ',exec,cpu,convolution,.*mb4_ic3oc16' compile_freezing_infer.log -> 17 25 .. 105;
    # the first iteration starts earlier, with the one-time weight reorders (line 9)
    it = find_iterations(load([str(SAMPLES / "compile_freezing_infer.log")]).events)
    assert it.times["first_line"].tolist() == [9, *range(25, 106, 8)]
    assert it.times["exec_count"].tolist() == [8] + [4] * 11
    assert it.times["regular"].tolist() == [False] + [True] * 11
    # grep -n ',exec,cpu,reorder,.*1x1x32x4x64' lstm_infer.log -> 9 21 ... 129
    it = find_iterations(load([str(SAMPLES / "lstm_infer.log")]).events)
    assert it.times["first_line"].tolist() == list(range(9, 130, 12))


def test_training_step_starts() -> None:
    # A step starts with the first convolution's (or LSTM layer's) forward weight reorder:
    # grep -n ',exec,cpu,reorder,.*abcd::f0 dst:f32::blocked:Acdb16a::f0,.*,64x3x7x7,'
    #   resnet18_nchw_train.log -> 10 478 ... 4222 (every 468 lines)
    # grep -n ',exec,cpu,reorder,.*acdb::f0 dst:f32::blocked:Acdb64a::f0,.*,64x3x7x7,'
    #   resnet18_cl_train.log -> 10 246 ... 2134 (every 236 lines)
    # grep -n ',exec,cpu,reorder,.*src:f32::blocked:abdec::f0 .*,1x1x32x4x64,' lstm_train.log
    #   -> 9 37 ... 289 (every 28 lines)
    # grep -n ',exec,cpu,reorder,.*dst:f32::blocked:Acdb16a::f0,.*,16x3x3x3,' keras_cnn_train.log
    #   -> 17, then 43 60 ... 213 (every 17 lines; the first step also holds its create lines)
    starts = {
        "resnet18_nchw_train.log": list(range(10, 4223, 468)),
        "resnet18_cl_train.log": list(range(10, 2135, 236)),
        "lstm_train.log": list(range(9, 290, 28)),
        "keras_cnn_train.log": [17, *range(43, 214, 17)],
    }
    for name, lines in starts.items():
        it = find_iterations(load([str(SAMPLES / name)]).events)
        assert it.times["first_line"].tolist() == lines, name
        assert it.times["structural_warmup"].tolist() == [True] + [False] * (len(lines) - 1), name


def _exec_index(events: pd.DataFrame) -> np.ndarray:
    return np.flatnonzero((events["operation"].astype(str) == "exec").to_numpy())


def test_irregular_passes_are_tolerated() -> None:
    ev = load([str(SAMPLES / "convnet_nchw_infer.log")]).events
    ex = _exec_index(ev)
    rows = np.arange(len(ev))
    dup, drop = ex[5 * 15 + 3], ex[8 * 15 + 6]  # an extra reorder in pass 6, one missing in 9
    rows = np.concatenate([rows[: dup + 1], [dup], rows[dup + 1 :]])
    rows = rows[rows != drop]
    it = find_iterations(ev.iloc[rows].reset_index(drop=True))
    assert (it.count, it.warmup_structural, it.period_exec) == (11, 1, 15)
    assert it.times["exec_count"].tolist() == [15] * 5 + [16, 15, 15, 14, 15, 15]
    assert it.inputs[0].irregular == 2


def test_truncated_last_pass() -> None:
    ev = load([str(SAMPLES / "convnet_nchw_infer.log")]).events
    ex = _exec_index(ev)
    short = find_iterations(ev.iloc[: ex[10 * 15 + 5]].reset_index(drop=True))
    assert short.count == 10 and short.inputs[0].outside_exec == 5
    assert (short.iteration[: ex[10 * 15 - 1] + 1] >= 0).all()
    # the create lines of the cut pass go with its exec rows: outside
    assert (short.iteration[ex[10 * 15 - 1] + 1 :] == -1).all()
    long = find_iterations(ev.iloc[: ex[10 * 15 + 9]].reset_index(drop=True))
    assert long.count == 11 and long.inputs[0].outside_exec == 0


def test_two_inputs_are_numbered_in_turn() -> None:
    log = load([str(SAMPLES / "convnet_cl_infer.log"), str(SAMPLES / "lstm_infer.log")])
    it = find_iterations(log.events)
    assert it.count == 22 and it.warmup_structural == 2
    assert [i.count for i in it.inputs] == [11, 11]
    assert [i.first_iteration for i in it.inputs] == [0, 11]
    assert it.period_exec == 8  # the main input has the most exec rows (88 > 66)


def test_find_period_small_streams() -> None:
    assert find_period(np.array([1, 2, 3] * 5)) == (3, 0)
    assert find_period(np.array([9, 8, 1, 2, 3, 1, 2, 3, 1, 2, 3])) == (3, 2)
    assert find_period(np.array([1, 2, 1, 3] * 4)) == (4, 0)
    assert find_period(np.array([4, 4, 4])) == (1, 0)
    assert find_period(np.array([1, 2, 3, 4, 5, 6])) is None
    assert find_period(np.array([1, 2, 3, 3])) is None  # one record twice is no iteration
    assert find_period(np.array([], dtype=np.int64)) is None


def test_marker_lines_override(tmp_path: Path) -> None:
    # a copy of the NCHW log with the program printing "=== pass k done" after each pass;
    # passes end on lines 37, 67, ..., 337 (the last exec of each 30-line pass)
    src = (SAMPLES / "convnet_nchw_infer.log").read_text().splitlines()
    out: list[str] = []
    for i, line in enumerate(src, 1):
        out.append(line)
        if i >= 37 and (i - 37) % 30 == 0 and i <= 337:
            out.append(f"=== pass {(i - 37) // 30} done")
    path = tmp_path / "marked.log"
    path.write_text("\n".join(out) + "\n")
    log = load([str(path)], marker=r"^=== pass")
    found = np.frombuffer(log.scans[0].marker_line, dtype=np.int64)
    assert found.tolist() == [38 + 31 * k for k in range(11)]
    assert log.marker == r"^=== pass"
    it = find_iterations(log.events, {str(path): found})
    assert (it.count, it.warmup_structural, it.period_exec) == (11, 1, 15)
    assert it.inputs[0].method == "markers"
    # one array works for a single input; markers every 2 passes give 6 iterations
    it2 = find_iterations(log.events, found[1::2])
    assert it2.count == 6 and it2.period_exec == 30
    with pytest.raises(ValueError):
        load([str(path)], marker="(")


def test_empty_table() -> None:
    it = find_iterations(load([str(SAMPLES / "convnet_bf16_autocast_infer.log")]).events)
    assert it.count == 0 and len(it.times) == 0 and (it.iteration == -1).all()
    assert it.as_dict() == {"count": 0, "warmup_structural": 0, "period_exec": 0}
