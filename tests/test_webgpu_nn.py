"""The webgpu backend's compute kernels (plugins/webgpu/core_webgpu/kernels: linalg, nn, indexing, optim) against
NumPy and the cpu device, on strided inputs, with no CPU fallback counted for the ops they implement."""

from __future__ import annotations

import contextlib

import numpy as np
import pytest

import core
import core.nn.functional as F
from core.testing import assert_close

pytest.importorskip("core_webgpu", reason="the core-webgpu plugin is not installed")
from core_webgpu.runtime import RUNTIME  # noqa: E402

_OK, _WHY = RUNTIME.is_available()
pytestmark = [pytest.mark.skipif(not _OK, reason=f"no WebGPU adapter: {_WHY}"),
              pytest.mark.filterwarnings("ignore:.*running on the CPU with copies:RuntimeWarning")]
DEV = "webgpu"


def _rng():
    return np.random.default_rng(0)


@contextlib.contextmanager
def native(*ops):
    """Assert that none of ``ops`` ran on the CPU fallback for webgpu inside the block."""
    from core.dispatch.operator import fallback_counts

    before = {op: fallback_counts[(op, DEV)] for op in ops}
    yield
    after = {op: fallback_counts[(op, DEV)] for op in ops}
    assert after == before, f"CPU fallbacks on webgpu: { {op: after[op] - before[op] for op in ops} }"


def _pair(array, transpose=None):
    """(cpu tensor, webgpu tensor) of ``array``; with ``transpose`` the webgpu one is a permuted (strided) view."""
    host = core.tensor(array)
    if transpose is None:
        return host, host.to(DEV)
    inverse = tuple(np.argsort(transpose))
    return host, core.tensor(np.ascontiguousarray(array.transpose(inverse))).to(DEV).permute(*transpose)


# -- linalg --------------------------------------------------------------------------------------------------------

def test_batched_matmul_strided_and_broadcast():
    rng = _rng()
    a = rng.standard_normal((3, 4, 37, 21)).astype(np.float32)
    b = rng.standard_normal((3, 4, 21, 45)).astype(np.float32)
    _, at = _pair(a, (0, 1, 3, 2))  # a transposed view: read through its strides
    bt = core.tensor(b).to(DEV)
    with native("batched_matmul"):
        assert_close((at @ bt).cpu(), core.tensor(a @ b))
        shared = core.tensor(b[0, 0]).to(DEV).expand(3, 4, 21, 45)  # stride-0 batch
        assert_close((core.tensor(a).to(DEV) @ shared).cpu(), core.tensor(a @ b[0, 0]))
        sliced = core.tensor(a).to(DEV)[:, 1:3, ::2, 3:]  # offset and steps
        assert_close((sliced @ bt[:, 1:3, 3:, :]).cpu(), core.tensor(a[:, 1:3, ::2, 3:] @ b[:, 1:3, 3:, :]))
        empty = core.zeros(2, 0, device=DEV) @ core.zeros(0, 3, device=DEV)
        assert_close(empty.cpu(), core.zeros(2, 3))


def test_linear_fuses_bias_over_strided_input():
    rng = _rng()
    x = rng.standard_normal((5, 7, 33)).astype(np.float32)
    w = rng.standard_normal((19, 33)).astype(np.float32)
    b = rng.standard_normal(19).astype(np.float32)
    _, xt = _pair(x, (1, 0, 2))  # rows two strides apart: copied once, then one GEMM
    with native("linear", "batched_matmul"):
        for bias in (core.tensor(b).to(DEV), None):
            got = F.linear(xt, core.tensor(w).to(DEV), bias)
            want = x @ w.T + (0 if bias is None else b)
            assert tuple(got.shape) == (5, 7, 19)
            assert_close(got.cpu(), core.tensor(want), rtol=1e-5, atol=1e-5)
        wt = core.tensor(np.ascontiguousarray(w.T)).to(DEV).T  # a transposed weight view
        assert_close(F.linear(core.tensor(x[0]).to(DEV), wt).cpu(), core.tensor(x[0] @ w.T), rtol=1e-5, atol=1e-5)
