"""The random family: uniform_, normal_, exponential_, random_, bernoulli_, randperm_fill_ and multinomial from a
counter-based generator.

Each element hashes (the Generator's seed, a counter) with SplitMix64's finaliser, so a fill is one parallel
launch with no state on the device; the Generator keeps this backend's counter (``CounterState``), advanced by
the fill's size, so ``core.manual_seed`` makes every later fill reproducible. The numbers differ from the cpu
stream (as PyTorch's cuda stream differs from its cpu one); their distributions are the same.
"""

from __future__ import annotations

import numpy as np

from core.backends.api import broadcast_strides, coalesce, from_numpy_dtype

from ..programs import get_kernel
from ._common import RENDERER, is_tensor, launch_1d, new_tensor, numel, padded, rank_bucket, slot_of

__all__ = ["kernels", "CounterState"]

_MASK = (1 << 64) - 1
_INT64 = from_numpy_dtype(np.dtype(np.int64))
_FLOATS = ("float32", "float64")
_OUT_DTYPES = {"uniform_": _FLOATS, "normal_": _FLOATS, "exponential_": _FLOATS,
               "random_": ("int8", "uint8", "int16", "int32", "int64", "float32", "float64", "bool"),
               "bernoulli_": ("int8", "uint8", "int16", "int32", "int64", "float32", "float64", "bool")}


def _mix64(z: int) -> int:
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & _MASK
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & _MASK
    return z ^ (z >> 31)


class CounterState:
    """This backend's state in a core Generator: the hash key (from the seed) and the next counter."""

    def __init__(self, seed: int):
        self.key = _mix64(seed & _MASK)
        self.offset = 0

    def take(self, n: int) -> tuple:
        """(key, first counter) of a fill of ``n`` elements; later fills get counters after these."""
        offset, self.offset = self.offset, (self.offset + n) & _MASK
        return self.key, offset

    def get_state(self) -> dict:
        return {"key": self.key, "offset": self.offset}

    def set_state(self, state: dict) -> None:
        self.key, self.offset = int(state["key"]), int(state["offset"])


def _fill(op: str, self, generator, a, b, p=None):
    if self.dtype.name not in _OUT_DTYPES[op] or (p is not None and p.dtype.name not in _FLOATS) or self.dim() > 8:
        return NotImplemented
    n = numel(self._shape)
    if n == 0:
        return self
    slot = slot_of(self)
    work = "float64" if "float64" in (self.dtype.name, p.dtype.name if p is not None else "") else "float32"
    stride_lists = [self._stride] + ([broadcast_strides(p._shape, p._stride, self._shape)] if p is not None else [])
    dims, strides = coalesce(self._shape, stride_lists)
    rank = rank_bucket(len(dims), allow_zero=True)
    dtype, p_dtype = self.dtype.name, (p.dtype.name if p is not None else None)
    kernel = get_kernel(slot, ("random", op, dtype, work, rank, p_dtype), op,
                        lambda: {op: RENDERER.render_random(op, dtype, work, rank, p_dtype)})
    key, offset = generator.state_for("opencl", CounterState).take(n)
    if op == "random_":
        a, b = np.int64(a), np.uint64((b - a) & _MASK)
    else:
        real = np.float64 if work == "float64" else np.float32
        a, b = real(a), real(b)
    buf = slot.index_buffer
    args = [np.int64(n), buf(padded(dims, rank, 1)), self._storage.data, buf(padded(strides[0], rank, 0)),
            np.int64(self._offset), np.uint64(key), np.uint64(offset), a, b]
    if p is not None:
        args += [p._storage.data, buf(padded(strides[1], rank, 0)), np.int64(p._offset)]
    launch_1d(slot, kernel, n, args)
    return self


def uniform_(spec, self, low, high, generator):
    return _fill("uniform_", self, generator, low, high)


def normal_(spec, self, mean, std, generator):
    return _fill("normal_", self, generator, mean, std)


def exponential_(spec, self, lambd, generator):
    return _fill("exponential_", self, generator, lambd, 0)


def random_(spec, self, low, high, generator):
    return _fill("random_", self, generator, low, high)


def bernoulli_(spec, self, p, generator):
    if not is_tensor(p):
        return _fill("bernoulli_", self, generator, p, 0)
    if p.dtype.name in _FLOATS and p.numel() and not bool(((p >= 0) & (p <= 1)).all()):
        raise RuntimeError("bernoulli_(): expected all elements of p to be in [0, 1]")
    return _fill("bernoulli_", self, generator, 0, 0, p)


#: randperm and multinomial without replacement rank random keys: O(length) work per element, so longer
#: permutations and rows are declined (the CPU fallback runs them)
MAX_RANK_LENGTH = 16384


def randperm_fill_(spec, self, generator):
    n = self._shape[0]
    if self.dtype.name not in _OUT_DTYPES["random_"] or self.dtype.name == "bool" or n > MAX_RANK_LENGTH:
        return NotImplemented
    if n == 0:
        return self
    slot, dtype = slot_of(self), self.dtype.name

    def step(member):
        return get_kernel(slot, ("randperm", dtype), member, lambda: RENDERER.render_permutation(dtype))

    keys = new_tensor((n,), _INT64, self.device)  # 64 random bits per element
    key, offset = generator.state_for("opencl", CounterState).take(n)
    launch_1d(slot, step("keys"), n, [np.int64(n), np.uint64(key), np.uint64(offset), keys._storage.data])
    launch_1d(slot, step("rank"), n, [np.int64(n), keys._storage.data, self._storage.data, np.int64(self._offset),
                                      np.int64(self._stride[0])])
    return self


def multinomial(spec, input, num_samples, replacement, generator):
    dtype, c = input.dtype.name, input._shape[-1]
    if dtype not in _FLOATS or (not replacement and c > MAX_RANK_LENGTH):
        return NotImplemented
    p = input.contiguous()
    if not bool((p.isfinite() & (p >= 0)).all()):
        raise RuntimeError("multinomial(): probability tensor contains either `inf`, `nan` or element < 0")
    if not bool((p.sum(-1) > 0).all()):
        raise RuntimeError("multinomial(): invalid multinomial distribution (sum of probabilities <= 0)")
    out = new_tensor(spec.shape, spec.dtype, spec.device)
    rows = p.numel() // c
    slot, i64 = slot_of(p), np.int64

    def step(member):
        return get_kernel(slot, ("multinomial", dtype), member, lambda: RENDERER.render_multinomial(dtype))

    if replacement:
        cdf = p.cumsum(-1).contiguous()
        n = rows * num_samples
        key, offset = generator.state_for("opencl", CounterState).take(n)
        launch_1d(slot, step("search"), n, [i64(n), i64(c), i64(num_samples), cdf._storage.data, np.uint64(key),
                                            np.uint64(offset), out._storage.data])
        return out
    if p._offset:
        p = p.clone()
    n = rows * c
    keys = new_tensor(p._shape, p.dtype, p.device)
    key, offset = generator.state_for("opencl", CounterState).take(n)
    launch_1d(slot, step("keys"), n, [i64(n), p._storage.data, np.uint64(key), np.uint64(offset),
                                      keys._storage.data])
    launch_1d(slot, step("top"), n, [i64(n), i64(c), i64(num_samples), keys._storage.data, out._storage.data])
    return out


def kernels(runtime) -> dict:
    """The random family: op name -> kernel."""
    return {"uniform_": uniform_, "normal_": normal_, "exponential_": exponential_, "random_": random_,
            "bernoulli_": bernoulli_, "randperm_fill_": randperm_fill_, "multinomial": multinomial}
