"""A field that does not parse says why; a bug in a field parser raises instead of passing
for a field that did not parse (docs/input-policy.md, "Every line is parsed")."""

from __future__ import annotations

import pytest

from dnnlens.parsers import attrs, isa, memdesc, problem


class Bug(RuntimeError):
    """Stands for a mistake in a parser's own code."""


def _raise(*_: object) -> None:
    raise Bug("a bug")


@pytest.mark.parametrize(
    "module,inner,call",
    [
        (memdesc, "_parse_mds_cached", lambda: memdesc.parse_mds("src:f32::blocked:abcd::f0")),
        (memdesc, "_parse_graph_tensors_cached", lambda: memdesc.parse_graph_tensors("in0_f32")),
        (attrs, "_parse_attrs_cached", lambda: attrs.parse_attrs("attr-scratchpad:user")),
        (attrs, "_parse_aux_cached", lambda: attrs.parse_aux("alg:eltwise_relu")),
        (problem, "_parse_problem_cached", lambda: problem.parse_problem("matmul", "2x3:3x4")),
        (isa, "_split_impl_cached", lambda: isa.split_impl("jit:avx2")),
        (isa, "_isa_from_header_cached", lambda: isa.isa_from_header("Intel AVX2")),
    ],
)
def test_a_bug_in_a_field_parser_raises(
    monkeypatch: pytest.MonkeyPatch, module: object, inner: str, call: object
) -> None:
    monkeypatch.setattr(module, inner, _raise)
    with pytest.raises(Bug):
        call()  # type: ignore[operator]


def test_a_damaged_descriptor_says_which_entry_and_why() -> None:
    # the sample log's reorder descriptors, the second one cut short by hand
    mds = memdesc.parse_mds("src:f32::blocked:abcd::f0 dst:f32::blocked:Acdb8a::f0:")
    assert [md.arg for md in mds] == ["src", "dst"]
    assert mds.error is not None
    assert "'dst:f32::blocked:Acdb8a::f0:'" in mds.error


def test_a_damaged_problem_says_why_and_keeps_what_it_can() -> None:
    got = problem.parse_problem("convolution", "mb2_ic16oc32_ih7oh7kh3sh1dh0ph1_iw7?")
    assert got.error is not None and got.error.startswith("problem 'mb2_ic16")
    assert (got.get("mb"), got.get("ic"), got.get("oc"), got.get("ih")) == (2, 16, 32, 7)


def test_damaged_post_ops_say_why_and_keep_what_they_can() -> None:
    got = attrs.parse_attrs("attr-post-ops:eltwise_relu+ ")
    assert got.error is not None and "po_plus" in got.error
    assert [p.alg for p in got.post_ops] == ["eltwise_relu"]
