"""The dispatcher: dispatch keys, the operator table, op declarations."""

import sys

from .keys import DispatchKey, backend_key, keys_in, tls
from .operator import OPERATORS, Operator, get_operator, invalidate_caches, set_debug
from .spec import TensorSpec

__all__ = ["DispatchKey", "backend_key", "keys_in", "tls", "OPERATORS", "Operator", "get_operator",
           "invalidate_caches", "set_debug", "TensorSpec", "define"]


def define(name: str, *, meta=None, decomposition=None, default=None, primitive: bool = False,
           inplace: bool = False, writes: tuple = (), doc: str = "") -> Operator:
    """Declare op ``name`` once: its meta function, decomposition or device-agnostic kernel.

    A *primitive* has a meta function and must be implemented by backends; a
    *composite* has a decomposition into other ops (which a backend may
    override with a fused kernel). Declaring a name twice is an error.
    ``writes`` lists the positions of tensor arguments the op may write besides
    its outputs (an in-place op writes argument 0 without saying so), e.g.
    ``batch_norm`` its running statistics; the JIT keeps such calls in place.
    The declaring module is kept as ``op.declared_in`` (for ``docs/ops.md``).
    """
    if name in OPERATORS:
        raise RuntimeError(f"op '{name}' is already declared")
    if primitive and meta is None:
        raise ValueError(f"primitive op '{name}' needs a meta function")
    writes = tuple(writes)
    if any(not isinstance(i, int) or i < 0 for i in writes):
        raise ValueError(f"op '{name}': writes must hold argument positions (non-negative ints), got {writes!r}")
    op = Operator(name, meta=meta, decomposition=decomposition, default=default,
                  primitive=primitive, inplace=inplace, doc=doc)
    op.writes = tuple(sorted(set(writes) | ({0} if inplace else set())))
    declared_in = sys._getframe(1).f_globals.get("__name__", "")  # the module whose define() call this is
    if declared_in.startswith("importlib"):  # a compiled module (core/_hot.py) runs without frames of its own
        declared_in = next((fn.__module__ for fn in (default, decomposition, meta) if fn is not None), "")
    op.declared_in = declared_in
    OPERATORS[name] = op
    return op
