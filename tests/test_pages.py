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
import ctypes, os, sys
from dnnlens.io.pages import allow, reading_pages
libc = ctypes.CDLL(None)
libc.malloc.restype = ctypes.c_void_p
libc.malloc.argtypes = [ctypes.c_size_t]
libc.free.argtypes = [ctypes.c_void_p]
BLOCK = 2 << 20  # glibc maps a block this large by its own (given back at once when freed)
def resident():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
if sys.argv[1] == "allow":
    allow()
base = resident()
with reading_pages():
    blocks = [libc.malloc(BLOCK) for _ in range(8)]
    for block in blocks:
        ctypes.memset(block, 1, BLOCK)
    for block in reversed(blocks):
        libc.free(block)
    kept = resident() - base
print(kept >> 20, (resident() - base) >> 20)
"""


def _kept_mib(env: dict[str, str], allow: bool) -> tuple[int, int]:
    """MiB of 16 MiB malloc'ed, touched and freed that stay resident while reading and
    after it, in a fresh process."""
    args = [sys.executable, "-c", PROBE, "allow" if allow else "library"]
    out = subprocess.run(args, env=env, capture_output=True, text=True, check=True).stdout
    inside, after = out.split()
    return int(inside), int(after)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's mallopt: Linux")
def test_freed_pages_kept_while_reading_only_where_allowed() -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MALLOC_")}
    if os.confstr("CS_GNU_LIBC_VERSION") is None:  # pragma: no cover - musl
        pytest.skip("not glibc")
    inside, after = _kept_mib(env, allow=True)
    assert inside >= 12  # reused by the next block instead of faulted in again
    assert after <= 4  # given back once reading is done
    # a library caller's process, and a user who set MALLOC_*, keep glibc's behaviour
    assert _kept_mib(env, allow=False)[0] <= 4
    assert _kept_mib({**env, "MALLOC_ARENA_MAX": "2"}, allow=True)[0] <= 4


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
