"""Fleets of real logs for the fleet tests: copies of the sample logs with their runs varied.

A copy scales the time field of every primitive execution line (the last field of a v1
line, ``onednn_verbose,v1,primitive,exec,...,<time>``) by a factor, written as the shortest
text of the scaled number (``repr``): a factor of 2 doubles every time exactly (binary
floating point), so sums and medians double exactly too; factors of 1.001, 1.002 ... make
runs that differ in content (their own content hash) but not in anything that matters.
A rank file prefixes every line with ``[rankN]:``, as ``torchrun`` does.
"""

from __future__ import annotations

from pathlib import Path

SAMPLE_LOGS = Path(__file__).resolve().parent.parent / "sample_logs"

#: Sample logs of four different workloads (kind, prop_kind, problem sets), the smallest
#: of the sample logs that run convolutions, reorders and LSTMs; ``convnet_nchw_infer`` is
#: the one a slowed copy is made of.
BASES = (
    "convnet_nchw_infer",
    "convnet_cl_infer",
    "lstm_infer",
    "compile_freezing_infer",
)
#: Copies of each workload: a baseline, near copies and a slowed one to compare.
COPIES = 3
SLOW_FACTOR = 2.0


def invoke(*args: str):  # noqa: ANN201 - click Result
    """The command line in-process; a traceback on stderr fails the test."""
    from typer.testing import CliRunner

    from dnnlens.cli import app

    result = CliRunner().invoke(app, list(args))
    assert "Traceback" not in result.stderr, result.stderr
    return result


def build(*args: str):  # noqa: ANN201 - click Result
    """``dnnlens fleet build`` with one worker."""
    return invoke("fleet", "build", "--workers", "1", *args)


def scaled_lines(name: str, factor: float, rank: int | None = None) -> list[str]:
    """The lines of sample log ``name`` with every exec time times ``factor``."""
    out = []
    for line in (SAMPLE_LOGS / f"{name}.log").read_text().splitlines():
        if line.startswith("onednn_verbose,v1,primitive,exec,"):
            head, _, time = line.rpartition(",")
            line = f"{head},{float(time) * factor!r}"
        out.append(line if rank is None else f"[rank{rank}]:{line}")
    return out


def write_copy(path: Path, name: str, factor: float, rank: int | None = None) -> Path:
    """A scaled copy of sample log ``name`` at ``path``."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(scaled_lines(name, factor, rank)) + "\n")
    return path


def make_fleet(root: Path) -> dict[str, list[Path]]:
    """Sixteen runs, one directory each (build them with ``--group-by directory``).

    * ``<base>-NN``: copy NN of each of :data:`BASES`, times x (1 + NN/1000); ``-00`` is the
      log unchanged (the baseline of its workload);
    * ``ddp-K``: two ranks of ``convnet_cl_infer`` (``rank0.log``, ``rank1.log``, lines
      prefixed ``[rankN]:``), ranks timed x 1.00K and x 1.01K;
    * ``convnet_nchw_infer-slow``: ``convnet_nchw_infer`` with every time doubled;
    * ``broken``: a log with no oneDNN line (the run that fails).

    Returns run name -> its files.
    """
    runs: dict[str, list[Path]] = {}
    for base in BASES:
        for k in range(COPIES):
            run = f"{base}-{k:02d}"
            runs[run] = [write_copy(root / run / f"{base}.log", base, 1 + k / 1000)]
    for k in range(2):
        run = f"ddp-{k}"
        runs[run] = [
            write_copy(root / run / f"rank{r}.log", "convnet_cl_infer", 1 + (10 * r + k) / 1000, r)
            for r in range(2)
        ]
    slow = "convnet_nchw_infer-slow"
    runs[slow] = [write_copy(root / slow / "convnet_nchw_infer.log", BASES[0], SLOW_FACTOR)]
    broken = root / "broken" / "broken.log"
    broken.parent.mkdir(parents=True)
    broken.write_text("training started\nno verbose output here\n")
    runs["broken"] = [broken]
    return runs


#: The two small sample logs of :func:`small_dataset`: 10,580 and 6,131 bytes.
SMALL_LOGS = ("profile_lstm_infer.log", "dispatch_only_infer.log")
_BUILT: dict[str, Path] = {}


def small_dataset(tmp_path_factory) -> Path:  # noqa: ANN001 - pytest's TempPathFactory
    """A dataset of :data:`SMALL_LOGS`, built once per test process (every test file that
    asks shares it; a test that damages it works on a copy)."""
    if "small" not in _BUILT:
        from typer.testing import CliRunner

        from dnnlens.cli import app

        out = tmp_path_factory.mktemp("small") / "ds"
        logs = [str(SAMPLE_LOGS / name) for name in SMALL_LOGS]
        result = CliRunner().invoke(app, ["fleet", "build", "-w", "1", "-q", *logs, "-o", str(out)])
        assert result.exit_code == 0, result.stderr
        _BUILT["small"] = out
    return _BUILT["small"]


def test_a_copy_scales_exec_times_only(tmp_path: Path) -> None:
    """convnet_nchw_infer.log: 165 exec lines (``grep -c ',exec,'``); the first is
    ``...,16x3x3x3,0.00708008`` (``grep -m1 ,exec,``), doubled 0.01416016; the 338 lines stay."""
    lines = scaled_lines("convnet_nchw_infer", SLOW_FACTOR, rank=3)
    original = (SAMPLE_LOGS / "convnet_nchw_infer.log").read_text().splitlines()
    assert len(lines) == len(original) == 338
    changed = [(a, b) for a, b in zip(original, lines, strict=True) if f"[rank3]:{a}" != b]
    assert len(changed) == 165
    first = next(b for b in lines if ",exec," in b)
    assert first.startswith("[rank3]:onednn_verbose,v1,primitive,exec,cpu,reorder,")
    assert first.endswith(",16x3x3x3,0.01416016")


def test_the_fleet_has_its_runs(tmp_path: Path) -> None:
    """4 workloads x 3 copies, 2 two-rank jobs, the slowed copy and the broken run."""
    runs = make_fleet(tmp_path)
    assert len(runs) == 4 * 3 + 2 + 1 + 1
    assert sum(len(files) for files in runs.values()) == 4 * 3 + 2 * 2 + 1 + 1
