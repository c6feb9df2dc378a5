"""The allow-list unpickler behind ``core.load(weights_only=True)``: PyTorch 2.6+'s safe default.

A pickle can call any importable function while it loads; this unpickler resolves only the globals on an
allow-list (a few containers by default, plus what a user adds with :func:`add_safe_globals` or the
:func:`safe_globals` context), so a weights-only load of an untrusted file runs no code. A refused file
names every global it would need and both ways to opt in (``torch.serialization``'s behaviour).
"""

from __future__ import annotations

import _compat_pickle
import collections
import contextlib
import io
import pickle
import pickletools
import threading

__all__ = ["WeightsOnlyUnpicklingError", "add_safe_globals", "clear_safe_globals", "get_safe_globals",
           "safe_globals", "restricted_loads", "unsafe_globals"]

# Classes that only hold data and run no code while they are rebuilt (PyTorch allows these too).
_DEFAULT_GLOBALS = (collections.OrderedDict, collections.Counter, set, frozenset, complex, slice, range, bytearray)

_user_globals: list = []  # what add_safe_globals adds, process-wide (as in PyTorch)
_local = threading.local()  # what safe_globals() adds, for the duration of a with-block in this thread


class WeightsOnlyUnpicklingError(pickle.UnpicklingError, RuntimeError):
    """A weights-only load met a global outside the allow-list (``_pickle.UnpicklingError`` in PyTorch)."""


def add_safe_globals(safe_globals: list) -> None:
    """Allow these classes or functions in weights-only loads (``torch.serialization.add_safe_globals``).

    An entry is the object itself or a ``(object, "module.Name")`` pair for an object saved under another name.
    """
    _user_globals.extend(_checked(safe_globals, "add_safe_globals"))


def get_safe_globals() -> list:
    """The globals users allowed with :func:`add_safe_globals` (``torch.serialization.get_safe_globals``)."""
    return list(_user_globals)


def clear_safe_globals() -> None:
    """Forget every global added with :func:`add_safe_globals` (``torch.serialization.clear_safe_globals``)."""
    _user_globals.clear()


@contextlib.contextmanager
def safe_globals(safe_globals: list):
    """Allow these globals in weights-only loads inside the block (``torch.serialization.safe_globals``)."""
    added = _checked(safe_globals, "safe_globals")
    stack = _local.__dict__.setdefault("stack", [])
    stack.append(added)
    try:
        yield
    finally:
        stack.remove(added)


def _checked(entries, op: str) -> list:
    if not isinstance(entries, (list, tuple)):
        raise TypeError(f"{op}(): expected a list of classes or functions, got {type(entries).__name__}")
    for entry in entries:
        if isinstance(entry, tuple) and not (len(entry) == 2 and isinstance(entry[1], str)):
            raise TypeError(f"{op}(): a tuple entry must be (object, 'module.Name'), got {entry!r}")
    return list(entries)


def _name_of(entry) -> tuple[str, object]:
    if isinstance(entry, tuple):
        return entry[1], entry[0]
    return f"{entry.__module__}.{entry.__qualname__}", entry


def _allowed(extra: dict | None = None) -> dict:
    """``"module.Name" -> object`` for every global a weights-only load may resolve now."""
    stacked = [e for added in getattr(_local, "stack", ()) for e in added]
    allowed = dict(_name_of(e) for e in (*_DEFAULT_GLOBALS, *_user_globals, *stacked))
    allowed.update(extra or {})
    return allowed


class _RestrictedUnpickler(pickle.Unpickler):
    def __init__(self, data: bytes, persistent_load, extra: dict | None):
        super().__init__(io.BytesIO(data))
        self.allowed = _allowed(extra)
        self.persistent_load = persistent_load

    def find_class(self, module: str, name: str):
        qualified = _python3_name(module, name)
        found = self.allowed.get(qualified)
        if found is None:
            raise refusal([qualified])
        return found


def _python3_name(module: str, name: str) -> str:
    """``module.name`` with protocol 2's Python 2 names (``__builtin__.set``) mapped as ``pickle`` maps them."""
    module, name = _compat_pickle.NAME_MAPPING.get((module, name), (module, name))
    return f"{_compat_pickle.IMPORT_MAPPING.get(module, module)}.{name}"


def restricted_loads(data: bytes, persistent_load, extra: dict | None = None):
    """Unpickle ``data`` resolving only allowed globals (``extra`` adds format-internal ones, e.g. rebuild
    functions); persistent ids go to ``persistent_load``. Raises :class:`WeightsOnlyUnpicklingError`."""
    try:
        return _RestrictedUnpickler(data, persistent_load, extra).load()
    except WeightsOnlyUnpicklingError:
        missing = unsafe_globals(data, _allowed(extra))  # name them all, not only the first one met
        raise refusal(missing or ["?"]) from None


def unpickle(data: bytes, persistent_load):
    """Unpickle anything (``weights_only=False``): only for files from a trusted source."""
    unpickler = pickle.Unpickler(io.BytesIO(data))
    unpickler.persistent_load = persistent_load
    return unpickler.load()


def unsafe_globals(data: bytes, allowed: dict | None = None) -> list:
    """The ``module.Name`` globals the pickle ``data`` references that are not allowed, found without loading it
    (``torch.serialization.get_unsafe_globals_in_checkpoint``)."""
    allowed = _allowed() if allowed is None else allowed
    found, strings, memo, memo_count, last = [], [], {}, 0, None
    try:
        for opcode, arg, _ in pickletools.genops(data):
            name, pushed = opcode.name, None
            if name in ("GLOBAL", "INST"):
                found.append(_python3_name(*arg.split(" ", 1)))
            elif name == "STACK_GLOBAL" and len(strings) >= 2:
                found.append(_python3_name(strings[-2], strings[-1]))
            elif isinstance(arg, str) and ("UNICODE" in name or name.endswith("STRING")):
                pushed = arg
            elif name in ("BINGET", "LONG_BINGET", "GET"):
                pushed = memo.get(arg)
            elif name == "MEMOIZE":  # stores the top of the stack, pushes nothing
                memo[memo_count], memo_count = last, memo_count + 1
                continue
            elif name in ("BINPUT", "LONG_BINPUT", "PUT"):
                memo[arg] = last
                continue
            if pushed is not None:
                strings.append(pushed)
            last = pushed
    except (ValueError, pickle.UnpicklingError):
        pass  # a damaged pickle: report what was read up to the damage
    return sorted({name for name in found if name not in allowed})


def refusal(names: list) -> WeightsOnlyUnpicklingError:
    """The error of a refused weights-only load, worded as PyTorch's."""
    listed = ", ".join(f"GLOBAL {n}" for n in names)
    short = ", ".join(n.rsplit(".", 1)[-1] for n in names)
    return WeightsOnlyUnpicklingError(
        "Weights only load failed. This file can still be loaded, to do so you have two options, do those steps "
        "only if you trust the source of the checkpoint.\n"
        "\t(1) Re-running `core.load` with `weights_only` set to `False` will likely succeed, but it can result "
        "in arbitrary code execution.\n"
        "\t(2) Alternatively, to load with `weights_only=True` allow the globals below.\n"
        f"\tWeightsUnpickler error: Unsupported global: {listed} was not an allowlisted global by default. "
        f"Please use `core.serialization.add_safe_globals([{short}])` or the "
        f"`core.serialization.safe_globals([{short}])` context manager to allowlist it if you trust it.")
