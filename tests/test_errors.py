"""Errors a hostile or careless caller meets read clearly and match PyTorch's; plugins cannot end the process.

A plugin that raises any ``BaseException`` but ``KeyboardInterrupt`` (``sys.exit()`` at import, in a hook) is
reported under failed plugins, in-process and through ``python -m core info``. Sizes no storage can address,
``interpolate`` to size 0, softmax of a bool tensor and ints beyond int64 raise PyTorch's errors; ``sign`` of
NaN, ``square`` of bool and softmax over an empty dim give PyTorch's answers on every backend.
"""

from __future__ import annotations

import importlib
import math
import os
import subprocess
import sys
import types
from pathlib import Path

import numpy as np
import pytest
from conftest import FakeEntryPoint, isolated_plugin_manager

import core
import core.nn.functional as F
from core import info
from core.plugins import hookimpl
from core.plugins.manager import BackendUnavailableError

FIXTURES = Path(__file__).parent / "fixtures"


# -- plugins: every BaseException but KeyboardInterrupt is isolated ------------------------------------------

class PluginAbort(BaseException):
    """A BaseException subclass that is neither Exception, SystemExit nor KeyboardInterrupt."""


@pytest.fixture
def manager(entry_points):
    """A fresh PluginManager installed as the global one (sharing the loaded built-ins); all restored after."""
    with isolated_plugin_manager(str(FIXTURES / "core_testdev"), "core_testdev") as fresh:
        yield fresh


def _plugin(name: str, device_type: str, *, at_register=None, at_kernels=None) -> types.ModuleType:
    """A plugin module with one host-memory backend; ``at_register`` / ``at_kernels`` raise from its hooks."""
    module = types.ModuleType(name)
    runtime = importlib.import_module("core_testdev.runtime").TestDevRuntime

    @hookimpl
    def register_backends(register):
        if at_register is not None:
            raise at_register
        register(name=name, device_type=device_type, runtime=runtime)

    @hookimpl
    def register_kernels(register, backend):
        if at_kernels is not None:
            raise at_kernels

    module.register_backends = register_backends
    module.register_kernels = register_kernels
    return module


@pytest.mark.parametrize("raised, reason", [(SystemExit(3), "SystemExit: 3"),
                                            (SystemExit("vendor SDK missing"), "SystemExit: vendor SDK missing"),
                                            (GeneratorExit("closed"), "GeneratorExit: closed"),
                                            (PluginAbort("gave up"), "PluginAbort: gave up")])
def test_base_exception_at_plugin_import_is_a_failed_plugin(manager, entry_points, raised, reason):
    entry_points.append(FakeEntryPoint("exits", raised))
    entry_points.append(FakeEntryPoint("testdev", importlib.import_module("core_testdev")))
    manager.scan()
    assert manager.failed_plugins["exits"] == reason
    assert type(raised).__name__ in manager.failed_plugins["exits:traceback"]
    assert (core.ones(2, device="testdev") + 1).cpu().tolist() == [2.0, 2.0]  # the other plugins still load
    assert info.collect()["failed_plugins"] == {"exits": reason}


def test_keyboard_interrupt_at_plugin_import_still_stops(manager, entry_points):
    entry_points.append(FakeEntryPoint("interrupted", KeyboardInterrupt()))
    with pytest.raises(KeyboardInterrupt):
        manager.scan()


def test_system_exit_from_register_backends_is_a_failed_plugin(manager, entry_points):
    entry_points.append(FakeEntryPoint("exitreg", _plugin("exitreg", "exitregdev", at_register=SystemExit(4))))
    manager.scan()
    assert manager.failed_plugins["exitreg"] == ("RuntimeError: plugin 'exitreg': hook register_backends raised "
                                                 "SystemExit: 4")
    assert "exitreg" not in manager.pm.list_name_plugin() and "exitreg" not in manager.backends


def test_system_exit_from_register_kernels_fails_the_backend_only(manager):
    manager.register_plugin(_plugin("exitkern", "exitkerndev", at_kernels=SystemExit(5)), name="exitkern")
    with pytest.raises(BackendUnavailableError, match="hook register_kernels raised SystemExit: 5"):
        core.empty(1, device="exitkerndev")
    assert manager.backends["exitkern"].status == "failed"
    assert core.ones(2).tolist() == [1.0, 1.0]


def test_python_m_core_info_lists_a_plugin_that_calls_sys_exit(tmp_path):
    """A real entry point (a dist-info on the path, as pip would install it) whose import calls sys.exit(3)."""
    site = tmp_path / "site"
    (site / "exiting_plugin-1.0.dist-info").mkdir(parents=True)
    (site / "exiting_plugin-1.0.dist-info" / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: exiting-plugin\nVersion: 1.0\n")
    (site / "exiting_plugin-1.0.dist-info" / "entry_points.txt").write_text(
        "[core.backends]\nexiting = exiting_plugin\n")
    (site / "exiting_plugin.py").write_text("import sys\nsys.exit(3)\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith("CORE_")}
    env.update(PYTHONPATH=os.pathsep.join(filter(None, [str(site), os.environ.get("PYTHONPATH")])),
               XDG_CONFIG_HOME=str(tmp_path / "xdg"))
    result = subprocess.run([sys.executable, "-m", "core", "info"], cwd=tmp_path, env=env, capture_output=True,
                            text=True, timeout=120, check=False)
    assert result.returncode == 0, result.stderr
    failed = next(line for line in result.stdout.splitlines() if line.strip().startswith("exiting "))
    assert failed.split(None, 1)[1] == "SystemExit: 3"
    script = "import core; print(core.ones(2).tolist())"
    result = subprocess.run([sys.executable, "-c", script], cwd=tmp_path, env=env, capture_output=True, text=True,
                            timeout=120, check=False)
    assert (result.returncode, result.stdout.strip()) == (0, "[1.0, 1.0]"), result.stderr



# -- clear messages ------------------------------------------------------------------------------------------

def test_size_no_storage_can_address_names_op_shape_bytes_and_device(device):
    with pytest.raises(RuntimeError, match=r"empty\(\): storage size calculation overflowed with "
                                           r"sizes=\[1099511627776, 1099511627776\]: .* "
                                           rf"{4 * 2**80} bytes requested on device {device}"):
        core.empty(2**40, 2**40, device=device)
    with pytest.raises(RuntimeError, match=r"zeros\(\): storage size calculation overflowed.*float64 \(8 bytes"):
        core.zeros(2**61, 2, dtype=core.float64, device=device)
    assert core.empty(0, 2**62, device=device).shape == (0, 2**62)  # nothing to allocate


def test_negative_size_is_pytorchs_error(device):
    with pytest.raises(RuntimeError, match="Trying to create tensor with negative dimension -1"):
        core.empty(2, -1, device=device)


@pytest.mark.parametrize("mode", ["nearest", "bilinear"])
def test_interpolate_to_size_zero_is_pytorchs_error(device, mode):
    x = core.ones(1, 1, 4, 4, device=device)
    with pytest.raises(RuntimeError, match=r"^Input and output sizes should be greater than 0, but got input "
                                           r"\(H: 4, W: 4\) output \(H: 0, W: 0\)$"):
        F.interpolate(x, size=0, mode=mode)
    with pytest.raises(RuntimeError, match=r"input \(W: 4\) and output \(W: 0\)"):
        F.interpolate(core.ones(1, 1, 4, device=device), size=0)
    with pytest.raises(RuntimeError, match=r"input \(D: 2, H: 0, W: 2\) output \(D: 4, H: 4, W: 4\)"):
        F.interpolate(core.ones(1, 1, 2, 0, 2, device=device), size=4)


@pytest.mark.parametrize("op", ["softmax", "log_softmax"])
@pytest.mark.parametrize("dtype, name", [(core.bool, "Bool"), (core.uint8, "Byte"), (core.int64, "Long")])
def test_softmax_of_bool_or_integer_is_pytorchs_error(device, op, dtype, name):
    x = core.ones(2, 3, dtype=dtype, device=device)
    with pytest.raises(NotImplementedError, match=rf"{op}\(\): \"{op}_lastdim_kernel_impl\" not implemented for "
                                                  rf"'{name}'"):
        getattr(core, op)(x, 1)
    with pytest.raises(NotImplementedError, match=rf"\"{op}_kernel_impl\" not implemented for '{name}'"):
        getattr(F, op)(x, 0)
    assert_close_values(getattr(core, op)(x, 1, dtype=core.float32), getattr(core, op)(x.float(), 1))


@pytest.mark.parametrize("value", [2**63, 2**64, -2**63 - 1])
def test_int_beyond_int64_is_an_overflow(device, value):
    with pytest.raises(RuntimeError, match=rf"tensor\(\): Overflow when unpacking long: {value}"):
        core.tensor([1, value], device=device)
    with pytest.raises(RuntimeError, match="Overflow when unpacking long"):
        core.tensor([[1], [value]], dtype=core.int32, device=device)
    assert core.tensor([value], dtype=core.float64, device=device).tolist() == [float(value)]
    assert core.tensor([2**63 - 1, -2**63], device=device).tolist() == [2**63 - 1, -2**63]


# -- PyTorch's answers, the same on every backend --------------------------------------------------------------

@pytest.mark.parametrize("dtype", [core.float32, core.float64])
@pytest.mark.parametrize("op", ["sign", "sgn"])
def test_sign_of_nan_is_zero(device, dtype, op):
    """PyTorch's sign is (x > 0) - (x < 0): 0 for NaN (NumPy gives NaN; pytorch/pytorch#41245)."""
    x = core.tensor([math.nan, -math.nan, -2.5, -0.0, 0.0, 3.0, -math.inf, math.inf], dtype=dtype, device=device)
    expected = [0.0, 0.0, -1.0, 0.0, 0.0, 1.0, -1.0, 1.0]
    assert getattr(core, op)(x).tolist() == expected
    assert getattr(x.T, op)().tolist() == expected  # a strided view takes the same path
    assert (core.sign(x * 1) + 0).tolist() == expected  # and inside a fusable chain
    assert getattr(x.clone(), op + "_")().tolist() == expected


@pytest.mark.parametrize("op", ["sign", "sgn"])
def test_sign_of_nan_is_zero_in_large_tensors(device, op):
    """Large enough that cpu_c runs its C kernel (small tensors go to the NumPy reference)."""
    x = core.tensor(np.tile(np.array([math.nan, -1.5, 0.0, 2.0], np.float32), 4096), device=device)
    assert getattr(core, op)(x).tolist() == [0.0, -1.0, 0.0, 1.0] * 4096


def test_sign_of_integers_and_bool(device):
    assert core.sign(core.tensor([-3, 0, 7], device=device)).tolist() == [-1, 0, 1]
    assert core.sign(core.tensor([True, False], device=device)).tolist() == [True, False]


def test_square_of_bool_is_int64(device):
    x = core.tensor([True, False], device=device)
    result = core.square(x)
    assert (result.dtype, result.tolist()) == (core.int64, [1, 0])
    assert x.square().dtype is core.int64
    with pytest.raises(RuntimeError, match="result type Long can't be cast to the desired output type Bool"):
        x.clone().square_()
    assert core.square(core.tensor([3], dtype=core.uint8, device=device)).dtype is core.uint8


@pytest.mark.parametrize("op", ["softmax", "log_softmax"])
@pytest.mark.parametrize("dtype", [core.float32, core.uint8, core.bool])
@pytest.mark.parametrize("shape, dim", [((2, 0), 1), ((0, 3), 1), ((0,), 0)])
def test_softmax_of_empty_is_empty_of_the_same_dtype(device, op, dtype, shape, dim):
    result = getattr(core, op)(core.ones(*shape, dtype=dtype, device=device), dim)
    assert (result.shape, result.dtype, result.device) == (shape, dtype, core.ones(1, device=device).device)


def assert_close_values(a, b) -> None:
    np.testing.assert_allclose(a.cpu().numpy(), b.cpu().numpy(), rtol=1e-6)

