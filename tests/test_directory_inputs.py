"""A directory stands for the runs in it: logs, traces and tables, told by their content.

The project's own README (which quotes ``onednn_verbose,v1,...`` in prose), a script, a
TSV sheet and a manifest beside real recordings are not runs: one note lists them and the
report holds the recordings only. A file named on its own is still read.
"""

from __future__ import annotations

import bz2
import gzip
import shutil
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from dnnlens.cli import app
from dnnlens.io.content import holds_run

ROOT = Path(__file__).resolve().parent.parent
SAMPLES = ROOT / "sample_logs"
LOG = SAMPLES / "convnet_nchw_infer.log"
TRACE = SAMPLES / "profile_nchw_infer.trace.json"
TABLE = SAMPLES / "profile_nchw_infer.table.txt"
#: ``grep -c ',primitive,exec,' sample_logs/convnet_nchw_infer.log``
LOG_EXECS = 165


def _analyze(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(app, ["analyze", *args])
    return result.exit_code, result.stdout, result.stderr


def _mixed(tmp_path: Path) -> Path:
    d = tmp_path / "runs"
    d.mkdir()
    shutil.copy(LOG, d / "convnet.log")
    shutil.copy(TRACE, d / "step.trace.json")
    shutil.copy(TABLE, d / "step.table.txt")
    shutil.copy(ROOT / "README.md", d / "README.md")
    shutil.copy(ROOT / "scripts" / "make_api_docs.py", d / "make.py")
    (d / "sheet.tsv").write_text("model\tms\nresnet\t12.5\n")
    shutil.copy(SAMPLES / "MANIFEST.json", d / "MANIFEST.json")
    return d


def test_only_runs_are_read_and_one_note_lists_the_rest(tmp_path: Path) -> None:
    import json

    d = _mixed(tmp_path)
    code, out, err = _analyze(str(d), "-f", "json")
    assert code == 0, err
    doc = json.loads(out)
    assert sorted(Path(i["path"]).name for i in doc["inputs"]) == ["convnet.log", "step.table.txt"]
    assert sum(r["summary"]["exec_count"] for r in doc["runs"]) == LOG_EXECS
    notes = [line for line in err.splitlines() if "skipped" in line]
    assert len(notes) == 1, err
    assert "skipped 4 files" in notes[0]
    for name in ("MANIFEST.json", "README.md", "make.py", "sheet.tsv"):
        assert name in notes[0]
    assert "no oneDNN verbose line among" not in err  # no note per file


def test_a_file_named_alone_is_still_read(tmp_path: Path) -> None:
    d = _mixed(tmp_path)
    code, _, err = _analyze(str(d / "convnet.log"), str(d / "sheet.tsv"), "-q", "-f", "json")
    assert code == 0
    code, _, err = _analyze(str(d / "convnet.log"), str(d / "sheet.tsv"))
    assert "sheet.tsv: no oneDNN verbose line among its 2 lines" in err


def test_a_directory_of_no_runs_is_an_input_error(tmp_path: Path) -> None:
    d = tmp_path / "notes"
    d.mkdir()
    shutil.copy(ROOT / "README.md", d / "README.md")
    (d / "todo.md").write_text("check onednn_verbose output\n")
    code, _, err = _analyze(str(d))
    assert code == 2
    assert err.count("\n") == 1
    assert "none of its 2 files holds a oneDNN verbose line" in err
    assert "README.md, todo.md" in err


def test_content_not_names(tmp_path: Path) -> None:
    """Compressed logs, a log named .txt and a trace named .data are runs; prose that
    quotes a marker is not."""
    text = LOG.read_bytes()
    cases = {
        "a.log.gz": gzip.compress(text),
        "b.bz2": bz2.compress(text),
        "c.txt": text,
        "d.data": TRACE.read_bytes(),
        "e.log": "\ufeff".encode() + text,
        "f.log": text.decode().encode("utf-16"),
    }
    for name, data in cases.items():
        (tmp_path / name).write_bytes(data)
        assert holds_run(str(tmp_path / name)), name
    prose = tmp_path / "notes.md"
    prose.write_text("Set `onednn_verbose,v1,...` lines apart; see ONEDNN_VERBOSE=1.\n")
    assert not holds_run(str(prose))
    assert not holds_run(str(SAMPLES / "MANIFEST.json"))


@given(
    st.binary(max_size=2048),
    st.sampled_from([b"", b"\x1f\x8b", b"BZh", b"\xfd7zXZ\x00", b"\xff\xfe"]),
)
@settings(max_examples=80, deadline=None)
def test_any_bytes_are_a_yes_or_no(tmp_path_factory: pytest.TempPathFactory, data: bytes,
                                   magic: bytes) -> None:  # fmt: skip
    """Damaged compression, half a UTF-16 character, binary junk: an answer, never an error."""
    path = tmp_path_factory.mktemp("bytes") / "f"
    path.write_bytes(magic + data)
    assert holds_run(str(path)) in (True, False)


def test_a_verbose_line_late_or_across_pieces_is_found(tmp_path: Path) -> None:
    """The head is read a piece at a time: a verbose line that straddles two pieces, or
    comes after 1 MiB of the program's own output, is found; one past the head is not."""
    from dnnlens.io import content

    line = LOG.read_text().splitlines()[20].encode() + b"\n"
    assert b",exec," in line
    straddle = b"x" * (content._PIECE_BYTES - 30) + b"\n" + line
    late = b"epoch 1 loss 0.5\n" * ((1 << 20) // 17 + 1) + line
    past = b"p" * 99 + b"\n"
    past = past * (content.HEAD_BYTES // len(past) + 1) + line
    for name, data, want in (("straddle", straddle, True), ("late", late, True),
                             ("past", past, False)):  # fmt: skip
        (tmp_path / name).write_bytes(data)
        assert holds_run(str(tmp_path / name)) is want, name
