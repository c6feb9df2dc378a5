"""Shared fixtures: ``device`` runs a test once per available backend's device type; every test starts from
seed 0."""

from __future__ import annotations

import contextlib
import importlib.metadata
import random
import sys

import numpy as np
import pytest

import core
from core.plugins.manager import ENTRY_POINT_GROUP
from core.testing import available_devices


def pytest_generate_tests(metafunc):
    if "device" in metafunc.fixturenames:
        selected = metafunc.config.getoption("--core-backend", default=None)
        devices = available_devices()
        if selected:
            devices = [d for d in devices if d == selected] or [selected]
        metafunc.parametrize("device", devices)


@pytest.fixture(autouse=True)
def seed_every_test():
    """Seed 0 for core's default generators (every device type), NumPy's legacy global one and ``random``: a test's
    draws never depend on which tests ran before it (tests/test_seeding.py checks this fixture runs)."""
    core.manual_seed(0)
    np.random.seed(0)
    random.seed(0)


class FakeEntryPoint:
    """Enough of importlib.metadata.EntryPoint for the plugin manager: a name and ``load()``."""

    def __init__(self, name: str, target):
        self.name = name
        self.target = target

    def load(self):
        if isinstance(self.target, BaseException):
            raise self.target
        return self.target


@pytest.fixture
def entry_points(monkeypatch):
    """A list the manager's entry-point scan sees instead of the installed packages."""
    from core.plugins.manager import get_manager

    get_manager().scan()  # the global manager sees the real plugins first: later tests rely on them
    fake: list = []
    real = importlib.metadata.entry_points
    monkeypatch.setattr(importlib.metadata, "entry_points",
                        lambda **kw: list(fake) if kw.get("group") == ENTRY_POINT_GROUP else real(**kw))
    return fake


@contextlib.contextmanager
def isolated_plugin_manager(import_path: str, module_prefix: str):
    """A fresh PluginManager installed as the global one, ``import_path`` importable; every global put back after.

    The built-ins (cpu, meta) are loaded first and shared: their kernels live in the global operator table.
    Modules under ``module_prefix`` imported during the test are forgotten again.
    """
    import core
    from core.dispatch import OPERATORS, invalidate_caches
    from core.dispatch import operator as dispatch_operator
    from core.ops import creation
    from core.plugins import manager as plugin_manager

    original = plugin_manager.get_manager()
    for device_type in ("cpu", "meta"):
        original.backend_for(device_type)
    saved = (list(plugin_manager._MANAGER), dict(plugin_manager._RUNTIME_CACHE), dict(creation._NORMALIZED),
             {name: (dict(op.kernels), dict(op.owners)) for name, op in OPERATORS.items()},
             dict(dispatch_operator.fallback_counts), set(dispatch_operator._fallback_warned),
             {k for k in sys.modules if k.startswith(module_prefix)}, list(sys.path))
    fresh = plugin_manager.PluginManager()
    fresh.backends.update({n: b for n, b in original.backends.items() if b.status == "loaded"})
    plugin_manager._MANAGER[:] = [fresh]
    plugin_manager._RUNTIME_CACHE.clear()
    sys.path.insert(0, import_path)
    try:
        yield fresh
    finally:
        managers, runtimes, normalized, kernels, counts, warned, modules, path = saved
        core.config.reset()
        core.config.reload()
        plugin_manager._MANAGER[:] = managers
        plugin_manager._RUNTIME_CACHE.clear()
        plugin_manager._RUNTIME_CACHE.update(runtimes)
        creation._NORMALIZED.clear()
        creation._NORMALIZED.update(normalized)
        for name, op in OPERATORS.items():
            op.kernels, op.owners = kernels.get(name, ({}, {}))
        dispatch_operator.fallback_counts.clear()
        dispatch_operator.fallback_counts.update(counts)
        dispatch_operator._fallback_warned.clear()
        dispatch_operator._fallback_warned.update(warned)
        for name in [k for k in sys.modules if k.startswith(module_prefix) and k not in modules]:
            del sys.modules[name]
        sys.path[:] = path
        invalidate_caches()


@pytest.fixture
def force_c():
    """cpu_c loaded and running its C kernels even on tiny tensors (by default they go to NumPy); skips without
    cpu_c. The threshold is put back afterwards."""
    from cpu_c_support import load_cpu_c

    load_cpu_c()
    import core_cpu_c

    saved = core_cpu_c.set_min_numel(0)
    yield
    core_cpu_c.set_min_numel(saved)
