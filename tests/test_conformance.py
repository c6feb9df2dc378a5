"""The op-conformance suite (core.testing.conformance) on every available backend."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from core.testing.conformance import LAYOUTS, OP_DB, check_op, run_conformance

CASES = [(info, dtype) for info in OP_DB for dtype in info.dtypes]


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("info,dtype", CASES, ids=[f"{i.name}-{d}" for i, d in CASES])
def test_op_matches_numpy(info, dtype, layout, device):
    check_op(info, device, dtype, layout)


_shape = st.lists(st.integers(0, 4), min_size=0, max_size=3).map(tuple)


@settings(max_examples=30, deadline=None)
@given(data=st.data())
def test_elementwise_ops_on_drawn_shapes_and_layouts(data, device):
    info = data.draw(st.sampled_from([i for i in OP_DB if i.arity <= 2 and not i.shapes]), label="op")  # elementwise
    dtype = data.draw(st.sampled_from(info.dtypes), label="dtype")
    layout = data.draw(st.sampled_from(LAYOUTS), label="layout")
    shape = data.draw(_shape, label="shape")
    if info.arity == 1:
        shapes = (shape,)
    else:  # a second shape that broadcasts with the first: drop leading dims and set some sizes to 1
        other = tuple(1 if data.draw(st.booleans()) else s for s in shape[data.draw(st.integers(0, len(shape))):])
        shapes = ((shape, other) if data.draw(st.booleans()) else (other, shape),)
    check_op(info, device, dtype, layout, seed=data.draw(st.integers(0, 2**16)), shapes=shapes)


def test_run_conformance_reports_expected_failures(device):
    report = run_conformance(device, expected_failures=("exp",), dtypes=("float32",), layouts=("contiguous",))
    assert "exp:float32" in report["xpassed"]  # the backend does have exp: the list should shrink
    assert not report["failed"]
    assert "add:float32" in report["passed"]


def test_check_op_catches_a_wrong_kernel(device):
    from core.testing.conformance import OpInfo

    import core

    wrong = OpInfo("exp", core.exp, lambda a: np.exp(a) + 1)
    with pytest.raises(AssertionError):
        check_op(wrong, device, "float32")
