"""Outputs: never over an input, the good inputs written beside a bad one, and a failed write
one line with its own exit code (docs/input-policy.md, "Output").

Exit codes: 2 an output that cannot be opened or is an input; 4 an output that fails once
open (disk full, I/O error, standard output closed); 141 a reader that went away early.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from dnnlens.cli import app
from dnnlens.errors import EXIT_OUTPUT, EXIT_USAGE

ROOT = Path(__file__).resolve().parent.parent
NCHW = ROOT / "sample_logs" / "convnet_nchw_infer.log"
FULL = Path("/dev/full")
POSIX = pytest.mark.skipif(sys.platform == "win32", reason="POSIX descriptors")


def invoke(*args: str):  # noqa: ANN201 - click Result
    result = CliRunner().invoke(app, list(args))
    assert "Traceback" not in result.stderr
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    return result


@pytest.fixture
def log(tmp_path: Path) -> Path:
    path = tmp_path / "run.log"
    shutil.copy(NCHW, path)
    return path


COMMANDS = {
    "analyze": ["analyze", "{log}", "-o", "{out}"],
    "analyze json": ["analyze", "{log}", "-f", "json", "-o", "{out}"],
    "analyze html": ["analyze", "{log}", "-f", "html", "-o", "{out}"],
    "export perfetto": ["export", "perfetto", "{log}", "-o", "{out}"],
    "export benchdnn": ["export", "benchdnn", "{log}", "-o", "{out}"],
    "graph": ["graph", "{log}", "-f", "dot", "-o", "{out}"],
}


def command(name: str, log: str, out: str) -> list[str]:
    return [a.format(log=log, out=out) for a in COMMANDS[name]]


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_an_input_is_never_overwritten(log: Path, name: str) -> None:
    before = log.read_bytes()
    link = log.with_name("link.log")
    link.symlink_to(log)
    for out in (log, link):
        result = invoke(*command(name, str(log), str(out)))
        assert result.exit_code == EXIT_USAGE
        (line,) = result.stderr.splitlines()
        assert (
            line == f"dnnlens: error: {out}: is an input of this run; the output would replace it"
        )
        assert log.read_bytes() == before


@pytest.mark.parametrize("name", ["export perfetto", "export benchdnn", "graph"])
def test_an_export_with_a_bad_input_still_writes_the_good_one(
    log: Path, tmp_path: Path, name: str
) -> None:
    out = tmp_path / "out.txt"
    missing = tmp_path / "missing.log"
    args = command(name, str(log), str(out))
    result = invoke(*args[:-2], str(missing), *args[-2:])
    assert result.exit_code == EXIT_USAGE
    assert out.stat().st_size > 0
    errors = [x for x in result.stderr.splitlines() if x.startswith("dnnlens: error:")]
    assert errors == [f"dnnlens: error: {missing}: no such file or directory"]
    if name == "export perfetto":  # the good input is all there
        trace = json.loads(out.read_text())
        assert trace["otherData"]["inputs"] == [str(log)]


def test_a_table_export_with_a_bad_input_still_writes_the_good_one(
    log: Path, tmp_path: Path
) -> None:
    result = invoke("export", "csv", str(log), str(tmp_path / "nope.log"), "-o", str(tmp_path))
    assert result.exit_code == EXIT_USAGE
    assert list((tmp_path / "events").glob("run=run/rank=0/part-0.csv"))


@pytest.mark.skipif(not FULL.exists(), reason="no /dev/full")
@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_a_full_disk_is_an_output_error(log: Path, name: str) -> None:
    result = invoke(*command(name, str(log), str(FULL)))
    assert result.exit_code == EXIT_OUTPUT
    (line,) = result.stderr.splitlines()
    assert line == f"dnnlens: error: {FULL}: cannot write (No space left on device)"


def test_an_output_in_a_missing_directory_is_still_a_usage_error(log: Path, tmp_path: Path) -> None:
    result = invoke("graph", str(log), "-o", str(tmp_path / "no" / "dir" / "g.dot"))
    assert result.exit_code == EXIT_USAGE


def dnnlens(*args: str, **popen: object) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "dnnlens.cli", *args], **popen)  # type: ignore[call-overload]


@POSIX
@pytest.mark.skipif(not FULL.exists(), reason="no /dev/full")
def test_standard_output_on_a_full_disk(log: Path) -> None:
    with FULL.open("w") as full:
        proc = dnnlens("analyze", "-f", "json", str(log), stdout=full, stderr=subprocess.PIPE)
        _, err = proc.communicate(timeout=120)
    assert proc.returncode == EXIT_OUTPUT
    assert err.decode().splitlines() == [
        "dnnlens: error: standard output: cannot write (No space left on device)"
    ]


@POSIX
@pytest.mark.parametrize("output", [None, "report.txt"])
def test_a_closed_standard_output(log: Path, tmp_path: Path, output: str | None) -> None:
    """``dnnlens analyze run.log >&-``: an output error, unless the report goes to a file."""
    extra = ["-o", str(tmp_path / output)] if output else []
    proc = dnnlens(
        "analyze", str(log), *extra, stderr=subprocess.PIPE, preexec_fn=lambda: os.close(1)
    )
    _, err = proc.communicate(timeout=120)
    if output:
        assert proc.returncode == 0 and (tmp_path / output).stat().st_size > 0
    else:
        assert proc.returncode == EXIT_OUTPUT
        assert err.decode().splitlines() == [
            "dnnlens: error: standard output: cannot write (standard output is closed)"
        ]


@pytest.mark.skipif(not Path("/proc/self/mem").exists(), reason="Linux /proc")
def test_proc_self_mem(log: Path) -> None:
    result = invoke("analyze", str(log), "-f", "json", "-o", "/proc/self/mem")
    assert result.exit_code == EXIT_OUTPUT
    assert result.stderr.startswith("dnnlens: error: /proc/self/mem: cannot write (")


@POSIX
@pytest.mark.parametrize(
    "args",
    [
        ["analyze", "-f", "json"],
        ["analyze", "-f", "json", "--fail-on", "info"],
        ["export", "benchdnn"],
    ],
)
def test_json_cut_by_the_reader_is_141(log: Path, args: list[str]) -> None:
    """``dnnlens analyze -f json run.log | head -c 100``: the whole report fits in the pipe,
    so no write fails; the reader still left most of it unread."""
    proc = dnnlens(*args, str(log), stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert proc.stdout is not None
    os.read(proc.stdout.fileno(), 100)  # exactly what `head -c 100` takes
    proc.stdout.close()
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 141
    assert err == b""


@POSIX
def test_a_reader_that_reads_everything_is_0(log: Path) -> None:
    proc = dnnlens("analyze", "-f", "json", str(log), stdout=subprocess.PIPE)
    out, _ = proc.communicate(timeout=120)
    assert proc.returncode == 0 and json.loads(out)["inputs"][0]["lines"] == 338
