"""``core.compile(fn, mode="reduce-overhead")``: whole-step capture, the role CUDA graphs play for PyTorch.

A training step — forward, ``backward()``, ``optimizer.step()``, ``zero_grad()`` — is recorded as the kernel calls
it makes (:mod:`core.dispatch.capture`) and later calls replay those calls with no per-op Python: no dispatch, no
autograd graph, no optimizer loop. Per guard key (:mod:`.guards`: the arguments' shapes, dtypes and devices, the
module's state, the globals the code reads):

1. the first call is recorded while it runs; so is the second. A replay is trusted only when the two calls made
   the same tape from the same outside tensors (a step whose first call creates optimizer state, or whose Python
   computes a constant that changes per call, makes two different tapes: then the next two calls are compared,
   up to :data:`ATTEMPTS` recordings before the key runs without capture);
2. later calls replay the second recording's tape with their own argument tensors, after checking what its
   Python depended on: the hyper-parameters of the optimizers it stepped, and the ``.grad`` of each parameter it
   used (``None``, a tensor it never read, or the very tensor it read, accumulating in place);
3. after a replay each parameter's ``.grad`` is set as the recorded call left it, and the result is rebuilt from
   the replay's tensors (returned tensors come back detached: the replay builds no autograd graph).

A recording that cannot be replayed (Python read tensor data, a returned tensor still needs its graph because the
program did not run backward itself, ...) makes the key use the ordinary ``core.compile`` path, with a one-time
warning naming the reason (``Unsupported`` under ``fullgraph=True``). Python side effects other than ``.grad`` —
counters, hooks, printing — happen on recorded calls only.
"""

from __future__ import annotations

import functools
import warnings

from .._dynamo.exc import Unsupported
from ..dispatch.capture import HostFloat, HostInt, Recording, Tainted, Tape, same_signature
from ..tensor import Tensor
from .compiled import _LIVE
from .guards import GuardBuilder, Unguardable, rebuild_args

__all__ = ["CapturedFunction", "ATTEMPTS"]

ATTEMPTS = 4  # recordings per guard key before giving up on capture for it
_REFUSED = object()


class _Entry:
    """What one guard key has: the recordings so far, then a tape and what a replay must check and restore."""

    __slots__ = ("last", "attempts", "tape", "objects", "grads_in", "grads_out", "result", "result_templates")

    def __init__(self):
        self.last = None
        self.attempts = 0
        self.tape = None

    def valid(self) -> bool:
        """Whether the Python state the tape depends on is as it was recorded."""
        for obj, snapshot, value in self.objects:
            if snapshot() != value:
                return False
        for p, kind, grad in self.grads_in:
            current = p.grad
            if kind == "none":
                if current is not None:
                    return False
            elif kind == "unread":
                if current is None:
                    return False
            elif current is not grad:
                return False
        return True

    def replay(self, tensors: list):
        slots = self.tape.replay(tensors)
        build = Tape.build
        for p, template in self.grads_out:
            p.grad = None if template is None else build(template, slots)
        if not self.result_templates:
            return self.result
        return _filled(self.result, iter([build(t, slots) for t in self.result_templates]))


class CapturedFunction:
    """A function compiled with ``mode="reduce-overhead"``: replayed tapes per guard key, else ``fallback``."""

    def __init__(self, fn, module, fallback, name: str, fullgraph: bool = False):
        self.fn = fn
        self.module = module
        self.fallback = fallback
        self.name = name
        self.fullgraph = fullgraph
        self.entries: dict = {}
        self.warned: set = set()
        self._guards = None
        _LIVE.add(self)
        functools.update_wrapper(self, fn, updated=())

    def clear(self) -> None:
        """Forget every tape (the next calls record again)."""
        self.entries.clear()
        self.warned.clear()
        self.fallback.clear()

    def _refuse(self, key, reason: str) -> None:
        if self.fullgraph:
            raise Unsupported(f"core.compile({self.name}, mode='reduce-overhead', fullgraph=True): cannot capture "
                              f"the whole call: {reason}")
        self.entries[key] = _REFUSED
        if reason not in self.warned:
            self.warned.add(reason)
            warnings.warn(f"core.compile({self.name}, mode='reduce-overhead'): cannot capture the whole call "
                          f"({reason}); calls with these inputs run without it", stacklevel=3)

    def __call__(self, *args, **kwargs):
        if self._guards is None:
            self._guards = GuardBuilder(self.fn, self.module)
        tensors: list = []
        try:
            key = self._guards.key(args, kwargs, tensors)
        except Unguardable:
            return self.fallback(*args, **kwargs)
        entry = self.entries.get(key)
        if entry is _REFUSED:
            return self.fallback(*args, **kwargs)
        if entry is None:
            entry = self.entries[key] = _Entry()
        elif entry.tape is not None:
            if entry.valid():
                return entry.replay(tensors)
            entry.tape, entry.last, entry.attempts = None, None, 0  # its Python state changed: record again
        return self._record(key, entry, tensors, args, kwargs)

    def _record(self, key, entry: _Entry, tensors: list, args, kwargs):
        previous = entry.last
        grads_at_entry = [(p, p.grad) for p in _leaves(previous)] if previous is not None else []
        rec = Recording(tuple(tensors))
        with rec:
            result = self.fn(*args, **kwargs)
        entry.attempts += 1
        outputs: list = []
        shape = _holes(result, outputs)
        if not rec.ran_backward and any(isinstance(t, Tensor) and t.requires_grad for t in outputs):
            rec.taint("it returns tensors that require grad but does not run backward itself")
        if rec.reasons:
            rec.release()
            self._refuse(key, rec.reasons[0])
            return result
        tail: list = []
        templates = [rec.template(t, tail) for t in outputs]
        grads_out = [(p, None if p.grad is None else rec.template(p.grad, tail)) for p in _leaves(rec)]
        rec.signature.append(("<after the call>", tuple(tail)))
        rec.snapshots = [(obj, snapshot, snapshot()) for obj, snapshot in rec.objects]
        if any(not isinstance(v, Tensor) for v in outputs):  # the caller gets plain numbers
            result = _filled(shape, iter([v if isinstance(v, Tensor) else v._base(v._base.__float__(v) if
                                          v._base is float else v._base.__int__(v)) for v in outputs]))
        if previous is None:
            entry.last = rec
            return result
        differs = same_signature(previous, rec) or _objects_differ(previous, rec)
        previous.release()
        if differs is not None:
            entry.last = rec
            if entry.attempts >= ATTEMPTS:
                rec.release()
                self._refuse(key, f"{ATTEMPTS} calls in a row recorded different kernel calls: {differs}")
            return result
        try:
            entry.tape = rec.tape(keep=templates + [t for _, t in grads_out if t is not None])
        except Tainted as e:
            rec.release()
            self._refuse(key, str(e))
            return result
        read = {id(t) for t in rec.externals}
        entry.grads_in = [(p, "none" if g is None else "read" if id(g) in read else "unread", g)
                          for p, g in grads_at_entry]
        entry.objects = rec.snapshots
        entry.grads_out = grads_out
        entry.result = shape
        entry.result_templates = templates
        entry.last = None
        rec.release()
        return result


class _Hole:
    __slots__ = ()


_HOLE = _Hole()


def _holes(obj, values: list):
    """``obj`` with its tensors and numbers read from tensors replaced by holes (appended to ``values``)."""
    if isinstance(obj, (Tensor, HostFloat, HostInt)):
        values.append(obj)
        return _HOLE
    cls = obj.__class__
    if cls is tuple or cls is list:
        return cls(_holes(x, values) for x in obj)
    if cls is dict:
        return {k: _holes(v, values) for k, v in obj.items()}
    return obj


def _filled(obj, values):
    """``obj`` (from :func:`_holes`) with its holes filled, in order, from the iterator ``values``."""
    return rebuild_args(obj, values, _Hole)


def _leaves(rec: Recording) -> list:
    """The outside tensors of a recording whose ``.grad`` the program may set: leaves that require grad."""
    return [t for t in rec.externals if isinstance(t, Tensor) and t.requires_grad and t.grad_fn is None]


def _objects_differ(a: Recording, b: Recording) -> str | None:
    if [o for o, _, _ in a.snapshots] != [o for o, _, _ in b.snapshots] or \
            [v for _, _, v in a.snapshots] != [v for _, _, v in b.snapshots]:
        return "an optimizer's hyper-parameters changed between the two calls"
    return None
