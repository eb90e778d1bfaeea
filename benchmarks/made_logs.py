"""The large logs the benchmarks read, made from the real sample logs by repeating them."""

from __future__ import annotations

from pathlib import Path


def build_log(source: Path, lines: int, path: Path) -> None:
    """Write ``lines`` lines by repeating ``source`` (its header included each time)."""
    block = source.read_text(encoding="utf-8").splitlines(keepends=True)
    written = 0
    with path.open("w", encoding="utf-8") as out:
        while written < lines:
            take = block[: lines - written]
            out.writelines(take)
            written += len(take)


def build_tables(source: Path, table_file: Path, path: Path, lines: int, every: int | None) -> None:
    """``source`` repeated, with the profiler table of ``table_file`` after each ``every``
    lines (none when ``every`` is None)."""
    body = source.read_text(encoding="utf-8").splitlines(keepends=True)
    table = table_file.read_text(encoding="utf-8").splitlines(keepends=True)
    written = since = 0
    with path.open("w", encoding="utf-8") as out:
        while written < lines:
            for line in body:
                out.write(line)
                written += 1
                since += 1
                if every and since >= every:
                    out.writelines(table)
                    written += len(table)
                    since = 0
                if written >= lines:
                    break
