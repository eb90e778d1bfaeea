"""The process ends without the interpreter's teardown, but with everything a normal exit
does that a finished command needs: threads waited for, exit handlers run, output flushed."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

PROGRAM = """
import atexit, sys, threading, time
from pathlib import Path
from dnnlens.cli import _end_process
out = Path(sys.argv[1])
def late():
    time.sleep(0.2)
    (out / "thread").write_text("done")
threading.Thread(target=late).start()
atexit.register(lambda: (out / "atexit").write_text("ran"))
sys.stdout.write("unflushed")
_end_process(eval(sys.argv[2]))
"""


@pytest.mark.parametrize(
    ("code", "rc", "stderr"), [("None", 0, ""), ("1", 1, ""), ("'a message'", 1, "a message\n")]
)
def test_threads_handlers_and_output_survive(
    tmp_path: Path, code: str, rc: int, stderr: str
) -> None:
    run = subprocess.run(
        [sys.executable, "-c", PROGRAM, str(tmp_path), code], capture_output=True, text=True
    )
    assert (run.returncode, run.stdout, run.stderr) == (rc, "unflushed", stderr)
    assert (tmp_path / "thread").read_text() == "done"
    assert (tmp_path / "atexit").read_text() == "ran"
