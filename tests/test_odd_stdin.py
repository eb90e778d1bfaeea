"""Standard input that is not a pipe, a file or a terminal: a character device such as
``/dev/zero`` never ends, so ``dnnlens analyze - < /dev/zero`` is refused at once, in one
line, as ``/dev/zero`` named as a path is; the other inputs are still analysed
(docs/input-policy.md, "Devices"). ``/dev/null`` is empty standard input.

Hand counts (tests/test_sample_logs.py): ``sample_logs/convnet_nchw_infer.log`` has 338
lines and 165 exec lines.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
NCHW = ROOT / "sample_logs" / "convnet_nchw_infer.log"
NCHW_LINES, NCHW_EXECS = 338, 165
WAIT = 60


def _analyze(stdin: str, *args: str) -> subprocess.CompletedProcess[bytes]:
    with open(stdin, "rb") as device:
        return subprocess.run(
            [sys.executable, "-m", "dnnlens.cli", "analyze", *args],
            stdin=device,
            capture_output=True,
            timeout=WAIT,
        )


def _errors(err: bytes) -> list[str]:
    return [line for line in err.decode().splitlines() if line.startswith("dnnlens: error:")]


def test_dev_zero_as_standard_input_is_refused_like_the_path() -> None:
    proc = _analyze("/dev/zero", "-")
    assert proc.returncode == 2, proc.stderr
    assert _errors(proc.stderr) == [
        "dnnlens: error: standard input: is a device (/dev/zero), not a file, pipe or terminal"
    ]
    assert b"Traceback" not in proc.stderr


def test_the_log_beside_a_device_on_standard_input_is_analysed() -> None:
    proc = _analyze("/dev/zero", "-f", "json", str(NCHW), "-")
    assert proc.returncode == 2, proc.stderr
    doc = json.loads(proc.stdout)
    assert doc["inputs"][0]["lines"] == NCHW_LINES
    assert doc["summary"]["exec_count"] == NCHW_EXECS
    assert len(_errors(proc.stderr)) == 1


def test_dev_null_as_standard_input_is_empty_input() -> None:
    proc = _analyze("/dev/null", "-")
    assert proc.returncode == 2, proc.stderr
    assert _errors(proc.stderr) == ["dnnlens: error: standard input was empty: nothing to analyse"]
