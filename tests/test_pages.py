"""The command's own allocator settings (``dnnlens.cli.allocator``): made with glibc's
``mallopt`` in the command's process, unless the user set glibc's ``MALLOC_*`` variables,
relaxed once the inputs are read, and never passed to a program it runs (they are not in
the environment)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

PROBE = (
    "from dnnlens.cli.allocator import give_back_memory, keep_freed_memory\n"
    "print(give_back_memory(), keep_freed_memory(), give_back_memory())"
)


def _probe(env: dict[str, str]) -> str:
    return subprocess.run(
        [sys.executable, "-c", PROBE], env=env, capture_output=True, text=True, check=True
    ).stdout.strip()


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's mallopt: Linux")
def test_made_on_linux_unless_the_user_chose() -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MALLOC_")}
    if os.confstr("CS_GNU_LIBC_VERSION") is None:  # pragma: no cover - musl
        pytest.skip("not glibc")
    assert _probe(env) == "False True True"  # nothing to give back before the settings
    assert _probe({**env, "MALLOC_ARENA_MAX": "2"}) == "False False False"


def test_not_in_the_environment_of_a_program_run() -> None:
    from dnnlens.cli import program_environment

    assert not any(name.startswith("MALLOC_") for name in program_environment()) or any(
        name.startswith("MALLOC_") for name in os.environ
    )
