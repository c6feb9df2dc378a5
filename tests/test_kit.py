"""The backend kit (core/backends/kit, exported by core.backends.api): layout arithmetic, fresh outputs, tables."""

from __future__ import annotations

import itertools
import types

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import core
from core.backends import api
from core.backends.api import broadcast_strides, coalesce, collect, flipped, is_contiguous, new_output, new_tensor, \
    padded, rank_bucket

shapes = st.lists(st.integers(0, 4), min_size=0, max_size=5).map(tuple)


def offsets(shape: tuple, strides: tuple) -> list:
    """The element offsets a row-major walk of ``shape`` visits."""
    return [sum(i * s for i, s in zip(index, strides)) for index in itertools.product(*map(range, shape))]


@st.composite
def layouts(draw):
    """A shape and strides for each of several operands (dense, transposed, sliced, broadcast)."""
    shape = draw(shapes)
    stride_lists = []
    for _ in range(draw(st.integers(1, 3))):
        base = np.empty([n * draw(st.sampled_from((1, 2))) for n in shape] or [1])
        view = base[tuple(slice(None, None, 2 if b != n else 1) for n, b in zip(shape, base.shape))] if shape \
            else base[0]
        order = draw(st.permutations(range(len(shape))))
        view = np.ascontiguousarray(view.transpose(order)).transpose(np.argsort(order)) if shape else view
        strides = tuple(s // view.itemsize for s in view.strides)
        strides = tuple(0 if draw(st.booleans()) and n == 1 else s for n, s in zip(shape, strides))
        stride_lists.append(strides)
    return shape, stride_lists


@settings(max_examples=200, deadline=None)
@given(layouts())
def test_coalesce_walks_the_same_elements_in_the_same_order(layout):
    shape, stride_lists = layout
    new_shape, new_strides = coalesce(shape, stride_lists)
    assert len(new_strides) == len(stride_lists)
    assert all(n != 1 for n in new_shape) and len(new_shape) <= len(shape)
    for before, after in zip(stride_lists, new_strides):
        assert len(after) == len(new_shape)
        assert offsets(new_shape, after) == offsets(shape, before)


@settings(max_examples=100, deadline=None)
@given(layouts(), st.data())
def test_flipped_reads_the_elements_of_np_flip(layout, data):
    shape, (strides, *_) = layout
    dims = data.draw(st.lists(st.integers(0, len(shape) - 1), unique=True) if shape else st.just([]))
    dims = [d - len(shape) if data.draw(st.booleans()) else d for d in dims]  # negative dims count from the end
    offset = sum((n - 1) * -min(s, 0) for n, s in zip(shape, strides))  # a valid start for any strides
    new_strides, new_offset = flipped(shape, strides, offset, dims)
    walk = np.array(offsets(shape, strides), dtype=np.int64).reshape(shape) + offset
    expected = np.flip(walk, axis=tuple(dims)) if shape else walk
    assert [new_offset + o for o in offsets(shape, new_strides)] == expected.ravel().tolist()


@pytest.mark.parametrize("rank, bucket", [(0, 1), (1, 1), (2, 2), (3, 4), (5, 8), (8, 8), (9, None)])
def test_rank_bucket_is_the_smallest_bucket_holding_the_rank(rank, bucket):
    assert rank_bucket(rank) == bucket
    assert rank_bucket(rank, allow_zero=True) == (0 if rank == 0 else bucket)


def test_padded_fills_leading_dims_up_to_the_rank():
    assert padded((3, 4), 4, 1) == (1, 1, 3, 4)
    assert padded([5], 1, 0) == (5,)
    assert padded((), 2, 0) == (0, 0)


@pytest.mark.parametrize("shape", [(), (1,), (1, 1, 1)])
def test_coalesce_of_one_element_is_zero_d(shape):
    strides = (7,) * len(shape)
    assert coalesce(shape, [strides, strides]) == ((), [(), ()])
    assert coalesce(shape, [strides], min_rank=1) == ((1,), [(0,)])


def test_coalesce_merges_dense_dims_and_keeps_transposed_ones():
    assert coalesce((2, 3, 4), [(12, 4, 1)]) == ((24,), [(1,)])
    assert coalesce((2, 3), [(1, 2)]) == ((2, 3), [(1, 2)])
    assert coalesce((2, 3), [(3, 1), (0, 1)]) == ((2, 3), [(3, 1), (0, 1)])  # a broadcast row: no merge
    assert coalesce((0, 3), [(3, 1)]) == ((0,), [(1,)])
    assert coalesce((5,), [(1,)], min_rank=3) == ((1, 1, 5), [(0, 0, 1)])
    assert coalesce((2, 3, 4), [(12, 4, 1), (0, 4, 1)]) == ((2, 12), [(12, 1), (0, 1)])
    assert broadcast_strides((3, 1), (1, 1), (2, 3, 4)) == (0, 1, 0)


@settings(max_examples=100, deadline=None)
@given(shapes, st.data())
def test_broadcast_strides_match_numpy(out_shape, data):
    ndim = data.draw(st.integers(0, len(out_shape)))
    shape = tuple(data.draw(st.sampled_from((1, n))) for n in out_shape[len(out_shape) - ndim:])
    a = np.zeros(shape, np.float32)
    strides = tuple(s // 4 for s in a.strides)
    expected = tuple(s // 4 for s in np.broadcast_to(a, out_shape).strides)
    got = broadcast_strides(shape, strides, out_shape)
    assert all(g == e for g, e, n in zip(got, expected, out_shape) if n > 1)
    assert all(g == 0 for g, n in zip(got, out_shape) if n == 1)
    assert got[:len(out_shape) - ndim] == (0,) * (len(out_shape) - ndim)


@settings(max_examples=100, deadline=None)
@given(shapes, st.data())
def test_is_contiguous_agrees_with_tensor_is_contiguous(shape, data):
    x = core.zeros(shape)
    if len(shape) >= 2:
        i, j = data.draw(st.permutations(range(len(shape))))[:2]
        x = x.transpose(i, j)
    assert is_contiguous(x.shape, x.stride()) == (x.is_contiguous() or x.numel() == 0)  # empty: True, as PyTorch


def test_is_contiguous_cases():
    assert is_contiguous((), ())
    assert is_contiguous((2, 3), (3, 1))
    assert is_contiguous((2, 1, 3), (3, 99, 1))  # size-1 dims have any stride
    assert not is_contiguous((2, 3), (1, 2))
    assert is_contiguous((0, 3), (1, 5))  # no elements
    assert not is_contiguous((3,), (0,))


def test_new_tensor_and_new_output_allocate_through_the_runtime():
    from core.plugins.manager import runtime_for

    runtime = runtime_for("cpu")
    t = new_tensor(runtime, [2, 3], core.float32, core.device("cpu"))
    assert t.shape == (2, 3) and t.stride() == (3, 1) and t.dtype is core.float32 and t.device.type == "cpu"
    t.fill_(2.0)
    assert t.sum().item() == 12.0
    out = new_output(runtime, api.TensorSpec((4,), core.int64, core.device("cpu")))
    assert out.shape == (4,) and out.dtype is core.int64 and out.is_contiguous()
    assert new_tensor(runtime, (0, 5), core.float32, core.device("cpu")).numel() == 0


def _family(name: str, table: dict):
    return types.SimpleNamespace(__name__=name, kernels=lambda ctx: {op: (fn, ctx) for op, fn in table.items()})


def test_collect_merges_families_bound_to_the_context():
    table = collect([_family("fam.a", {"add": 1}), _family("fam.b", {"mul": 2})], "ctx")
    assert table == {"add": (1, "ctx"), "mul": (2, "ctx")}


def test_collect_names_both_families_of_a_duplicate():
    with pytest.raises(RuntimeError, match=r"'add'.*fam\.a and fam\.b"):
        collect([_family("fam.a", {"add": 1}), _family("fam.b", {"add": 2})], None)


def test_register_all_passes_kernel_options_and_plain_functions():
    from core.backends.api import Kernel, register_all

    def add(*args):
        return None

    calls = []
    register_all(lambda op, fn, **options: calls.append((op, fn, options)),
                 {"add": add, "exp": Kernel(add, dtypes=("float32",), min_numel=64)})
    assert calls == [("add", add, {}), ("exp", add, {"dtypes": ("float32",), "min_numel": 64})]


# -- the reference kernels (core/backends/kit/reference), written once over an array module ----------------

def test_numpy_backend_kernels_are_the_reference_families_over_numpy():
    from core.backends.kit import reference
    from core.backends.numpy.kernels import all_kernels
    from core.backends.numpy.runtime import CONTEXT

    numpy_kernels = all_kernels()
    for family in reference.FAMILIES:
        module = __import__(f"core.backends.kit.reference.{family}", fromlist=["kernels"])
        for op in module.kernels(CONTEXT):
            assert numpy_kernels[op].__module__ == module.__name__, op


def test_reference_families_are_named_for_where_their_ops_are_declared():
    from core.backends.api import get_operator
    from core.backends.kit import reference
    from core.backends.numpy.runtime import CONTEXT

    for family in reference.FAMILIES:
        module = __import__(f"core.backends.kit.reference.{family}", fromlist=["kernels"])
        for op in module.kernels(CONTEXT):
            assert get_operator(op).declared_in.rsplit(".", 1)[-1] == family, (op, family)


def test_reference_kernels_compute_through_the_context_array_module():
    """Swap the context's ``xp`` for a recording stand-in: the kernels ask it, never NumPy by name."""
    from core.backends.api import get_operator
    from core.backends.kit.reference import elementwise, reduction
    from core.backends.numpy.kernels import all_kernels
    from core.backends.numpy.runtime import CONTEXT

    called = []

    class Recording:  # NumPy, noting each function a kernel calls
        def __getattr__(self, name):
            fn = getattr(np, name)
            return (lambda *a, **k: called.append(name) or fn(*a, **k)) if callable(fn) else fn

    ctx = CONTEXT._replace(xp=Recording(), reduce_sum=lambda *a, **k: called.append("sum") or np.sum(*a, **k))
    table = {**elementwise.kernels(ctx), **reduction.kernels(ctx)}
    x = core.tensor([[1.0, -2.0], [3.0, float("nan")]])
    cases = [("exp", (x,)), ("where", (x > 0, x, 0.0)), ("clamp", (x, -1.0, 2.0)), ("sum", (x, (1,))),
             ("argmax", (x, 0))]
    for op, args in cases:
        spec = get_operator(op).meta(*args)
        core.testing.assert_close(table[op](spec, *args), all_kernels()[op](spec, *args), equal_nan=True)
    assert {"exp", "where", "maximum", "minimum", "isnan", "sum", "argmax"} <= set(called)
