"""Benchmark: ``dnnlens analyze`` end to end on every input shape, beside the floor and beside
the tools a reader would reach for instead.

    python benchmarks/bench_speed.py                  # every shape, 5 paired rounds
    python benchmarks/bench_speed.py --quick          # 1 round, no 10M log, no converter
    python benchmarks/bench_speed.py --shapes train,tiny --repeat 3

Inputs, built from the real sample logs in ``sample_logs/`` (their headers included each
time, as if many runs were joined):

* ``train``: 1,000,000 lines of a training log (``convnet_nchw_train.log``);
* ``all``: 1,000,000 lines of ``ONEDNN_VERBOSE=all`` with timestamps
  (``all_timestamps_infer.log``: 40% diagnostics);
* ``plain`` and ``tables``: 1,000,000 lines of ``convnet_nchw_infer.log``, the second with
  ``profile_nchw_infer.table.txt`` (a printed ``key_averages()`` table) every 1,000 lines;
* ``10m``: 10,000,000 lines of the training log (1.8 GiB), also with ``-j 1`` and ``-j 2``;
* ``files``: 40 files of 50,000 lines of the training log, with ``-j 1`` and ``-j 2``;
* ``tiny``: the first 10 lines of the training log.

Each round runs, for each shape: the **floor** (plain Python reading the file's lines,
``for line in f``, timed inside its process), ``dnnlens analyze FILE --format json -o
/dev/null`` (wall time of the whole command, interpreter start-up included), **grep|awk**
(``grep ',exec,' | awk -F, '{s += $NF}'``: the sum a reader types) and oneDNN's
**verbose_converter** ``-g breakdown`` when a copy of it is found (``--verbose-converter``,
default ``/work/tools/verbose_converter/scripts/verbose_converter/verbose_converter.py``;
never part of this repository), and for ``tiny`` the **imports** every analysis needs
(``python -c "import pandas, numpy, pyarrow"``), each right after the other so that a
pair is measured under the same load: a shared machine's speed drifts between rounds,
hardly within one. Ratios
are medians of the per-round ratios. Peak memory is the largest resident set of the
command's processes (``wait4``) and the peak of the summed PSS of the command's process
tree, sampled every 20 ms in one more run of each command after the timed rounds (sampling
slows the process it reads).

Then, once per round, a child that runs the same steps as the command in one process
prints where the time goes by stage (imports; read: raw reading and decoding; scan: the
bulk scanner; fold: parts merged and events folded; events: the event table; stats: the
analysis' facts; rules; render), and ``python -X importtime`` of the ``tiny`` run says
which imports start-up pays for. No assertion: numbers, and the targets beside them.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from datetime import date
from pathlib import Path

from made_logs import build_log, build_tables

ROOT = Path(__file__).resolve().parent.parent
SAMPLES = ROOT / "sample_logs"
DEFAULT_CONVERTER = Path(
    "/work/tools/verbose_converter/scripts/verbose_converter/verbose_converter.py"
)
TRAIN = SAMPLES / "convnet_nchw_train.log"
ALL = SAMPLES / "all_timestamps_infer.log"
INFER = SAMPLES / "convnet_nchw_infer.log"
TABLE = SAMPLES / "profile_nchw_infer.table.txt"
MIB = 1 << 20
#: -j values run beside the default (dnnlens' own choice) per shape
VARIANTS = {"train": ("1",), "10m": ("1", "2")}

FLOOR = """
import sys, time
t = time.perf_counter()
n = 0
with open(sys.argv[1], encoding="utf-8", errors="replace") as f:
    for line in f:
        n += 1
print(time.perf_counter() - t)
"""

GREP_AWK = "LC_ALL=C grep -a ',exec,' \"$1\" | awk -F, '{n++; s += $NF} END {print n, s}'"

STAGES = r"""
import io, json, os, sys, time
from pathlib import Path
t0 = time.perf_counter()
import dnnlens.cli  # noqa: F401 - what the command imports first
from dnnlens.app.session import Settings, run_analyses
from dnnlens.io import inputs
from dnnlens.reading import front, read, stream
import dnnlens.model as model
from dnnlens.report.renderers import render_analysis
from dnnlens.rules.verdict import apply_rules
spent = {"scan": 0.0, "fold": 0.0, "events": 0.0}

def timed(owner, name, stage):
    real = getattr(owner, name)
    def wrapper(*args, **kwargs):
        t = time.perf_counter()
        try:
            return real(*args, **kwargs)
        finally:
            spent[stage] += time.perf_counter() - t
    setattr(owner, name, wrapper)

timed(front._Part, "feed", "scan")
timed(front._Part, "take", "scan")
timed(stream.Collector, "add", "fold")
timed(stream, "build_events", "events")
timed(stream, "build_diagnostics", "events")
t1 = time.perf_counter()
log = read([sys.argv[1]])
t2 = time.perf_counter()
settings = Settings()
analyses, _ = run_analyses(log, settings)
for a in analyses:
    a.prepare()
t3 = time.perf_counter()
for a in analyses:
    apply_rules(a, settings.rule_options())
t4 = time.perf_counter()
for a in analyses:
    render_analysis(a, "json", Path(os.devnull))
t5 = time.perf_counter()
inside = spent["scan"] + spent["fold"] + spent["events"]
print(json.dumps({"imports": t1 - t0, "read": t2 - t1 - inside, **spent,
                  "stats": t3 - t2, "rules": t4 - t3, "render": t5 - t4}))
"""


# -- inputs ------------------------------------------------------------------------------------


def _tree_pss_kib(pid: int) -> int:
    """Summed PSS of ``pid`` and its descendants (0 once it is gone)."""
    total, todo = 0, [pid]
    while todo:
        p = todo.pop()
        try:
            with open(f"/proc/{p}/smaps_rollup") as f:
                for line in f:
                    if line.startswith("Pss:"):
                        total += int(line.split()[1])
                        break
            for task in os.listdir(f"/proc/{p}/task"):
                with open(f"/proc/{p}/task/{task}/children") as f:
                    todo.extend(int(c) for c in f.read().split())
        except (OSError, ValueError):
            continue
    return total


def _measured(cmd: list[str], env: dict[str, str], sample: bool = False) -> dict:
    """:func:`run` in a fresh helper process, so that the peak RSS is this command's own."""
    code = (
        "import json, os, resource, subprocess, sys, time\n"
        "t = time.perf_counter()\n"
        "p = subprocess.run(sys.argv[1:], capture_output=True, text=True)\n"
        "dt = time.perf_counter() - t\n"
        "print(json.dumps({'seconds': dt, 'rc': p.returncode, 'out': p.stdout,"
        " 'err': p.stderr[-2000:],"
        " 'rss_kib': resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss}))\n"
    )
    peak = [0]
    done = threading.Event()
    proc = subprocess.Popen(
        [sys.executable, "-c", code, *cmd], stdout=subprocess.PIPE, text=True, env=env
    )

    def sampler() -> None:
        while not done.wait(0.02):
            peak[0] = max(peak[0], _tree_pss_kib(proc.pid))

    thread = threading.Thread(target=sampler, daemon=True) if sample else None
    if thread is not None:
        thread.start()
    out, _ = proc.communicate()
    done.set()
    if thread is not None:
        thread.join()
    r = json.loads(out)
    if r["rc"] not in (0, 1):
        raise RuntimeError(f"{' '.join(cmd)} failed ({r['rc']}): {r['err'].strip()[-400:]}")
    return {
        "seconds": r["seconds"],
        "rss_mib": r["rss_kib"] / 1024,
        "tree_mib": peak[0] / 1024 if sample else None,
        "out": r["out"],
        "err": r["err"],
    }


class Bench:
    """The commands of one benchmark run."""

    def __init__(self, converter: Path | None) -> None:
        self.env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
        self.env["PYTHONPATH"] = str(ROOT / "src")
        self.converter = converter

    def floor(self, path: Path) -> dict:
        out = subprocess.run(
            [sys.executable, "-c", FLOOR, str(path)],
            capture_output=True,
            text=True,
            check=True,
            env=self.env,
        ).stdout
        return {"seconds": float(out.strip())}

    def dnnlens(self, path: Path | list[Path], *extra: str, sample: bool = False) -> dict:
        paths = [str(p) for p in (path if isinstance(path, list) else [path])]
        cmd = [sys.executable, "-m", "dnnlens.cli", "analyze", *paths, "--format", "json"]
        return _measured([*cmd, "-o", os.devnull, *extra], self.env, sample)

    def imports(self) -> dict:
        """The libraries every analysis needs, imported and nothing else: what a 10-line
        log is measured against (its own work is start-up beside these)."""
        return _measured([sys.executable, "-c", "import pandas, numpy, pyarrow"], self.env)

    def grep_awk(self, path: Path) -> dict:
        return _measured(["sh", "-c", GREP_AWK, "sh", str(path)], self.env)

    def verbose_converter(self, path: Path) -> dict:
        assert self.converter is not None
        cmd = [sys.executable, str(self.converter), "-i", str(path), "-g", "breakdown"]
        return _measured(cmd, self.env)

    def stages(self, path: Path) -> dict:
        out = subprocess.run(
            [sys.executable, "-c", STAGES, str(path)],
            capture_output=True,
            text=True,
            check=True,
            env=self.env,
        ).stdout
        return json.loads(out.strip().splitlines()[-1])

    def two_process_ceiling(self) -> float:
        """How much faster two CPU-bound processes finish than one doing both loops: the
        most any ``-j 2`` can gain on this machine now (2.0 on two idle, unshared cores)."""
        loop = "s = 0\nfor i in range(12_000_000):\n    s += i * i"
        cmd = [sys.executable, "-c", loop]
        t = time.perf_counter()
        for _ in range(2):
            subprocess.run(cmd, check=True, env=self.env)
        serial = time.perf_counter() - t
        t = time.perf_counter()
        procs = [subprocess.Popen(cmd, env=self.env) for _ in range(2)]
        for proc in procs:
            proc.wait()
        return serial / (time.perf_counter() - t)

    def startup(self) -> dict:
        """Start-up alone: the interpreter, ``import dnnlens.cli``, ``dnnlens --help``."""
        py = [sys.executable]
        return {
            "python": _measured([*py, "-c", "pass"], self.env)["seconds"],
            "import dnnlens.cli": _measured([*py, "-c", "import dnnlens.cli"], self.env)["seconds"],
            "dnnlens --help": _measured([*py, "-m", "dnnlens.cli", "--help"], self.env)["seconds"],
        }

    def importtime(self, path: Path) -> tuple[float, list[tuple[str, float]]]:
        """``-X importtime`` of the command on ``path``: total ms and the heaviest packages."""
        cmd = [sys.executable, "-X", "importtime", "-m", "dnnlens.cli", "analyze", str(path)]
        err = subprocess.run(
            [*cmd, "--format", "json", "-o", os.devnull],
            capture_output=True,
            text=True,
            env=self.env,
        ).stderr
        by_top: dict[str, float] = {}
        total = 0.0
        for line in err.splitlines():
            m = re.match(r"import time:\s+(\d+) \|\s+(\d+) \|( *)(\S+)", line)
            if not m:
                continue
            self_us, name = int(m.group(1)), m.group(4)
            total += self_us
            top = name.split(".")[0]
            by_top[top] = by_top.get(top, 0.0) + self_us
        heavy = sorted(by_top.items(), key=lambda kv: -kv[1])[:8]
        return total / 1e3, [(k, v / 1e3) for k, v in heavy]


# -- the table ---------------------------------------------------------------------------------


def median(values: list[float]) -> float:
    return statistics.median(values) if values else float("nan")


def ratios(pairs: list[tuple[dict, dict]]) -> list[float]:
    return [b["seconds"] / a["seconds"] for a, b in pairs]


def chosen_jobs(pairs: list[tuple[dict, dict]]) -> str:
    """The ``-j`` dnnlens chose in each round (its note on stderr says when it is not 1)."""
    found = [re.search(r"reading with (\d+) processes", p[1]["err"]) for p in pairs]
    counts: dict[str, int] = {}
    for m in found:
        key = m.group(1) if m else "1"
        counts[key] = counts.get(key, 0) + 1
    return ", ".join(f"-j {k} x{n}" for k, n in sorted(counts.items()))


def relative(a: list[tuple[dict, dict]], b: list[tuple[dict, dict]]) -> list[float]:
    """Per round, the time of ``a``'s command over ``b``'s (both paired with a floor)."""
    return [x[1]["seconds"] / y[1]["seconds"] for x, y in zip(a, b, strict=True)] if b else []


def fmt_ratio(values: list[float]) -> str:
    if not values:
        return "-"
    if len(values) == 1:
        return f"{values[0]:.2f}"
    return f"{median(values):.2f} ({min(values):.2f}-{max(values):.2f})"


def _compile_package() -> None:
    """Byte-compile dnnlens, as installing a wheel does: an editable install in an
    environment with PYTHONDONTWRITEBYTECODE set would compile every module on every run
    (0.1 to 0.2 s of each command here), which no installed copy does."""
    import compileall

    import dnnlens

    compileall.compile_dir(str(Path(dnnlens.__file__).parent), quiet=1)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=5, help="paired rounds (default 5)")
    ap.add_argument("--shapes", default="tiny,train,all,plain,tables,10m,files")
    ap.add_argument("--lines", type=int, default=1_000_000, help="lines of the 1M shapes")
    ap.add_argument("--big-lines", type=int, default=10_000_000, help="lines of the 10m shape")
    ap.add_argument("--verbose-converter", type=Path, default=DEFAULT_CONVERTER)
    ap.add_argument(
        "--converter-max-lines",
        type=int,
        default=1_000_000,
        help="skip the converter on larger inputs (about 14 s per million lines)",
    )
    ap.add_argument("--quick", action="store_true", help="1 round, no 10m, no converter")
    ap.add_argument("--workdir", type=Path, default=None)
    ap.add_argument("--json", type=Path, default=None, help="write every measurement here")
    args = ap.parse_args()
    shapes = args.shapes.split(",")
    if args.quick:
        args.repeat = 1
        shapes = [s for s in shapes if s != "10m"]
    converter = args.verbose_converter if args.verbose_converter.is_file() else None
    if args.quick:
        converter = None
    _compile_package()
    bench = Bench(converter)
    work = args.workdir or Path(tempfile.mkdtemp(prefix="dnnlens-speed-"))
    work.mkdir(parents=True, exist_ok=True)
    inputs: dict[str, Path | list[Path]] = {}
    lines_of: dict[str, int] = {}
    for shape in shapes:
        path = work / f"{shape}.log"
        if shape == "tiny":
            build_log(TRAIN, 10, path)
            lines_of[shape] = 10
        elif shape == "train":
            build_log(TRAIN, args.lines, path)
            lines_of[shape] = args.lines
        elif shape == "all":
            build_log(ALL, args.lines, path)
            lines_of[shape] = args.lines
        elif shape == "plain":
            build_tables(INFER, TABLE, path, args.lines, None)
            lines_of[shape] = args.lines
        elif shape == "tables":
            build_tables(INFER, TABLE, path, args.lines, 1000)
            lines_of[shape] = args.lines
        elif shape == "10m":
            build_log(TRAIN, args.big_lines, path)
            lines_of[shape] = args.big_lines
        elif shape == "files":
            paths = []
            for i in range(40):
                p = work / f"files-{i:02d}.log"
                build_log(TRAIN, 50_000, p)
                paths.append(p)
            inputs[shape] = paths
            lines_of[shape] = 40 * 50_000
            continue
        else:
            raise SystemExit(f"unknown shape {shape}")
        inputs[shape] = path

    # warm up: bytecode caches written, files in the page cache
    for path in inputs.values():
        for p in path if isinstance(path, list) else [path]:
            bench.floor(p)
    bench.dnnlens(work / "tiny.log" if "tiny" in inputs else next(iter(inputs.values())))

    results: dict[str, dict[str, list]] = {s: {} for s in shapes}

    def add(shape: str, tool: str, value: object) -> None:
        results[shape].setdefault(tool, []).append(value)

    startups: list[dict] = []
    ceilings: list[float] = []
    loads: list[float] = []
    stage_runs: dict[str, list[dict]] = {s: [] for s in shapes}
    try:
        for rnd in range(args.repeat):
            print(f"round {rnd + 1}/{args.repeat}", file=sys.stderr, flush=True)
            loads.append(os.getloadavg()[0])
            startups.append(bench.startup())
            if "10m" in shapes or "files" in shapes:
                ceilings.append(bench.two_process_ceiling())
            for shape in shapes:
                path = inputs[shape]
                first = path[0] if isinstance(path, list) else path
                if shape == "files":
                    for j in ("1", "2"):
                        add(shape, f"-j {j}", bench.dnnlens(path, "-j", j))
                    add(shape, "auto", bench.dnnlens(path))
                    continue
                floor = bench.floor(first)
                add(shape, "floor", floor)
                add(shape, "dnnlens", (floor, bench.dnnlens(path)))
                for jobs in VARIANTS.get(shape, ()):
                    run = bench.dnnlens(path, "-j", jobs)
                    add(shape, f"-j {jobs}", (floor, run))
                add(shape, "grep|awk", (floor, bench.grep_awk(path)))
                if shape == "tiny":
                    add(shape, "imports", (floor, bench.imports()))
                if converter is not None and lines_of[shape] <= args.converter_max_lines:
                    add(shape, "converter", (floor, bench.verbose_converter(path)))
                if shape != "files":
                    stage_runs[shape].append(bench.stages(first))
        trees = memory_pass(bench, shapes, inputs)
        imports = bench.importtime(work / "tiny.log") if "tiny" in inputs else None
    finally:
        if args.workdir is None:
            shutil.rmtree(work, ignore_errors=True)

    report(
        args,
        shapes,
        lines_of,
        results,
        startups,
        stage_runs,
        imports,
        converter,
        loads,
        ceilings,
        trees,
    )
    if args.json:
        plain = {
            s: {t: [v if isinstance(v, dict) else list(v) for v in vs] for t, vs in r.items()}
            for s, r in results.items()
        }
        for r in plain.values():
            for vs in r.values():
                for v in vs:
                    for d in v if isinstance(v, list) else [v]:
                        d.pop("out", None)
                        d.pop("err", None)
        args.json.write_text(
            json.dumps(
                {"results": plain, "startup": startups, "stages": stage_runs, "ceilings": ceilings},
                indent=1,
            )
        )


def _cpu_name() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown CPU"


def memory_pass(bench: Bench, shapes: list[str], inputs: dict) -> dict[tuple[str, str], float]:
    """One more run of each command with its process tree's PSS sampled every 20 ms.

    Apart from the timed rounds: reading ``/proc/PID/smaps_rollup`` that often slows the
    process it reads (0.1 s of a 10-line run, 0.2 s of a 1M-line one), so the timed runs
    report the largest process's peak (``ru_maxrss``) and this pass the tree's sum.
    """
    trees: dict[tuple[str, str], float] = {}
    for shape in shapes:
        path = inputs[shape]
        variants = [("-j 1", ("-j", "1")), ("-j 2", ("-j", "2")), ("auto", ())]
        if shape != "files":
            variants = [("dnnlens", ())] + [(f"-j {j}", ("-j", j)) for j in VARIANTS.get(shape, ())]
        for tool, extra in variants:
            trees[(shape, tool)] = bench.dnnlens(path, *extra, sample=True)["tree_mib"] or 0.0
    return trees


def report(
    args: argparse.Namespace,
    shapes: list[str],
    lines_of: dict[str, int],
    results: dict[str, dict[str, list]],
    startups: list[dict],
    stage_runs: dict[str, list[dict]],
    imports: tuple[float, list[tuple[str, float]]] | None,
    converter: Path | None,
    loads: list[float],
    ceilings: list[float],
    trees: dict[tuple[str, str], float],
) -> None:
    """Print the results table, the stages, start-up and the targets."""
    print(
        f"dnnlens speed, {date.today().isoformat()}, {_cpu_name()}, {os.cpu_count()} CPUs, "
        f"Python {platform.python_version()}; {args.repeat} paired round(s), medians "
        "(range); converter "
        + ("present" if converter else "absent: skipped")
        + (f"; 1-minute load average {min(loads):.1f} to {max(loads):.1f}" if loads else "")
    )
    print(
        "dnnlens: the whole command, start-up included, -j chosen by dnnlens unless given; "
        "floor: plain Python line reading, start-up excluded"
    )
    print()
    print("| input | lines | dnnlens s | x floor | x grep\\|awk | x converter | peak RSS MiB |")
    print("|---|---|---|---|---|---|---|")
    summary: dict[str, dict[str, float]] = {}
    for shape in shapes:
        r = results[shape]
        if shape == "files":
            for tool in ("-j 1", "-j 2", "auto"):
                runs = r.get(tool, [])
                secs = median([x["seconds"] for x in runs])
                tree = trees.get((shape, tool), 0.0)
                summary[f"files {tool}"] = {"seconds": secs, "tree_mib": tree}
                label = tool if tool != "auto" else f"auto ({chosen_jobs([(x, x) for x in runs])})"
                print(
                    f"| 40 files, {label} | {lines_of[shape]:,} | {secs:.2f} | - | - | - |"
                    f" {tree:.0f} (tree) |"
                )
            continue
        floor_s = median([x["seconds"] for x in r["floor"]])
        gr = median([p[1]["seconds"] for p in r.get("grep|awk", [])])
        for tool in ("dnnlens", "-j 1", "-j 2"):
            pairs = r.get(tool)
            if not pairs:
                continue
            secs = median([p[1]["seconds"] for p in pairs])
            rss = max(p[1]["rss_mib"] for p in pairs)
            tree = trees.get((shape, tool), 0.0)
            x_floor = ratios(pairs)
            grep_pairs = r.get("grep|awk", [])
            x_grep = relative(pairs, grep_pairs)
            conv_pairs = r.get("converter", [])
            x_conv = relative(pairs, conv_pairs)
            label = shape if tool == "dnnlens" else f"{shape} {tool}"
            if tool == "dnnlens":
                label += f" ({chosen_jobs(pairs)})"
            summary[shape if tool == "dnnlens" else f"{shape} {tool}"] = {
                "seconds": secs,
                "x_floor": median(x_floor),
                "x_grep": median(x_grep),
                "x_conv": median(x_conv) if x_conv else float("nan"),
                "rss_mib": rss,
                "tree_mib": tree,
            }
            mem = f"{rss:.0f} ({tree:.0f} tree)"
            print(
                f"| {label} | {lines_of[shape]:,} | {secs:.3f} | "
                f"{fmt_ratio(x_floor) if shape != 'tiny' else '-'} | {fmt_ratio(x_grep)} | "
                f"{fmt_ratio(x_conv)} | {mem} |"
            )
        conv = r.get("converter", [])
        extra = (
            f"converter {median([c[1]['seconds'] for c in conv]):.2f} s,"
            f" {max(c[1]['rss_mib'] for c in conv):.0f} MiB; "
            if conv
            else ""
        )
        print(f"|  | floor {floor_s:.3f} s; grep\\|awk {gr:.3f} s; {extra} | | | | | |")
    print()
    print("Where the time goes (s, medians; one process doing what the command does)")
    names = ("imports", "read", "scan", "fold", "events", "stats", "rules", "render")
    print("| input | " + " | ".join(names) + " |")
    print("|---" * (len(names) + 1) + "|")
    for shape in shapes:
        runs = stage_runs.get(shape) or []
        if runs:
            cells = " | ".join(f"{median([x[n] for x in runs]):.3f}" for n in names)
            print(f"| {shape} | {cells} |")
    print()
    if startups:
        cells = ", ".join(f"{k} {median([s[k] for s in startups]):.3f} s" for k in startups[0])
        print(f"Start-up alone: {cells}")
    if ceilings:
        print(
            f"Two CPU-bound processes against one doing both: {median(ceilings):.2f}x "
            f"({min(ceilings):.2f}-{max(ceilings):.2f}), the most -j 2 can gain here"
        )
    if imports is not None:
        total, heavy = imports
        top = ", ".join(f"{k} {v:.0f}" for k, v in heavy)
        print(f"-X importtime of the tiny run: {total:.0f} ms of imports; by package (ms): {top}")
    print()
    _targets(summary, results, startups)


def _targets(
    summary: dict[str, dict[str, float]],
    results: dict[str, dict[str, list]],
    startups: list[dict],
) -> None:
    def line(ok: bool | None, text: str) -> None:
        mark = "n/a " if ok is None else ("held" if ok else "MISS")
        print(f"  [{mark}] {text}")

    print("Targets")
    t = summary.get("train -j 1")
    if t:
        line(
            t["x_floor"] <= 4 and t["rss_mib"] <= 200,
            f"1M training log, -j 1, <= 4x floor and <= 200 MiB: {t['x_floor']:.2f}x, "
            f"{t['rss_mib']:.0f} MiB",
        )
    p, tb = summary.get("plain"), summary.get("tables")
    if p and tb:
        pairs = zip(results["plain"]["dnnlens"], results["tables"]["dnnlens"], strict=True)
        rel = median([b[1]["seconds"] / a[1]["seconds"] for a, b in pairs])
        line(rel <= 1.5, f"table-mixed 1M <= 1.5x the plain one: {rel:.2f}x")
    tiny = summary.get("tiny")
    if tiny:
        pairs = zip(results["tiny"]["dnnlens"], results["tiny"]["imports"], strict=True)
        rel = median([a[1]["seconds"] / b[1]["seconds"] for a, b in pairs])
        base = median([b[1]["seconds"] for b in results["tiny"]["imports"]])
        line(
            rel <= 1.2,
            f"10-line log <= 1.2x importing pandas, numpy, pyarrow: {rel:.2f}x "
            f"({tiny['seconds']:.3f} s against {base:.3f} s)",
        )
    if startups:
        helps = [s["dnnlens --help"] for s in startups]
        line(median(helps) <= 0.25, f"dnnlens --help <= 0.25 s: {median(helps):.3f} s")
    for shape in ("train", "10m"):
        auto, one = results.get(shape, {}).get("dnnlens"), results.get(shape, {}).get("-j 1")
        if auto and one:
            rel = median(
                [a[1]["seconds"] / b[1]["seconds"] for a, b in zip(auto, one, strict=True)]
            )
            # 5%: how far apart paired medians of two identical commands land here (the
            # default and -j 1 both reading with one process: 0.90 to 1.05)
            line(
                rel <= 1.05,
                f"{shape}: the default -j ({chosen_jobs(auto)}) no slower than -j 1: "
                f"{rel:.2f}x its time",
            )
    j1, j2 = summary.get("10m -j 1"), summary.get("10m -j 2")
    if j1 and j2:
        pairs = zip(results["10m"]["-j 1"], results["10m"]["-j 2"], strict=True)
        speedup = median([a[1]["seconds"] / b[1]["seconds"] for a, b in pairs])
        line(
            speedup >= 1.5 and j2["tree_mib"] <= 300,
            f"-j 2 >= 1.5x faster than -j 1 on 10M at <= 300 MiB: {speedup:.2f}x, "
            f"{j2['tree_mib']:.0f} MiB (tree PSS)",
        )
    if j1:
        flat = f"{j1['rss_mib']:.0f} MiB vs {t['rss_mib']:.0f} at 1M" if t else ""
        line(
            j1["x_floor"] <= 2.5 and (not t or j1["rss_mib"] <= t["rss_mib"] * 1.1),
            f"10M lines, -j 1, <= 2.5x floor, memory flat from 1M: {j1['x_floor']:.2f}x, {flat}",
        )
    f1, f2 = summary.get("files -j 1"), summary.get("files -j 2")
    if f1 and f2:
        line(
            f2["seconds"] < f1["seconds"],
            f"many files: -j 2 faster than -j 1: {f1['seconds']:.2f} s -> {f2['seconds']:.2f} s",
        )


if __name__ == "__main__":
    main()
