"""``dnnlens run`` samples the machine's load (cli/load.py): other processes' CPU time.

Unit tests drive the sampler with a fake ``/proc`` (its numbers are the counts); the run
test starts CPU hogs beside the program, killed by their process ids.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

from dnnlens.cli.load import BUSY_SHARE, LoadSampler, MachineLoad, machine_cpu, tree_cpu

ROOT = Path(__file__).resolve().parent.parent
NCHW = ROOT / "sample_logs" / "convnet_nchw_infer.log"
linux = pytest.mark.skipif(machine_cpu() is None, reason="no /proc/stat")


def write_proc(proc: Path, busy: int, idle: int, tree: dict[int, tuple[int, int]]) -> None:
    """A fake /proc: the machine's busy and idle ticks; processes pid -> (ppid, ticks)."""
    proc.mkdir(exist_ok=True)
    b0, i0 = busy // 2, idle // 2
    (proc / "stat").write_text(
        f"cpu  {busy} 0 0 {idle} 0 0 0 0 0 0\ncpu0 {b0} 0 0 {i0} 0 0 0 0 0 0\n"
        f"cpu1 {busy - b0} 0 0 {idle - i0} 0 0 0 0 0 0\nintr 0\n"
    )
    for pid, (ppid, ticks) in tree.items():
        (proc / str(pid)).mkdir(exist_ok=True)
        fields = ["S", str(ppid)] + ["0"] * 9 + [str(ticks), "0", "0", "0"]
        (proc / str(pid) / "stat").write_text(f"{pid} (a (b) c) " + " ".join(fields) + "\n")


def test_tree_cpu_follows_children_and_odd_names(tmp_path):
    write_proc(tmp_path, 0, 0, {10: (1, 5), 11: (10, 7), 12: (11, 2), 20: (1, 100)})
    assert tree_cpu(10, tmp_path) == {10: 5, 11: 7, 12: 2}
    assert machine_cpu(tmp_path) == (0, 0)


def sampled(tmp_path, program_ticks: int, busy_ticks: int, all_ticks: int) -> MachineLoad:
    write_proc(tmp_path, 1000, 1000, {10: (1, 50)})
    clock = iter([0.0, 2.0])
    sampler = LoadSampler(10, interval=60, proc=tmp_path, clock=lambda: next(clock))
    sampler.tick_s = 0.01
    sampler.start()
    write_proc(
        tmp_path, 1000 + busy_ticks, 1000 + all_ticks - busy_ticks, {10: (1, 50 + program_ticks)}
    )
    load = sampler.stop()
    assert load is not None
    return load


def test_a_quiet_machine_gets_no_note(tmp_path):
    """2 s on 2 CPUs (400 ticks): the program 190 ticks of the 200 busy ones."""
    load = sampled(tmp_path, program_ticks=190, busy_ticks=200, all_ticks=400)
    assert load.program_s == pytest.approx(1.9) and load.all_s == pytest.approx(4.0)
    assert load.other_share is not None and load.other_share < 0.05
    assert not load.busy and load.note() is None


def test_a_busy_machine_gets_a_note(tmp_path):
    """The program 100 ticks of 400 busy ones out of 400: others took 75% (less the
    little dnnlens's own process used meanwhile)."""
    load = sampled(tmp_path, program_ticks=100, busy_ticks=400, all_ticks=400)
    assert load.other_share == pytest.approx(0.75, abs=0.02)
    assert load.busy and load.other_share >= BUSY_SHARE
    note = load.note()
    assert note is not None and note.startswith("other processes used 7")
    assert load.to_json()["note"] == note


@linux
def test_run_notes_a_machine_busy_with_other_processes(tmp_path):
    """Three CPU hogs beside a program that also spins for 1.5 s on a 2-CPU machine (or
    more CPUs, with as many hogs): others take well over a quarter of the CPU time."""
    import os

    hogs = [
        subprocess.Popen([sys.executable, "-c", "while 1: pass"])
        for _ in range(max(3, (os.cpu_count() or 1) + 1))
    ]
    try:
        time.sleep(0.3)
        program = (
            f"import sys, time; sys.stdout.write(open({str(NCHW)!r}).read()); t = time.time()\n"
            "while time.time() - t < 1.5: pass"
        )
        out = tmp_path / "r.json"
        result = subprocess.run(
            [sys.executable, "-m", "dnnlens.cli", "run", "--no-live", "-q", "-f", "json",
             "-o", str(out), "--log", str(tmp_path / "r.log"), "--", sys.executable, "-c",
             program],
            capture_output=True, text=True, timeout=120,
        )  # fmt: skip
    finally:
        for hog in hogs:
            hog.kill()
        for hog in hogs:
            hog.wait()
    assert result.returncode == 0, result.stderr
    doc = json.loads(out.read_text())
    load = doc["run"]["load"]
    assert load["samples"] >= 2 and load["busy"]
    assert load["other_share"] >= BUSY_SHARE
    assert any(n.startswith("other processes used") for n in doc["notes"])
    assert "dnnlens: note: other processes used" in result.stderr  # whatever the format


def test_no_load_samples_nothing(tmp_path):
    out = tmp_path / "r.json"
    result = subprocess.run(
        [sys.executable, "-m", "dnnlens.cli", "run", "--no-live", "--no-load", "-q", "-f",
         "json", "-o", str(out), "--log", str(tmp_path / "r.log"), "--", sys.executable, "-c",
         f"import sys; sys.stdout.write(open({str(NCHW)!r}).read())"],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert json.loads(out.read_text())["run"].get("load") is None
