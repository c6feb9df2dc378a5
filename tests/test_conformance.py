"""The op-conformance suite (core.testing.conformance) on every available backend."""

from __future__ import annotations

import re

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import core
from core.dispatch.keys import backend_key
from core.dispatch.operator import get_operator, invalidate_caches
from core.testing import BackendCheckError, assert_close, check_backend
from core.testing.conformance import LAYOUTS, OP_DB, OpInfo, check_op, ops_named, run_conformance

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
    wrong = OpInfo("exp", core.exp, lambda a: np.exp(a) + 1)
    with pytest.raises(AssertionError, match=rf"^exp on {device}, float32, contiguous, shapes \(\(\),\), seed 0: "
                                             r"1 of 1 elements differ \(rtol=1.3e-06, atol=1e-05\): max abs error 1, "):
        check_op(wrong, device, "float32")


@pytest.fixture
def wrong_cpu_neg():
    """cpu's ``neg`` kernel replaced (through core.library) by one computing ``1 - x``; the real one put back."""
    core.neg(core.ones(1))  # the cpu backend is loaded: its kernels are registered before ours replaces one
    op = get_operator("neg")
    bit = backend_key("cpu").bit
    saved = op.kernels[bit], op.owners[bit], op.tiers.get(bit)
    core.library.impl("neg", "cpu", lambda spec, x: core.tensor(1 - x.numpy(), dtype=spec.dtype), override=True)
    try:
        yield
    finally:
        op.kernels[bit], op.owners[bit] = saved[:2]
        if saved[2] is not None:
            op.tiers[bit] = saved[2]
        invalidate_caches()


def test_a_wrong_value_is_reported_with_op_device_dtype_sample_errors_and_values(wrong_cpu_neg):
    with pytest.raises(AssertionError) as caught:
        check_op(ops_named("neg")[0], "cpu", "float32", "transposed", shapes=((2, 3),))
    first, *rest = str(caught.value).splitlines()
    assert re.fullmatch(r"neg on cpu, float32, transposed, shapes \(\(2, 3\),\), seed 0: 6 of 6 elements differ "
                        r"\(rtol=1.3e-06, atol=1e-05\): max abs error 1, max rel error [\d.e+-]+; "
                        r"at \(0, 0\): got ([-\d.e]+), expected ([-\d.e]+); at \(0, 1\): got [-\d.e]+, expected "
                        r"[-\d.e]+; at \(0, 2\): got [-\d.e]+, expected [-\d.e]+ \(and 3 more\)", first), first
    got, expected = (float(v) for v in re.search(r"at \(0, 0\): got (\S+), expected (\S+);", first).groups())
    assert got == pytest.approx(expected + 1)
    assert rest[0].startswith(" ACTUAL: [[") and any(line.startswith(" DESIRED: [[") for line in rest)


def test_check_backend_names_the_wrong_values_in_its_error(wrong_cpu_neg):
    with pytest.raises(BackendCheckError) as caught:
        check_backend("cpu", ops=("neg", "exp"), dtypes=("float32", "int64"), grad_ops=())
    text, report = str(caught.value), caught.value.report
    assert set(report.failed) == {"neg:float32", "neg:int64"} and report.passed == ["exp:float32", "exp:int64"]
    assert re.search(r"^  neg \(float32\): AssertionError: neg on cpu, float32, contiguous, shapes \(\(\),\), seed 0: "
                     r"1 of 1 elements differ \(rtol=1.3e-06, atol=1e-05\): max abs error 1, max rel error \S+; "
                     r"at \(\): got \S+, expected \S+$", text, re.M), text
    assert re.search(r"^  neg \(int64\): AssertionError: neg on cpu, int64, contiguous, shapes \(\(\),\), seed 0: "
                     r"1 of 1 elements differ \(exact\): max abs error 1, ", text, re.M), text
    assert text.endswith('expected_failures=("neg",)')  # a tuple to paste, not a string


def test_assert_close_reports_nan_inf_and_integer_mismatches():
    with pytest.raises(AssertionError, match=r"^2 of 4 elements differ \(rtol=1e-07, atol=1e-07\): max abs error "
                                             r"inf, max rel error nan; at \(1,\): got nan, expected 1.0; at \(2,\): "
                                             r"got inf, expected -inf\n"):
        assert_close(np.array([0.0, np.nan, np.inf, np.nan]), np.array([0.0, 1.0, -np.inf, np.nan]))
    with pytest.raises(AssertionError, match=r"^case 7: 1 of 3 elements differ \(exact\): max abs error 2, max rel "
                                             r"error 0.6667; at \(2,\): got 1, expected 3\n"):
        assert_close(np.array([1, 2, 1], np.int32), np.array([1, 2, 3], np.int32), msg="case 7")
    assert_close(np.array([1.0, np.nan]), np.array([1.0 + 1e-9, np.nan]))
