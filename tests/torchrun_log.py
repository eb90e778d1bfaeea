r"""A two-rank ``torchrun`` log made of two real recordings, and its hand counts.

No recording of a distributed run is among the sample logs, so this is one put together the
way ``torchrun`` writes it: the output of each process, every line prefixed ``[rankN]:``,
interleaved in runs of 1 to 7 lines as two processes' writes arrive, after a line of
torchrun's own (no prefix). Rank 0 ran ``convnet_nchw_infer.log``, rank 1
``convnet_cl_infer.log`` (both ``sample_logs/``).

Hand counts of the made file (``python -c 'import torchrun_log as t;
print(t.torchrun_log(), end="")' > ddp.log`` in ``tests/``)::

    grep -c '^\[rank0\]:' ddp.log                                          338
    grep -c '^\[rank0\]:onednn_verbose,v1,primitive,\(exec\|create:\)' ddp.log  330
    grep '^\[rank0\]:onednn_verbose,v1,primitive,exec,' ddp.log \
        | awk -F, '{n++; s+=$NF} END {printf "%d %.6f", n, s}'              165 356.084723
    (rank 1: 184 lines, 176 events, 88 exec lines, 180.342063 ms)
    grep -vc '^\[rank' ddp.log                                              1
    wc -l ddp.log                                                          523
"""

from __future__ import annotations

from pathlib import Path

SAMPLE_LOGS = Path(__file__).resolve().parent.parent / "sample_logs"
RANK_LOGS = ("convnet_nchw_infer.log", "convnet_cl_infer.log")
#: rank -> (lines, event lines, exec lines, exec time in ms), counted by hand (module doc)
HAND_COUNTS = {0: (338, 330, 165, 356.084723), 1: (184, 176, 88, 180.342063)}
LINES = 523


def torchrun_log() -> str:
    """The made log's text (module doc)."""
    ranks = [(SAMPLE_LOGS / name).read_text().splitlines() for name in RANK_LOGS]
    out = ["W1203 12:00:00.000000 41 torch/distributed/run.py:793] *****"]
    at = [0, 0]
    k = 0
    while at[0] < len(ranks[0]) or at[1] < len(ranks[1]):
        rank, n = k % 2, 1 + k % 7
        out.extend(f"[rank{rank}]:{line}" for line in ranks[rank][at[rank] : at[rank] + n])
        at[rank] += n
        k += 1
    return "\n".join(out) + "\n"
