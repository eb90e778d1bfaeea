"""``dnnlens.capture()`` and ``dnnlens capture``: real runs of a tiny model, in subprocesses
(fresh processes: oneDNN reads its verbose settings once per process)."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from dnnlens.analysis.linking import link_framework
from dnnlens.cli.capture import child_env, run_captured
from dnnlens.reading import load

needs_torch = pytest.mark.skipif(
    importlib.util.find_spec("torch") is None,
    reason="torch is not installed (CI installs only .[test]; pip install .[torch] to run)",
)

PROGRAM = textwrap.dedent("""
    import sys
    import torch
    import dnnlens

    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Conv2d(3, 8, 3), torch.nn.ReLU(),
                                torch.nn.Conv2d(8, 8, 3))
    x = torch.randn(2, 3, 16, 16)
    with torch.no_grad():
        model(x)  # warm-up, outside the capture
        with dnnlens.capture(sys.argv[1]) as cap:
            for _ in range(3):
                model(x)
            print("inside the capture")
    print("after the capture", cap.log_path, cap.trace_path)
""")


def _run(tmp_path: Path, *args: str, env: dict[str, str] | None = None):
    script = tmp_path / "prog.py"
    script.write_text(PROGRAM)
    clean = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("ONEDNN_", "DNNL_", "MKLDNN_", "DNNLENS_"))
    }
    clean.update(env or {})
    return subprocess.run(
        [sys.executable, *args, str(script), str(tmp_path / "out" / "run")],
        capture_output=True,
        text=True,
        env=clean,
        timeout=300,
    )


@needs_torch
def test_capture_context_manager(tmp_path):
    proc = _run(tmp_path)
    assert proc.returncode == 0, proc.stderr
    # stdout is still shown (echo) and copied into the log
    assert "inside the capture" in proc.stdout and "after the capture" in proc.stdout
    log_path, trace_path = tmp_path / "out" / "run.log", tmp_path / "out" / "run.trace.json"
    text = log_path.read_text()
    assert "inside the capture" in text and "after the capture" not in text
    assert "template:timestamp" in text  # timestamps were turned on at run time
    log = load([str(log_path), str(trace_path)])
    (result,) = link_framework(log)
    (row,) = result.ops
    assert row["name"] == "aten::mkldnn_convolution"
    assert (row["calls"], row["calls_with_onednn"], row["link"]) == (6, 6, "timestamp")
    kinds = {k["kind"]: k["count"] for k in row["onednn"]}
    assert kinds["convolution"] == 6
    assert result.info["unlinked_in_window"] == 0


@needs_torch
def test_capture_command(tmp_path):
    prefix = tmp_path / "cli" / "run"
    script = tmp_path / "prog.py"
    script.write_text(PROGRAM)
    clean = {k: v for k, v in os.environ.items() if not k.startswith("DNNLENS_")}
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "dnnlens.cli",
            "capture",
            "-o",
            str(prefix),
            "--",
            sys.executable,
            str(script),
            str(tmp_path / "ignored"),
        ],
        capture_output=True,
        text=True,
        env=clean,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    # the log covers the whole run (warm-up too); the trace lands beside it
    log = load([f"{prefix}.log", f"{prefix}.trace.json"])
    assert not (tmp_path / "ignored.trace.json").exists()
    (result,) = link_framework(log)
    (row,) = result.ops
    assert (row["calls"], row["link"]) == (6, "timestamp")
    assert result.info["outside_window"] > 0  # the warm-up pass, outside the profiled window


def test_command_tees_output_and_passes_the_exit_code(tmp_path, capfd):
    code = run_captured(
        [sys.executable, "-c", "print('hello'); raise SystemExit(3)"], str(tmp_path / "x" / "run")
    )
    assert code == 3
    assert (tmp_path / "x" / "run.log").read_text() == "hello\n"
    assert "hello" in capfd.readouterr().out
    assert run_captured(["/nonexistent/program"], str(tmp_path / "y")) == 127


def test_child_env():
    env = child_env({"PATH": "/bin"}, "out/run", "2")
    assert env["ONEDNN_VERBOSE"] == "2" and env["ONEDNN_VERBOSE_TIMESTAMP"] == "1"
    assert env["DNNLENS_CAPTURE_PREFIX"] == "out/run" and env["PATH"] == "/bin"


def test_importing_dnnlens_does_not_import_torch():
    code = "import sys, dnnlens, dnnlens.cli; print('torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.stdout.strip() == "False"


@pytest.mark.parametrize("level", ["9", "abc", ""])
def test_capture_refuses_a_level_that_is_not_one(tmp_path, level):
    """``capture --level 9`` was accepted silently (the program then ran without verbose)."""
    from typer.testing import CliRunner

    from dnnlens.cli import app

    marker = tmp_path / "ran"
    program = f"open({str(marker)!r}, 'w').close()"
    result = CliRunner().invoke(
        app,
        ["capture", "-o", str(tmp_path / "out"), "--level", level, sys.executable, "-c", program],
    )
    assert result.exit_code == 2
    assert "is not a verbose level" in result.stderr
    assert not marker.exists()


def test_capture_takes_named_levels(tmp_path, capfd):
    code = run_captured([sys.executable, "-c", "import os; print(os.environ['ONEDNN_VERBOSE'])"],
                        str(tmp_path / "out"), "profile_exec")  # fmt: skip
    assert code == 0
    assert (tmp_path / "out.log").read_text() == "profile_exec\n"


def _without_torch(tmp_path):
    """An environment where ``import torch`` fails, as on a machine without PyTorch."""
    shim = tmp_path / "shim"
    shim.mkdir()
    (shim / "torch.py").write_text("raise ImportError('No module named torch')\n")
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(shim), *sys.path])
    env.pop("ONEDNN_VERBOSE", None)
    env.pop("DNNL_VERBOSE", None)
    return env


def test_capture_without_profile_needs_no_torch(tmp_path):
    env = _without_torch(tmp_path)
    code = (
        "import os, dnnlens\n"
        f"with dnnlens.capture({str(tmp_path / 'run')!r}, profile=False, echo=False) as c:\n"
        "    print(os.environ['ONEDNN_VERBOSE'])\n"
        "print('after', os.environ.get('ONEDNN_VERBOSE'), c.trace_path)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["after None None"]
    # the block's own output went to the log: oneDNN reads the switch from the environment
    assert (tmp_path / "run.log").read_text() == "1\n"


def test_capture_with_profile_and_no_torch_is_one_clear_error(tmp_path):
    env = _without_torch(tmp_path)
    code = (
        "import dnnlens\n"
        "try:\n"
        f"    with dnnlens.capture({str(tmp_path / 'run')!r}):\n"
        "        pass\n"
        "except ValueError as exc:\n"
        "    print(exc)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    assert "needs PyTorch" in done.stdout and "profile=False" in done.stdout
    assert len(done.stdout.splitlines()) == 1
