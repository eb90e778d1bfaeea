"""The reading's memory pages (``dnnlens.io.pages``): glibc's ``mallopt`` settings made only
in a process that allowed them (the command's), unless the user set glibc's ``MALLOC_*``
variables; kept while inputs are read, given back after; never in the environment of a
program dnnlens runs."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

PROBE = """
from dnnlens.io.pages import allow, reading_pages
with reading_pages() as before:
    pass
allowed = allow()
with reading_pages() as after:
    pass
print(before, allowed, after)
"""


def _probe(env: dict[str, str]) -> str:
    return subprocess.run(
        [sys.executable, "-c", PROBE], env=env, capture_output=True, text=True, check=True
    ).stdout.strip()


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's mallopt: Linux")
def test_made_once_allowed_unless_the_user_chose() -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MALLOC_")}
    if os.confstr("CS_GNU_LIBC_VERSION") is None:  # pragma: no cover - musl
        pytest.skip("not glibc")
    assert _probe(env) == "False True True"  # a library caller's process is left alone
    assert _probe({**env, "MALLOC_ARENA_MAX": "2"}) == "False False False"


ENVIRONMENT_PROBE = """
import json
import dnnlens.cli as cli
def command():
    env = cli.program_environment()
    print(json.dumps(sorted(k for k in env if k.startswith(("MALLOC_", "ARROW_")))), flush=True)
cli.app = command
cli.main()
"""


def _program_environment(env: dict[str, str]) -> list[str]:
    """The allocator variables a program run by a dnnlens command would see."""
    out = subprocess.run(
        [sys.executable, "-c", ENVIRONMENT_PROBE], env=env, capture_output=True, text=True
    )
    assert out.returncode == 0, out.stderr[-2000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_not_in_the_environment_of_a_program_run() -> None:
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith("MALLOC_") and k != "ARROW_DEFAULT_MEMORY_POOL"
    }
    # the command's own settings (mallopt, Arrow's pool) never reach a program it runs
    assert _program_environment(env) == []
    # what the user set does, unchanged
    chosen = {**env, "MALLOC_ARENA_MAX": "2", "ARROW_DEFAULT_MEMORY_POOL": "jemalloc"}
    assert _program_environment(chosen) == ["ARROW_DEFAULT_MEMORY_POOL", "MALLOC_ARENA_MAX"]
