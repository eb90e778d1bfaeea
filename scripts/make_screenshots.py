"""Render five sample reports to HTML and screenshot them with headless Chromium.

The pictures in ``docs/img/`` are made by this script, from the bundled sample logs::

    python3 scripts/make_screenshots.py            # needs Debian's chromium on PATH

Each page is rendered by ``dnnlens analyze -f html`` and shot at 1280 px wide, top of the
page (the banner, the contents, the cards and the first findings).
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "docs" / "img"
#: picture name -> the inputs of its report
REPORTS = {
    "report-nchw.png": ["sample_logs/convnet_nchw_infer.log"],
    "report-lstm-train.png": ["sample_logs/lstm_train.log"],
    "report-contended.png": ["sample_logs/contended_infer.log"],
    "report-profiler-pair.png": [
        "sample_logs/framework/layout_bad.log",
        "sample_logs/framework/layout_bad.trace.json.gz",
    ],
    "report-trace.png": ["sample_logs/framework/focal_bad.trace.json.gz"],
}
FLAGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
    "--hide-scrollbars",
]  # fmt: skip


def main() -> int:
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if chromium is None:
        print("chromium is not installed", file=sys.stderr)
        return 2
    OUT.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        for name, inputs in REPORTS.items():
            page = Path(tmp) / (name + ".html")
            subprocess.run(
                [sys.executable, "-m", "dnnlens", "analyze", *inputs, "-q", "-f", "html",
                 "-o", str(page)],
                cwd=ROOT, check=True,
            )  # fmt: skip
            subprocess.run(
                [chromium, *FLAGS, f"--user-data-dir={tmp}/profile", "--window-size=1280,1500",
                 f"--screenshot={OUT / name}", page.as_uri()],
                check=True, capture_output=True, timeout=180,
            )  # fmt: skip
            print(f"wrote {OUT / name}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
