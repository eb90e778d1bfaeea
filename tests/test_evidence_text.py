"""What a report quotes of an event or diagnostic line is the line as the file has it, from
its marker on: the record's own parsed text with the line's timestamp and time put back.

Checked on every event and diagnostic line of real logs of every release family: MKL-DNN
0.x (no engine, no attributes), DNNL, oneDNN 2.x with timestamps, ``gemm_api`` lines of 2.7
(no aux slot), 3.x ``exec:check`` lines, graph partition lines and v1 logs. A timestamped
log's diagnostic lines are quoted without their timestamp: the reader keeps none.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from dnnlens.analysis.line_texts import line_texts
from dnnlens.reading import read

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT / "tests" / "data" / "corpus"
LOGS = [
    CORPUS / "01_mkldnn0x_benchdnn_resnet_conv1.log",
    CORPUS / "03_mkldnn0x_tf_sum_reorder_loop_truncated.log",
    CORPUS / "15_onednn2x_tf_opt_gemm_api_markdown_bold.log",
    CORPUS / "17_onednn2x_tf_gemm_api_acl_single.log",
    CORPUS / "25_onednn3x_windows_gtest_exec_check_b.log",
    CORPUS / "29_onednn3_8rc_xpu_gpu_gemm_info_postops.log",
    CORPUS / "33_onednn_v1_graph_partition_exec_quoted.log",
    ROOT / "sample_logs" / "legacy" / "onednn-2.2.0-timestamp.log",
    ROOT / "sample_logs" / "all_timestamps_infer.log",
    ROOT / "sample_logs" / "convnet_nchw_train.log",
]
_MARKER = re.compile(r"(onednn|dnnl|mkldnn)_verbose,")
#: the timestamp field after the marker (and version) of a timestamped line
_STAMP = re.compile(r"^([a-z]+_verbose,(?:v\d+,)?)\d+\.\d+,")


def _from_marker(line: str) -> str:
    m = _MARKER.search(line)
    assert m, line
    return line[m.start() :].rstrip()


@pytest.mark.parametrize("path", LOGS, ids=lambda p: p.name)
def test_each_quoted_line_is_the_file_s(path: Path) -> None:
    log = read([str(path)], jobs=1, window_events=None)
    lines = path.read_text(encoding="utf-8", errors="replace").split("\n")
    events = [int(n) for n in log.events["line"]]
    diagnostics = [int(n) for n in log.diagnostics["line"]]
    assert events or diagnostics
    texts = line_texts(log, [(str(path), n) for n in events + diagnostics])
    for n in events:
        assert texts[(str(path), n)] == _from_marker(lines[n - 1]), n
    for n in diagnostics:
        want = _STAMP.sub(r"\1", _from_marker(lines[n - 1]))
        assert texts[(str(path), n)] == want, n
