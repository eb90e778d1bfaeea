"""The pages in docs/ tell the truth about the product as it is.

* Every line of a ```bash block that starts with ``dnnlens `` runs (in-process, from a
  folder that holds the bundled ``sample_logs/`` and ``tests/``) and exits as the page says:
  0, or the code a trailing ``# exit N`` names. The rest of a pipeline (``| jq ...``) runs
  in a shell on the command's output when its tools are installed; ``> FILE`` writes it.
* An output excerpt (a plain ``` block right after a ```bash block) is real output: its
  lines appear, in order, in what the block printed; ``...`` stands for lines left out, and
  a line ending in ``...`` for the rest of a line. A ```bash block without a ``dnnlens``
  line is a shell recipe (grep, awk) and runs in bash.
* The key figures docs/reports.md quotes for the NCHW sample equal the JSON report's, and a
  count of the log made here without dnnlens (the recipe of docs/reports.md, "How to
  reproduce each figure by hand", in Python):

      grep ',exec,' sample_logs/convnet_nchw_infer.log   # 165 lines, 11 passes of 15
      # pass sums; pass 0 holds every create:cache_miss; passes 1-3 > 3 x median(1..10)
      # per position: median of passes 4-10; sum = 2.0857, reorders 0.6760 (32.4%)
"""

from __future__ import annotations

import json
import re
import shlex
import shutil
import statistics
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest
from typer.testing import CliRunner

from dnnlens.cli import app

ROOT = Path(__file__).resolve().parent.parent
DOCS = sorted((ROOT / "docs").glob("*.md"))
NCHW = ROOT / "sample_logs" / "convnet_nchw_infer.log"

#: Commands a test cannot run here, and why.
NOT_RUN = {
    ("run",): "runs a program",
    ("capture",): "runs a program (torch)",
    ("machine", "probe"): "measures this machine for seconds",
}
#: Options of ``fleet build`` a test cannot honour here, and why (tests/test_fleet*.py
#: build on a Dask cluster of their own).
NOT_RUN_OPTIONS = {
    "--scheduler": "needs a Dask scheduler on another machine",
    "--workers": "starts a local Dask cluster of that many processes",
}

_FENCE = re.compile(r"^```(\w*)\n(.*?)^```\n", re.S | re.M)
_ENV = re.compile(r"^[A-Z_][A-Z0-9_]*=\S*$")
_COMMAND = re.compile(r"^(?:[A-Z_][A-Z0-9_]*=\S*\s+)*dnnlens\s")


@dataclass
class Block:
    """A ```bash block of a page, and the output excerpt right after it (or None)."""

    page: str
    line: int
    text: str
    excerpt: str | None

    @property
    def id(self) -> str:
        return f"{self.page}:{self.line}"


def bash_blocks(path: Path) -> list[Block]:
    """Every ```bash block of a page, with the plain block that directly follows it."""
    text = path.read_text(encoding="utf-8")
    fences = list(_FENCE.finditer(text))
    blocks = []
    for i, m in enumerate(fences):
        if m.group(1) != "bash":
            continue
        nxt = fences[i + 1] if i + 1 < len(fences) else None
        adjacent = nxt is not None and not text[m.end() : nxt.start()].strip()
        excerpt = nxt.group(2) if adjacent and nxt.group(1) == "" else None
        line = text.count("\n", 0, m.start()) + 1
        blocks.append(Block(path.name, line, m.group(2), excerpt))
    return blocks


BLOCKS = [b for page in DOCS for b in bash_blocks(page)]


@dataclass
class Command:
    """One ``dnnlens`` line: its arguments, environment, expected exit and the rest."""

    argv: list[str]
    env: dict[str, str]
    exit_code: int
    pipe: str  # the rest of a pipeline, run in a shell on the output
    redirect: str | None  # ``> FILE``


def commands(block: Block) -> list[Command]:
    """The ``dnnlens`` lines of a block (continuation lines joined)."""
    out = []
    for raw in block.text.replace("\\\n", " ").splitlines():
        if not _COMMAND.match(raw):
            continue
        tokens = shlex.split(raw, comments=True)
        env = {}
        while tokens and _ENV.match(tokens[0]):
            key, _, value = tokens.pop(0).partition("=")
            env[key] = value
        expected = re.search(r"\s#.*\bexit (\d+)", raw)
        pipe, redirect = "", None
        if "|" in tokens:
            at = tokens.index("|")
            pipe = raw[raw.index("|") + 1 :].split(" #")[0].strip()
            tokens = tokens[:at]
        if ">" in tokens:
            at = tokens.index(">")
            redirect, tokens = tokens[at + 1], tokens[:at]
        out.append(
            Command(tokens[1:], env, int(expected.group(1)) if expected else 0, pipe, redirect)
        )
    return out


@pytest.fixture
def workdir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A folder with the bundled logs and test rules, as the pages assume."""
    for name in ("sample_logs", "tests"):
        (tmp_path / name).symlink_to(ROOT / name)
    monkeypatch.chdir(tmp_path)
    return tmp_path


#: The nightly logs docs/fleet.md's commands name: copies of the NCHW sample, each with a
#: line of its own (a run whose content is in the dataset already is skipped), and one run
#: with every exec time x3, a slowdown ``fleet diff`` can tell from the noise: the sample's
#: steady passes take 1.99 to 4.26 ms (tests/test_diff_confidence.py), the slowed copy's
#: 5.97 to 12.8 ms, all apart, chance 2 / C(14, 7) = 0.058% (a 7% slowdown, as this copy
#: was before, overlaps them and is refused as noise). The others' passes are the
#: baseline's: no measurable change.
FLEET_LOGS = {"nightly-0412": 1.0, "base": 1.0, "pr-1234-a": 1.0, "nightly-0413": 3.0}


def fleet_logs(where: Path) -> None:
    """``logs/`` and ``jobs/`` as docs/fleet.md assumes them, and ``fleet/`` built from
    ``logs/`` (the query and diff sections start from a dataset)."""
    lines = NCHW.read_text(encoding="utf-8").splitlines(keepends=True)
    for name, factor in FLEET_LOGS.items():
        out = [f"nightly job {name}\n"]
        for line in lines:
            if ",exec," in line and factor != 1.0:
                head, _, time = line.rstrip("\n").rpartition(",")
                line = f"{head},{float(time) * factor:.6f}\n"
            out.append(line)
        (where / "logs").mkdir(exist_ok=True)
        (where / "logs" / f"{name}.log").write_text("".join(out), encoding="utf-8")
    for rank in (0, 1):
        job = where / "jobs" / "job-17"
        job.mkdir(parents=True, exist_ok=True)
        (job / f"rank{rank}.log").write_text("".join(lines), encoding="utf-8")
    built = CliRunner().invoke(app, ["fleet", "build", "logs/**/*.log", "-o", "fleet/", "-q"])
    assert built.exit_code == 0, built.output


def run_command(cmd: Command, where: Path) -> tuple[int, str | None]:
    """Run one documented command; its exit code and what it printed (``None``: the rest
    of its pipeline needs a tool that is not installed)."""
    for words, why in NOT_RUN.items():
        if tuple(cmd.argv[: len(words)]) == words:
            pytest.skip(f"dnnlens {' '.join(words)}: {why}")
    if cmd.argv[:1] == ["fleet"]:
        for option, why in NOT_RUN_OPTIONS.items():
            if option in cmd.argv:
                pytest.skip(f"dnnlens fleet {option}: {why}")
    env = {"COLUMNS": None, "NO_COLOR": "1", **cmd.env}
    result = CliRunner().invoke(app, cmd.argv, env=env)  # type: ignore[arg-type]
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception
    text = result.stdout
    if cmd.redirect:
        (where / cmd.redirect).write_text(text, encoding="utf-8")
        text = ""
    if cmd.pipe:
        tools = re.findall(r"(?:^|\|)\s*([\w.-]+)", cmd.pipe)
        missing = [t for t in tools if shutil.which(t) is None]
        if missing:
            return result.exit_code, None
        piped = subprocess.run(
            ["bash", "-c", cmd.pipe], input=text, capture_output=True, text=True, check=True
        )
        text = piped.stdout
    return result.exit_code, text


def check_excerpt(excerpt: str, output: str) -> None:
    """Each excerpt line appears in ``output`` after the one before it (see module doc)."""
    lines = [x.rstrip() for x in output.splitlines()]
    at = 0
    for want in excerpt.splitlines():
        want = want.rstrip()
        if want.strip() in ("", "..."):
            continue
        head = want.split("...")[0].rstrip() if "..." in want else None
        for i in range(at, len(lines)):
            if lines[i] == want or (head and lines[i].startswith(head)):
                at = i + 1
                break
        else:
            raise AssertionError(f"not in the output (in order): {want!r}")


@pytest.mark.parametrize("block", BLOCKS, ids=[b.id for b in BLOCKS])
def test_documented_commands_run_as_shown(block: Block, workdir: Path) -> None:
    cmds = commands(block)
    if any(cmd.argv[:1] == ["fleet"] for cmd in cmds):
        pytest.importorskip("duckdb")
        pytest.importorskip("distributed")
        fleet_logs(workdir)
    if cmds:
        printed: list[str | None] = []
        for cmd in cmds:
            code, text = run_command(cmd, workdir)
            assert code == cmd.exit_code, (cmd.argv, code)
            printed.append(text)
        if None in printed and block.excerpt is not None:
            pytest.skip("the excerpt is the output of a tool that is not installed (jq)")
        output = "".join(x or "" for x in printed)
    else:  # a shell recipe
        done = subprocess.run(
            ["bash", "-c", "set -o pipefail\n" + block.text], capture_output=True, text=True
        )
        assert done.returncode == 0, done.stderr
        output = done.stdout
    if block.excerpt is not None:
        check_excerpt(block.excerpt, output)


def test_every_page_has_runnable_commands() -> None:
    """The pages about the product show commands; an empty list would test nothing."""
    pages = {b.page for b in BLOCKS if commands(b)}
    assert {"reports.md", "rules.md", "cost-model.md", "framework.md"} <= pages


# ---------------------------------------------------------------------------------------
# the key figures of docs/reports.md


def key_figures() -> dict[str, str]:
    """JSON key -> value as docs/reports.md's table of the NCHW sample quotes it."""
    text = (ROOT / "docs" / "reports.md").read_text(encoding="utf-8")
    rows = re.findall(r"^\| [^|]+ \| ([^|]+) \| `([a-z_.]+)` \|$", text, re.M)
    return {key: value.strip() for value, key in rows}


def quoted_number(value: str) -> tuple[float, int]:
    """``'2.086 ms'`` -> (2.086, 3 decimals); ``'32.4%'`` -> (0.324, 3)."""
    number = value.split()[0].rstrip("%")
    decimals = len(number.partition(".")[2])
    if value.endswith("%"):
        return float(number) / 100, decimals + 2
    return float(number), decimals


def by_hand() -> dict[str, float]:
    """The NCHW sample's figures counted from its lines (the module docstring's recipe)."""
    lines = NCHW.read_text(encoding="utf-8").splitlines()
    execs = [(n, ln.split(",")) for n, ln in enumerate(lines, 1) if ",exec," in ln]
    period = 15  # the repeating sequence: 11 passes of 15 exec lines
    passes = [execs[i : i + period] for i in range(0, len(execs), period)]
    last_miss = max(n for n, ln in enumerate(lines, 1) if "create:cache_miss" in ln)
    structural = sum(1 for p in passes if p[0][0] < last_miss)
    sums = [sum(float(f[-1]) for _, f in p) for p in passes]
    median = statistics.median(sums[structural:])
    slow = 0
    while sums[structural + slow] > 3 * median:
        slow += 1
    steady = passes[structural + slow :]
    runs = [statistics.median(float(p[k][1][-1]) for p in steady) for k in range(period)]
    kinds = [steady[0][k][1][5] for k in range(period)]
    typical = sum(runs)
    reorders = sum(r for r, k in zip(runs, kinds, strict=True) if k == "reorder")
    return {
        "summary.exec_count": len(execs),
        "summary.total_time_ms": sum(float(f[-1]) for _, f in execs),
        "summary.iterations": len(passes),
        "summary.warmup_iterations": structural + slow,
        "iterations.warmup_slow": slow,
        "summary.steady_iterations": len(steady),
        "iterations.period_exec": period,
        "summary.typical_iteration_ms": typical,
        "summary.reorder_ms_per_iteration": reorders,
        "summary.reorder_share_of_iteration": reorders / typical,
    }


def test_key_figures_of_the_nchw_sample_are_the_json_report_and_the_log(workdir: Path) -> None:
    quoted = key_figures()
    counted = by_hand()
    assert set(quoted) == set(counted), "the table and this test list the same figures"
    result = CliRunner().invoke(app, ["analyze", str(NCHW), "--format", "json"])
    assert result.exit_code == 0
    doc = json.loads(result.stdout)
    for key, value in quoted.items():
        got = doc
        for part in key.split("."):
            got = got[part]
        number, decimals = quoted_number(value)
        assert round(got, decimals) == pytest.approx(number), (key, got, value)
        assert round(counted[key], decimals) == pytest.approx(number), (key, counted[key])


def test_the_shipped_schemas_are_the_ones_the_pages_name() -> None:
    text = (ROOT / "docs" / "reports.md").read_text(encoding="utf-8")
    named = set(re.findall(r"`([a-z-]+\.schema\.json)`", text))
    shipped = {p.name for p in (ROOT / "docs" / "schema").glob("*.schema.json")}
    assert named == shipped


def test_no_page_names_a_removed_option() -> None:
    """Options that are gone must not be taught: ``project --statistic``."""
    for page in DOCS:
        text = page.read_text(encoding="utf-8")
        for block in bash_blocks(page):
            assert "--statistic" not in block.text, block.id
        assert "[--statistic" not in text, page.name


_LINK = re.compile(r"\]\(([^)#\s]+)(?:#[^)]*)?\)")


def test_readme_is_short_and_relative_links_resolve() -> None:
    """The README stays a front page, and no relative link points at nothing."""
    readme = ROOT / "README.md"
    assert len(readme.read_text(encoding="utf-8").splitlines()) <= 200
    broken = []
    for page in [readme, *DOCS]:
        for target in _LINK.findall(page.read_text(encoding="utf-8")):
            if "://" in target or target.startswith("mailto:"):
                continue
            if not (page.parent / target).exists():
                broken.append(f"{page.name}: {target}")
    assert not broken
