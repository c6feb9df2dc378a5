"""Whole-step capture: record the kernel calls a program makes once, then replay them with no per-op Python.

A :class:`Recording` puts the ``Capture`` dispatch key into this thread's included keys while the program runs for
real. ``Capture`` sits below ``Autograd`` and above every backend key, so its kernel sees each call that reaches a
backend — the forward's ops, the backward's derivative ops run by the engine, the optimizer's fused updates,
factories — with the kernel it resolved to. It records that kernel and the call's arguments as a *tape* entry: a
tensor made by an earlier entry becomes a reference to that entry's output (a slot), a tensor from outside (a
parameter, optimizer state) is kept by reference, anything else is a constant. A :class:`Tape` replays the entries
in order: each calls its kernel with the slots of this replay, so parameters and state are updated in place as the
original calls did, and the outputs are fresh tensors, as eager would make them. No dispatch, autograd bookkeeping,
meta-key resolution or Python of the program runs on replay.

What cannot be replayed is refused (the recording is *tainted*), never replayed wrongly:

* Python read tensor data (``tolist``, ``numpy``, ``bool(t)``, an op that returns a Python value): the program's
  Python may have decided something on it. ``item()`` of an integral or floating tensor is allowed: it returns a
  number that remembers its tensor, and an op argument holding it is read again on each replay (Adam's step count);
  doing arithmetic or comparisons with it in Python taints the recording.
* A tensor over a host array's memory (``from_numpy``) made inside the program, or a ``core.distributed``
  collective (its communication is not a kernel call).

``core.tensor(data)`` inside the program is recorded as a call that copies the same host data on each replay. What
the tape cannot see — Python state the program changes (counters, lists, hooks), values it computes in Python from
constants that change between calls — is the caller's to check: ``core.compile(mode="reduce-overhead")`` records
two calls and replays only when they made identical tapes (see :mod:`core.compiler.capture`).
"""

from __future__ import annotations

import itertools
import numbers
import weakref
from functools import partial

import numpy as np

from ..device import device as _device
from ..dtypes import dtype as _dtype
from .keys import Autograd, Capture, tls
from .operator import set_functionality_fallback

__all__ = ["Recording", "Tape", "Tainted", "HostFloat", "HostInt", "same_signature", "Ptr", "note_c_call", "planning"]

_MASK = Capture.mask
_AUTOGRAD_MASK = Autograd.mask
_SIMPLE = (type(None), numbers.Number, np.generic, str, slice, type(Ellipsis), _dtype, _device)  # compared by value
_TAG = "_capture_slot"  # the __dict__ entry of a tensor a recording saw made
_TOKENS = itertools.count(1)


class Tainted(Exception):
    """A recording that cannot be replayed; the message says why."""


# -- numbers read from tensors ---------------------------------------------------------------------------------
def _poisoned(base, name: str):
    plain = base.__float__ if base is float else base.__int__  # the value as the exact base type

    def method(self, *args):
        rec = tls.recording
        if rec is not None and rec.depth == 0:
            rec.taint(f"Python computed with a number read from a tensor (item(), then {name})")
        return getattr(base, name)(plain(self), *args)

    method.__name__ = name
    return method


_DUNDERS = ("__add__", "__radd__", "__sub__", "__rsub__", "__mul__", "__rmul__", "__truediv__", "__rtruediv__",
            "__floordiv__", "__rfloordiv__", "__mod__", "__rmod__", "__pow__", "__rpow__", "__neg__", "__pos__",
            "__abs__", "__lt__", "__le__", "__gt__", "__ge__", "__eq__", "__ne__", "__bool__", "__int__",
            "__float__", "__round__", "__trunc__", "__floor__", "__ceil__", "__divmod__", "__rdivmod__")


def _host_type(base):
    namespace = {"_base": base, "__hash__": base.__hash__,
                 "__doc__": f"A {base.__name__} read with item() while recording: remembers its tensor."}
    if base is float:  # an int subclass cannot have slots: it keeps ``source`` in its __dict__
        namespace["__slots__"] = ("source",)
    namespace.update((name, _poisoned(base, name)) for name in _DUNDERS if hasattr(base, name))
    if base is int:
        namespace.update((name, _poisoned(base, name)) for name in ("__index__", "__and__", "__or__", "__xor__",
                                                             "__lshift__", "__rshift__", "__invert__"))
    return type(f"Host{base.__name__.capitalize()}", (base,), namespace)


HostFloat = _host_type(float)
HostInt = _host_type(int)


def read_item(tensor, value):
    """What ``tensor.item()`` returns while a recording is active in this thread (``value``: the number read)."""
    rec = tls.recording
    if rec.depth:
        return value  # a kernel reads its own arguments: replay runs the kernel again
    if type(value) is float:
        number = HostFloat(value)
    elif type(value) is int:
        number = HostInt(value)
    else:
        rec.taint(f"Python read a {type(value).__name__} from a tensor (item())")
        return value
    number.source = tensor
    return number


def note_host_read(what: str) -> None:
    """Called where Python reads tensor data (``tolist``, ``numpy``): taints a recording outside kernels."""
    rec = tls.recording
    if rec is not None and rec.depth == 0:
        rec.taint(f"Python read tensor data ({what})")


def note_host_tensor(tensor, array) -> None:
    """Called where a tensor is made from host data without an op (``core.tensor``): recorded as a call that makes
    it again from a copy of ``array`` on each replay."""
    rec = tls.recording
    if rec is not None and rec.depth == 0:
        rec.host_tensor(tensor, np.array(array, copy=True))


def note_uncapturable(what: str) -> None:
    """Called where a program does what a replay would not redo (a tensor over a host array's memory, a
    collective): taints a recording outside kernels."""
    rec = tls.recording
    if rec is not None and rec.depth == 0:
        rec.taint(what)


def note_backward() -> None:
    """Called by the autograd engine: the recorded program runs backward itself."""
    rec = tls.recording
    if rec is not None:
        rec.ran_backward = True


def note_object(obj, snapshot) -> None:
    """Remember ``snapshot()`` of ``obj`` (an optimizer's hyper-parameters): a replay checks it is unchanged."""
    rec = tls.recording
    if rec is not None and all(o is not obj for o, _ in rec.objects):
        rec.objects.append((obj, snapshot))


class Ptr:
    """A pointer argument of a noted C call: ``from_buffer(array) + offset`` (bytes), where ``array`` is the storage
    buffer (``t._storage.data``) of one of the call's tensor arguments or of its fresh output."""

    __slots__ = ("array", "offset")

    def __init__(self, array, offset: int = 0):
        self.array, self.offset = array, offset


def planning() -> bool:
    """Whether a recording in this thread would take a kernel's :func:`note_c_call` now."""
    return tls.plans is not None


def note_c_call(fn, parts: tuple, from_buffer, make=None, bumps: tuple = ()) -> None:
    """Called by a backend kernel, while a recording plans (``tls.plans`` is not None), at the one C call that is
    the kernel's whole effect on memory: a replay may then call ``fn(*parts)`` itself instead of the kernel's Python.

    ``parts`` are the call's arguments: :class:`Ptr` for pointers into the call's tensors (resolved on each replay
    from that replay's tensors), anything else a constant (sizes, offsets, strides, C structs made from them: the
    geometry a replay repeats; never a pointer into a tensor's memory). ``make()`` returns a fresh output tensor
    laid out as the one this call wrote (None: the kernel returned one of its arguments, written in place).
    ``bumps`` are tensors whose version counter the kernel moved. A replay whose C call returns a true value runs
    the kernel's Python instead (a fresh output) or raises (in place). Kernels note only where the call succeeded
    and nothing else (a NumPy fallback, a copy of an argument) touched memory; a kernel call that also ran other
    ops (views aside) replays through its Python whatever it noted."""
    plans = tls.plans
    if plans is not None:
        plans.append((fn, parts, from_buffer, make, bumps))


def launch(name: str, fn, *args):
    """``fn(*args)``, recorded as one tape entry when a recording is active: for code that runs kernels without the
    dispatcher (the JIT's fused kernels) or checks tensor data (index bounds), so that a replay runs ``fn`` again
    on that replay's tensors."""
    rec = tls.recording
    if rec is None or rec.depth:
        return fn(*args)
    rec.depth += 1
    try:
        out = fn(*args)
    finally:
        rec.depth -= 1
    rec._add(name, fn, None, 0, args, {}, out)
    return out


# -- recording ---------------------------------------------------------------------------------------------------
def _capture_kernel(op, below, *args, **kwargs):
    """The ``Capture`` key's kernel for every op: run the call below, then record it."""
    rec = tls.recording
    if rec is None:
        return op.redispatch(below, *args, **kwargs)
    if rec.depth:  # an op a recorded kernel calls: part of that kernel's call, not an entry of its own
        out = op.redispatch(below, *args, **kwargs)
        notes = tls.plans
        if notes is not None and not _is_view(op, args, out):
            notes.append(None)  # work a C call's note does not describe: the kernel's call replays through it
        return out
    tls.plans = []  # the C calls the kernel (and the kernels it calls) note
    written = _versions(op, args)
    rec.depth += 1
    try:
        out = op.redispatch(below, *args, **kwargs)
    finally:
        rec.depth -= 1
        notes, tls.plans = tls.plans, None
    # a kernel that moved the version counters of what it wrote moves them again on replay; for the others the
    # replay moves them, as the op's own front does in eager mode (after the kernel returns)
    rec.add(op, below, args, kwargs, out, notes, written is not None and written != _versions(op, args))
    return out


def _is_view(op, args: tuple, out) -> bool:
    """Whether a call of ``op`` made only views of its first argument (new tensors over its storage, nothing
    written)."""
    first = args[0] if args else None
    if op.writes or not hasattr(first, "_storage"):
        return False
    outs = out if out.__class__ in (tuple, list) else (out,)
    return all(hasattr(t, "_storage") and t._storage is first._storage and t is not first for t in outs)


def _versions(op, args: tuple):
    """The version counters of the tensors op may write, or None where it writes none."""
    if not op.writes:
        return None
    return [args[i]._storage.version for i in op.writes if i < len(args) and hasattr(args[i], "_storage")]


def _host_tensor_kernel(array, dtype, device):
    from ..ops.creation import _from_host

    return _from_host(array, dtype, device)


def _values_equal(a, b) -> bool:
    if type(a) is not type(b):
        return False
    if isinstance(a, np.ndarray):
        return a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()
    if isinstance(a, float) and a != a:
        return b != b
    return a == b


class Recording:
    """The tape being recorded in this thread (a context manager: ``with Recording(inputs) as rec: run()``).

    ``inputs`` are the tensors a replay passes anew (they take slots 0..n-1). After the block, ``rec.tape()`` is
    the replayable tape, or raises :class:`Tainted` naming why not.
    """

    def __init__(self, inputs: tuple = ()):
        self.depth = 0
        self.calls: list = []
        self.signature: list = []  # what two recordings of one program must share, entry by entry
        self.externals: list = []
        self.objects: list = []  # (object, snapshot function) noted by optimizers
        self.reasons: list = []
        self.ran_backward = False
        # A tensor this recording saw made carries (token, slot) in its __dict__, and its storage maps to the slot
        # here (weakly): the recording holds no reference to them, so the engine still steals a fresh gradient.
        self.token = next(_TOKENS)
        self._storages = weakref.WeakKeyDictionary()
        self._ext_ids: dict = {}  # id(external tensor) -> index in externals (held in externals)
        self.nslots = 0
        self.inputs = tuple(inputs)
        for t in self.inputs:
            self._new_slot(t)
        self._previous = None

    def __enter__(self):
        if tls.recording is not None:
            raise RuntimeError("a capture is already recording in this thread")
        tls.recording = self
        self._previous = tls.include & _MASK
        tls.include |= _MASK
        return self

    def __exit__(self, *exc):
        tls.include = (tls.include & ~_MASK) | self._previous
        tls.recording = None
        return False

    def taint(self, reason: str) -> None:
        if not self.reasons:
            self.reasons.append(reason)

    def _new_slot(self, t) -> int:
        slot = self.nslots
        self.nslots += 1
        t.__dict__[_TAG] = (self.token, slot)
        self._storages.setdefault(t._storage, slot)
        return slot

    def _slot(self, t):
        tag = t.__dict__.get(_TAG)
        return tag[1] if tag is not None and tag[0] == self.token else None

    # -- references ------------------------------------------------------------------------------------------
    def _ref(self, value, sig: list):
        """The template of one argument (see :func:`_build`); appends what identifies it to ``sig``."""
        if hasattr(value, "_storage"):
            slot = self._slot(value)
            if slot is not None:
                sig.append(("s", slot))
                return ("s", slot)
            base = self._storages.get(value._storage)
            if base is not None:  # a view made without an op (detach, _alias) of a tensor made here
                geometry = (value._shape, value._stride, value._offset, value.dtype, value.requires_grad)
                sig.append(("a", base, geometry))
                return ("a", base, geometry)
            index = self._ext_ids.get(id(value))
            if index is None:
                index = self._ext_ids[id(value)] = len(self.externals)
                self.externals.append(value)
            sig.append(("e", id(value)))
            return ("c", value)
        if isinstance(value, (HostFloat, HostInt)):
            inner: list = []
            source = self._ref(value.source, inner)
            sig.append(("h", type(value), tuple(inner)))
            return ("h", type(value)._base, source)
        if value.__class__ is list or value.__class__ is tuple:
            parts = [self._ref(v, sig) for v in value]
            sig.append((value.__class__, len(value)))
            if all(p[0] == "c" for p in parts):
                return ("c", value)
            return ("l", value.__class__, tuple(parts))
        if isinstance(value, _SIMPLE):
            sig.append(("v", type(value), value))
        else:
            sig.append(("o", value))
        return ("c", value)

    def add(self, op, below: int, args: tuple, kwargs: dict, out, notes=None, kernel_bumped: bool = False) -> None:
        """Record one call of ``op`` that ran the kernel resolved for ``below``; ``out`` is its result, ``notes``
        the C calls its kernel noted (:func:`note_c_call`), ``kernel_bumped`` whether the kernel moved the version
        counters of the tensors it wrote itself."""
        kernel = op._cache.get(below) or op._resolve(below)
        split = getattr(kernel, "split", None)
        if split is not None:  # the meta function's result is the same on every replay: keep it
            meta, pick = split
            spec = meta(*args, **kwargs)
            kernel = partial(pick(spec), spec)
        self._add(op.name, kernel, op, below, args, kwargs, out, notes, kernel_bumped)

    def _add(self, name: str, kernel, op, below: int, args: tuple, kwargs: dict, out, notes=None,
             kernel_bumped: bool = False) -> None:
        sig: list = [name, below]
        arg_t = tuple(self._ref(a, sig) for a in args)
        kw_t = {k: self._ref(v, sig) for k, v in kwargs.items()}
        sig.append(tuple(kwargs))
        outs = self._outputs(name, out)
        sig.append(len(outs))
        self.signature.append(tuple(sig))
        single = hasattr(out, "_storage") and outs != ()
        plan = None if notes is None else _plan(op, notes, args, kwargs, arg_t, kw_t, out, single)
        self.calls.append((kernel, op, below, arg_t, kw_t, outs, single, plan, kernel_bumped))

    def host_tensor(self, tensor, array) -> None:
        sig: list = ["<host tensor>", ("v", np.ndarray, array)]
        self.signature.append(tuple(sig))
        slot = self._new_slot(tensor)
        self.calls.append((_host_tensor_kernel, None, 0, (("c", array), ("c", tensor.dtype), ("c", tensor.device)),
                           {}, (slot,), True, None, False))

    def _outputs(self, name: str, out) -> tuple:
        if hasattr(out, "_storage"):
            if self._slot(out) is not None or id(out) in self._ext_ids:
                return ()  # an in-place op returned its argument
            return (self._new_slot(out),)
        if out is None:
            return ()
        if isinstance(out, (tuple, list)):
            slots = []
            for t in out:
                if hasattr(t, "_storage"):
                    slots.append(self._new_slot(t))
                elif t is not None:
                    self.taint(f"{name} returned a Python value ({type(t).__name__})")
                else:
                    slots.append(None)
            return tuple(slots)
        self.taint(f"{name} returned a Python value ({type(out).__name__}) that the program may read")
        return ()

    # -- results ------------------------------------------------------------------------------------------------
    def template(self, value, sig: list | None = None):
        """The template of a value the program returned or left behind (a ``.grad``), for replay to rebuild."""
        return self._ref(value, sig if sig is not None else [])

    def tape(self, keep=()) -> "Tape":
        """The replayable tape; ``keep``: templates (of :meth:`template`) whose slots must outlive the replay."""
        if self.reasons:
            raise Tainted(self.reasons[0])
        return Tape(self.calls, self.nslots, len(self.inputs), {s for t in keep for s in _slots_of(t)})

    def release(self) -> None:
        """Forget the storages a finished recording saw made."""
        self._storages = weakref.WeakKeyDictionary()


def _reads_host_number(template) -> bool:
    """Whether an argument template holds a number read from a tensor (rebuilt on each replay)."""
    kind = template[0]
    return kind == "h" or (kind == "l" and any(_reads_host_number(t) for t in template[2]))


def _plan(op, notes: list, args: tuple, kwargs: dict, arg_t: tuple, kw_t: dict, out, single: bool):
    """How a replay runs one recorded kernel call without the kernel's Python (None: through the kernel):

    * a view (a new tensor over its first argument's storage, no C call, nothing written): ``partial(_view, its
      geometry)``;
    * the one C call the kernel noted (:func:`note_c_call`): ``partial(_direct, (C function, constant arguments,
      (argument index, where its tensor is, byte offset, that tensor's recorded geometry) per pointer into an
      argument, (argument index, byte offset) per pointer into the output, from_buffer, make, where the bumped
      tensors are))``, where the note describes the whole call.

    Both check on each replay that the tensors they read are laid out as recorded (guards fix the inputs' shapes,
    not their strides and offsets); where one is not, the kernel runs."""
    if any(_reads_host_number(t) for t in arg_t) or any(_reads_host_number(t) for t in kw_t.values()):
        return None
    if not notes:
        if single and op is not None and _is_view(op, args, out) and out.dtype is args[0].dtype:
            return partial(_view, _geometry(args[0]), (out._shape, out._stride, out._offset))
        return None
    if len(notes) != 1 or notes[0] is None:  # several calls, or other work (an op the kernel called)
        return None
    fn, parts, from_buffer, make, bumps = notes[0]
    if (make is None) == single:  # a fresh output needs make(); an in-place call has none
        return None
    tensors = [(("a", i), a) for i, a in enumerate(args) if hasattr(a, "_storage")]
    tensors += [(("k", k), v) for k, v in kwargs.items() if hasattr(v, "_storage")]
    if single:
        tensors.append((("o", 0), out))

    def where(array):
        return next((loc for loc, t in tensors if t._storage.data is array), None)

    constants, pointers, made = list(parts), [], []
    for index, part in enumerate(parts):
        if part.__class__ is Ptr:
            loc = where(part.array)
            if loc is None:  # memory the call's own tensors do not own (a copy the kernel made): not replayable
                return None
            constants[index] = None
            if loc[0] == "o":
                made.append((index, part.offset))
            else:  # the call's layout arithmetic is constant only while its tensors keep their geometry
                t = args[loc[1]] if loc[0] == "a" else kwargs[loc[1]]
                pointers.append((index, loc, part.offset, _geometry(t)))
    bumped = []
    for t in bumps:
        loc = next((loc for loc, u in tensors if u is t), None)
        if loc is None:
            return None
        bumped.append(loc)
    return partial(_direct, (fn, tuple(constants), tuple(pointers), tuple(made), from_buffer, make, tuple(bumped)))


def _geometry(t) -> tuple:
    return t._shape, t._stride, t._offset


def same_signature(a: "Recording", b: "Recording") -> str | None:
    """Why two recordings of one program differ (None: they made the same tape from the same externals)."""
    if len(a.signature) != len(b.signature):
        return f"the two calls ran {len(a.signature)} and {len(b.signature)} kernels"
    for i, (x, y) in enumerate(zip(a.signature, b.signature)):
        if len(x) != len(y) or not all(_same_part(p, q) for p, q in zip(x, y)):
            return f"kernel call {i} ({x[0]}) differs between the two calls"
    return None


def _same_part(p, q) -> bool:
    if type(p) is not tuple or type(q) is not tuple:
        return p == q
    if len(p) != len(q) or (p and p[0] != q[0]):
        return False
    if not p:
        return True
    if p[0] == "v":
        return p[1] is q[1] and _values_equal(p[2], q[2])
    if p[0] == "o":
        return p[1] is q[1]
    return all(_same_part(x, y) for x, y in zip(p[1:], q[1:]))


# -- replay ------------------------------------------------------------------------------------------------------
def _slots_of(template):
    """The slots a template reads."""
    kind = template[0]
    if kind in ("s", "a"):
        yield template[1]
    elif kind == "h":
        yield from _slots_of(template[2])
    elif kind == "l":
        for t in template[2]:
            yield from _slots_of(t)

def _build(template, slots):
    kind = template[0]
    if kind == "c":
        return template[1]
    if kind == "s":
        return slots[template[1]]
    if kind == "a":
        from ..tensor import Tensor

        shape, stride, offset, dtype, requires_grad = template[2]
        t = Tensor._make(slots[template[1]]._storage, shape, stride, offset, dtype)
        return t
    if kind == "h":
        return template[1](_build(template[2], slots).item())
    return template[1](_build(p, slots) for p in template[2])


def _view(base: tuple, geometry: tuple, args, kwargs, op):
    """A recorded view op's output on replay: the same geometry over this replay's first argument (NotImplemented,
    for the kernel to decide, when that argument is laid out otherwise than when recorded)."""
    first = args[0]
    if (first._shape, first._stride, first._offset) != base:
        return NotImplemented
    return first._alias(*geometry)


def _direct(plan, args, kwargs, op):
    """Run one recorded call as its noted C call (see :func:`_plan`); its output (NotImplemented, nothing written:
    a tensor of the call is laid out otherwise than when recorded, or the C call declined)."""
    fn, constants, pointers, made, from_buffer, make, bumped = plan
    cargs = list(constants)
    for index, (kind, key), offset, geometry in pointers:
        t = args[key] if kind == "a" else kwargs[key]
        if (t._shape, t._stride, t._offset) != geometry:  # an input sliced or strided otherwise: its kernel decides
            return NotImplemented
        p = from_buffer(t._storage.data)
        cargs[index] = p + offset if offset else p
    out = None
    if make is not None:
        out = make()
        p = from_buffer(out._storage.data)
        for index, offset in made:
            cargs[index] = p + offset if offset else p
    if fn(*cargs):
        if make is None:
            raise RuntimeError(f"{op.name if op is not None else 'a recorded call'}: the replayed in-place C call "
                               "failed on this replay's data (record the step again without capture)")
        return NotImplemented
    for kind, key in bumped:
        (args[key] if kind == "a" else kwargs[key] if kind == "k" else out)._storage.version += 1
    return args[0] if make is None else out


class Tape:
    """A recorded program's kernel calls, replayable with new input tensors (see :class:`Recording`)."""

    def __init__(self, calls: list, nslots: int, ninputs: int, keep: set = frozenset()):
        self.nslots = nslots
        self.ninputs = ninputs
        self.steps = []
        # each slot is dropped after the last call that reads it (as eager frees a temporary when it dies), so the
        # allocator can reuse its memory within the replay
        last = {}
        for i, (_, _, _, arg_t, kw_t, outs, _, _, _) in enumerate(calls):
            for t in list(arg_t) + list(kw_t.values()):
                for slot in _slots_of(t):
                    last[slot] = i
            for slot in outs:
                if slot is not None:
                    last.setdefault(slot, i)
        frees: list = [[] for _ in calls]
        for slot, i in last.items():
            if slot not in keep:
                frees[i].append(slot)
        for (kernel, op, below, arg_t, kw_t, outs, single, plan, kernel_bumped), free in zip(calls, frees):
            args = [t[1] if t[0] == "c" else None for t in arg_t]
            direct = tuple((i, t[1]) for i, t in enumerate(arg_t) if t[0] == "s")
            built = tuple((i, t) for i, t in enumerate(arg_t) if t[0] not in ("c", "s"))
            kwargs = {k: t[1] for k, t in kw_t.items() if t[0] == "c"}
            kw_built = tuple((k, t) for k, t in kw_t.items() if t[0] != "c")
            # the tensors an in-place op writes: their version counters move as the op's own front moves them after
            # its kernel (a kernel that moves them itself moves them again when it, or its noted C call, replays)
            writes = () if kernel_bumped else \
                tuple(i for i in (op.writes if op is not None else ()) if i < len(arg_t) and
                      (arg_t[i][0] in ("s", "a") or hasattr(arg_t[i][1], "_storage")))
            self.steps.append((kernel, op, below, args, direct, built, kwargs, kw_built, outs,
                               outs[0] if single else None, writes, tuple(free), plan))

    def __len__(self) -> int:
        return len(self.steps)

    @property
    def direct_calls(self) -> int:
        """How many of the calls replay as a direct C call (:func:`note_c_call`), not through their kernel."""
        return sum(step[-1] is not None for step in self.steps)

    def replay(self, inputs) -> list:
        """Run every call with ``inputs`` in the input slots; returns the slots (outputs by slot number)."""
        slots = [None] * self.nslots
        slots[:self.ninputs] = inputs
        excluded = tls.exclude
        tls.exclude = excluded | _AUTOGRAD_MASK  # recorded calls ran below Autograd: a kernel's own ops record no graph
        try:
            self._run(slots)
        finally:
            tls.exclude = excluded
        return slots

    def _run(self, slots: list) -> None:
        for kernel, op, below, args, direct, built, kwargs, kw_built, outs, single, writes, free, plan in self.steps:
            if direct or built:
                args = list(args)
                for i, s in direct:
                    args[i] = slots[s]
                for i, t in built:
                    args[i] = _build(t, slots)
            if kw_built:
                kwargs = dict(kwargs)
                for k, t in kw_built:
                    kwargs[k] = _build(t, slots)
            if plan is None:
                out = kernel(*args, **kwargs)
            else:
                out = plan(args, kwargs, op)
                if out is NotImplemented:  # other geometry, or the C call declined this replay's data: the kernel
                    out = kernel(*args, **kwargs)
            if out is NotImplemented:
                out = op._declined(below, args, kwargs)
            for i in writes:
                args[i]._storage.version += 1
            if single is not None:
                slots[single] = out
            elif outs:
                for s, t in zip(outs, out):
                    if s is not None:
                        slots[s] = t
            for s in free:
                slots[s] = None

    @staticmethod
    def build(template, slots):
        """Rebuild a value recorded with :meth:`Recording.template` from a replay's slots."""
        return _build(template, slots)


set_functionality_fallback(Capture, _capture_kernel)
