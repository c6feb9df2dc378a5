"""The plugin contract holds: every hook is documented and called, a misbehaving plugin is named with its problem
and never stops the other backends, debug mode catches wrong kernel outputs, and ``core.testing.check_backend``
runs the conformance suite and gradient checks against a device (the toy backend of examples/, registered
in-process; tests/test_toy_backend.py installs it for real).

Each test swaps in a fresh PluginManager and puts back every piece of global state it touches.
"""

from __future__ import annotations

import importlib
import importlib.metadata
import importlib.util
import inspect
import re
import sys
import types
import warnings
from pathlib import Path

import numpy as np
import pytest
from conftest import FakeEntryPoint, isolated_plugin_manager

import core
import core.jit
from core import info
from core.backends.api import PLUGIN_API_VERSION, hookimpl
from core.dispatch import operator as dispatch_operator
from core.plugins import hookspecs
from core.plugins.manager import BackendUnavailableError
from core.testing import BackendCheckError, check_backend, selected_devices

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "examples" / "toy_backend"
HOOKS = {name: fn for name, fn in inspect.getmembers(hookspecs, inspect.isfunction) if hasattr(fn, "core_spec")}


# -- isolation -----------------------------------------------------------------------------------------



@pytest.fixture
def manager(entry_points):
    """A fresh global PluginManager sharing the loaded built-ins, with the toy backend importable; all restored."""
    with isolated_plugin_manager(str(EXAMPLE), "toy_backend") as fresh:
        yield fresh


def _toy():
    return importlib.import_module("toy_backend.plugin")


def _toy_expected_failures() -> tuple:
    spec = importlib.util.spec_from_file_location("toy_tests", EXAMPLE / "tests" / "test_toy.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.EXPECTED_FAILURES


def _plugin(name: str, device_type: str, kernels=None, api=PLUGIN_API_VERSION, **hooks) -> types.ModuleType:
    """A plugin module: one backend for ``device_type`` on the toy runtime, the toy's kernels (or ``kernels(backend)``,
    a table), and extra hook functions (``hooks``) replacing the defaults."""
    module = types.ModuleType(name)
    module.CORE_PLUGIN_API = api

    def register_backends(register):
        register(name=name, device_type=device_type, runtime="toy_backend.runtime:ToyRuntime", version="1.0")

    def register_kernels(register, backend):
        for op, fn in (_toy_kernels if kernels is None else kernels)(backend).items():
            register(op, fn)

    for hook_name, fn in {"register_backends": register_backends, "register_kernels": register_kernels,
                          **hooks}.items():
        setattr(module, hook_name, hookimpl(fn))
    return module


def _toy_kernels(backend) -> dict:
    """The toy's kernel table over ``backend`` (a ToyRuntime: the kernels' array context)."""
    return importlib.import_module("toy_backend.kernels").all_kernels(backend)


# -- docs/hooks.md and the datasette rule ---------------------------------------------------------------

def test_every_hook_is_documented_with_its_signature_and_nothing_else_is():
    text = (ROOT / "docs" / "hooks.md").read_text()
    for name, fn in HOOKS.items():
        heading = f"## `{name}({', '.join(inspect.signature(fn).parameters)})`"
        assert heading in text, f"docs/hooks.md lacks the heading {heading}"
        assert fn.__doc__ and fn.__doc__.strip(), f"hook {name} has no docstring"
    documented = {line.split("`")[1].split("(")[0] for line in text.splitlines() if line.startswith("## `")}
    assert documented <= set(HOOKS) | {"CORE_PLUGIN_API"}, f"docs/hooks.md documents unknown hooks: {documented}"


class RecordingPlugin:
    """Implements every hook and records core's calls: the witness that each hook is exercised."""

    CORE_PLUGIN_API = PLUGIN_API_VERSION

    def __init__(self):
        self.calls: list = []

    @hookimpl
    def register_backends(self, register):
        self.calls.append(("register_backends", {"register": register}))
        register(name="recorder", device_type="recdev", runtime="toy_backend.runtime:ToyRuntime")

    @hookimpl
    def register_process_group_backends(self, register):
        self.calls.append(("register_process_group_backends", {"register": register}))
        register(name="recpg", runtime="toy_backend.runtime:ToyProcessGroup")

    @hookimpl
    def configure(self, config):
        self.calls.append(("configure", {"config": config}))

    @hookimpl
    def register_kernels(self, register, backend):
        self.calls.append(("register_kernels", {"register": register, "backend": backend}))
        for op in ("fill_", "copy_"):
            register(op, _toy_kernels(backend)[op])

    @hookimpl
    def register_passes(self, register):
        self.calls.append(("register_passes", {"register": register}))
        register("recorder_count_nodes", self.count_nodes)

    def count_nodes(self, graph):
        self.calls.append(("recorder_count_nodes", {"nodes": len(graph.nodes)}))
        return graph


def test_every_hook_is_called_by_core(manager):
    recorder = RecordingPlugin()
    unimplemented = set(HOOKS) - {name for name in dir(recorder) if name in HOOKS}
    assert not unimplemented, f"hooks {unimplemented} are not exercised: implement them in RecordingPlugin " \
                              f"and trigger them below"
    manager.register_plugin(recorder, name="recorder")
    # both historic hooks run at registration, cheaply: the runtime is not imported
    assert sorted(name for name, _ in recorder.calls) == ["register_backends", "register_process_group_backends"]
    assert "toy_backend.runtime" not in sys.modules
    assert manager.process_group_backends["recpg"].plugin == "recorder"
    x = core.zeros(3, device="recdev")
    x[1] = 2.0
    assert x.cpu().tolist() == [0.0, 2.0, 0.0]
    assert [name for name, _ in recorder.calls][2:] == ["configure", "register_kernels"]
    core.jit.trace(lambda a: a * 2 + 1, core.ones(2))  # the first optimisation collects the JIT passes
    calls = dict(recorder.calls)
    assert set(calls) == set(HOOKS) | {"recorder_count_nodes"}
    assert calls["recorder_count_nodes"]["nodes"] == 2  # it ran on the traced graph, before fusion
    assert calls["configure"]["config"] is core.config
    backend = calls["register_kernels"]["backend"]
    assert (backend.name, backend.device_type, backend.key.name) == ("recorder", "recdev", "Recdev")
    core.ones(2, device="recdev")
    core.jit.trace(lambda a: a - 1, core.ones(2))
    assert [name for name, _ in recorder.calls].count("register_passes") == 1  # hooks run once, not per op


def test_configure_reads_the_plugins_config_table(manager):
    core.config.set("plugin", {"toy": {"disable": ["exp"]}})
    manager.register_plugin(_toy(), name="toy")
    x = core.tensor([0.0, 1.0], device="toy")
    with pytest.warns(RuntimeWarning, match=r"exp\(\).*toy.*running on the CPU"):
        result = x.exp()
    np.testing.assert_allclose(result.cpu().numpy(), np.exp([0.0, 1.0]), rtol=1e-6)
    assert dispatch_operator.fallback_counts[("exp", "toy")] == 1
    assert "exp" not in manager.backends["toy"].kernels and "mul" in manager.backends["toy"].kernels


# -- a misbehaving plugin is named with its problem, and the others keep working -----------------------------

def _raise(exc):
    def hook(*args, **kwargs):
        raise exc

    return hook


def _bad_args_hook(register, backend, extra):  # not in the spec
    pass


BROKEN_AT_SCAN = {
    "import error": (ModuleNotFoundError("No module named 'vendor_sdk'"),
                     r"^ModuleNotFoundError: No module named 'vendor_sdk'$"),
    "API version": (lambda: _plugin("bad", "baddev", api=(PLUGIN_API_VERSION[0] + 1, 0)),
                    rf"plugin 'bad' was written for plugin API \({PLUGIN_API_VERSION[0] + 1}, 0\), "
                    r"but this core provides " + re.escape(str(PLUGIN_API_VERSION))),
    "misspelt hook": (lambda: _plugin("bad", "baddev", register_kernel=lambda register, backend: None),
                      r"plugin 'bad' implements unknown hook\(s\) register_kernel; the hooks are configure, "),
    "hook arguments": (lambda: _plugin("bad", "baddev", register_kernels=_bad_args_hook),
                       r"plugin 'bad' does not match the hook specs: .*'extra'"),
    "register_backends raises": (lambda: _plugin("bad", "baddev", register_backends=_raise(ValueError("no card"))),
                                 r"plugin 'bad': hook register_backends raised ValueError: no card"),
}


@pytest.mark.parametrize("problem", BROKEN_AT_SCAN)
def test_a_plugin_broken_at_scan_is_reported_and_the_others_work(manager, entry_points, problem):
    target, message = BROKEN_AT_SCAN[problem]
    entry_points.append(FakeEntryPoint("bad", target if isinstance(target, BaseException) else target()))
    entry_points.append(FakeEntryPoint("toy", _toy()))
    manager.scan()
    assert list(f for f in manager.failed_plugins if not f.endswith(":traceback")) == ["bad"]
    assert re.search(message, manager.failed_plugins["bad"]), manager.failed_plugins["bad"]
    assert "bad" not in dict(manager.pm.list_name_plugin()) and "baddev" not in {
        b.device_type for b in manager.backends.values()}  # nothing half-registered
    assert (core.ones(2, device="toy") + 1).cpu().tolist() == [2.0, 2.0]
    assert (core.ones(2) + 1).tolist() == [2.0, 2.0]
    assert "bad" in info.render(info.collect())


def _duplicate_add(register, backend):
    register("add", _toy_kernels(backend)["add"])
    register("add", _toy_kernels(backend)["add"])


BROKEN_AT_LOAD = {
    "register_kernels raises": (
        {"register_kernels": _raise(KeyError("sdk handle"))},
        r"plugin 'bad': hook register_kernels raised KeyError: 'sdk handle'"),
    "configure raises": (
        {"configure": _raise(ValueError("bad setting"))},
        r"plugin 'bad': hook configure raised ValueError: bad setting"),
    "undeclared op": (
        {"register_kernels": lambda register, backend: register("batched_matmull", lambda spec, a, b: a)},
        r"plugin 'bad' registers a kernel for undeclared op: no op named 'batched_matmull' is declared; did you mean "
        r"batched_matmul"),
    "duplicate kernel": (
        {"register_kernels": _duplicate_add},
        r"plugin 'bad' \(backend bad\): a kernel for op 'add' and dispatch key Baddev is already registered by "
        r"plugin 'bad' \(backend bad\); pass override=True"),
}


@pytest.mark.parametrize("problem", BROKEN_AT_LOAD)
def test_a_backend_failing_to_load_names_plugin_and_problem_and_the_others_work(manager, problem):
    hooks, message = BROKEN_AT_LOAD[problem]
    manager.register_plugin(_plugin("bad", "baddev", **hooks), name="bad")
    manager.register_plugin(_toy(), name="toy")
    failed = r"backend 'bad' for device type 'baddev' is failed: .*"
    with pytest.raises(BackendUnavailableError, match=failed + message):
        core.ones(2, device="baddev")
    with pytest.raises(BackendUnavailableError, match=message):  # the same answer next time, not a half-loaded one
        core.ones(2, device="baddev")
    assert (core.ones(2, device="toy") * 3).cpu().tolist() == [3.0, 3.0]
    row = next(r for r in info.collect()["backends"] if r["name"] == "bad")
    assert row["status"] == "failed" and re.search(message, row["reason"])


def test_an_unknown_hook_marked_optional_is_allowed(manager):
    plugin = _plugin("newer", "newdev")
    plugin.register_passes = hookimpl(optionalhook=True)(lambda register: None)  # a hook of a newer core
    manager.register_plugin(plugin, name="newer")
    assert core.ones(1, device="newdev").cpu().tolist() == [1.0]


# -- debug mode checks what kernels return ---------------------------------------------------------------------

def _wrong(kind: str):
    def add(spec, a, b, alpha=1):
        runtime = a.untyped_storage().backend
        if kind == "shape":
            return runtime.wrap(np.zeros(3), core.backends.api.TensorSpec((3,), spec.dtype, spec.device))
        if kind == "dtype":
            return runtime.wrap(np.zeros(spec.shape), core.backends.api.TensorSpec(spec.shape, core.float64,
                                                                                    spec.device))
        return core.zeros(spec.shape)  # on the CPU

    return add


@pytest.mark.parametrize("kind,returned", [("shape", r"Tensor\[3\] float32 on liardev:0"),
                                           ("dtype", r"Tensor\[2\] float64 on liardev:0"),
                                           ("device", r"Tensor\[2\] float32 on cpu")])
def test_debug_mode_names_the_plugin_whose_kernel_returns_a_wrong_output(manager, kind, returned):
    def kernels(backend):
        return {**_toy_kernels(backend), "add": _wrong(kind)}

    manager.register_plugin(_plugin("liar", "liardev", kernels), name="liar")
    a = core.ones(2, device="liardev")
    a + a  # noqa: B018 - unchecked outside debug mode
    core.config.set("debug", True)
    with pytest.raises(RuntimeError, match=r"plugin 'liar' \(backend liar\): kernel for 'add' returned "
                                           + returned + r", expected Tensor\[2\] float32 on liardev:0"):
        a + a  # noqa: B018


# -- core.testing.check_backend ---------------------------------------------------------------------------------

def test_check_backend_on_toy_with_its_expected_failures(manager):
    manager.register_plugin(_toy(), name="toy")
    core.config.set("fallback", True)
    report = check_backend("toy", expected_failures=_toy_expected_failures())
    assert report.ok and not report.failed and not report.xpassed and not report.skipped
    assert {"exp:float32", "add:bool", "sum[dims01]:int64", "matmul:float16", "mean[all]:bfloat16"} <= set(
        report.passed)  # mean is a composite of sum and div: it runs on toy's kernels
    assert {"exp:grad", "matmul:grad", "sum[all]:grad"} <= set(report.passed)
    assert {"sin:float32", "gather:grad", "maximum:grad"} <= set(report.xfailed)
    assert core.config.get("fallback") is True and core.config.get("debug") is False  # settings put back


def test_check_backend_summarises_unexpected_failures_as_a_todo_list(manager):
    manager.register_plugin(_toy(), name="toy")
    with pytest.raises(BackendCheckError) as caught:
        check_backend("toy")
    report, text = caught.value.report, str(caught.value)
    assert text == report.summary()
    first = text.splitlines()[0]
    assert first.startswith("check_backend('toy'): ") and f"{len(report.failed)} failed" in first
    assert re.search(r"^  sin \(float32, float64, float16, bfloat16, int64, int32, uint8\): NotImplementedError: "
                     r"sin\(\): the backend of device type 'toy' has no kernel for this op and the CPU fallback is "
                     r"disabled", text, re.M)
    assert sorted(report.todo()) == sorted(_toy_expected_failures())  # how the toy's list was made
    assert f'expected_failures=("{report.todo()[0]}", ' in text
    assert re.search(r"^  \.\.\. and \d+ more$", text, re.M)  # long lists are cut
    small = check_backend("toy", ops=("sin", "amin", "maximum"), dtypes=("float32",), grad_ops=("maximum",),
                          raise_on_failure=False).summary()
    assert re.search(r"^  maximum \(grad\): NotImplementedError: \w+\(\)", small, re.M), small
    assert small.endswith('expected_failures=("sin", "amin", "maximum:grad")')


def test_check_backend_reports_expected_failures_that_pass(manager):
    manager.register_plugin(_toy(), name="toy")
    report = check_backend("toy", expected_failures=("exp", "sum:grad"), ops=("exp", "sum"), grad_ops=("sum",))
    assert {"exp:float32", "sum[all]:grad", "sum[dims01]:grad"} <= set(report.xpassed) and report.ok
    assert "remove them from the list" in report.summary()
    with pytest.raises(BackendCheckError, match="exp:float32"):
        check_backend("toy", expected_failures=("exp",), ops=("exp",), grad_ops=(), strict=True)


def test_check_backend_rejects_unknown_expected_failures():
    with pytest.raises(ValueError, match=r"expected_failures names no case of the conformance suite: exp:flaot16, "
                                         r"expp \("):
        check_backend("cpu", expected_failures=("expp", "exp:float16", "exp:flaot16", "sum:grad"))


def test_check_backend_catches_wrong_values_and_wrong_outputs(manager):
    def neg_plus_one(spec, input):
        return input.untyped_storage().backend.wrap(-np.asarray(input.cpu().numpy()) + 1, spec)

    def kernels(backend):
        return {**_toy_kernels(backend), "neg": neg_plus_one, "mul": _wrong("dtype")}

    manager.register_plugin(_plugin("buggy", "buggydev", kernels), name="buggy")
    report = check_backend("buggydev", ops=("neg", "exp"), dtypes=("float32",), grad_ops=("neg",),
                           raise_on_failure=False)
    assert report.passed == ["exp:float32"]
    assert report.failed["neg:float32"].startswith("AssertionError: ")
    assert report.failed["neg:grad"].startswith("GradcheckError: neg on buggydev, contiguous, shapes ((2, 3),): "
                                                "Jacobian mismatch")
    report = check_backend("buggydev", ops=("mul",), dtypes=("float32",), grad_ops=(), raise_on_failure=False)
    assert report.failed["mul:float32"].startswith(  # debug mode is on during the check
        "RuntimeError: plugin 'buggy' (backend buggy): kernel for 'mul' returned Tensor[] float64 on buggydev:0, "
        "expected Tensor[] float32 on buggydev:0")


def test_check_backend_skips_gradients_without_float64(manager, monkeypatch):
    manager.register_plugin(_toy(), name="toy")
    runtime = importlib.import_module("toy_backend.runtime").ToyRuntime
    monkeypatch.setattr(runtime, "supports_float64", False)
    report = check_backend("toy", ops=("add",), dtypes=("float32",), grad_ops=("add", "exp"))
    assert report.passed == ["add:float32"]
    assert report.skipped == {"add:grad": "toy does not support float64", "exp:grad": "toy does not support float64"}


def test_check_backend_with_the_fallback_on_passes_everything_on_toy(manager):
    manager.register_plugin(_toy(), name="toy")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # one fallback warning per op
        report = check_backend("toy", fallback=True, dtypes=("float32", "int64"), layouts=("contiguous", "strided"),
                               grad_ops=("gather", "where"))
    assert report.ok and "sin:float32" in report.passed and "gather:grad" in report.passed


def test_selected_devices_follows_the_pytest_option():
    assert selected_devices("toy") == ["toy"]
    assert selected_devices(None)[0] == "cpu"


def test_a_broken_register_passes_hook_drops_only_that_plugins_passes(manager):
    class BadPasses:
        @hookimpl
        def register_passes(self, register):
            register("fusion", lambda g: g)  # a built-in pass's name

    manager.register_plugin(BadPasses(), name="badpasses")
    traced = core.jit.trace(lambda a: a * 2, core.ones(2))
    assert traced(core.ones(2)).tolist() == [2.0, 2.0]
    assert "JIT pass name 'fusion' is empty or already taken" in manager.failed_plugins["badpasses:register_passes"]
