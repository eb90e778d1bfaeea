"""Narrow terminals keep what tells rows apart.

Names are cut in the middle (the start says what it is, the end tells it from its
neighbours), ``file:line`` is never cut, two primitives never print as the same row, a
``base -> new`` cell keeps both sides, a table too wide leaves out columns and says which,
and a note on a terminal's stderr wraps between words. Checked on real sample logs at the
widths people's split panes have.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from dnnlens.cli import app
from dnnlens.errors import say
from dnnlens.report.text_layout import Grid, cut_middle, wrap

ROOT = Path(__file__).resolve().parent.parent
SAMPLES = ROOT / "sample_logs"
RESNET = SAMPLES / "resnet18_nchw_train.log"
WIDTHS = (40, 60, 80, 100)


def _out(*args: str, columns: int) -> str:
    result = CliRunner().invoke(app, list(args), env={"COLUMNS": str(columns)})
    assert result.exit_code == 0, result.output
    return result.stdout


def _table(text: str, title: str) -> list[str]:
    """The header and rows of the table titled ``title`` (up to the caption or a blank)."""
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(title))
    while not lines[start].startswith(("kind", "run", "a ")):
        start += 1
    out = []
    for line in lines[start:]:
        if not line.strip() or line.startswith(("first at", "7 primitive", "none")):
            break
        out.append(line)
    return out


def test_cut_middle_keeps_both_ends() -> None:
    assert cut_middle("brg_conv_fwd:avx512_core", 16) == "brg_conv_…2_core"
    assert cut_middle("short", 16) == "short"
    assert len(cut_middle("x" * 50, 9)) == 9
    # a location at the end of a word keeps its line number when prose is wrapped
    (line,) = [x for x in wrap("see " + "a/" * 30 + "run.log:649", 30) if "run.log" in x]
    assert line.endswith("run.log:649")


@pytest.mark.parametrize("columns", WIDTHS)
def test_top_primitives_rows_stay_distinct(columns: int) -> None:
    """resnet18 training: three 512x512x3x3 reorders (different layouts) and three passes of
    each convolution share kind, implementation and shape; the variant column and the
    middle cuts keep all ten rows apart at every width, and lines are whole numbers."""
    text = _out("analyze", str(RESNET), "-q", "--details", columns=columns)
    head, *rows = _table(text, "Top primitives")
    assert len(rows) == 10
    for line in text.splitlines():
        assert len(line) <= columns, line
    # the text part of each row (everything before the first number column) is distinct
    idents = [r[: head.index("/iter")] for r in rows]
    assert len(set(idents)) == 10, idents
    # first at: the hand-found first lines of the ten primitives, whole
    if head.rstrip().endswith("line"):
        lines = [r.split()[-1] for r in rows]
        assert lines == ["181", "138", "169", "179", "130", "171", "139", "419", "19", "411"]
    else:
        assert "columns: /iter, median, p95, raw ms, count, line" in " ".join(text.split())
    assert "first at: lines of resnet18_nchw_train.log" in " ".join(text.split())


def test_a_wide_table_leaves_columns_out_and_says_so() -> None:
    text = _out("analyze", str(RESNET), "-q", "--details", columns=60)
    assert "left out at 60 columns: p95, raw ms, count" in " ".join(text.split())
    assert "ms/iter" in text


def test_grid_tells_apart_names_that_differ_at_the_end() -> None:
    g = Grid("t", [("impl", "flex"), ("problem", "flex"), ("ms", "right")])
    g.add_row("brg_conv_fwd:avx512_core_amx", "mb32_ic256oc256_ih56oh56kh3", "1.000")
    g.add_row("brg_conv_fwd:avx512_core", "mb32_ic256oc256_ih56oh56kh3", "2.000")
    g.add_row("brg_conv_fwd:avx2", "mb32_ic256oc256_ih56oh56kh1", "3.000")
    for width in range(30, 70):
        rows = [t for t, _ in g.lines(width)[2:]]
        assert all(len(r) <= width for r in rows)
        idents = [r.rsplit(" ", 1)[0].strip() for r in rows]
        assert len(set(idents)) == 3, (width, rows)


def test_diff_changed_rows_show_both_implementations() -> None:
    """convnet_nchw_infer (AVX2) against isa_sse41_infer: every changed convolution went
    from jit:avx2 to jit:sse41, every changed reorder from jit:blk to jit:uni."""
    base, new = SAMPLES / "convnet_nchw_infer.log", SAMPLES / "isa_sse41_infer.log"
    for columns in (80, 100):
        text = _out("diff", str(base), str(new), columns=columns)
        rows = _table(text, "Implementation or layout changed")[1:]
        assert len(rows) == 7
        for row in rows:
            assert " -> " in row
            if row.startswith("reorder"):
                assert "jit:blk -> jit:uni" in row
            else:
                assert re.search(r"jit.*vx2 -> jit.*41", row), row
    wide = _out("diff", str(base), str(new), columns=200)
    assert wide.count("jit:avx2 -> jit:sse41") == 3


def test_fleet_query_table_fits_columns() -> None:
    from dnnlens.fleet.query import QueryResult, table_lines

    cols = ["run", *(f"metric_{i}" for i in range(12))]
    rows = [("a/run.log", *(1234.5678 * i for i in range(12))), ("b/run.log", *range(12))]
    lines = list(table_lines(QueryResult(cols, iter([rows])), 60))
    assert all(len(t) <= 60 for t, _ in lines)
    text = " ".join(t for t, _ in lines)
    first = [t.split()[0] for t, _ in lines[2:4]]
    assert first[0] != first[1] and first[0].startswith("a/") and first[1].startswith("b/")
    assert "left out at 60 columns: metric_" in text


class _Tty:
    def __init__(self) -> None:
        self.text = ""

    def isatty(self) -> bool:
        return True

    def write(self, text: str) -> int:
        self.text += text
        return len(text)

    def flush(self) -> None:
        pass


def test_notes_on_a_terminal_wrap_between_words(monkeypatch: pytest.MonkeyPatch) -> None:
    tty = _Tty()
    monkeypatch.setattr("sys.stderr", tty)
    monkeypatch.setenv("COLUMNS", "40")
    message = "runs/convnet.log: 12 lines were cut at 1,048,576 bytes; the rest was read"
    say("note", message)
    lines = re.sub(r"\x1b\[[0-9;]*m", "", tty.text).splitlines()
    assert len(lines) > 1 and all(len(x) <= 40 for x in lines)
    assert " ".join(x.strip() for x in lines) == "dnnlens: note: " + message


def test_notes_to_a_file_stay_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    say("note", "x " * 100)
    assert capsys.readouterr().err.count("\n") == 1


def test_a_streamed_fleet_query_table_fits_columns_too() -> None:
    from dnnlens.fleet.query import QueryResult, table_lines

    cols = ["run", *(f"metric_{i}" for i in range(12))]
    block = [(f"{k}/run.log", *(1234.5678 * i for i in range(12))) for k in "abc"]
    lines = list(table_lines(QueryResult(cols, iter([block, block])), 60))
    assert all(len(t) <= 60 for t, _ in lines)
    end = [t for t, _ in lines[lines.index(("6 row(s)", "bold")) + 1 :]]
    assert " ".join(end).startswith("left out at 60 columns: metric_")


_NAME = st.text(alphabet="abcdefghijk_:0123456789x", min_size=0, max_size=40)
_NUMBER = st.floats(min_value=-1e6, max_value=1e6, allow_nan=False).map(lambda v: f"{v:,.3f}")


@st.composite
def _tables(draw: st.DrawFn) -> tuple[list[tuple[str, str, int]], list[list[str]]]:
    kinds = draw(st.lists(st.sampled_from(["left", "flex", "text", "whole", "right"]),
                          min_size=1, max_size=9))  # fmt: skip
    columns = [(f"c{i}", k, draw(st.integers(0, 3))) for i, k in enumerate(kinds)]
    rows = draw(st.lists(st.tuples(*(_NUMBER if k == "right" else _NAME for k in kinds)),
                         max_size=8))  # fmt: skip
    return columns, [list(r) for r in rows]


@given(_tables(), st.integers(min_value=40, max_value=160))
@settings(max_examples=60, deadline=None)
def test_any_grid_fits_and_keeps_numbers_whole(table, width: int) -> None:
    """Any table at any width of 40 or more: every line fits, a number or a ``whole`` cell
    of a column that is shown is printed whole, and rows that differ in their shown text
    columns print differently whenever the widths let them (never worse than before)."""
    columns, rows = table
    grid = Grid("t", columns)
    for r in rows:
        grid.add_row(*r)
    lines = grid.lines(width)
    widths = grid.widths(width)
    body = [t for t, _ in lines[2 : 2 + len(rows)]]
    fixed = sum(w for w, (_, k, _) in zip(widths, columns, strict=True) if k in ("whole", "right"))
    shown = sum(1 for w in widths if w)
    for text, _ in lines:
        # only a first column of numbers or a location wider than the line can pass it
        assert len(text) <= width or fixed + shown - 1 > width, (text, width)
    for line, r in zip(body, rows, strict=True):
        for (_, kind, _), w, cell in zip(columns, widths, r, strict=True):
            if w and kind in ("right", "whole") and cell:
                assert cell in line
