"""Benchmark: what the live view costs on a long pipe shown in a terminal.

    python benchmarks/bench_live.py                 # 1,000,000 lines
    python benchmarks/bench_live.py --repeat 5

Builds a log of ``--lines`` lines (as ``bench_scan.py`` does) and pipes it, with ``cat``,
into ``dnnlens analyze - --tee -f json -o /dev/null`` whose standard output and standard
error are a pseudo-terminal (the program's lines have to reach the terminal either way; a
thread reads them off it, as a terminal would). Each round runs ``--no-live`` and then the
live view, one after the other, so the pair is measured under the same load; the table
gives the medians and the median of the paired ratios. Start-up is included (the same in
both). No assertion: numbers.
"""

from __future__ import annotations

import argparse
import fcntl
import os
import pty
import statistics
import struct
import subprocess
import sys
import tempfile
import termios
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_scan import ROOT, build_log  # noqa: E402 - the same log as the scan benchmark


def run_in_terminal(path: Path, live: bool) -> dict:
    """One run; its seconds and the bytes the terminal received."""
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 50, 200, 0, 0))
    received = 0

    def drain() -> None:
        nonlocal received
        while True:
            try:
                data = os.read(master, 1 << 16)
            except OSError:  # the last writer closed the terminal
                return
            if not data:
                return
            received += len(data)

    reader = threading.Thread(target=drain, daemon=True)
    reader.start()
    command = [sys.executable, "-m", "dnnlens.cli", "analyze", "-", "--tee"]
    command += ["-f", "json", "-o", os.devnull, "--live" if live else "--no-live"]
    t = time.perf_counter()
    cat = subprocess.Popen(["cat", str(path)], stdout=subprocess.PIPE)
    proc = subprocess.Popen(command, stdin=cat.stdout, stdout=slave, stderr=slave)
    assert cat.stdout is not None
    cat.stdout.close()
    code = proc.wait()
    seconds = time.perf_counter() - t
    cat.wait()
    os.close(slave)
    reader.join(30)
    os.close(master)
    if code:
        raise SystemExit(f"dnnlens exited with {code}")
    return {"seconds": seconds, "terminal_mib": received / 2**20}


def main() -> None:
    """Build the log, run the pairs, print a table."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--lines", type=int, default=1_000_000)
    ap.add_argument("--source", type=Path, default=ROOT / "sample_logs/convnet_nchw_infer.log")
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="dnnlens-bench-live-") as tmp:
        path = Path(tmp) / f"bench-{args.lines}.log"
        build_log(args.source, args.lines, path)
        size_mib = path.stat().st_size / 2**20
        pairs = [
            (run_in_terminal(path, live=False), run_in_terminal(path, live=True))
            for _ in range(args.repeat)
        ]
    print(
        f"{args.lines:,} lines, {size_mib:,.0f} MiB, piped into `dnnlens analyze - --tee` on a "
        f"pseudo-terminal; {os.cpu_count()} CPUs; {args.repeat} paired rounds, medians"
    )
    print(f"{'view':<10} {'seconds':>8} {'lines/s':>12} {'x no view':>10} {'(range)':>11}")
    plain = statistics.median(p["seconds"] for p, _ in pairs)
    live = statistics.median(lv["seconds"] for _, lv in pairs)
    ratios = [lv["seconds"] / p["seconds"] for p, lv in pairs]
    print(f"{'--no-live':<10} {plain:>8.2f} {args.lines / plain:>12,.0f} {1:>10.2f} {'':>11}")
    span = f"{min(ratios):.2f}-{max(ratios):.2f}"
    print(
        f"{'live':<10} {live:>8.2f} {args.lines / live:>12,.0f} "
        f"{statistics.median(ratios):>10.2f} {span:>11}"
    )
    extra = statistics.median(lv["terminal_mib"] - p["terminal_mib"] for p, lv in pairs)
    print(f"the live view wrote {extra:.2f} MiB more to the terminal (redraws)")


if __name__ == "__main__":
    main()
