"""Random numbers: ``Generator`` objects, the default generators, sampling functions and in-place fills.

The primitives are in-place fills of an allocated tensor (``uniform_``,
``normal_``, ``random_``, ``bernoulli_``, ``exponential_``, ``randperm_fill_``)
plus ``multinomial``; each kernel receives the ``Generator`` to draw from and
keeps its own state in it (``Generator.state_for``). ``rand``, ``randn``,
``randint``, ``normal``, ``bernoulli``... are composites: allocate, then fill.
"""

from __future__ import annotations

import json
import math
import numbers
import os

from .. import dtypes as dt
from ..device import as_device
from ..dispatch import TensorSpec, define
from ..errors import op_error
from ..tensor import Tensor
from ._util import broadcast_shapes, check_int_arg, common_device, finish_out, size_args
from .creation import _check_dtype, _finish, allocate, empty, empty_like, resolve_device, tensor
from .elementwise import add, ceil, clamp, div, exp, log1p, lt, mul, tan
from .reduction import any as _any

__all__ = ["Generator", "bernoulli", "default_generator", "get_rng_state", "initial_seed", "manual_seed",
           "multinomial", "normal", "rand", "rand_like", "randint", "randint_like", "randn", "randn_like", "randperm",
           "seed", "set_rng_state"]

_FLOAT = 2
_DEFAULT_SEED = 67280421310721  # PyTorch's seed of a new Generator
_STATE_HEADER = b"core-rng-v1\n"


def _check_seed(seed) -> int:
    """A seed as PyTorch takes it: an int in [-2**63, 2**64), negatives wrapped to unsigned."""
    if isinstance(seed, Tensor):
        seed = seed.item()
    if not isinstance(seed, numbers.Integral):
        # PyTorch raises RuntimeError here, not TypeError
        raise RuntimeError(f"manual_seed expected a long, but got {type(seed).__name__}")  # noqa: TRY004
    seed = int(seed)
    if not -2 ** 63 <= seed < 2 ** 64:
        raise ValueError("Overflow when unpacking long long")
    return seed % 2 ** 64


def _fresh_seed() -> int:
    return int.from_bytes(os.urandom(8), "little")


class Generator:
    """A source of random numbers for one device type (``torch.Generator``).

    It holds a seed and, per backend that drew from it, that backend's own
    state object (e.g. a ``numpy.random.Generator``), created from the seed on
    first use by :meth:`state_for`.
    """

    def __init__(self, device="cpu"):
        self.device = as_device(device)
        self._seed = _DEFAULT_SEED
        self._states: dict = {}
        self._saved: dict = {}  # snapshots from set_state, restored when their backend next draws

    def __repr__(self) -> str:
        return f"<core.Generator device={self.device} initial_seed={self._seed}>"

    def manual_seed(self, seed) -> Generator:
        """Reset to ``seed``: the same seed gives the same numbers on the same backend."""
        self._seed = _check_seed(seed)
        self._states.clear()
        self._saved.clear()
        return self

    def seed(self) -> int:
        """Reseed from a non-deterministic source and return the new seed."""
        value = _fresh_seed()
        self.manual_seed(value)
        return value

    def initial_seed(self) -> int:
        """The seed this generator was last seeded with."""
        return self._seed

    def state_for(self, backend: str, factory, restore=None):
        """The state object of ``backend`` in this generator, made by ``factory(seed)`` on first use.

        Backends keep what they like here. ``get_state`` snapshots an object
        through ``obj.bit_generator.state`` (NumPy/CuPy generators) or
        ``obj.get_state()``, which must be JSON-serialisable; a snapshot from
        ``set_state`` is put back with ``restore(obj, snapshot)``, or the
        same attribute / ``obj.set_state(snapshot)``.
        """
        state = self._states.get(backend)
        if state is None:
            state = self._states[backend] = factory(self._seed)
            if backend in self._saved:
                _restore(state, self._saved.pop(backend), restore)
        return state

    def get_state(self) -> Tensor:
        """The whole state as a uint8 CPU tensor (seed plus every backend's state)."""
        states = dict(self._saved)
        states.update({name: _snapshot(obj) for name, obj in self._states.items()})
        payload = json.dumps({"seed": self._seed, "states": states}, sort_keys=True).encode()
        return tensor(list(_STATE_HEADER + payload), dtype=dt.uint8, device="cpu")

    def set_state(self, new_state) -> Generator:
        """Restore a state from :meth:`get_state` (a uint8 tensor, or its bytes)."""
        if isinstance(new_state, Tensor):
            if new_state.dtype is not dt.uint8:
                raise TypeError(f"RNG state must be a uint8 tensor (core.ByteTensor), got {new_state.dtype.name}")
            new_state = bytes(new_state.cpu().numpy().tobytes())
        if not isinstance(new_state, (bytes, bytearray)):
            raise TypeError(f"RNG state must be a uint8 tensor or bytes, not {type(new_state).__name__}")
        try:
            if not new_state.startswith(_STATE_HEADER):
                raise ValueError("missing header")
            data = json.loads(new_state[len(_STATE_HEADER):])
            seed, states = int(data["seed"]), dict(data["states"])
        except (ValueError, KeyError, TypeError) as exc:
            raise RuntimeError(f"Generator.set_state(): not a state returned by get_state() ({exc})") from None
        self._seed, self._states, self._saved = seed, {}, states
        return self


def _snapshot(obj):
    bit_generator = getattr(obj, "bit_generator", None)
    return bit_generator.state if bit_generator is not None else obj.get_state()


def _restore(obj, snapshot, restore) -> None:
    if restore is not None:
        restore(obj, snapshot)
    elif getattr(obj, "bit_generator", None) is not None:
        obj.bit_generator.state = snapshot
    else:
        obj.set_state(snapshot)


# -- default generators ----------------------------------------------------------------------------

default_generator = Generator("cpu").manual_seed(_fresh_seed())  # PyTorch seeds its default non-deterministically
_DEFAULTS: dict = {"cpu": default_generator}
_GLOBAL_SEED: list = [None]  # the last manual_seed / seed, for device types whose generator is made later


def default_generator_for(device_type: str) -> Generator:
    """The default generator of a device type (made on first use, seeded like the others)."""
    gen = _DEFAULTS.get(device_type)
    if gen is None:
        seed_value = _GLOBAL_SEED[0] if _GLOBAL_SEED[0] is not None else _fresh_seed()
        gen = _DEFAULTS[device_type] = Generator(device_type).manual_seed(seed_value)
    return gen


def is_default_generator(gen: Generator) -> bool:
    """Whether ``gen`` is its device type's default generator (not one made by ``core.Generator(...)``)."""
    return _DEFAULTS.get(gen.device.type) is gen


def manual_seed(seed) -> Generator:
    """Seed the default generators of every device type; returns the CPU one (``torch.manual_seed``)."""
    seed = _check_seed(seed)
    _GLOBAL_SEED[0] = seed
    for gen in _DEFAULTS.values():
        gen.manual_seed(seed)
    return default_generator


def seed() -> int:
    """Seed every default generator non-deterministically; returns the seed (``torch.seed``)."""
    value = _fresh_seed()
    manual_seed(value)
    return value


def initial_seed() -> int:
    """The seed of the default CPU generator (``torch.initial_seed``)."""
    return default_generator.initial_seed()


def get_rng_state() -> Tensor:
    """The default CPU generator's state as a uint8 tensor (``torch.get_rng_state``)."""
    return default_generator.get_state()


def set_rng_state(new_state) -> None:
    """Restore the default CPU generator's state (``torch.set_rng_state``)."""
    default_generator.set_state(new_state)


def _generator(op: str, generator, device) -> Generator:
    """``generator``, or the default one of the device type; its device type must match the tensor's."""
    if generator is None:
        return default_generator_for(device.type)
    if not isinstance(generator, Generator):
        raise TypeError(f"{op}(): argument 'generator' must be core.Generator, not {type(generator).__name__}")
    if generator.device.type != device.type:
        raise op_error(RuntimeError, op, f"Expected a '{device.type}' device type for generator but found "
                       f"'{generator.device.type}'")
    return generator


# -- the primitives --------------------------------------------------------------------------------

def _not_implemented(op: str, d) -> Exception:
    return NotImplementedError(f"{op}(): \"{op}\" not implemented for '{dt.legacy_name(d)}'")


def _fill_meta(op: str, kinds: str, check=None):
    """Meta of an in-place random fill; ``kinds`` lists the dtype categories allowed (b, i, f)."""

    def meta(self, *args):
        if not isinstance(self, Tensor):
            raise TypeError(f"{op}(): argument 'self' must be Tensor, not {type(self).__name__}")
        if "bif"[min(self.dtype.category, 2)] not in kinds or self.dtype.category > _FLOAT:
            raise _not_implemented(op, self.dtype)
        if check is not None:
            check(self, *args)
        return TensorSpec(self._shape, self.dtype, self.device)

    return meta


def _check_uniform(self, low, high, generator):
    if low > high:
        raise op_error(RuntimeError, "uniform_", f"uniform_ expects to return a [from, to) range, but found "
                       f"from={low} > to={high}")


def _check_normal(self, mean, std, generator):
    if std < 0:
        raise op_error(RuntimeError, "normal_", f"normal expects std >= 0.0, but found std {std}")


def _check_exponential(self, lambd, generator):
    if not lambd > 0:
        raise op_error(RuntimeError, "exponential_", f"exponential_ expects lambda > 0.0, but found lambda={lambd}")


def _check_bernoulli(self, p, generator):
    if isinstance(p, Tensor):
        if p.dtype.category != _FLOAT:
            raise _not_implemented("bernoulli_", p.dtype)
        common_device("bernoulli_", (self, p))
        if broadcast_shapes(self._shape, p._shape, op="bernoulli_") != self._shape:
            raise op_error(RuntimeError, "bernoulli_", f"p of shape {list(p._shape)} cannot be broadcast to self's "
                           f"shape {list(self._shape)}")
    elif not 0 <= p <= 1:
        raise op_error(RuntimeError, "bernoulli_", f"bernoulli_ expects p to be in [0, 1], but got p={p}")


def _check_randperm(self, generator):
    if self.ndim != 1:
        raise op_error(RuntimeError, "randperm", "expected a 1-D tensor to fill", self)
    d = self.dtype
    limit = 2 ** _mantissa_bits(d) + 1 if d.category == _FLOAT else dt.iinfo(d).max + 1
    if self._shape[0] > limit:
        raise op_error(RuntimeError, "randperm", f"n cannot be greater than {limit} for {d.name}")


_uniform = define("uniform_", meta=_fill_meta("uniform_", "f", _check_uniform), primitive=True, inplace=True,
                  doc="fill floating self with U[low, high) from the Generator (half types drawn in float32)")
_normal = define("normal_", meta=_fill_meta("normal_", "f", _check_normal), primitive=True, inplace=True,
                 doc="fill floating self with N(mean, std**2) from the Generator (half types drawn in float32)")
_random = define("random_", meta=_fill_meta("random_", "bif"), primitive=True, inplace=True,
                 doc="fill self with integers uniform in [low, high) (Python ints, already checked), cast to self")
_bernoulli = define("bernoulli_", meta=_fill_meta("bernoulli_", "bif", _check_bernoulli), primitive=True,
                    inplace=True, doc="fill self with 1 with probability p (a float, or a floating tensor "
                                      "broadcastable to self whose values the kernel checks are in [0, 1]), else 0")
_exponential = define("exponential_", meta=_fill_meta("exponential_", "f", _check_exponential), primitive=True,
                      inplace=True, doc="fill floating self with Exp(lambd) samples (mean 1 / lambd)")
_randperm = define("randperm_fill_", meta=_fill_meta("randperm", "if", _check_randperm), primitive=True,
                   inplace=True, doc="fill the 1-D self of length n with a random permutation of 0..n-1")


def _multinomial_meta(input, num_samples, replacement, generator):
    if not isinstance(input, Tensor):
        raise TypeError(f"multinomial(): argument 'input' must be Tensor, not {type(input).__name__}")
    if input.dtype.category != _FLOAT:
        raise op_error(RuntimeError, "multinomial", f"multinomial only supports floating-point dtypes for input, "
                       f"got: {dt.legacy_name(input.dtype)}")
    if input.ndim not in (1, 2):
        raise op_error(RuntimeError, "multinomial", "prob_dist must be 1 or 2 dim")
    categories = input._shape[-1]
    if num_samples <= 0:
        raise op_error(RuntimeError, "multinomial", "cannot sample n_sample <= 0 samples")
    if not replacement and num_samples > categories:
        raise op_error(RuntimeError, "multinomial", "cannot sample n_sample > prob_dist.size(-1) samples without "
                       "replacement")
    if categories > 2 ** 24:
        raise op_error(RuntimeError, "multinomial", "number of categories cannot exceed 2^24")
    return TensorSpec(input._shape[:-1] + (num_samples,), dt.int64, input.device)


_multinomial = define(
    "multinomial", meta=_multinomial_meta, primitive=True,
    doc="int64 indices of num_samples draws per row of the (unnormalised) probabilities input (1-D or 2-D); "
        "without replacement the indices of a row are distinct. The kernel checks the values: finite, >= 0, "
        "positive row sums.")


def _mantissa_bits(d) -> int:
    return {"float16": 11, "bfloat16": 8, "float32": 24, "float64": 53}[d.name]


# -- in-place fills (Tensor methods) ---------------------------------------------------------------

def _fill(op, name: str, self, generator, *args):
    if not isinstance(self, Tensor):
        raise TypeError(f"{name}(): argument 'self' must be Tensor, not {type(self).__name__}")
    op(self, *args, _generator(name, generator, self.device))
    self._storage.version += 1
    return self


def uniform_(self, from_=0.0, to=1.0, *, generator=None):
    """Fill with numbers uniform in ``[from_, to)`` (``Tensor.uniform_``)."""
    return _fill(_uniform, "uniform_", self, generator, float(from_), float(to))


def normal_(self, mean=0.0, std=1.0, *, generator=None):
    """Fill with normal samples of ``mean`` and ``std`` (``Tensor.normal_``); a complex tensor gets the complex normal
    distribution: real and imaginary parts independent, each of standard deviation ``std / sqrt(2)``."""
    if isinstance(self, Tensor) and self.dtype.category == dt._COMPLEX:
        from .view import view_as_real  # the two parts as a float view of the same storage

        _fill(_normal, "normal_", view_as_real(self), generator, 0.0, float(std) / math.sqrt(2))
        if mean != 0:
            self.add_(mean)
        return self
    return _fill(_normal, "normal_", self, generator, float(mean), float(std))


def exponential_(self, lambd=1.0, *, generator=None):
    """Fill with exponential samples of rate ``lambd`` (``Tensor.exponential_``)."""
    return _fill(_exponential, "exponential_", self, generator, float(lambd))


def bernoulli_(self, p=0.5, *, generator=None):
    """Fill with 1 with probability ``p`` (a float or a tensor), else 0 (``Tensor.bernoulli_``)."""
    return _fill(_bernoulli, "bernoulli_", self, generator, p if isinstance(p, Tensor) else float(p))


_UNSET = object()


def _random_bounds(self, low, high) -> tuple:
    """[low, high) for random_: PyTorch's defaults (the dtype's range) and bounds checks."""
    d = self.dtype
    if d.category == _FLOAT:
        top = 2 ** _mantissa_bits(d) + 1
        lowest = -top
    elif d is dt.bool:
        lowest, top = 0, 2
    else:
        info = dt.iinfo(d)
        lowest, top = info.min, info.max + 1
    low = check_int_arg("random_", "from", low)
    high = top if high is None else check_int_arg("random_", "to", high)
    if low >= high:
        raise op_error(RuntimeError, "random_", f"random_ expects 'from' to be less than 'to', but got "
                       f"from={low} >= to={high}")
    if d.category < _FLOAT:
        if not lowest <= low < top:
            raise op_error(RuntimeError, "random_", f"from is out of bounds for {d.name}")
        if not lowest <= high - 1 < top:
            raise op_error(RuntimeError, "random_", f"to - 1 is out of bounds for {d.name}")
    return low, high


def random_(self, from_=_UNSET, to=_UNSET, *, generator=None):
    """Fill with integers: ``random_(to)`` in [0, to), ``random_(from, to)``, ``random_()`` over the dtype's range.

    ``random_(from, None)`` goes up to the dtype's maximum (``Tensor.random_``).
    """
    if not isinstance(self, Tensor):
        raise TypeError(f"random_(): argument 'self' must be Tensor, not {type(self).__name__}")
    if from_ is _UNSET:  # random_() or random_(to=...)
        from_, to = 0, None if to is _UNSET else to
    elif to is _UNSET:  # random_(to)
        from_, to = 0, from_
    low, high = _random_bounds(self, from_, to)
    return _fill(_random, "random_", self, generator, low, high)


def geometric_(self, p, *, generator=None):
    """Fill with the number of Bernoulli(p) trials up to the first success, k >= 1 (``Tensor.geometric_``)."""
    if not 0 < p < 1:
        raise op_error(RuntimeError, "geometric_", f"geometric_ expects p to be in (0, 1), but got p={p}")
    u = _float_buffer(self, generator)
    # inverse CDF; clamp guards u == 0, which would give 0 trials
    return self.copy_(clamp(ceil(div(log1p(mul(u, -1)), math.log1p(-p))), min=1))


def log_normal_(self, mean=1.0, std=2.0, *, generator=None):
    """Fill with exp of normal(mean, std) samples (``Tensor.log_normal_``)."""
    if self.dtype.category != _FLOAT:
        raise _not_implemented("log_normal_", self.dtype)
    return self.copy_(exp(normal_(empty_like(self), mean, std, generator=generator)))


def cauchy_(self, median=0.0, sigma=1.0, *, generator=None):
    """Fill with Cauchy(median, sigma) samples (``Tensor.cauchy_``)."""
    if self.dtype.category != _FLOAT:
        raise _not_implemented("cauchy_", self.dtype)
    u = uniform_(empty_like(self), generator=generator)
    return self.copy_(add(mul(tan(mul(add(u, -0.5), math.pi)), sigma), median))


def _float_buffer(self, generator) -> Tensor:
    """U[0, 1) samples shaped like ``self`` in a floating dtype that holds them (self's own if floating)."""
    d = self.dtype if self.dtype.category == _FLOAT else dt.get_default_dtype()
    return uniform_(empty(self._shape, dtype=d, device=self.device), generator=generator)


# -- sampling functions ----------------------------------------------------------------------------

def _allocate(op: str, size, dtype, device, default=None) -> Tensor:
    d = _check_dtype(op, dtype if dtype is not None else default)
    return allocate(size_args(op, size), d, resolve_device(device), op)


def rand(*size, generator=None, out=None, dtype=None, layout=None, device=None, requires_grad=False,
         pin_memory=False) -> Tensor:
    """Samples uniform in [0, 1) (``torch.rand``)."""
    result = uniform_(_allocate("rand", size, dtype, device), generator=generator)
    return finish_out("rand", _finish(result, requires_grad), out)


def randn(*size, generator=None, out=None, dtype=None, layout=None, device=None, requires_grad=False,
          pin_memory=False) -> Tensor:
    """Standard normal samples (``torch.randn``)."""
    result = normal_(_allocate("randn", size, dtype, device), generator=generator)
    return finish_out("randn", _finish(result, requires_grad), out)


def rand_like(input, *, dtype=None, layout=None, device=None, requires_grad=False, memory_format=None,
              generator=None) -> Tensor:
    """``rand`` shaped like ``input`` (``torch.rand_like``)."""
    result = uniform_(empty_like(input, dtype=dtype, device=device, memory_format=memory_format), generator=generator)
    return _finish(result, requires_grad)


def randn_like(input, *, dtype=None, layout=None, device=None, requires_grad=False, memory_format=None,
               generator=None) -> Tensor:
    """``randn`` shaped like ``input`` (``torch.randn_like``)."""
    result = normal_(empty_like(input, dtype=dtype, device=device, memory_format=memory_format), generator=generator)
    return _finish(result, requires_grad)


def randint(low=0, high=None, size=None, *, generator=None, out=None, dtype=None, layout=None, device=None,
            requires_grad=False, pin_memory=False) -> Tensor:
    """Integers uniform in [low, high): ``randint(high, size)`` or ``randint(low, high, size)`` (``torch.randint``)."""
    if size is None and isinstance(high, (tuple, list)):
        low, high, size = 0, low, high
    if high is None or size is None:
        raise TypeError("randint(): expected (high, size) or (low, high, size) with size a tuple of ints")
    if not isinstance(size, (tuple, list)):
        raise TypeError(f"randint(): argument 'size' must be tuple of ints, not {type(size).__name__}")
    t = _allocate("randint", (size,), dtype, device, default=dt.int64)
    result = random_(t, low, high, generator=generator)
    return finish_out("randint", _finish(result, requires_grad), out)


def randint_like(input, low=0, high=None, *, dtype=None, layout=None, device=None, requires_grad=False,
                 memory_format=None, generator=None) -> Tensor:
    """``randint`` shaped like ``input``: ``randint_like(x, high)`` or ``(x, low, high)`` (``torch.randint_like``)."""
    if high is None:
        low, high = 0, low
    result = random_(empty_like(input, dtype=dtype, device=device, memory_format=memory_format), low, high,
                     generator=generator)
    return _finish(result, requires_grad)


def randperm(n, *, generator=None, out=None, dtype=None, layout=None, device=None, requires_grad=False,
             pin_memory=False) -> Tensor:
    """A random permutation of ``0..n-1`` (``torch.randperm``)."""
    n = check_int_arg("randperm", "n", n)
    t = _allocate("randperm", (n,), dtype, device, default=dt.int64)
    result = _fill(_randperm, "randperm", t, generator)
    return finish_out("randperm", _finish(result, requires_grad), out)


def normal(mean=0.0, std=1.0, size=None, *, generator=None, out=None, dtype=None, layout=None, device=None,
           requires_grad=False, pin_memory=False) -> Tensor:
    """Normal samples: tensor or float ``mean``/``std`` (broadcast), or floats with ``size`` (``torch.normal``)."""
    tensors = [x for x in (mean, std) if isinstance(x, Tensor)]
    if not tensors:
        if size is None:
            raise TypeError("normal(): size is required when mean and std are numbers")
        result = normal_(_allocate("normal", (size,), dtype, device), mean, std, generator=generator)
        return finish_out("normal", _finish(result, requires_grad), out)
    for t in tensors:
        if t.dtype.category != _FLOAT:
            raise _not_implemented("normal", t.dtype)
    if isinstance(std, Tensor):
        if bool(_any(lt(std, 0))):
            raise op_error(RuntimeError, "normal", "normal expects all elements of std >= 0.0")
    elif std < 0:
        raise op_error(RuntimeError, "normal", f"normal expects std >= 0.0, but found std {std}")
    shape = broadcast_shapes(*(t._shape for t in tensors), op="normal")
    d = dt.result_type(*tensors)
    z = normal_(empty(shape, dtype=d, device=common_device("normal", tensors)), generator=generator)
    return finish_out("normal", add(mul(z, std), mean), out)


def bernoulli(input, p=None, *, generator=None, out=None) -> Tensor:
    """0/1 samples with probabilities ``input`` (or a constant ``p``), in ``input``'s dtype (``torch.bernoulli``)."""
    if not isinstance(input, Tensor):
        raise TypeError(f"bernoulli(): argument 'input' must be Tensor, not {type(input).__name__}")
    result = bernoulli_(empty_like(input), input if p is None else p, generator=generator)
    return finish_out("bernoulli", result, out)


def multinomial(input, num_samples, replacement=False, *, generator=None, out=None) -> Tensor:
    """Indices drawn from the categorical distributions in the rows of ``input`` (``torch.multinomial``)."""
    if not isinstance(input, Tensor):
        raise TypeError(f"multinomial(): argument 'input' must be Tensor, not {type(input).__name__}")
    num_samples = check_int_arg("multinomial", "num_samples", num_samples)
    gen = _generator("multinomial", generator, input.device)
    return finish_out("multinomial", _multinomial(input, num_samples, bool(replacement), gen), out)


METHODS = {"uniform_": uniform_, "normal_": normal_, "random_": random_, "bernoulli_": bernoulli_,
           "exponential_": exponential_, "geometric_": geometric_, "log_normal_": log_normal_, "cauchy_": cauchy_,
           "bernoulli": bernoulli, "multinomial": multinomial}
