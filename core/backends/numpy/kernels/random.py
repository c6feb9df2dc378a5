"""NumPy kernels of the random family: fills drawn from the Generator's ``numpy.random.Generator`` (PCG64)."""

from __future__ import annotations

import numpy as np

from ...kit.reference import compute_np, operands
from ..runtime import CONTEXT, array, wrap

operand = operands(CONTEXT)

_F64 = np.dtype(np.float64)


def _rng(generator) -> np.random.Generator:
    return generator.state_for("numpy", lambda seed: np.random.Generator(np.random.PCG64(seed)))


def _store(self, values):
    array(self)[...] = values  # casts; float16/bfloat16 values were drawn in float32
    return self


def _draw_floats(self, draw, scale, shift):
    """``draw(shape, dtype, out) * scale + shift`` into self, in place when self's array can take it directly."""
    cd = compute_np(self.dtype)
    a = array(self)
    direct = a.dtype == cd and a.flags.c_contiguous
    values = draw(self._shape, dtype=cd, out=a if direct else None)
    if scale != 1:
        values *= cd.type(scale)
    if shift != 0:
        values += cd.type(shift)
    return self if direct else _store(self, values)


def uniform_(spec, self, low, high, generator):
    return _draw_floats(self, _rng(generator).random, high - low, low)


def normal_(spec, self, mean, std, generator):
    return _draw_floats(self, _rng(generator).standard_normal, std, mean)


def exponential_(spec, self, lambd, generator):
    return _draw_floats(self, _rng(generator).standard_exponential, 1 / lambd, 0)


def random_(spec, self, low, high, generator):
    values = _rng(generator).integers(low, high, size=self._shape, dtype=np.int64)
    return _store(self, values.astype(self.dtype.numpy))


def bernoulli_(spec, self, p, generator):
    if hasattr(p, "_storage"):
        p = operand(p, _F64)
        if not np.all((p >= 0) & (p <= 1)):
            raise RuntimeError("bernoulli_(): expected all elements of p to be in [0, 1]")
    u = _rng(generator).random(self._shape)
    return _store(self, (u < p).astype(self.dtype.numpy))


def randperm_fill_(spec, self, generator):
    return _store(self, _rng(generator).permutation(self._shape[0]).astype(self.dtype.numpy))


def multinomial(spec, input, num_samples, replacement, generator):
    p = operand(input, _F64).reshape(-1, input._shape[-1])
    if not np.all(np.isfinite(p) & (p >= 0)):
        raise RuntimeError("multinomial(): probability tensor contains either `inf`, `nan` or element < 0")
    if np.any(p.sum(axis=1) <= 0):
        raise RuntimeError("multinomial(): invalid multinomial distribution (sum of probabilities <= 0)")
    rng = _rng(generator)
    if replacement:
        cdf = np.cumsum(p, axis=1)
        cdf /= cdf[:, -1:]  # the last entry becomes exactly 1, so every u in [0, 1) finds a category
        u = rng.random((p.shape[0], num_samples))
        out = np.stack([np.searchsorted(row, draws, side="right") for row, draws in zip(cdf, u)])
    else:
        # the k largest p / Exp(1) are a weighted sample without replacement (PyTorch's algorithm too)
        keys = p / rng.standard_exponential(p.shape)
        out = np.argsort(-keys, axis=1, kind="stable")[:, :num_samples]
    return wrap(out.reshape(spec.shape), spec)


def kernels(ctx) -> dict:
    """This family's kernels, written over NumPy alone (bound to the NumPy runtime, so ``ctx`` is unused)."""
    return {"uniform_": uniform_, "normal_": normal_, "exponential_": exponential_, "random_": random_,
            "bernoulli_": bernoulli_, "randperm_fill_": randperm_fill_, "multinomial": multinomial}
