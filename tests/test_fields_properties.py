"""Property tests of the sub-field parsers (dnnlens.parsers: memdesc, attrs, problem, isa).

* no parser raises, whatever the text;
* memory descriptors built from fields, in each printed form, parse back to those fields;
* conv / matmul problem descriptors built from numbers parse back to the numbers;
* post-op chains built from entries parse back to the entries.
"""

from __future__ import annotations

from hypothesis import example, given, settings
from hypothesis import strategies as st

from dnnlens.parsers.attrs import parse_attrs, parse_aux
from dnnlens.parsers.common import DATA_TYPES
from dnnlens.parsers.isa import split_impl
from dnnlens.parsers.memdesc import parse_graph_tensors, parse_mds
from dnnlens.parsers.problem import parse_problem

FAST = settings(max_examples=200, deadline=None)

# Characters of the verbose format, to reach the grammars' corners more often than st.text().
FORMAT_CHARS = "abcdefgikmnoprstuwxABCD_:*#0123456789 +;'.-f\t"
texts = st.one_of(st.text(max_size=80), st.text(alphabet=FORMAT_CHARS, max_size=80))

KINDS = ["convolution", "matmul", "inner_product", "gemm_api", "rnn", "pooling_v2", "", "?"]


@FAST
@given(texts)
@example("**")  # only markdown damage: nothing left to parse (found by CI)
def test_mds_never_raise(text):
    r = parse_mds(text)
    assert r.raw == text
    assert all(isinstance(m.arg, str) for m in r)
    assert not (r.error or "").startswith("internal error")


@FAST
@given(texts)
def test_attrs_and_aux_never_raise(text):
    a = parse_attrs(text)
    assert a.raw == text
    assert not (a.error or "").startswith("internal error")
    assert isinstance(parse_aux(text), dict)


@FAST
@given(st.sampled_from(KINDS), texts)
def test_problem_never_raises(kind, text):
    p = parse_problem(kind, text)
    assert p.raw == text
    assert not (p.error or "").startswith("internal error")
    assert all(v is None or isinstance(v, int) for v in p.dims.values())


@FAST
@given(texts)
def test_graph_tensors_and_impl_never_raise(text):
    for lt in parse_graph_tensors(text):
        assert not (lt.error or "").startswith("internal error")
    family, isa = split_impl(text)
    assert isinstance(family, str)
    assert isinstance(isa, str)


# ---------------------------------------------------------------------------------------
# memory descriptors round trip (format doc §3.2 - §3.4)

ARGS = [
    "src", "wei", "bia", "dst", "data", "diff", "ws", "diff_src", "diff_dst", "diff_wei",
    "src_layer", "src_iter", "src_iter_c", "wei_layer", "wei_iter", "wei_peephole", "wei_proj",
    "bias", "dst_layer", "dst_iter_c", "diff_src_layer", "stats", "scale", "shift", "query",
    "key", "val", "msk", "wei_gate", "src_a", "src_b", "src0",
]  # fmt: skip
DTYPES = sorted(DATA_TYPES - {"undef"})


@st.composite
def tags(draw) -> str:
    ndims = draw(st.integers(1, 6))
    letters = list("abcdef"[:ndims])
    order = draw(st.permutations(letters))
    blocked = draw(st.lists(st.sampled_from(letters), max_size=2, unique=True))
    outer = "".join(c.upper() if c in blocked else c for c in order)
    inner = "".join(f"{draw(st.sampled_from([2, 4, 8, 16, 64]))}{c}" for c in blocked)
    return outer + inner


@st.composite
def mds(draw) -> dict:
    absent = draw(st.booleans()) and draw(st.booleans())
    if absent:
        return dict(arg=draw(st.sampled_from(ARGS)), dtype="undef", props="", kind="undef",
                    tag="", strides="", flags="", extra="", mask=None)  # fmt: skip
    kind = draw(st.sampled_from(["blocked", "blocked", "any", "wino", "rnn_packed"]))
    tag = draw(tags()) if kind == "blocked" else ("any" if kind == "any" else "")
    strides = ""
    if kind == "blocked" and draw(st.booleans()):
        strides = "x".join(str(draw(st.integers(0, 99999))) for _ in range(3))
    extras = draw(st.lists(st.sampled_from(["s8m1", "zpm3", "sa0.5", "zid1", "zs64"]),
                           max_size=2, unique=True))  # fmt: skip
    return dict(
        arg=draw(st.sampled_from(ARGS)),
        dtype=draw(st.sampled_from(DTYPES)),
        props=draw(st.sampled_from(["", "a", "p", "ap", "p0", "apo0"])),
        kind=kind,
        tag=tag,
        strides=strides,
        flags=str(draw(st.integers(0, 63))),
        extra=":".join(extras),
        mask=draw(st.one_of(st.none(), st.integers(0, 15).map(str))),
    )


def render(m: dict, family: str) -> str:
    tail = f":f{m['flags']}" if m["flags"] else ":"
    if m["extra"]:
        tail += ":" + m["extra"]
    if m["mask"] is not None:
        tail += f"_mask{m['mask']}"
    if family == "v36":
        head = f"{m['arg']}:{m['dtype']}"
    else:
        head = f"{m['arg']}_{m['dtype']}"
    body = f"{head}:{m['props']}:{m['kind']}:{m['tag']}"
    if family != "v1":
        body += f":{m['strides']}"
    return body + tail


def as_fields(m: dict, family: str) -> tuple:
    strides = "" if family == "v1" else m["strides"]
    return (m["arg"], m["dtype"], m["props"], m["kind"], m["tag"], strides, m["flags"],
            m["extra"], m["mask"])  # fmt: skip


def parsed_fields(r) -> list[tuple]:
    return [
        (x.arg, x.dtype, x.props, x.format_kind, x.tag, x.strides, x.flags, x.extra, x.mask)
        for x in r
    ]


@FAST
@given(st.sampled_from(["v1", "v32", "v36"]), st.lists(mds(), min_size=1, max_size=6))
def test_md_round_trip(family, items):
    text = " ".join(render(m, family) for m in items)
    r = parse_mds(text)
    assert r.error is None, text
    assert r.family == family, text
    assert parsed_fields(r) == [as_fields(m, family) for m in items], text


@FAST
@given(st.lists(st.tuples(st.sampled_from(["src", "wei", "bia", "dst", "data", "diff", "ws"]),
                          st.one_of(tags(), st.sampled_from(["nchw", "nChw8c", "OIhw8i8o"]))),
                min_size=1, max_size=5))  # fmt: skip
def test_md_f0_round_trip(items):
    r = parse_mds(" ".join(f"f{arg}:{tag}" for arg, tag in items))
    assert r.family == "f0"
    assert [(m.arg, m.tag) for m in r] == items


# ---------------------------------------------------------------------------------------
# problem descriptors round trip (format doc §4.3)

dims_values = st.integers(1, 4096)


@FAST
@given(
    g=st.one_of(st.none(), st.integers(1, 64)),
    old_group_position=st.booleans(),
    mb=dims_values,
    ic=dims_values,
    oc=dims_values,
    spatial=st.lists(
        st.tuples(dims_values, dims_values, st.integers(1, 11), st.integers(1, 4),
                  st.integers(0, 3), st.integers(0, 5)),
        min_size=1, max_size=3,
    ),
)  # fmt: skip
def test_conv_problem_round_trip(g, old_group_position, mb, ic, oc, spatial):
    names = ["d", "h", "w"][3 - len(spatial) :]
    groups = []
    for (i, o, k, s, d, p), n in zip(spatial, names, strict=True):
        groups.append(f"i{n}{i}o{n}{o}k{n}{k}s{n}{s}d{n}{d}p{n}{p}")
    if g is None:
        head = f"mb{mb}_ic{ic}oc{oc}"
    elif old_group_position:
        head = f"mb{mb}_g{g}ic{ic}oc{oc}"
    else:
        head = f"g{g}mb{mb}_ic{ic}oc{oc}"
    text = "_".join([head, *groups])
    p = parse_problem("convolution", text)
    assert p.error is None, text
    expected = {"mb": mb, "ic": ic, "oc": oc}
    if g is not None:
        expected["g"] = g
    for (i, o, k, s, d, pad), n in zip(spatial, names, strict=True):
        expected.update({f"i{n}": i, f"o{n}": o, f"k{n}": k, f"s{n}": s, f"d{n}": d,
                         f"p{n}": pad})  # fmt: skip
    assert dict(p.dims) == expected


dim_or_rt = st.one_of(st.integers(1, 100000), st.just(None))


@FAST
@given(
    batch=st.lists(st.integers(1, 64), max_size=2),
    m=dim_or_rt,
    k=dim_or_rt,
    n=dim_or_rt,
    with_dst=st.booleans(),
)
def test_matmul_problem_round_trip(batch, m, k, n, with_dst):
    def show(dims):
        return "x".join("*" if d is None else str(d) for d in dims)

    src, wei, dst = (*batch, m, k), (*batch, k, n), (*batch, m, n)
    tensors = [src, wei, dst] if with_dst else [src, wei]
    p = parse_problem("matmul", ":".join(show(t) for t in tensors))
    assert p.error is None
    assert p.tensors == tuple(tuple(t) for t in tensors)
    b = 1
    for x in batch:
        b *= x
    assert (p.dims["M"], p.dims["K"], p.dims["N"], p.dims["B"]) == (m, k, n, b)


# ---------------------------------------------------------------------------------------
# post-op chains round trip (format doc §4.1)

numbers = st.one_of(
    st.integers(-100, 100).map(str),
    st.floats(-1e9, 1e9, allow_nan=False).map(lambda x: f"{x:g}"),
)
post_ops = st.one_of(
    st.tuples(st.just("eltwise"), st.sampled_from(["eltwise_relu", "eltwise_linear",
              "eltwise_gelu_tanh", "eltwise_swish"]), st.lists(numbers, max_size=3)),
    st.tuples(st.just("binary"), st.sampled_from(["binary_add", "binary_mul", "binary_max"]),
              st.tuples(st.sampled_from(DTYPES), st.integers(0, 15).map(str)).map(list)),
    st.tuples(st.just("sum"), st.just("sum"), st.lists(numbers, max_size=2)),
    st.tuples(st.just("prelu"), st.just("prelu"), st.integers(0, 15).map(lambda x: [str(x)])),
)  # fmt: skip


@FAST
@given(st.lists(post_ops, min_size=1, max_size=5), st.booleans())
def test_post_ops_round_trip(entries, new_syntax):
    printed = [":".join([alg, *args]) for _, alg, args in entries]
    if new_syntax:
        text = "attr-scratchpad:user attr-post-ops:" + "+".join(printed)
    else:
        text = "scratchpad_mode:user;post_ops:'" + "".join(e + ";" for e in printed) + "';"
    a = parse_attrs(text)
    assert a.error is None, text
    assert a.scratchpad == "user"
    assert [(p.kind, p.alg, list(p.args)) for p in a.post_ops] == [
        (kind, alg, list(args)) for kind, alg, args in entries
    ], text
