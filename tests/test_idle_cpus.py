"""The CPUs other work left idle, from two looks at /proc/stat: hand-computed on fake
contents, and the command's first look taken before its imports, at no import cost."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from dnnlens.io import idle_cpus
from dnnlens.io.idle_cpus import Look, idle_between, parse_stat

ROOT = Path(__file__).resolve().parent.parent

#: The layout of a real /proc/stat (Linux 6.1): the all-CPUs line, one line per CPU
#: (user nice system idle iowait irq softirq steal guest guest_nice), then other counters.
STAT = b"""cpu  200 0 100 1000 50 0 10 5 7 0
cpu0 120 0 60 400 30 0 5 3 7 0
cpu1 80 0 40 600 20 0 5 2 0 0
intr 732612 0 0 0
ctxt 1234
cpu2x 1 2 3 4
"""


def test_each_cpu_line_gives_its_busy_and_all_ticks() -> None:
    """cpu0: busy 120 + 60 + 5 + 3 = 188 (idle 400 and iowait 30 left out, guest 7 is
    inside user already), all 618; cpu1: busy 80 + 40 + 5 + 2 = 127, all 747. The
    all-CPUs line and a line that does not read are no CPU."""
    assert parse_stat(STAT) == {0: (188, 618), 1: (127, 747)}


def test_an_old_kernels_shorter_lines_are_read() -> None:
    """Linux before 2.6 printed user, nice, system, idle only: busy 10 + 5 = 15 of 115."""
    assert parse_stat(b"cpu  10 0 5 100\ncpu0 10 0 5 100\n") == {0: (15, 115)}


def _look(busy0: int, all0: int, busy1: int, all1: int, own: float) -> Look:
    return Look({0: (busy0, all0), 1: (busy1, all1)}, own, 0.0)


@pytest.mark.parametrize(
    ("after", "idle"),
    [
        # 0.5 s at 100 ticks/s: 50 ticks per CPU. This process ran 0.45 s (45 ticks).
        # cpu0 all busy, cpu1 busy 20: 70 - 45 = 25 ticks of others, half a CPU: 1.5 idle
        (_look(238, 668, 147, 797, 1.45), 1.5),
        # a spinner on cpu1 as well: 100 - 45 = 55 ticks, 1.1 CPUs: 0.9 idle
        (_look(238, 668, 177, 797, 1.45), 0.9),
        # only this process: 45 busy ticks, all its own: both idle
        (_look(233, 668, 127, 797, 1.45), 2.0),
        # the kernel counted fewer busy ticks than this process's own (ticks are sampled):
        # nobody else, not a negative count
        (_look(228, 668, 127, 797, 1.45), 2.0),
        # both CPUs kept busy by others the whole time, this process slept
        (_look(238, 668, 177, 797, 1.0), 0.0),
    ],
)
def test_idle_is_what_others_left_over_the_interval(after: Look, idle: float) -> None:
    before = _look(188, 618, 127, 747, 1.0)
    assert idle_between(before, after, {0, 1}, 100) == pytest.approx(idle)


def test_only_the_cpus_this_process_may_use_count() -> None:
    """Affinity {1}: cpu1 was busy 20 of 50 ticks while this process ran 0.1 s (10 ticks):
    10 ticks of others, 0.2 of the one CPU, 0.8 idle; cpu0's spinner is not ours to
    count. A CPU missing from a look (taken offline) is not counted."""
    before = _look(188, 618, 127, 747, 1.0)
    after = _look(238, 668, 147, 797, 1.1)
    assert idle_between(before, after, {1}, 100) == pytest.approx(0.8)
    assert idle_between(before, after, {1, 5}, 100) == pytest.approx(0.8)


def test_no_tick_is_no_measure() -> None:
    same = _look(188, 618, 127, 747, 1.0)
    assert idle_between(same, same, {0, 1}, 100) is None
    assert idle_between(same, same, {7}, 100) is None


def test_without_proc_stat_there_is_no_measure(monkeypatch, tmp_path: Path) -> None:
    monkeypatch.setattr(idle_cpus, "PROC_STAT", str(tmp_path / "absent"))
    monkeypatch.setattr(idle_cpus, "_start", [])
    assert idle_cpus.look() is None
    assert idle_cpus.idle_since_start({0, 1}) is None
    (tmp_path / "absent").write_bytes(b"intr 1 2 3\n")  # readable, but no CPU line
    assert idle_cpus.look() is None


def _fake_looks(monkeypatch, looks: list[Look]) -> list[float]:
    """``look()`` gives ``looks`` in turn; what was slept is returned, not slept."""
    slept: list[float] = []
    monkeypatch.setattr(idle_cpus, "look", lambda: looks.pop(0))
    monkeypatch.setattr(idle_cpus.time, "sleep", slept.append)
    monkeypatch.setattr(idle_cpus.time, "monotonic", lambda: 100.0)
    monkeypatch.setattr(idle_cpus.os, "sysconf", lambda name: 100)
    return slept


def test_the_interval_starts_at_the_commands_first_look(monkeypatch) -> None:
    """A first look 0.5 s old: measured from it (1.5 idle, as above), nothing waited."""
    first = Look({0: (188, 618), 1: (127, 747)}, 1.0, 99.5)
    monkeypatch.setattr(idle_cpus, "_start", [first])
    slept = _fake_looks(monkeypatch, [_look(238, 668, 147, 797, 1.45)])
    assert idle_cpus.idle_since_start({0, 1}) == pytest.approx(1.5)
    assert slept == []


@pytest.mark.parametrize("start", [[], [Look({0: (0, 0), 1: (0, 0)}, 0.0, 90.0)]])
def test_no_first_look_or_an_old_one_is_a_fresh_interval(monkeypatch, start) -> None:
    """No first look (a library caller) or one older than MAX_SECONDS (10 s here): a fresh
    one, and the interval waited for (MIN_SECONDS)."""
    monkeypatch.setattr(idle_cpus, "_start", start)
    fresh = Look({0: (188, 618), 1: (127, 747)}, 1.0, 100.0)
    slept = _fake_looks(monkeypatch, [fresh, _look(238, 668, 147, 797, 1.45)])
    assert idle_cpus.idle_since_start({0, 1}) == pytest.approx(1.5)
    assert slept == [pytest.approx(idle_cpus.MIN_SECONDS)]


def _run(code: str) -> str:
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True
    )
    return done.stdout.strip()


def test_the_first_look_imports_nothing() -> None:
    """Taking the first look adds no module but its own to what ``import dnnlens`` has."""
    code = (
        "import sys\n"
        "import dnnlens\n"
        "before = set(sys.modules)\n"
        "from dnnlens.io import idle_cpus\n"
        "idle_cpus.mark_start()\n"
        "print(sorted(set(sys.modules) - before))\n"
    )
    assert _run(code) == "['dnnlens.io', 'dnnlens.io.idle_cpus']"


@pytest.mark.skipif(not Path(idle_cpus.PROC_STAT).exists(), reason="needs Linux /proc/stat")
def test_the_command_looks_before_its_imports() -> None:
    """``import dnnlens.cli`` (the entry point's module) has taken the first look by the
    time it imports typer, the first of the command's imports."""
    code = (
        "import sys\n"
        "seen = []\n"
        "class Watch:\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if name == 'typer' and not seen:\n"
        "            idle = sys.modules.get('dnnlens.io.idle_cpus')\n"
        "            seen.append(bool(idle and idle._start))\n"
        "sys.meta_path.insert(0, Watch())\n"
        "import dnnlens.cli\n"
        "print(seen)\n"
    )
    assert _run(code) == "[True]"
