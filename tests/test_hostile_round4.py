"""Hostile inputs, fourth round: file names that are not UTF-8, Markdown from a log, odd
output shapes (tiny terminals, wide characters, ``-o -``, huge times), hand-edited fleets
and plugins that fork (docs/input-policy.md)."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pyarrow.dataset as pads
import pytest
from typer.testing import CliRunner

from dnnlens.cli import app
from dnnlens.textsafe import path_text, safe
from test_plugin_budget import _gone

SAMPLES = Path(__file__).resolve().parents[1] / "sample_logs"
NCHW = SAMPLES / "convnet_nchw_infer.log"
CL = SAMPLES / "convnet_cl_infer.log"

BAD_NAME = b"bad\xff\xfe.log"
SHOWN = "bad\\xff\\xfe.log"  # the literal backslash text


def invoke(*args: str | os.PathLike[str]):
    result = CliRunner().invoke(app, [os.fspath(a) for a in args])
    assert "Traceback" not in result.stderr
    assert result.exit_code != 3, result.stderr
    return result


# -- file names that are not UTF-8 ------------------------------------------------------------


@pytest.fixture
def bad_dir(tmp_path: Path) -> Path:
    """A directory with a log whose name is not UTF-8 and a good log beside it."""
    folder = tmp_path / "d"
    folder.mkdir()
    shutil.copyfile(NCHW, os.path.join(os.fsencode(folder), BAD_NAME))
    shutil.copyfile(CL, folder / "good.log")
    return folder


def bad_path(folder: Path) -> str:
    return os.fsdecode(os.path.join(os.fsencode(folder), BAD_NAME))


def test_textsafe_shows_the_bytes_of_a_name() -> None:
    name = os.fsdecode(BAD_NAME)
    assert safe(name) == SHOWN
    assert path_text(name) == SHOWN
    assert path_text(BAD_NAME) == SHOWN
    assert path_text("a\nb.log") == "a\nb.log"  # data keeps control characters
    assert safe("a\nb.log") == "a\\nb.log"


@pytest.mark.parametrize("form", ["file", "directory"])
@pytest.mark.parametrize("fmt", ["terminal", "json", "html"])
def test_analyze_a_name_that_is_not_utf8(bad_dir: Path, tmp_path: Path, form: str, fmt: str):
    target = bad_path(bad_dir) if form == "file" else bad_dir
    out = tmp_path / "report.out"
    result = invoke("analyze", target, "-f", fmt, "-o", out)
    assert result.exit_code == 0, result.stderr
    text = out.read_text(encoding="utf-8")
    if fmt == "json":
        doc = json.loads(text)
        paths = [i["path"] for i in doc["inputs"]]
        assert any(p.endswith(SHOWN) for p in paths)
        if form == "directory":
            assert any(p.endswith("good.log") for p in paths)
    elif fmt == "terminal":
        assert SHOWN in text
        if form == "directory":
            assert "good.log" in text
    else:
        assert SHOWN in text


def test_diff_a_name_that_is_not_utf8(bad_dir: Path) -> None:
    result = invoke("diff", bad_path(bad_dir), bad_dir / "good.log")
    assert result.exit_code == 0, result.stderr
    assert SHOWN in result.stdout
    result = invoke("diff", bad_path(bad_dir), bad_dir / "good.log", "-f", "json")
    assert result.exit_code == 0, result.stderr
    json.loads(result.stdout)
    assert json.dumps(SHOWN)[1:-1] in result.stdout


@pytest.mark.parametrize("kind", ["csv", "parquet"])
def test_export_tables_of_a_name_that_is_not_utf8(bad_dir: Path, tmp_path: Path, kind: str):
    out = tmp_path / "out"
    result = invoke("export", kind, bad_dir, "-o", out)
    assert result.exit_code == 0, result.stderr
    table = pads.dataset(out / "events", format=kind, partitioning="hive").to_table()
    inputs = {str(v) for v in table.column("input").to_pylist()}
    assert any(v.endswith(SHOWN) for v in inputs)
    assert any(v.endswith("good.log") for v in inputs)


def test_fleet_build_a_name_that_is_not_utf8(bad_dir: Path, tmp_path: Path) -> None:
    fleet = tmp_path / "fleet"
    result = invoke("fleet", "build", bad_dir, "-o", fleet)
    assert result.exit_code == 0, result.stderr
    assert "2 run(s) written" in result.stderr
    runs = pads.dataset(fleet / "runs", format="parquet").to_table().to_pylist()
    inputs = sorted(p for r in runs for p in r["inputs"])
    assert inputs[0].endswith(SHOWN) and inputs[1].endswith("good.log")
    paths = pads.dataset(fleet / "inputs", format="parquet").to_table().column("path")
    assert any(p.endswith(SHOWN) for p in paths.to_pylist())


# -- Markdown from a log ---------------------------------------------------------------------

EVIL = "<img src=x onerror=alert(1)></details>[x](javascript:alert(1))**b**|`c`~~s~~_u_#"


def test_markdown_text_escapes_markdown_and_html() -> None:
    from dnnlens.textsafe import markdown_text

    text = markdown_text(EVIL + "\nnext")
    assert "<" not in text
    assert "](" not in text.replace("\\](", "")
    assert "\n" not in text
    for c in "*|`[]~_":  # every one of them escaped
        assert all(text[i - 1] == "\\" for i, ch in enumerate(text) if ch == c)
    assert markdown_text("- a list?", starts_line=True).startswith("\\-")
    assert markdown_text("-66.6%") == "-66.6%"  # a cell starts no list


def _unescaped_pipes(line: str) -> int:
    count, i = 0, 0
    while i < len(line):
        if line[i] == "\\":
            i += 2
            continue
        count += line[i] == "|"
        i += 1
    return count


def test_diff_markdown_of_a_hostile_log(tmp_path: Path) -> None:
    """Implementation names edited to carry HTML, a link, emphasis, a pipe and backticks:
    every table row keeps its cells, and none of it is read as Markdown or HTML."""
    evil = tmp_path / "evil.log"
    evil.write_text(NCHW.read_text().replace("jit:uni", EVIL))
    result = invoke("diff", NCHW, evil, "-f", "markdown")
    assert result.exit_code == 0, result.stderr
    md = result.stdout
    assert "onerror" in md  # the text is there, as text
    assert "<img" not in md and "</details>" not in md
    assert "[x](" not in md and "**b**" not in md and "`c`" not in md
    rows = [line for line in md.splitlines() if line.startswith("|")]
    assert any("onerror" in r for r in rows)
    tables: list[list[str]] = []
    for line in md.splitlines():
        if line.startswith("|"):
            if not tables or tables[-1] is None:
                tables.append([])
            tables[-1].append(line)
        elif tables and tables[-1] is not None:
            tables.append(None)  # type: ignore[arg-type]
    for table in filter(None, tables):
        widths = {_unescaped_pipes(r) for r in table}
        assert len(widths) == 1, table


# -- output shapes ---------------------------------------------------------------------------


def test_a_tiny_columns_is_the_narrowest_width(monkeypatch: pytest.MonkeyPatch) -> None:
    """``COLUMNS=1`` is laid out at 40 columns, the least ``--width`` takes: no word is cut
    into pieces."""
    from rich.cells import cell_len

    from dnnlens.report.console import MIN_WIDTH, report_width

    monkeypatch.setenv("COLUMNS", "1")
    assert report_width(None) == MIN_WIDTH == 40
    result = CliRunner().invoke(app, ["analyze", str(NCHW)], env={"COLUMNS": "1"})
    assert result.exit_code == 0, result.stderr
    lines = result.stdout.splitlines()
    assert max(cell_len(line) for line in lines) <= MIN_WIDTH
    assert lines[0].startswith("convnet_nchw_infer.log: 165 primitive")
    refused = CliRunner().invoke(app, ["analyze", str(NCHW), "--width", "39"])
    assert refused.exit_code == 2


def test_wide_characters_keep_table_columns_aligned() -> None:
    from rich.cells import cell_len

    from dnnlens.report.text_layout import Grid, cut_middle, width_of, wrap

    grid = Grid("t", [("impl", "flex"), ("ms", "right")])
    grid.add_row("jit:漢字漢字漢字😀😀", "1.0")
    grid.add_row("jit:uni", "22.5")
    for width in (80, 20, 12):
        rows = [text for text, _ in grid.lines(width)[2:]]
        assert len({cell_len(r) for r in rows}) == 1, rows  # the numbers end in one column
        assert all(cell_len(r) <= width for r in rows)
    assert width_of(cut_middle("漢字漢字漢字漢字", 7)) <= 7
    assert all(cell_len(line) <= 20 for line in wrap("漢字漢字 " * 20, 20))


def test_a_log_with_wide_characters_on_the_terminal(tmp_path: Path) -> None:
    from rich.cells import cell_len

    log = tmp_path / "wide.log"
    log.write_text(NCHW.read_text().replace("jit:uni", "jit:漢字漢字😀😀"), encoding="utf-8")
    for width in ("120", "60"):
        result = invoke("analyze", log, "--details", "--width", width)
        assert result.exit_code == 0, result.stderr
        lines = result.stdout.splitlines()
        assert max(cell_len(line) for line in lines) <= int(width)
        wide = [line for line in lines if "漢" in line and line.startswith("reorder")]
        plain = [line for line in lines if "jit:uni" not in line and line.startswith("reorder")]
        assert wide and plain


@pytest.mark.parametrize(
    ("args", "starts"),
    [
        (["analyze", "{log}", "-o", "-"], "convnet_nchw_infer.log: 165"),
        (["analyze", "{log}", "-f", "json", "-o", "-"], "{"),
        (["analyze", "{log}", "-f", "html", "-o", "-"], "<!"),
        (["analyze", "{log}", "{cl}", "-o", "-"], ""),
        (["export", "perfetto", "{log}", "-o", "-"], "{"),
        (["export", "benchdnn", "{log}", "-o", "-"], "#"),
        (["graph", "{log}", "-o", "-"], ""),
        (["project", "{log}", "-o", "-"], ""),
        (["machine", "probe", "--seconds", "0.2", "-o", "-"], "{"),
    ],
)
def test_dash_output_is_standard_output(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, args: list[str], starts: str
) -> None:
    monkeypatch.chdir(tmp_path)
    args = [a.format(log=NCHW, cl=CL) for a in args]
    result = invoke(*args)
    assert result.exit_code == 0, result.stderr
    assert not (tmp_path / "-").exists()  # no file named -
    assert result.stdout.strip() and result.stdout.lstrip().startswith(starts)
    if "json" in args or "perfetto" in args or "machine" in args:
        json.loads(result.stdout)
    assert "wrote -" not in result.stderr


@pytest.mark.parametrize(
    "args",
    [
        ["export", "csv", "{log}", "-o", "-"],
        ["export", "parquet", "{log}", "-o", "-"],
        ["fleet", "build", "{log}", "-o", "-"],
        ["capture", "-o", "-", "true"],
    ],
)
def test_dash_output_of_a_directory_is_a_usage_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, args: list[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    result = invoke(*[a.format(log=NCHW) for a in args])
    assert result.exit_code == 2
    assert "-o -:" in result.stderr and "standard output" in result.stderr
    assert list(tmp_path.iterdir()) == []


def _huge(tmp_path: Path, name: str, which: str = ",exec,") -> Path:
    lines = [
        line.rsplit(",", 1)[0] + ",1e308" if which in line and ",exec," in line else line
        for line in NCHW.read_text().splitlines()
    ]
    path = tmp_path / name
    path.write_text("\n".join(lines) + "\n")
    return path


def test_totals_past_the_largest_float_are_valid_json(tmp_path: Path) -> None:
    """Times of 1e308 (each finite, their sums not): the totals are null, and the JSON of
    analyze (one run and several), diff and project is valid against its schema."""
    import jsonschema

    root = Path(__file__).resolve().parents[1] / "docs" / "schema"

    def valid(name: str, doc: dict) -> None:
        schema = json.loads((root / name).read_text(encoding="utf-8"))
        jsonschema.validators.validator_for(schema)(schema).validate(doc)

    every, reorders = _huge(tmp_path, "all.log"), _huge(tmp_path, "re.log", "reorder")
    doc = json.loads(invoke("analyze", every, "-f", "json").stdout)
    assert doc["summary"]["total_time_ms"] is None
    assert any("past the largest float" in n for n in doc["notes"])
    valid("analyze.schema.json", doc)
    valid("analyze.schema.json", json.loads(invoke("analyze", reorders, "-f", "json").stdout))
    runs = invoke("analyze", every, reorders, NCHW, "-f", "json")
    valid("analyze-runs.schema.json", json.loads(runs.stdout))
    valid("diff.schema.json", json.loads(invoke("diff", every, reorders, "-f", "json").stdout))
    valid("project.schema.json", json.loads(invoke("project", every, "-f", "json").stdout))


# -- fleets ----------------------------------------------------------------------------------


def test_fleet_build_into_the_inputs_own_directory(tmp_path: Path) -> None:
    folder = tmp_path / "d"
    folder.mkdir()
    shutil.copyfile(NCHW, folder / "a.log")
    result = invoke("fleet", "build", folder, "-o", folder)
    assert result.exit_code == 2
    assert "inside the dataset's own directory" in result.stderr
    assert "a.log" in result.stderr and "no input" not in result.stderr


def test_fleet_diff_of_a_dataset_with_a_run_twice(tmp_path: Path) -> None:
    fleet = tmp_path / "fleet"
    assert invoke("fleet", "build", NCHW, CL, "-o", fleet, "-q").exit_code == 0
    for table in ("runs", "primitives"):
        src = fleet / table / "run-convnet_cl_infer.parquet"
        shutil.copyfile(src, fleet / table / "run-convnet_cl_infer-copy.parquet")
    result = invoke("fleet", "diff", fleet, "--baseline", "convnet_cl_infer")
    assert result.exit_code == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "'convnet_cl_infer' more than once" in lines[0]


def test_fleet_build_reports_a_rejected_input(tmp_path: Path) -> None:
    """A trace without a usable event beside its log: the run is written from the log (as
    analyze reports it), and the rejected trace is an error and counted in the summary; a
    directory's files that hold no run are said in a note, as analyze says them."""
    folder = tmp_path / "d"
    folder.mkdir()
    shutil.copyfile(SAMPLES / "profile_nchw_infer.log", folder / "x.log")
    (folder / "x.trace.json").write_text('{"traceEvents":[{"ph":"X","name":"a","ts":1,"dur":-5}]}')
    (folder / "readme.txt").write_text("hello\n")
    result = invoke("fleet", "build", folder, "-o", tmp_path / "fleet")
    assert result.exit_code == 2
    assert "run x: " in result.stderr and "x.trace.json: no usable event" in result.stderr
    assert "skipped 1 file with no oneDNN verbose line" in result.stderr
    summary = result.stderr.strip().splitlines()[-1]
    assert "1 run(s) written" in summary and "1 input(s) rejected" in summary, summary
    runs = pads.dataset(tmp_path / "fleet" / "runs", format="parquet").to_table().to_pylist()
    assert [r["run"] for r in runs] == ["x"]


# -- plugins that fork -----------------------------------------------------------------------

FORKING = '''
import os
import time

from dnnlens.rules import Rule


class Forking(Rule):
    """Starts a process in a session of its own that outlives its parent, then {then}."""

    name = "forking-plugin"
    code = "T201"

    def check(self, ctx):
        if os.fork() == 0:
            os.setsid()
            if os.fork() == 0:  # the grandchild: in a session of its own, orphaned below
                with open(os.environ["MARK"] + ".tmp", "w") as fh:
                    fh.write(str(os.getpid()))
                os.rename(os.environ["MARK"] + ".tmp", os.environ["MARK"])
                while True:
                    time.sleep(1)
            os._exit(0)
        while not os.path.exists(os.environ["MARK"]):
            time.sleep(0.01)
        {body}
'''


def _run_plugin(tmp_path: Path, code: str, mark: Path):
    import subprocess
    import sys

    env = {**os.environ, "PYTHONPATH": str(SAMPLES.parent / "src"), "MARK": str(mark)}
    return subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120
    )


@pytest.mark.parametrize(
    ("then", "body", "message"),
    [
        ("loops", "while True:\n            pass", "ran longer than its limit of 0.5 s"),
        ("returns", "return []", None),
    ],
)
def test_a_plugin_that_forks_out_of_its_session_leaves_nothing_running(
    tmp_path: Path, then: str, body: str, message: str | None
) -> None:
    """The grandchild of a plugin, in a session of its own, is killed with the plugin's
    child: at its budget (a looping plugin) or once its findings are in."""
    import textwrap

    plugin, mark = tmp_path / "forking.py", tmp_path / "mark"
    plugin.write_text(FORKING.replace("{then}", then).replace("{body}", body))
    code = textwrap.dedent(f"""
        import json
        from dnnlens.analysis.analysis import Analysis
        from dnnlens.reading import load
        from dnnlens.rules.budget import RuleBudget
        from dnnlens.rules.engine import RuleOptions, run_rules

        options = RuleOptions(rule_paths=[{str(plugin)!r}], search_config=False,
                              announce_python=False, budget=RuleBudget(seconds=0.5))
        found = run_rules(Analysis(load([{str(NCHW)!r}])), options)
        print(json.dumps([[f.rule, f.severity, f.message] for f in found]))
    """)
    out = _run_plugin(tmp_path, code, mark)
    assert out.returncode == 0, out.stderr
    mine = [f for f in json.loads(out.stdout) if f[0] == "forking-plugin"]
    if message is None:
        assert mine == []
    else:
        assert len(mine) == 1 and message in mine[0][2]
    grandchild = int(mark.read_text())
    assert _gone(grandchild), f"the plugin's grandchild {grandchild} is still running"


def test_a_signal_while_the_plugin_child_starts_stops_it(tmp_path: Path) -> None:
    """SIGINT landing right after ``fork``, before the parent's handler is in place: the
    child is killed (no orphan running the plugin), and the signal then reaches the
    handler that was there (KeyboardInterrupt)."""
    import textwrap

    plugin, mark = tmp_path / "slow.py", tmp_path / "mark"
    plugin.write_text(FORKING.replace("{then}", "loops").replace("{body}", "time.sleep(60)"))
    code = textwrap.dedent(f"""
        import os, signal, time
        from dnnlens.analysis.analysis import Analysis
        from dnnlens.reading import load
        from dnnlens.rules.budget import RuleBudget
        from dnnlens.rules.engine import RuleOptions, run_rules

        real_fork = os.fork
        children = []

        def fork():
            pid = real_fork()
            if pid:
                children.append(pid)
                os.kill(os.getpid(), signal.SIGINT)  # lands before the handler is in place
            return pid

        os.fork = fork
        options = RuleOptions(rule_paths=[{str(plugin)!r}], search_config=False,
                              announce_python=False, budget=RuleBudget(seconds=30))
        analysis = Analysis(load([{str(NCHW)!r}]))
        try:
            run_rules(analysis, options)
        except KeyboardInterrupt:
            print("interrupted", children[0])
        else:
            print("not interrupted", children[0])
        time.sleep(1)  # the child, if it was left, would run on meanwhile
    """)
    out = _run_plugin(tmp_path, code, mark)
    assert out.returncode == 0, out.stderr
    said, pid = out.stdout.split()
    assert said == "interrupted"
    assert _gone(int(pid))
    assert not mark.exists()  # the plugin never got as far as its grandchild
