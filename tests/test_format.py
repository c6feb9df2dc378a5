"""Tensor printing: repr matches PyTorch's ``torch/_tensor_str.py`` (with ``core.`` for ``torch.``)."""

from __future__ import annotations

import math
import re

import hypothesis.extra.numpy as hnp
import hypothesis.strategies as st
import numpy as np
import pytest
from hypothesis import given, settings

import core
from core.ops import format as fmt


@pytest.fixture(autouse=True)
def default_printoptions():
    """Every test starts and ends with the default options (in core, and in torch when a test used it)."""
    core.set_printoptions(profile="default")
    yield
    core.set_printoptions(profile="default")
    import sys

    torch = sys.modules.get("torch")
    if torch is not None:
        torch.set_printoptions(profile="default")


# -- fixed expectations (hold without torch) -------------------------------------------------------

@pytest.mark.parametrize("make, expected", [
    (lambda: core.tensor([1.0, 2.0, 3.0]), "tensor([1., 2., 3.])"),
    (lambda: core.tensor([[1, 2], [3, 4]]), "tensor([[1, 2],\n        [3, 4]])"),
    (lambda: core.tensor(3.5), "tensor(3.5000)"),
    (lambda: core.tensor(7), "tensor(7)"),
    (lambda: core.tensor([True, False]), "tensor([ True, False])"),
    (lambda: core.tensor([1.5, -2.25]), "tensor([ 1.5000, -2.2500])"),
    (lambda: core.tensor([1.0, 2.0], dtype=core.float64), "tensor([1., 2.], dtype=core.float64)"),
    (lambda: core.tensor([1, 2], dtype=core.int32), "tensor([1, 2], dtype=core.int32)"),
    (lambda: core.tensor([1e-5, 1.0]), "tensor([1.0000e-05, 1.0000e+00])"),
    (lambda: core.tensor([1.0, math.inf, -math.inf, math.nan]), "tensor([1., inf, -inf, nan])"),
    (lambda: core.tensor([math.nan]), "tensor([nan])"),
    (lambda: core.tensor([-0.0]), "tensor([-0.])"),
    (lambda: core.empty(0), "tensor([])"),
    (lambda: core.empty(0, 3), "tensor([], size=(0, 3))"),
    (lambda: core.empty(0, dtype=core.int64), "tensor([], dtype=core.int64)"),
    (lambda: core.empty(2, 3, device="meta"), "tensor(..., device='meta', size=(2, 3))"),
    (lambda: core.empty(4, dtype=core.int32, device="meta"),
     "tensor(..., device='meta', size=(4,), dtype=core.int32)"),
    (lambda: core.tensor([1.0, 2.0], requires_grad=True), "tensor([1., 2.], requires_grad=True)"),
    (lambda: core.tensor([1 + 2j, -3.5 - 1j]), "tensor([ 1.0000+2.j, -3.5000-1.j])"),
    (lambda: core.tensor([1e-5, 1.0], dtype=core.bfloat16), "tensor([1.0014e-05, 1.0000e+00], dtype=core.bfloat16)"),
])
def test_repr_fixed(make, expected):
    assert repr(make()) == expected


def test_summarised_rows_and_columns():
    t = core.tensor(np.arange(1000.0, 3000.0, dtype=np.float32).reshape(40, 50))
    lines = repr(t).split("\n")
    assert lines[0] == "tensor([[1000., 1001., 1002.,  ..., 1047., 1048., 1049.],"
    assert lines[3] == "        ...,"
    assert lines[-1] == "        [2950., 2951., 2952.,  ..., 2997., 2998., 2999.]])"
    assert len(lines) == 7


def test_long_vector_wraps_at_linewidth():
    text = repr(core.tensor(np.arange(30, dtype=np.int64)))
    assert all(len(line) <= 80 for line in text.split("\n"))
    assert text.startswith("tensor([ 0,  1,  2,")
    assert "\n        " in text


def test_set_printoptions_precision_threshold_edgeitems():
    core.set_printoptions(precision=2)
    assert repr(core.tensor([1.12345])) == "tensor([1.12])"
    core.set_printoptions(threshold=5)
    assert repr(core.tensor(np.arange(10))) == "tensor([0, 1, 2,  ..., 7, 8, 9])"
    core.set_printoptions(threshold=5, edgeitems=1)
    assert repr(core.tensor(np.arange(10))) == "tensor([0,  ..., 9])"
    core.set_printoptions(profile="default")
    assert repr(core.tensor([1.12345])) == "tensor([1.1235])"
    assert repr(core.tensor(np.arange(10))) == "tensor([0, 1, 2, 3, 4, 5, 6, 7, 8, 9])"


def test_suffixes_wrap_past_linewidth():
    core.set_printoptions(linewidth=30)
    assert repr(core.tensor([0], dtype=core.uint8)) == "tensor([0], dtype=core.uint8)"  # exactly 30 characters
    assert repr(core.tensor([0.0], dtype=core.bfloat16)) == "tensor([0.],\n       dtype=core.bfloat16)"
    t = core.tensor([1.0], dtype=core.float64, requires_grad=True)
    assert repr(t) == "tensor([1.],\n       dtype=core.float64,\n       requires_grad=True)"


def test_sci_mode_forced_and_profiles():
    core.set_printoptions(sci_mode=True)
    assert repr(core.tensor([1.0, 2.5])) == "tensor([1.0000e+00, 2.5000e+00])"
    core.set_printoptions(sci_mode=False)
    assert repr(core.tensor([1e-5, 1.0])) == "tensor([1.0000e-05, 1.0000e+00])".replace(
        "1.0000e-05, 1.0000e+00", "0.0000, 1.0000")
    assert repr(core.tensor(np.arange(30))) == (
        "tensor([ 0,  1,  2,  3,  4,  5,  6,  7,  8,  9, 10, 11, 12, 13, 14, 15, 16, 17,\n"
        "        18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29])")
    core.set_printoptions(profile="short")
    assert fmt.get_printoptions()["precision"] == 2 and fmt.get_printoptions()["edgeitems"] == 2
    core.set_printoptions(profile="full")
    assert "..." not in repr(core.zeros(2000))
    with pytest.raises(ValueError, match="profile"):
        core.set_printoptions(profile="fancy")


def test_printoptions_context_restores():
    with fmt.printoptions(precision=1):
        assert repr(core.tensor([1.25])) == "tensor([1.2])"
    assert repr(core.tensor([1.25])) == "tensor([1.2500])"
    assert core.set_printoptions is fmt.set_printoptions and "set_printoptions" in fmt.__all__


def test_grad_fn_suffix():
    class AddBackward0:
        pass

    class Node:
        def name(self):
            return "MulBackward0"

    t = core.tensor([1.0, 2.0])
    t.requires_grad = True
    t.grad_fn = AddBackward0()
    assert repr(t) == "tensor([1., 2.], grad_fn=<AddBackward0>)"
    t.grad_fn = Node()
    assert repr(t) == "tensor([1., 2.], grad_fn=<MulBackward0>)"


def test_default_dtype_changes_suffix():
    previous = core.get_default_dtype()
    core.set_default_dtype(core.float64)
    try:
        assert repr(core.tensor([1.5], dtype=core.float64)) == "tensor([1.5000])"
        assert repr(core.tensor([1.5], dtype=core.float32)) == "tensor([1.5000], dtype=core.float32)"
    finally:
        core.set_default_dtype(previous)


def test_non_contiguous_and_meta_do_not_copy_everything():
    base = core.tensor(np.arange(12.0, dtype=np.float32).reshape(3, 4))
    assert repr(base.t()) == repr(core.tensor(np.arange(12.0, dtype=np.float32).reshape(3, 4).T.copy()))
    every_other = base.as_strided((3, 2), (4, 2))
    assert repr(every_other) == "tensor([[ 0.,  2.],\n        [ 4.,  6.],\n        [ 8., 10.]])"
    assert repr(core.tensor([1.5, 2.0]).expand(2, 2)) == "tensor([[1.5000, 2.0000],\n        [1.5000, 2.0000]])"


def test_format_spec_and_str():
    t = core.tensor(2.5)
    assert f"{t:.1f}" == "2.5"
    assert str(core.tensor([1, 2])) == "tensor([1, 2])"


# -- PyTorch as the oracle ----------------------------------------------------------------------------

def _cases():
    rng = np.random.default_rng(0)
    f32 = np.float32
    yield "randn", rng.standard_normal((3, 4)).astype(f32), None
    yield "randn-1d", rng.standard_normal(17).astype(f32), None
    yield "big", (rng.standard_normal(10) * 1e9).astype(f32), None
    yield "small", (rng.standard_normal(6) * 1e-6).astype(f32), None
    yield "mixed-scale", np.array([1e-3, 1.0, 5e3], f32), None
    yield "wide-range", np.array([0.1, 200.0], f32), None
    yield "integers-as-float", np.array([[1.0, -2.0], [300.0, 4.0]], f32), None
    yield "int-float-huge", np.array([1.0, 1e10], f32), None
    yield "nan-inf-mixed", np.array([0.5, np.nan, np.inf, -np.inf, 0.0], f32), None
    yield "all-zero", np.zeros((2, 2), f32), None
    yield "negative-zero", np.array([-0.0, 0.0, 1.5], f32), None
    yield "scalar", np.array(3.14159, f32), None
    yield "scalar-int", np.array(-12, np.int64), None
    yield "scalar-sci", np.array(1.5e-7, f32), None
    yield "3d", rng.standard_normal((2, 3, 4)).astype(f32), None
    yield "4d", np.arange(2 * 2 * 2 * 3, dtype=np.int64).reshape(2, 2, 2, 3), None
    yield "summarised-1d", np.arange(1500, dtype=np.int64), None
    yield "summarised-2d", rng.standard_normal((100, 20)).astype(f32), None
    yield "summarised-3d", np.arange(12 * 10 * 11, dtype=np.int64).reshape(12, 10, 11), None
    yield "summarised-one-dim", rng.standard_normal((2, 1200)).astype(f32), None
    yield "long-row", rng.standard_normal((2, 30)).astype(f32), None
    yield "long-int-row", np.arange(-50, 50, dtype=np.int64), None
    yield "float64", rng.standard_normal(5), None
    yield "int32", np.array([[1, -20], [300, 4]], np.int32), None
    yield "int8", np.array([-128, 0, 127], np.int8), None
    yield "uint8", np.array([0, 255], np.uint8), None
    yield "int16", np.array([7], np.int16), None
    yield "bool-2d", np.array([[True, False], [False, True]]), None
    yield "float16", rng.standard_normal(5).astype(np.float16), None
    yield "bfloat16", rng.standard_normal(5).astype(f32), "bfloat16"
    yield "complex64", (rng.standard_normal(4) + 1j * rng.standard_normal(4)).astype(np.complex64), None
    yield "complex-int", np.array([1 + 2j, -3 - 1j], np.complex64), None
    yield "complex-sci", np.array([1e-6 + 2j, 3 + 0j], np.complex128), None
    yield "empty-1d-float", np.zeros(0, f32), None
    yield "empty-2d-int", np.zeros((3, 0), np.int64), None
    yield "empty-3d-f64", np.zeros((0, 2, 2)), None
    yield "one-element", np.array([[42.0]], f32), None


CASES = list(_cases())


def _pair(torch, array, cast):
    ours = core.tensor(array)
    theirs = torch.from_numpy(np.array(array))
    if cast == "bfloat16":
        ours, theirs = ours.to(core.bfloat16), theirs.to(torch.bfloat16)
    return ours, theirs


# 'core.' is one character shorter than 'torch.', so a suffix may fit on a line where PyTorch's wraps.
_SUFFIX_BREAK = re.compile(r",\n\s+(?=(dtype|size|device|requires_grad|grad_fn)=)")


def _same_repr(torch, ours, theirs):
    expected = _SUFFIX_BREAK.sub(", ", repr(theirs).replace("torch.", "core."))
    assert _SUFFIX_BREAK.sub(", ", repr(ours)) == expected


@pytest.mark.parametrize("name, array, cast", CASES, ids=[c[0] for c in CASES])
def test_repr_matches_torch(name, array, cast):
    torch = pytest.importorskip("torch")
    _same_repr(torch, *_pair(torch, array, cast))


OPTIONS = [
    {"precision": 2}, {"precision": 8}, {"threshold": 5}, {"threshold": 5, "edgeitems": 1},
    {"threshold": 5, "edgeitems": 0}, {"linewidth": 40}, {"linewidth": 200}, {"sci_mode": True},
    {"sci_mode": False}, {"profile": "short"}, {"profile": "full"}, {"precision": 2, "sci_mode": True},
]


@pytest.mark.parametrize("options", OPTIONS, ids=[str(o) for o in OPTIONS])
@pytest.mark.parametrize("name", ["randn", "summarised-2d", "summarised-3d", "long-int-row", "mixed-scale",
                                  "complex64", "scalar", "nan-inf-mixed", "int-float-huge"])
def test_repr_with_options_matches_torch(options, name):
    torch = pytest.importorskip("torch")
    array, cast = next((a, c) for n, a, c in CASES if n == name)
    core.set_printoptions(**options)
    torch.set_printoptions(**options)
    _same_repr(torch, *_pair(torch, array, cast))


def test_requires_grad_and_non_contiguous_match_torch():
    torch = pytest.importorskip("torch")
    data = np.random.default_rng(1).standard_normal((4, 6)).astype(np.float32)
    _same_repr(torch, core.tensor(data, requires_grad=True), torch.tensor(data, requires_grad=True))
    _same_repr(torch, core.tensor(data).t(), torch.tensor(data).t())
    _same_repr(torch, core.tensor(data).as_strided((2, 2), (12, 3), 1), torch.tensor(data).as_strided((2, 2), (12, 3), 1))
    _same_repr(torch, core.empty(2, 3, device="meta"), torch.empty(2, 3, device="meta"))
    _same_repr(torch, core.empty(2, dtype=core.float64, device="meta"),
               torch.empty(2, dtype=torch.float64, device="meta"))
    core.set_printoptions(linewidth=30)
    torch.set_printoptions(linewidth=30)
    big = np.arange(20.0, dtype=np.float64) * 1.5
    _same_repr(torch, core.tensor(big, requires_grad=True), torch.tensor(big, requires_grad=True))


@settings(max_examples=25, deadline=None)
@given(shape=hnp.array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=12),
       kind=st.sampled_from(["float32", "float64", "int64", "bool", "int32"]),
       scale=st.sampled_from([1e-6, 1e-2, 1.0, 1e3, 1e9]), seed=st.integers(0, 2**16),
       specials=st.booleans(), threshold=st.sampled_from([1000, 20]))
def test_repr_matches_torch_on_random_data(shape, kind, scale, seed, specials, threshold):
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(seed)
    data = np.asarray(rng.standard_normal(shape) * scale)
    if kind in ("int64", "int32"):
        data = np.round(data)
    if specials and data.size and kind.startswith("float"):
        data.reshape(-1)[rng.integers(0, data.size, 2)] = [np.nan, np.inf]
    array = np.asarray((data > 0) if kind == "bool" else data.astype(kind))
    core.set_printoptions(threshold=threshold)
    torch.set_printoptions(threshold=threshold)
    _same_repr(torch, core.tensor(array), torch.from_numpy(array))
