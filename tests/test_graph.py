"""The op graph on the real sample logs.

Expected numbers were counted by hand from the logs, per pass (pass boundaries: see
tests/test_iterations.py):

* NCHW inference, lines 10-37 (one pass): 4 weight reorders ``abcd -> Acdb8a/ABcd8b8a`` with
  OIhw dims (16x3x3x3, 16x16x3x3 twice, 32x16x3x3), each right before its convolution; 4
  activation reorders ``aBcd8b -> abcd`` right after each convolution and 3 ``abcd ->
  aBcd8b`` right before convolutions 2-4 (PyTorch's pool/bn/relu run in between and print
  nothing). Convolutions 2-4 are wrapped plain->blocked ... blocked->plain: round trips; the
  first convolution reads the plain input directly, so its output reorder is not one.
  ``grep ',exec,cpu,reorder,' convnet_nchw_infer.log | awk -F, '{print $NF-1}' | sort | uniq -c``
  gives 121 reorder execs = 11 x (4 + 7).
* channels_last inference: 44 reorder execs = 11 x 4, all ``acdb -> Acdb16a/Acdb32a`` with
  OIhw dims: weights only; convolutions read and write ``acdb``.
"""

from __future__ import annotations

import json
from pathlib import Path

import networkx as nx
import numpy as np
import pytest
from typer.testing import CliRunner

from dnnlens.analysis.graph import NODE_COLUMNS, REORDER_COLUMNS, build_graph, op_tensors
from dnnlens.analysis.iterations import find_iterations
from dnnlens.reading import load
from dnnlens.report.graph_export import graph_to_dict, render

SAMPLES = Path(__file__).parent.parent / "sample_logs"
CORPUS = Path(__file__).parent / "data" / "corpus"


def _graph(name: str):
    return build_graph(load([str(SAMPLES / name)]).events)


def _ids(df, mask) -> set[str]:
    return set(df.loc[mask, "node"])


def test_nchw_inference_round_trips_and_weights() -> None:
    g = _graph("convnet_nchw_infer.log")
    assert g.iterations.as_dict() == {"count": 11, "warmup_structural": 1, "period_exec": 15}
    assert g.graph.number_of_nodes() == 15
    r = g.reorders
    assert list(r.columns) == list(REORDER_COLUMNS)
    assert len(r) == 11 and (r["count"] == 11).all() and r["steady"].all()
    weights = _ids(r, r["tensor"] == "weight")
    assert weights == {"n0_reorder", "n4_reorder", "n8_reorder", "n12_reorder"}
    assert set(r.loc[r["tensor"] == "weight", "dst_layout"]) == {"Acdb8a", "ABcd8b8a"}
    assert set(r.loc[r["tensor"] == "weight", "consumer_arg"]) == {"wei"}
    trips = _ids(r, r["round_trip"])
    assert trips == {"n3_reorder", "n6_reorder", "n7_reorder", "n10_reorder", "n11_reorder",
                     "n14_reorder"}  # fmt: skip
    assert _ids(r, (r["tensor"] == "activation") & ~r["round_trip"]) == {"n2_reorder"}
    assert (r["converts"] == "layout").all()
    row = r.set_index("node").loc["n3_reorder"]
    assert (row["src_layout"], row["dst_layout"], row["dims"]) == ("abcd", "aBcd8b", "4x16x32x32")
    assert row["consumer"] == "n5_convolution" and row["round_trip_with"] == "n6_reorder"
    # the tensors: weight reorder -> conv wei, conv dst -> reorder back, through bn/relu
    edges = set(g.graph.edges)
    assert {("n0_reorder", "n1_convolution"), ("n1_convolution", "n2_reorder"),
            ("n3_reorder", "n5_convolution"), ("n4_reorder", "n5_convolution"),
            ("n5_convolution", "n6_reorder"), ("n6_reorder", "n7_reorder")} <= edges  # fmt: skip
    assert g.graph.edges["n4_reorder", "n5_convolution"]["dst_arg"] == "wei"
    assert ("n2_reorder", "n3_reorder") not in edges  # maxpool changed the dims
    # stats from all 11 passes on every node
    n = g.nodes.set_index("node")
    assert list(g.nodes.columns) == list(NODE_COLUMNS)
    assert (n["count"] == 11).all() and (n["iterations"] == 11).all()
    ev = load([str(SAMPLES / "convnet_nchw_infer.log")]).events
    assert n["time_ms"].sum() == pytest.approx(
        ev.loc[ev["operation"].astype(str) == "exec", "time_ms"].sum()
    )


def test_channels_last_inference_weights_only() -> None:
    g = _graph("convnet_cl_infer.log")
    assert g.iterations.as_dict() == {"count": 11, "warmup_structural": 1, "period_exec": 8}
    r = g.reorders
    assert len(r) == 4 and (r["tensor"] == "weight").all() and not r["round_trip"].any()
    assert set(r["consumer_arg"]) == {"wei"}
    assert set(r["dst_layout"]) == {"Acdb16a", "Acdb32a"}
    convs = g.nodes[g.nodes["kind"] == "convolution"]
    assert set(convs["src_layout"]) == {"acdb"} and set(convs["dst_layout"]) == {"acdb"}
    # conv 2 -> conv 3 -> conv 4 through bn/relu/add (same dims, acdb)
    assert {("n3_convolution", "n5_convolution"), ("n5_convolution", "n7_convolution")} <= set(
        g.graph.edges
    )


def test_training_backward_ops() -> None:
    # convnet_nchw_train: per step (lines 10-91) 4 forward_training, 3 backward_data and 4
    # backward_weights convolutions: grep ',exec,' | awk -F, '{print $8}' | sort | uniq -c
    # gives 24 / 18 / 24 over 6 steps. 31 reorders per step (186 / 6); weights: the 4
    # forward weight reorders, 3 into backward_data's wei (Bcda16b, ABcd8a8b) and 4 weight
    # gradients read from backward_weights (ABcd8b8a/Acdb8a -> abcd): 11.
    g = _graph("convnet_nchw_train.log")
    assert g.iterations.as_dict() == {"count": 6, "warmup_structural": 1, "period_exec": 42}
    kinds = g.nodes["prop_kind"].value_counts().to_dict()
    assert kinds["forward_training"] == 4
    assert kinds["backward_data"] == 3
    assert kinds["backward_weights"] == 4
    r = g.reorders.set_index("node")
    assert len(r) == 31 and (r["tensor"] == "weight").sum() == 11
    grads = r[r["src_layout"].isin(["ABcd8b8a", "Acdb8a"]) & (r["dst_layout"] == "abcd")]
    assert len(grads) == 4 and (grads["tensor"] == "weight").all()
    assert all(g.graph.nodes[p]["prop_kind"] == "backward_weights" for p in grads["producer"])
    bwd_wei = r[r["dst_layout"].isin(["Bcda16b", "ABcd8a8b"])]
    assert len(bwd_wei) == 3 and set(bwd_wei["consumer_arg"]) == {"wei"}
    # forward round trips as in inference; the diff_dst reorder to acdb is not one
    assert r.loc[["n3_reorder", "n6_reorder", "n11_reorder", "n14_reorder"], "round_trip"].all()
    assert not r.loc["n15_reorder", "round_trip"]  # abcd -> acdb for backward_data
    assert r.loc["n18_reorder", "converts"] == "none"  # acdb -> acdb copy
    # backward_data reads the diff_dst its reorder made (dst slot), writes diff_src (src)
    assert g.graph.edges["n15_reorder", "n17_convolution"]["dst_arg"] == "dst"
    assert g.graph.edges["n17_convolution", "n18_reorder"]["src_arg"] == "src"

    g = _graph("convnet_cl_train.log")
    assert g.iterations.as_dict() == {"count": 6, "warmup_structural": 1, "period_exec": 22}
    r = g.reorders
    # 66 reorder execs = 6 x 11, all with OIhw dims (16x3x3x3, 16x16x3x3, 32x16x3x3)
    assert len(r) == 11 and (r["tensor"] == "weight").all() and not r["round_trip"].any()
    assert (g.nodes["prop_kind"] == "backward_weights").sum() == 4


def test_compile_freezing_weights_once_post_ops_fused() -> None:
    # lines 8-15: the 4 weight reorders, once; then 12 passes x 4 convolutions with
    # attr-post-ops eltwise_relu / sum+eltwise_relu (grep -o 'attr-post-ops:[^ ,]*')
    g = _graph("compile_freezing_infer.log")
    assert g.iterations.as_dict() == {"count": 12, "warmup_structural": 1, "period_exec": 4}
    steady = g.nodes[g.nodes["steady"]]
    assert list(steady["kind"]) == ["convolution"] * 4
    assert list(steady["post_ops"]) == ["relu", "relu", "sum+relu", "relu"]
    assert (steady["count"] == 12).all()
    r = g.reorders
    assert len(r) == 4 and not r["steady"].any() and (r["tensor"] == "weight").all()
    assert (r["count"] == 1).all() and (r["iterations"] == 1).all()
    assert list(r["consumer"]) == [f"n{i}_convolution" for i in range(4)]
    assert list(r["example"].str.rsplit(":", n=1).str[1]) == ["9", "11", "13", "15"]


def test_lstm() -> None:
    # per pass: reorders 1x1x32x4x64 and 1x1x64x4x64 (layer 1 wei_layer/wei_iter), rnn
    # l1t20mb4sic64slc32, two 1x1x64x4x64 reorders, rnn l1t20mb4sic64slc64
    g = _graph("lstm_infer.log")
    assert g.iterations.as_dict() == {"count": 11, "warmup_structural": 1, "period_exec": 6}
    assert list(g.nodes["kind"]) == ["reorder", "reorder", "rnn", "reorder", "reorder", "rnn"]
    r = g.reorders.set_index("node")
    assert (r["tensor"] == "weight").all()
    assert r["consumer"].tolist() == ["n2_rnn", "n2_rnn", "n5_rnn", "n5_rnn"]
    assert set(r["consumer_arg"]) == {"wei_layer", "wei_iter"}
    assert g.graph.edges["n2_rnn", "n5_rnn"]["dst_arg"] == "src_layer"


@pytest.mark.parametrize("path", sorted((SAMPLES / "legacy").glob("*.log")), ids=lambda p: p.name)
def test_legacy_logs(path: Path) -> None:
    # 15 primitives per iteration + the 2 int8 reorders done once before the loop; reorders:
    # src and weights into the conv layouts, back to nchw, the inner product's weights, the
    # backward_data weights, + the 2 int8 ones (src f32 -> s8 acdb, weights -> s8 blocked)
    g = build_graph(load([str(path)]).events)
    assert g.iterations.as_dict() == {"count": 3, "warmup_structural": 1, "period_exec": 15}
    assert g.graph.number_of_nodes() == 17
    r = g.reorders
    assert len(r) == 7 and (r["tensor"] == "weight").sum() == 4
    assert _ids(r, r["round_trip"]) == {"n0_reorder", "n3_reorder"}
    assert set(r.loc[~r["steady"], "converts"]) == {"both"}


@pytest.mark.parametrize("path", sorted(CORPUS.glob("*.log")), ids=lambda p: p.name)
def test_corpus_builds(path: Path) -> None:
    g = build_graph(load([str(path)]).events)
    d = graph_to_dict(g)
    json.dumps(d, allow_nan=False)
    assert len(d["nodes"]) == g.graph.number_of_nodes()


def test_mkldnn_format_names() -> None:
    # MKL-DNN 0.x: format names, no data type on conv tensors; goihw -> gOhwi8o 1x64x3x7x7
    # is the grouped (g1) conv's weights
    g = build_graph(load([str(CORPUS / "01_mkldnn0x_benchdnn_resnet_conv1.log")]).events)
    r = g.reorders.set_index("node")
    assert r.loc["n1_reorder", ["src_layout", "dst_layout", "tensor", "consumer_arg"]].tolist() == [
        "goihw", "gOhwi8o", "weight", "wei"]  # fmt: skip
    assert ("n3_convolution", "n4_reorder") in g.graph.edges  # fdst:nChw8c -> in:f32_nChw8c


def test_op_tensors_roles() -> None:
    ins, outs = op_tensors(
        "convolution", "backward_weights",
        "src:f32::blocked:acdb::f0 wei:f32:a:blocked:ABcd8b8a::f0 bia:undef::undef::: "
        "dst:f32::blocked:acdb::f0", "mb4_ic16oc32_ih32oh16kh3sh2dh0ph1_iw32ow16kw3sw2dw0pw1", "",
    )  # fmt: skip
    assert [t.arg for t in ins] == ["src", "dst"] and [t.arg for t in outs] == ["wei"]
    assert outs[0].dims == (32, 16, 3, 3) and ins[1].dims == (4, 32, 16, 16)
    ins, outs = op_tensors(
        "matmul", "undef", "src:f32::blocked:abc::f0 wei:f32::blocked:abc::f0 "
        "dst:f32::blocked:abc::f0", "2x3x4:1x4x5", "")  # fmt: skip
    assert outs[0].dims == (2, 3, 5)


def test_exports() -> None:
    g = _graph("convnet_nchw_infer.log")
    d = json.loads(render(g, "json"))
    # hand count (pass sums of the log's exec times): 102.97, 102.26, 102.30, 30.19 ms, then
    # 2.25 .. 4.26 ms: one structural warm-up pass (cache misses) and three slow ones
    assert d["iterations"]["count"] == 11 and d["iterations"]["warmup"] == 4
    assert (d["iterations"]["warmup_structural"], d["iterations"]["warmup_slow"]) == (1, 3)
    assert d["iterations"]["steady"] == 7
    assert d["iterations"]["steady_time_ms"]["max"] == pytest.approx(4.26, abs=0.005)
    assert d["iterations"]["period_exec"] == 15
    node = d["nodes"][3]
    assert {"id", "kind", "count", "time_ms", "reorder"} <= set(node)
    assert node["reorder"]["tensor"] == "activation" and node["reorder"]["round_trip"] is True
    assert node["reorder"]["converts"] == "layout"
    assert d["nodes"][1]["reorder"] is None
    assert {"src": "n0_reorder", "dst": "n1_convolution"}.items() <= d["edges"][0].items()
    back = nx.parse_graphml(render(g, "graphml"))
    assert back.number_of_nodes() == 15 and back.number_of_edges() == 13
    assert back.nodes["n3_reorder"]["reorder_round_trip"] is True
    dot = render(g, "dot")
    assert dot.startswith("digraph") and '"n0_reorder" -> "n1_convolution"' in dot
    assert "penwidth=3" in dot and "dashed" in dot
    mer = render(g, "mermaid")
    assert mer.startswith("flowchart TD") and "n0_reorder -->" in mer
    assert "class n3_reorder roundtrip" in mer and "class n0_reorder weightreorder" in mer
    with pytest.raises(ValueError):
        render(g, "svg")


def test_million_events_give_one_iteration() -> None:
    # the NCHW log's event table repeated to 1,000,230 rows (3031 copies of 330 events, line
    # numbers shifted): still 15 nodes, each executed 11 x 3031 times
    log = load([str(SAMPLES / "convnet_nchw_infer.log")])
    ev = log.events
    reps = -(-1_000_000 // len(ev))
    big = ev.iloc[np.tile(np.arange(len(ev)), reps)].reset_index(drop=True)
    big["line"] = np.tile(ev["line"].to_numpy(), reps) + np.repeat(np.arange(reps) * 400, len(ev))
    assert len(big) >= 1_000_000
    it = find_iterations(big)
    assert (it.count, it.period_exec) == (11 * reps, 15)
    g = build_graph(big, it)
    assert g.graph.number_of_nodes() == 15 and g.graph.number_of_edges() == 13
    assert (g.nodes["count"] == 11 * reps).all()
    assert g.reorders["round_trip"].sum() == 6


def test_cli_graph(tmp_path: Path) -> None:
    from dnnlens.cli import app

    runner = CliRunner()
    res = runner.invoke(app, ["graph", str(SAMPLES / "convnet_cl_infer.log")])
    assert res.exit_code == 0, res.output
    iterations = json.loads(res.stdout)["iterations"]
    assert (iterations["count"], iterations["warmup"], iterations["period_exec"]) == (11, 1, 8)
    out = tmp_path / "g.mmd"
    res = runner.invoke(app, ["graph", str(SAMPLES / "lstm_infer.log"), "-f", "mermaid",
                              "-o", str(out)])  # fmt: skip
    assert res.exit_code == 0 and out.read_text().startswith("flowchart TD")
    res = runner.invoke(app, ["graph", str(tmp_path / "missing.log")])
    assert res.exit_code == 2
    res = runner.invoke(app, ["graph", str(SAMPLES / "lstm_infer.log"), "--marker", "("])
    assert res.exit_code == 2
    res = runner.invoke(app, ["graph", str(SAMPLES / "lstm_infer.log"), "--marker", "^done:"])
    assert res.exit_code == 0
    assert json.loads(res.stdout)["iterations"]["count"] == 1  # one marker, at the very end
