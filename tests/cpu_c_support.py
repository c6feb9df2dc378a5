"""What the cpu_c test files share: loading the backend (or skipping the test), telling whether a result came
from a C kernel, and the NumPy reference kernel of an op. The ``force_c`` fixture is in conftest.py."""

from __future__ import annotations

import pytest

from core.dispatch import get_operator
from core.plugins.manager import get_manager

__all__ = ["load_cpu_c", "from_c", "numpy_reference", "count_c_calls"]


def load_cpu_c(require_selected: bool = False):
    """The cpu_c backend's info, its kernels registered; skips the test when cpu_c cannot load (or, with
    ``require_selected``, when another backend serves ``cpu``)."""
    selected = get_manager().backend_for("cpu")  # the plugins are discovered on first use
    info = get_manager().backends.get("cpu_c")
    if info is None:
        pytest.skip("cpu_c is installed but not registered (blocked by CORE_PLUGINS/CORE_BLOCK?)")
    try:
        get_manager().load(info)
    except RuntimeError as exc:
        pytest.skip(f"cpu_c unavailable: {exc}")
    if require_selected and selected is not info:
        pytest.skip("cpu_c is not the cpu backend")
    return info


def from_c(t) -> bool:
    """Whether tensor ``t`` was made by a cpu_c kernel (its storage is cpu_c's, not the NumPy reference's)."""
    from core_cpu_c.runtime import RUNTIME

    return t._storage.backend is RUNTIME


def numpy_reference(op: str, *args):
    """The NumPy reference kernel of ``op`` run on ``args`` (given its meta function's spec when it has one)."""
    from core.backends.numpy.kernels import all_kernels

    operator = get_operator(op)
    fn = all_kernels()[op]
    return fn(operator.meta(*args), *args) if operator.meta is not None else fn(*args)


def count_c_calls(monkeypatch, ops: tuple, onednn: bool = False) -> dict:
    """Counts the C calls of the kernels serving ``ops`` (methods of family objects whose ``c`` maps (op, dtype) to a
    C function): {op: calls}, 0 when the decomposition ran; oneDNN is turned off for them unless ``onednn``."""
    from core.dispatch import backend_key

    load_cpu_c()
    calls = dict.fromkeys(ops, 0)
    families = {id(k): k for k in (get_operator(op).kernels[backend_key("cpu").bit].__self__ for op in ops)}
    for family in families.values():
        # these tests check csrc/conv.c; tests/test_cpu_c_onednn.py checks the oneDNN path that serves float32 before it
        if not onednn and getattr(family, "dnnl", None) is not None:
            monkeypatch.setattr(family, "dnnl", None)
        for (name, dtype), fn in list(family.c.items()):
            def counted(*args, name=name, fn=fn):
                calls[name] += 1
                return fn(*args)

            if name in calls:
                monkeypatch.setitem(family.c, (name, dtype), counted)
    return calls
