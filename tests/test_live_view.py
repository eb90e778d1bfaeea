"""The live region and the program's bytes on one terminal, recorded in the order written:
the region is erased before the program's bytes and drawn again only at a line start."""

from __future__ import annotations

import io

import pytest

from dnnlens.cli import live_view
from dnnlens.cli.live_view import LiveView


class _Screen:
    """What reaches the terminal, in order: ("out", bytes) and ("term", text)."""

    def __init__(self) -> None:
        self.writes: list[tuple[str, str]] = []
        screen = self

        class Out(io.RawIOBase):
            def write(self, data) -> int:  # noqa: ANN001
                screen.writes.append(("out", bytes(data).decode()))
                return len(data)

        class Term(io.StringIO):
            def write(self, text: str) -> int:
                screen.writes.append(("term", text))
                return len(text)

            def isatty(self) -> bool:
                return False

        self.out, self.term = Out(), Term()

    def program(self) -> str:
        return "".join(text for kind, text in self.writes if kind == "out")


@pytest.fixture()
def screen() -> _Screen:
    return _Screen()


def test_whole_lines_pass_at_once_and_a_line_start_waits(screen, monkeypatch) -> None:
    view = LiveView(screen.out, screen.term)  # type: ignore[arg-type]
    view.write_program(b"step 1\nstep 2\nsta")
    assert screen.program() == "step 1\nstep 2\n"  # the start of "step 3" is held
    monkeypatch.setattr(live_view, "HOLD_SECONDS", 0.0)
    view.program.flush()  # the stream paused: the held start goes out
    assert screen.program() == "step 1\nstep 2\nsta"
    view.write_program(b"rt\n")
    view.close()
    assert screen.program() == "step 1\nstep 2\nstart\n"


def test_the_region_is_never_drawn_over_a_line(screen, monkeypatch) -> None:
    monkeypatch.setattr(live_view, "HOLD_SECONDS", 0.0)
    view = LiveView(screen.out, screen.term)  # type: ignore[arg-type]
    view.show("REGION")
    assert screen.writes[-1][0] == "term" and "REGION" in screen.writes[-1][1]
    view.write_program(b"Enter a number: ")  # a prompt: no line end
    kinds = [kind for kind, _ in screen.writes]
    assert kinds[-1] == "out"  # erased first, the prompt written, no region after it
    assert "\x1b[2K" in screen.writes[-2][1]
    view.show("REGION 2")  # new figures while the program is in the middle of its line
    assert screen.writes[-1][0] == "out"  # still nothing drawn
    view.write_program(b"42\n")
    assert "REGION 2" in screen.writes[-1][1]  # drawn again below the finished line
    view.close()
    assert "\x1b[2K" in screen.writes[-1][1] and "REGION" not in screen.writes[-1][1]
