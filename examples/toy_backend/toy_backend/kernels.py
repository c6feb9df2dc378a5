"""The toy device's kernels: each is ``kernel(spec, *args)`` and returns a fresh tensor shaped like ``spec``."""

import numpy as np

from .runtime import view


def _runtime(args):
    """The runtime of the first tensor argument: it allocates the result."""
    return next(a for a in args if hasattr(a, "untyped_storage")).untyped_storage().backend


def _operand(x, dtype):
    """A tensor argument's elements, or a Python number, as NumPy data of ``dtype``."""
    if hasattr(x, "untyped_storage"):
        return view(x).astype(dtype, copy=False)
    return np.asarray(x).astype(dtype)


def _compute_dtype(spec):
    """The NumPy dtype to compute in: the op's compute dtype, float16/bfloat16 widened to float32."""
    d = spec.compute_dtype
    return np.dtype(np.float32) if d.is_floating_point and d.itemsize == 2 else d.numpy


# -- writes: the two primitives every backend needs (creation and transfers go through them) ----------

def fill_(spec, self, value):
    view(self)[...] = np.asarray(value).astype(self.dtype.numpy)
    return self


def copy_(spec, self, src, non_blocking=False):
    np.copyto(view(self), view(src), casting="unsafe")
    return self


# -- elementwise math: one template, a NumPy function per op -------------------------------------------

def elementwise(fn):
    """The kernel of an elementwise op computing ``fn`` on broadcast NumPy operands."""

    def kernel(spec, *args):
        dtype = _compute_dtype(spec)
        with np.errstate(all="ignore"):  # inf and nan follow IEEE rules, as on the CPU
            result = fn(*(_operand(a, dtype) for a in args))
        return _runtime(args).new_tensor(spec, result)

    return kernel


def _add(a, b, alpha=1):
    return a + b * alpha if alpha != 1 else a + b


def _sub(a, b, alpha=1):
    return a - b * alpha if alpha != 1 else a - b


# -- reductions and products ---------------------------------------------------------------------------

def sum(spec, input, dims, keepdim=False, dtype=None):  # noqa: A001 - the op is called sum
    result = np.sum(_operand(input, _compute_dtype(spec)), axis=dims, keepdims=keepdim)
    return _runtime([input]).new_tensor(spec, result)


def amax(spec, input, dims, keepdim=False, dtype=None):
    result = np.amax(view(input), axis=dims, keepdims=keepdim)
    return _runtime([input]).new_tensor(spec, result)


def batched_matmul(spec, a, b):
    dtype = _compute_dtype(spec)
    return _runtime([a]).new_tensor(spec, np.matmul(_operand(a, dtype), _operand(b, dtype)))


KERNELS = {
    "fill_": fill_, "copy_": copy_,
    "add": elementwise(_add), "sub": elementwise(_sub), "mul": elementwise(np.multiply),
    "div": elementwise(np.true_divide), "neg": elementwise(np.negative), "exp": elementwise(np.exp),
    "log": elementwise(np.log), "maximum": elementwise(np.maximum),
    "sum": sum, "amax": amax, "batched_matmul": batched_matmul,
}
