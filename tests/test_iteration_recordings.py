"""Hand counts of the recordings in ``sample_logs/iterations/``, re-derived from the log text.

These are the independent answers dnnlens's iteration finder is compared against, so this
file reads the logs with its own few lines of Python and imports nothing from dnnlens.

How a log is counted.  Every program (``scripts/make_iteration_logs.py``) prints one line of its
own after each pass/step; ``step_line_regex`` of its manifest entry matches exactly those lines
(``re.fullmatch`` on the line without its newline).  An *exec line* starts with
``onednn_verbose,`` + an optional timestamp field + ``v1,primitive,exec,``; its time is its last
comma field, in ms.  Reading the log top to bottom, the exec lines up to the first step line
belong to step 1 and those after step line k-1 up to step line k to step k.  So:

* steps = the number of step lines (``EXPECTED_STEPS``: the passes each program runs, warm-up
  included, read from the program, not from the log);
* ``step_ms[k]`` = the sum of the exec times of step k; the medians are ``statistics.median``
  of all ``step_ms`` and of those after the program's warm-up steps (``warmup_steps``);
* exec lines after the last step line: none in any recording.

The step lines lie between passes: in the steps after the warm-up, every step runs the same
multiset of ``(primitive kind, problem shape)`` exec lines as every other step of the same
shape (the ``shape`` group of the step line for the recordings whose batch or sequence length
changes; one shape otherwise).  One exec line landing after its step's line would move it into
the next step and break that.  The multiset, not the order, because TensorFlow's pool runs
independent matrix products in varying order.
"""

from __future__ import annotations

import gzip
import json
import re
import statistics
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent / "sample_logs" / "iterations"
MANIFEST = json.loads((ROOT / "MANIFEST.json").read_text())
ENTRIES = {e["name"]: e for e in MANIFEST["recordings"]}

#: Passes/steps each program runs (warm-up included), from its loop in the script.
EXPECTED_STEPS = {
    "convnet_nocache": 13,
    "lstm_nocache": 13,
    "convnet_dynbatch": 17,
    "encoder_dynseq_bf16": 18,
    "bert4_bf16_infer": 21,
    "encoder6_fp32_infer": 16,
    "bert4_bf16_train": 11,
    "tf_mlp_loop_nodnn": 11,
    "tf_lstm_fit_nodnn": 11,
    "tf_cnn_fit_nodnn": 11,
    "keras_cnn_fit": 11,
    "keras_text_fit": 12,
}

EXEC = re.compile(r"onednn_verbose,(?:[0-9.]+,)?v1,primitive,exec,")


@dataclass
class Step:
    """The exec lines of one step and the step line that closes it."""

    line: str = ""
    times: list[float] = field(default_factory=list)
    execs: list[tuple[str, str]] = field(default_factory=list)  # (kind, problem shape)


def read_lines(path: Path) -> list[str]:
    """The log's lines without their newlines (gzipped logs opened as such)."""
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt", encoding="utf-8", errors="replace") as fh:
        return fh.read().splitlines()


def split_steps(lines: list[str], step_line: str) -> tuple[list[Step], Step]:
    """The steps, each closed by its step line, and the exec lines after the last one."""
    step_re = re.compile(step_line)
    steps, current = [], Step()
    for line in lines:
        if step_re.fullmatch(line):
            current.line = line
            steps.append(current)
            current = Step()
        elif EXEC.match(line):
            fields = line.split(",")
            current.times.append(float(fields[-1]))
            # the kind is the field after the engine; the problem shape the one before the time
            at = fields.index("exec")
            current.execs.append((fields[at + 2], fields[-2]))
    return steps, current


def entry_steps(name: str) -> tuple[dict, list[Step], Step]:
    """A recording's manifest entry, its steps and what follows its last step line."""
    entry = ENTRIES[name]
    steps, rest = split_steps(read_lines(ROOT / entry["file"]), entry["step_line_regex"])
    return entry, steps, rest


def test_every_recording_is_in_the_manifest() -> None:
    on_disk = {p.name for p in ROOT.iterdir() if p.name.endswith((".log", ".log.gz"))}
    assert on_disk == {e["file"] for e in ENTRIES.values()}
    assert set(ENTRIES) == set(EXPECTED_STEPS)


@pytest.mark.parametrize("name", sorted(EXPECTED_STEPS))
def test_step_count_is_the_programs(name: str) -> None:
    entry, steps, _ = entry_steps(name)
    assert len(steps) == EXPECTED_STEPS[name] == entry["steps"] == entry["hand_count"]["steps"]
    assert 0 < entry["warmup_steps"] < len(steps)


@pytest.mark.parametrize("name", sorted(EXPECTED_STEPS))
def test_per_step_exec_time_equals_the_manifest(name: str) -> None:
    entry, steps, rest = entry_steps(name)
    count = entry["hand_count"]
    sums = [sum(s.times) for s in steps]
    assert count["step_ms"] == pytest.approx(sums, abs=1e-6)
    assert count["exec_lines_per_step"] == [len(s.times) for s in steps]
    assert count["median_step_ms"] == pytest.approx(statistics.median(sums), abs=1e-6)
    steady = sums[entry["warmup_steps"] :]
    assert count["median_step_ms_after_warmup"] == pytest.approx(
        statistics.median(steady), abs=1e-6
    )
    assert count["exec_lines_after_last_step"] == len(rest.times) == 0
    assert sum(len(s.times) for s in steps) == entry["exec_lines"]


@pytest.mark.parametrize("name", sorted(EXPECTED_STEPS))
def test_step_lines_lie_between_passes(name: str) -> None:
    entry, steps, _ = entry_steps(name)
    step_re = re.compile(entry["step_line_regex"])
    by_shape: dict[str, set[tuple]] = {}
    for step in steps[entry["warmup_steps"] :]:
        match = step_re.fullmatch(step.line)
        assert match is not None
        shape = match.groupdict().get("shape", "")
        by_shape.setdefault(shape, set()).add(tuple(sorted(Counter(step.execs).items())))
    assert all(len(kinds) == 1 for kinds in by_shape.values()), by_shape.keys()
    kinds = {
        tuple(sorted(Counter(k for k, _ in s.execs).items()))
        for s in steps[entry["warmup_steps"] :]
    }
    assert len(kinds) == 1


@pytest.mark.parametrize("name", sorted(EXPECTED_STEPS))
def test_no_line_is_broken_by_another(name: str) -> None:
    """Program and oneDNN lines never run into each other: oneDNN's marker only starts a line,
    and every exec line has the 13 fields of the v1 format (marker, v1, primitive, exec,
    engine, kind, implementation, propagation, memory descriptors, attributes, auxiliary,
    problem, time) ending in a number."""
    for line in read_lines(ROOT / ENTRIES[name]["file"]):
        assert line.find("onednn_verbose") in (-1, 0), line
        if EXEC.match(line):
            fields = line.split(",")
            assert len(fields) == 13 and re.fullmatch(r"[0-9.]+(?:e-?\d+)?", fields[-1]), line


@pytest.mark.parametrize("name", sorted(EXPECTED_STEPS))
def test_header_facts_are_the_logs(name: str) -> None:
    entry = ENTRIES[name]
    lines = read_lines(ROOT / entry["file"])
    version = next(m.group(1) for line in lines if (m := re.search(r"info,oneDNN (v\S+)", line)))
    assert version == entry["onednn_version"]
    runtime = {"torch": "OpenMP", "tensorflow": "threadpool"}[entry["framework"]]
    assert entry["cpu_runtime"] == runtime and entry["threads"] == 2
    assert entry["returncode"] == 0


def test_readme_table_is_the_manifests() -> None:
    """The README's table repeats steps, warm-up, exec lines per step and the median after the
    warm-up (3 decimals) of every recording; it must say what the manifest says."""
    rows = re.findall(
        r"^\| `([^`]+)` \|[^|]*\| (\d+) \((\d+)\) \| (\d+) \| ([0-9.]+) \|$",
        (ROOT / "README.md").read_text(),
        flags=re.MULTILINE,
    )
    assert {r[0] for r in rows} == {e["file"] for e in ENTRIES.values()}
    by_file = {e["file"]: e for e in ENTRIES.values()}
    for file, steps, warmup, per_step, median in rows:
        entry = by_file[file]
        count = entry["hand_count"]
        assert (int(steps), int(warmup)) == (entry["steps"], entry["warmup_steps"])
        assert set(count["exec_lines_per_step"]) == {int(per_step)}
        assert float(median) == round(count["median_step_ms_after_warmup"], 3)
