"""Batched tensors for a vectorised ``vmap``: the function runs once, on the whole batch.

A :class:`BatchedTensor` is what one sample looks like to the vmapped function (its *logical* shape); it holds the
whole batch as a plain tensor (its *value*) with the batch dimension first. Its Storage carries the ``Batched``
dispatch key, the highest of all, so every op that meets one runs :func:`batched_kernel`, which

1. looks the op up in :data:`RULES`, a batching rule per op family (``core/func/_rules.py``);
2. else, for a composite op, runs its decomposition on the batched tensors (the parts have rules);
3. else falls back to a loop over the samples, stacking the results: always correct, only slower.

Autograd works on the values (the rules call ordinary ops on plain tensors), as it does for sparse tensors' values.
Nested ``vmap`` calls make nested levels: a level's value may itself be batched at an outer level, and a rule runs
with its level popped, so the ops it calls are batched by the level below (functorch's dynamic-layer stack).
"""

from __future__ import annotations

import threading
import weakref

from ..dispatch.keys import Batched, tls
from ..dispatch.operator import OPERATORS, set_functionality_fallback
from ..storage import Storage
from ..tensor import Tensor, contiguous_strides

__all__ = ["BatchedTensor", "Level", "push_level", "pop_level", "active_levels", "wrap", "batched_kernel", "RULES",
           "per_sample", "batch_at_all_levels", "base_of", "wrap_all_levels", "no_levels"]


class Level:
    """One active ``vmap`` call: its batch size, randomness mode, and the tensors allocated while it runs (``id`` to
    a weak reference), which a first write of batched data turns into batched tensors (:func:`_promote`)."""

    __slots__ = ("size", "randomness", "fresh")

    def __init__(self, size: int, randomness: str):
        self.size = size
        self.randomness = randomness
        self.fresh: dict = {}


class _Stack(threading.local):
    def __init__(self):
        self.levels: list = []


_STACK = _Stack()


def _sync_include() -> None:
    """Ops see the Batched key whenever a level is active (random ops need it even with no batched operand)."""
    if _STACK.levels:
        tls.include |= Batched.mask
    else:
        tls.include &= ~Batched.mask


def push_level(size: int, randomness: str) -> Level:
    """Enter a new innermost vmap level."""
    level = Level(size, randomness)
    _STACK.levels.append(level)
    _sync_include()
    return level


def pop_level() -> Level:
    """Leave the innermost vmap level."""
    level = _STACK.levels.pop()
    _sync_include()
    return level


def active_levels() -> list:
    """The active vmap levels, outermost first."""
    return list(_STACK.levels)


class _Popped:
    """Block run by the level below the innermost one (a rule's calls on unwrapped values)."""

    __slots__ = ("level",)

    def __enter__(self):
        self.level = pop_level()
        return self.level

    def __exit__(self, *exc):
        _STACK.levels.append(self.level)
        _sync_include()
        return False


class no_levels:
    """Block run outside every vmap level (autograd over the fully unwrapped values)."""

    __slots__ = ("saved",)

    def __enter__(self):
        self.saved, _STACK.levels = _STACK.levels, []
        _sync_include()

    def __exit__(self, *exc):
        _STACK.levels = self.saved
        _sync_include()
        return False


class DataDependentError(RuntimeError):
    """The samples of ``level`` need their own Python control flow or shapes: a batched tensor's values were read as
    Python data (``.item()``, ``bool(t)``), or an op gave the samples different shapes; vmap then runs the function
    sample by sample."""

    def __init__(self, message: str, level):
        super().__init__(message)
        self.level = level


class BatchedTensor(Tensor):
    """One sample's view of a batch inside ``vmap`` (functorch's BatchedTensor): ``shape`` is the sample's shape,
    ``_value`` the whole batch with the batch dimension first."""

    @property
    def requires_grad(self) -> bool:
        return self._value.requires_grad

    @requires_grad.setter
    def requires_grad(self, value: bool) -> None:
        self._value.requires_grad = value

    @property
    def grad_fn(self):
        return self._value.grad_fn

    @property
    def is_leaf(self) -> bool:
        return self._value.is_leaf

    def requires_grad_(self, requires_grad: bool = True) -> "BatchedTensor":
        """Set ``requires_grad`` on the batch (autograd works on the values)."""
        self._value.requires_grad_(requires_grad)
        return self

    def detach(self) -> "BatchedTensor":
        """The same batch cut from the autograd graph."""
        return wrap(self._value.detach(), self._level)

    def _data_dependent(self, *args, **kwargs):
        raise DataDependentError("vmap: It looks like you're calling .item() (or reading the values) of a Tensor "
                                 "inside vmap. We don't support vmap over calling .item() on a Tensor, please try to "
                                 "rewrite what you're doing with other operations.", self._level)

    numpy = item = tolist = __array__ = __bool__ = __int__ = __float__ = __index__ = data_ptr = _data_dependent

    def __repr__(self) -> str:
        return f"BatchedTensor(lvl={_level_number(self._level)}, bdim=0, value=\n{self._value!r})"


def _level_number(level) -> int:
    levels = _STACK.levels
    return next((i + 1 for i, lv in enumerate(levels) if lv is level), 0)


class _HostReadGuard:
    """A batched tensor's storage backend: the value's own, except that reading the data to the host (``to_numpy``,
    an op's check of index values) raises :class:`DataDependentError`, so vmap runs the function per sample."""

    __slots__ = ("_backend", "_level")

    def __init__(self, backend, level):
        self._backend = backend
        self._level = level

    def __getattr__(self, name):
        return getattr(self._backend, name)

    def to_host(self, t):
        raise DataDependentError("vmap: the values of a batched tensor were read as data (numpy(), an op's check "
                                 "of index values)", self._level)


def _storage_for(value: Tensor, level: Level) -> Storage:
    backend = _HostReadGuard(value._storage.backend, level)
    return Storage(None, 0, value._storage.device, backend, Batched.mask | value._storage.key)


def wrap(value: Tensor, level: Level) -> BatchedTensor:
    """``value`` (batch first) seen as one sample of ``level``."""
    t = object.__new__(BatchedTensor)
    t._value = value
    t._level = level
    t._shape = value._shape[1:]
    t._stride = contiguous_strides(t._shape)  # never used to read data: every op goes through batched_kernel
    t._offset = 0
    t._np = None
    t.dtype = value.dtype
    t._storage = _storage_for(value, level)
    return t


def _at(x, level) -> bool:
    return x.__class__ is BatchedTensor and x._level is level


# -- the kernel ---------------------------------------------------------------------------------------------------

_RANDOM = frozenset({"uniform_", "normal_", "random_", "bernoulli_", "exponential_", "randperm_fill_",
                     "multinomial"})


def _any_at(args, kwargs, level) -> bool:
    for a in args:
        if a.__class__ is BatchedTensor:
            if a._level is level:
                return True
        elif a.__class__ is list or a.__class__ is tuple:
            if any(_at(b, level) for b in a):
                return True
    return any(_at(v, level) for v in kwargs.values()) if kwargs else False


def _any_batched(args, kwargs) -> bool:
    for a in args:
        if a.__class__ is BatchedTensor:
            return True
        if (a.__class__ is list or a.__class__ is tuple) and any(b.__class__ is BatchedTensor for b in a):
            return True
    return any(v.__class__ is BatchedTensor for v in kwargs.values()) if kwargs else False


def batched_kernel(op, below, *args, **kwargs):
    """The Batched key's kernel for every op: a batching rule, the decomposition, or a loop over the samples."""
    levels = _STACK.levels
    if not levels:
        raise RuntimeError(f"vmap: {op.name}() got a BatchedTensor outside of vmap: a batched tensor escaped the "
                           f"function it was made for (return it instead of keeping it in a closure or a global)")
    level = levels[-1]
    batched = _any_at(args, kwargs, level)
    if op.name in _RANDOM:
        return _random(op, level, batched, args, kwargs)
    if not batched:
        if not _any_batched(args, kwargs):  # plain tensors only (Batched is in the thread's include set)
            out = op.redispatch(below, *args, **kwargs)
            if op.name == "empty":
                for lv in levels:
                    lv.fresh[id(out)] = weakref.ref(out)
            return out
        with _Popped():  # batched by outer levels only: theirs to handle
            return op(*args, **kwargs)
    if op.writes and not _at(args[op.writes[0]], level):
        _promote(args[op.writes[0]], level)
    rule = RULES.get(op.name)
    if rule is not None:
        result = rule(op, level, *args, **kwargs)
        if result is not NotImplemented:
            return result
    if op.decomposition is not None and not op.primitive and not op.default:
        try:
            return op.decomposition(*args, **kwargs)
        except DataDependentError:  # the decomposition reads values (a check, a size): run it per sample
            pass
    return _loop(op, level, args, kwargs)


# -- promotion: a tensor made inside the function becomes batched when batched data is written into it -------------

def _is_fresh(t, level) -> bool:
    ref = level.fresh.get(id(t))
    return ref is not None and ref() is t


def _become(t, value, level) -> None:
    """Turn the plain tensor ``t`` into a batched tensor of ``level`` over ``value``, in place (same object)."""
    t.__class__ = BatchedTensor
    t._value = value
    t._level = level
    t._stride = contiguous_strides(t._shape)
    t._offset = 0
    t._np = None
    t._storage = _storage_for(value, level)


def _promote(t, level) -> bool:
    """Make ``t`` batched if it was allocated inside this vmap (``clone``, ``*_like``, ``pad``, a mask...), or is a
    view of such a tensor: what core's ops build with ``empty`` and then fill, PyTorch's batched factories do."""
    base = t if t._base is None else t._base
    if not _at(base, level):
        if base.__class__ is not Tensor or not _is_fresh(base, level) or base.requires_grad or base._offset \
                or base._stride != contiguous_strides(base._shape):
            return False
        with _Popped():  # the batch starts as copies of what the tensor holds (zeros, a fill value)
            value = base.unsqueeze(0).expand((level.size,) + base._shape).contiguous()
        _become(base, value, level)
    if t is not base and t.__class__ is Tensor:
        n = 1
        for size in base._shape:
            n *= size
        with _Popped():
            value = base._value.as_strided((level.size,) + t._shape, (n,) + t._stride, t._offset)
        _become(t, value, level)
    return _at(t, level)


# -- the per-sample loop: correct for every op ---------------------------------------------------------------------

def _sample(x, level, i):
    if _at(x, level):
        return x._value.select(0, i)
    if x.__class__ is list or x.__class__ is tuple:
        return type(x)(_sample(b, level, i) for b in x)
    return x


def _stack_results(results: list, level):
    from ..ops.shape import stack

    first = results[0]
    if isinstance(first, Tensor):
        if any(r._shape != first._shape for r in results):
            raise DataDependentError(f"vmap: an op gave the samples different shapes ({tuple(first._shape)} and "
                                     f"{tuple(next(r._shape for r in results if r._shape != first._shape))})", level)
        return wrap(stack(results), level)
    if isinstance(first, tuple):  # several outputs, a named tuple among them
        parts = [_stack_results([r[k] for r in results], level) for k in range(len(first))]
        return type(first)(*parts) if hasattr(first, "_fields") else type(first)(parts)
    if isinstance(first, list):
        return [_stack_results([r[k] for r in results], level) for k in range(len(first))]
    if all(r == first for r in results):  # None, or a number every sample agrees on
        return first
    raise RuntimeError("vmap: the function returned a Python value that differs between samples; vmap can only "
                       "batch Tensors")


def per_sample(fn, level, args: tuple, kwargs: dict):
    """``fn`` called once per sample of ``level`` (with the level popped), its results stacked and wrapped."""
    with _Popped():
        results = [fn(*_sample(args, level, i), **{k: _sample(v, level, i) for k, v in kwargs.items()})
                   for i in range(level.size)]
        return _stack_results(results, level)


def _loop(op, level, args, kwargs):
    if op.writes:
        written = args[op.writes[0]]
        if not _at(written, level):
            raise RuntimeError(f"vmap: {op.name}(self, *extra_args) is not possible because there exists a Tensor "
                               f"`other` in extra_args that has more elements than `self`. This happened due to "
                               f"`other` being vmapped over but `self` not being vmapped over in a vmap. Please try "
                               f"to use out-of-place operators instead of {op.name}.")
        with _Popped():
            for i in range(level.size):
                op(*_sample(args, level, i), **{k: _sample(v, level, i) for k, v in kwargs.items()})
        return written
    return per_sample(op, level, args, kwargs)


# -- randomness ----------------------------------------------------------------------------------------------------

def _random(op, level, batched: bool, args, kwargs):
    """PyTorch's randomness modes: 'error' refuses, 'different' draws per sample, 'same' draws once for all."""
    if level.randomness == "error":
        raise RuntimeError("vmap: called random operation while in randomness error mode. Please either use the "
                           "'same' or 'different' randomness flags on vmap or perform the randomness operation out "
                           "of vmap")
    filled = args[0]
    others = _any_at(args[1:], kwargs, level)
    if level.randomness == "different":
        if op.writes and not _at(filled, level) and not _promote(filled, level):
            raise RuntimeError("vmap: Cannot ask for different inplace randomness on an unbatched tensor. This will "
                               "appear like same randomness. If this is necessary for your usage, please file an "
                               "issue with functorch.")
        if op.writes and not others:  # every element of the batch draws its own number: one call
            with _Popped():
                op(filled._value, *args[1:], **kwargs)
            return filled
        if batched or op.writes:
            return _loop(op, level, args, kwargs)
        return _draw_per_sample(op, level, args, kwargs)
    if batched and (others or not op.writes):
        raise RuntimeError(f"vmap: {op.name}() with randomness='same' and a batched argument other than the tensor "
                           f"it fills is not supported; use randomness='different' or draw outside vmap")
    if not batched:
        with _Popped():
            return op(*args, **kwargs)
    with _Popped():  # draw one sample's numbers and give them to every sample
        first = filled._value.select(0, 0)
        op(first, *args[1:], **kwargs)
        filled._value.copy_(first.unsqueeze(0).expand(filled._value.shape))
    return filled


def _draw_per_sample(op, level, args, kwargs):
    """An out-of-place random op with no batched operand (``multinomial``), drawn once per sample."""
    with _Popped():
        return _stack_results([op(*args, **kwargs) for _ in range(level.size)], level)


# -- batching rules: a table filled by core/func/_rules.py ----------------------------------------------------------

RULES: dict = {}  # op name -> rule(op, level, *args, **kwargs): the result, or NotImplemented to loop instead


# -- autograd inside vmap: the sum over a batch of independent samples -------------------------------------------

def batch_at_all_levels(x, levels: list):
    """``x`` batched at every level of ``levels`` (an unbatched level broadcast over its batch)."""
    if not levels:
        return x
    level = levels[-1]
    with _Popped():
        inner = x._value if _at(x, level) else x.unsqueeze(0).expand((level.size,) + tuple(x._shape))
        inner = batch_at_all_levels(inner, levels[:-1])
    return wrap(inner, level)


def base_of(x):
    """The plain tensor under every level: batch dims (outermost first), then the sample's dims."""
    while x.__class__ is BatchedTensor:
        x = x._value
    return x


def wrap_all_levels(base, levels: list):
    """A plain tensor with one leading dim per level (outermost first) seen as one sample of them all."""
    for level in levels:
        base = wrap(base, level)
    return base


from . import _rules  # noqa: E402,F401 - fills RULES

set_functionality_fallback(Batched, batched_kernel)
assert all(n in OPERATORS for n in RULES), sorted(set(RULES) - set(OPERATORS))
