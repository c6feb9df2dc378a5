"""The C-style renderer: rendered C compiles and computes strided, broadcast elementwise ops correctly."""

from __future__ import annotations

import ctypes
import shutil
import subprocess

import numpy as np
import pytest

from core.codegen import CRenderer, CStyleRenderer, expression_for

pytestmark = pytest.mark.skipif(shutil.which("cc") is None, reason="no C compiler on this machine")


def _compile(tmp_path, source: str):
    c_file = tmp_path / "k.c"
    c_file.write_text(source)
    lib = tmp_path / "k.so"
    subprocess.run(["cc", "-O2", "-shared", "-fPIC", "-fopenmp", str(c_file), "-o", str(lib), "-lm"], check=True)
    return ctypes.CDLL(str(lib))


def _run(lib, kernel, out: np.ndarray, *inputs: np.ndarray):
    i64 = ctypes.c_longlong
    ndim = out.ndim

    def strides(a):
        return (i64 * max(ndim, 1))(*[s // a.itemsize for s in a.strides] or [0])

    shape = (i64 * max(ndim, 1))(*out.shape or (1,))
    args = [i64(out.size), shape, out.ctypes.data_as(ctypes.c_void_p), strides(out), i64(0)]
    for a in inputs:
        args += [a.ctypes.data_as(ctypes.c_void_p), strides(a), i64(0)]
    getattr(lib, kernel.name)(*args)


@pytest.mark.parametrize("op,ref", [("add", np.add), ("mul", np.multiply), ("maximum", np.maximum),
                                    ("atan2", np.arctan2), ("lt", np.less)])
def test_binary_kernel_over_broadcast_and_transposed_inputs(op, ref, tmp_path):
    renderer = CRenderer()
    out_dtype = "bool" if op == "lt" else "float32"
    kernel = renderer.render_elementwise(op, ("float32", "float32"), out_dtype, 2, compute_dtype="float32")
    lib = _compile(tmp_path, kernel.source)
    rng = np.random.default_rng(0)
    a = np.ascontiguousarray(rng.standard_normal((5, 3)).astype(np.float32)).T  # transposed (3, 5)
    b = np.broadcast_to(rng.standard_normal((1, 5)).astype(np.float32), (3, 5))  # stride 0 on dim 0
    out = np.empty((3, 5), np.bool_ if out_dtype == "bool" else np.float32)
    _run(lib, kernel, out, a, b)
    np.testing.assert_allclose(out, ref(a, b), rtol=1e-6)


def test_unary_kernel_float64_and_zero_d(tmp_path):
    kernel = CRenderer().render_elementwise("tanh", ("float64",), "float64", 0)
    lib = _compile(tmp_path, kernel.source)
    a = np.array(0.5)
    out = np.empty(())
    _run(lib, kernel, out, a)
    assert out == pytest.approx(np.tanh(0.5))


def test_dialect_spellings():
    c = CRenderer()
    assert c.function("exp", "float32") == "expf" and c.function("exp", "float64") == "exp"
    assert "#pragma omp parallel for if(n >= 32768)" in c.render_elementwise("exp", ("float32",), "float32", 1).source
    assert c.supports("add", "int64") and not c.supports("exp", "int64") and not c.supports("nosuchop", "float32")
    assert expression_for("relu") and expression_for("nosuch") is None
    with pytest.raises(NotImplementedError):
        CStyleRenderer().render_elementwise("exp", ("float32",), "float32", 1)
