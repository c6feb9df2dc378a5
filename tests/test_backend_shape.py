"""Every backend core ships has the one shape (docs/writing-a-backend.md): ``<pkg>/plugin.py`` holds the hooks and
is the entry point's target, the plugin API version is core's, and ``<pkg>/kernels`` lists its families, each a
module named for the core/ops family of its ops and exposing ``kernels(ctx)``."""

from __future__ import annotations

import importlib
import importlib.metadata

import pytest

import core  # noqa: F401 - the operator table is filled on import
from core.dispatch import OPERATORS
from core.plugins.hookspecs import PLUGIN_API_VERSION

BACKENDS = {"numpy": "core.backends.numpy", "cpu_c": "core_cpu_c", "opencl": "core_opencl", "cuda": "core_cuda"}
OPS_FAMILIES = {op.declared_in.rpartition(".")[2] for op in OPERATORS.values() if op.declared_in.startswith("core.ops")}


def _package(name: str):
    return importlib.import_module(BACKENDS[name]) if name == "numpy" else pytest.importorskip(BACKENDS[name])


def _families(kernels_package) -> list:
    return [importlib.import_module(f"{kernels_package.__name__}.{f}") if isinstance(f, str) else f
            for f in kernels_package.FAMILIES]


@pytest.mark.parametrize("name", BACKENDS)
def test_hooks_live_in_plugin_py_at_core_plugin_api(name):
    package = _package(name)
    plugin = importlib.import_module(f"{package.__name__}.plugin")
    assert callable(plugin.register_backends) and callable(plugin.register_kernels)
    assert tuple(plugin.CORE_PLUGIN_API) == PLUGIN_API_VERSION
    if name != "numpy":  # the built-in registers itself; plugins are found through their entry point
        targets = {ep.name: ep.value for ep in importlib.metadata.entry_points(group="core.backends")}
        assert targets[name] == f"{package.__name__}.plugin"


@pytest.mark.parametrize("name", BACKENDS)
def test_kernel_families_are_core_ops_families(name):
    kernels = importlib.import_module(f"{_package(name).__name__}.kernels")
    assert callable(kernels.all_kernels)
    for family in _families(kernels):
        assert callable(family.kernels), family.__name__
        basename = family.__name__.rpartition(".")[2]
        assert basename in OPS_FAMILIES, f"{family.__name__}: not a core/ops family ({sorted(OPS_FAMILIES)})"


def test_each_opencl_kernel_lives_in_its_ops_family():
    pytest.importorskip("core_opencl")
    from core.plugins.manager import get_manager

    try:
        runtime = get_manager().runtime_for("opencl")
    except RuntimeError as exc:
        pytest.skip(f"opencl is unavailable: {exc}")
    from core_opencl import kernels

    for family in _families(kernels):
        basename = family.__name__.rpartition(".")[2]
        for op in family.kernels(runtime):
            assert OPERATORS[op].declared_in.rpartition(".")[2] == basename, (op, family.__name__)
