"""``runs.workload_name`` and ``runs.model``: a workload a human can read beside its hash.

The names are checked against hand counts of real logs: the distinct (kind, prop_kind,
problem) of their exec lines, counted with

    grep '^onednn_verbose.*,exec,' LOG | grep -v ',graph,' \\
      | awk -F, '{print $6, $8, $(NF-1)}' | sort -u | awk '{print $1}' | sort | uniq -c

(the kind, prop_kind and problem fields of a v3 line; ``$3, $5`` for a 0.x line).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from dnnlens.fleet.diff_text import workload_text
from dnnlens.fleet.rows import NAME_FIELD_CHARS, workload_name, workload_of
from shared_analyses import GROUP, analyze_json
from test_fleet_logs import build, invoke

pytest.importorskip("duckdb")
pytestmark = pytest.mark.xdist_group(GROUP)

ROOT = Path(__file__).resolve().parent.parent
SAME_A = ROOT / "tests" / "data" / "noise" / "same_program_a.log"
SAME_B = ROOT / "tests" / "data" / "noise" / "same_program_b.log"
BENCHDNN = ROOT / "tests" / "data" / "corpus" / "01_mkldnn0x_benchdnn_resnet_conv1.log"
KERAS = ROOT / "sample_logs" / "keras_cnn_train.log"
OPENVINO = ROOT / "sample_logs" / "producers" / "openvino_cnn_infer.log"


def primitives(path: Path) -> list[dict]:
    return json.loads(analyze_json(path)[1])["primitives"]


def test_the_name_of_real_logs_against_hand_counts() -> None:
    # same_program_a.log: 3 convolution forward_training (mb4_...), 6 reorder undef
    assert workload_name(primitives(SAME_A)) == (
        "6 reorder, 3 convolution · forward_training · mb4"
    )
    # openvino_cnn_infer.log: 5 reorder undef, 1 each of convolution, inner_product and
    # pooling forward_inference; the three problems start mb1
    assert workload_name(primitives(OPENVINO)) == (
        "5 reorder, 1 convolution, 1 inner_product, … · forward_inference · mb1"
    )
    # keras_cnn_train.log: convolution 2 forward_training + 2 backward_weights + 1
    # backward_data = 5; gemm_api 2, pooling 2 (forward_training, backward_data), reorder
    # 2, inner_product 1 forward_training; prop kinds by distinct primitives:
    # forward_training 4, backward_data 2, backward_weights 2; every mb problem is mb4
    assert workload_name(primitives(KERAS)) == (
        "5 convolution, 2 gemm_api, 2 pooling, … · forward_training, backward_data, "
        "backward_weights · mb4"
    )
    # 01_mkldnn0x (a 0.x log, $3 and $5): 1 convolution forward_inference mb50_g1ic3...,
    # 3 reorder undef (50x3x224x224, 1x64x3x7x7, 50x64x112x112)
    assert workload_name(primitives(BENCHDNN)) == (
        "3 reorder, 1 convolution · forward_inference · mb50"
    )


def test_runs_of_one_hash_share_the_name() -> None:
    a, b = primitives(SAME_A), primitives(SAME_B)
    assert workload_of(a) == workload_of(b)
    assert workload_name(a) == workload_name(b)
    # the order the primitives are listed in (their time) does not matter
    assert workload_name(list(reversed(a))) == workload_name(a)


def test_no_minibatch_when_none_dominates_and_none_without_primitives() -> None:
    rows = [
        {"kind": "convolution", "prop_kind": "forward_inference", "problem": problem}
        for problem in ("mb1_ic3oc8", "mb2_ic3oc8", "mb4_ic3oc8", "mb4_ic8oc8")
    ]
    assert workload_name(rows) == "4 convolution · forward_inference"  # mb4: 2 of 4
    assert workload_name([]) == "no primitives"


def test_a_hostile_kind_is_bounded_and_escaped_where_shown() -> None:
    evil = "conv\x1b]52;c;aGk=\x07\x1b[2J" + "A" * 10_000
    rows = [{"kind": evil, "prop_kind": "p" * 10_000, "problem": "mb1"}]
    name = workload_name(rows)
    assert len(name) <= 2 * NAME_FIELD_CHARS + 20
    shown = workload_text({"workload": "0f", "workload_name": name, "model": evil[:80]})
    assert "\x1b" not in shown and "\x07" not in shown
    assert shown.startswith("Workload 1 conv\\x1b]52;c;aGk=\\x07\\x1b[2JAAA")
    assert "(model conv\\x1b]52" in shown


@pytest.fixture(scope="module")
def dataset(tmp_path_factory) -> Path:
    """Two runs of one program and a benchdnn run that names its model."""
    root = tmp_path_factory.mktemp("workload-name")
    for path in (SAME_A, SAME_B, BENCHDNN):
        shutil.copy(path, root / path.name)
    result = build(str(root), "-o", str(root / "ds"))
    assert result.exit_code == 0, result.stderr
    return root / "ds"


def test_build_then_query_shows_the_columns(dataset) -> None:
    sql = "SELECT run, workload_name, model FROM runs ORDER BY run"
    got = invoke("fleet", "query", str(dataset), sql, "-f", "json")
    assert got.exit_code == 0, got.stderr
    assert json.loads(got.stdout) == [
        {
            "run": "01_mkldnn0x_benchdnn_resnet_conv1",
            "workload_name": "3 reorder, 1 convolution · forward_inference · mb50",
            "model": "resnet_50",
        },
        {
            "run": "same_program_a",
            "workload_name": "6 reorder, 3 convolution · forward_training · mb4",
            "model": None,
        },
        {
            "run": "same_program_b",
            "workload_name": "6 reorder, 3 convolution · forward_training · mb4",
            "model": None,
        },
    ]
    trend = invoke("fleet", "query", str(dataset), "SELECT * FROM run_trend", "-f", "csv")
    assert trend.stdout.splitlines()[0].startswith("workload,workload_name,model,run,")


def test_fleet_diff_names_the_baselines_workload(dataset) -> None:
    alone = invoke("fleet", "diff", str(dataset), "--baseline", BENCHDNN.stem)
    assert alone.exit_code == 0, alone.stderr
    text = " ".join(alone.stdout.split())
    assert "Workload 3 reorder, 1 convolution · forward_inference · mb50 (model resnet_50; " in text
    assert "No other run of its workload" in text
    pair = invoke("fleet", "diff", str(dataset), "--baseline", "same_program_a", "-f", "json")
    assert json.loads(pair.stdout)["baseline_workload"] == {
        "workload": workload_of(primitives(SAME_A)),
        "workload_name": "6 reorder, 3 convolution · forward_training · mb4",
        "model": None,
    }


def test_runs_written_before_the_columns_read_them_as_null(dataset, tmp_path) -> None:
    out = tmp_path / "ds"
    shutil.copytree(dataset, out)
    for path in (out / "runs").glob("run-*.parquet"):
        pq.write_table(pq.read_table(path).drop_columns(["workload_name", "model"]), path)
    sql = "SELECT count(workload_name) AS n, count(model) AS m FROM runs"
    got = invoke("fleet", "query", str(out), sql, "-f", "csv")
    assert got.exit_code == 0, got.stderr
    assert got.stdout.splitlines() == ["n,m", "0,0"]
    diff = invoke("fleet", "diff", str(out), "--baseline", "same_program_a")
    assert "Workload ? (" in diff.stdout
