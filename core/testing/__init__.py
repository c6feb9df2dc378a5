"""Test helpers for core and for plugin authors: available devices, comparison against NumPy, backend checks.

A plugin author checks a device with one call, ``core.testing.check_backend("toy",
expected_failures=(...))`` (the op-conformance suite and gradcheck, see
``core.testing.backend_check``), or with pytest: ``pytest --core-backend NAME`` (the pytest
plugin in ``core.testing.pytest_plugin``) restricts device-parametrised tests (the
``core_device`` fixture; core's own ``device`` fixture) to one device type.
"""

from __future__ import annotations

import numpy as np

__all__ = ["available_devices", "selected_devices", "assert_close", "to_numpy", "sample_array", "with_layout",
           "check_backend", "BackendReport", "BackendCheckError"]


def available_devices() -> list:
    """Device strings of every backend that loads on this machine (``cpu`` first, ``meta`` excluded)."""
    from ..plugins.manager import BackendUnavailableError, get_manager

    manager = get_manager()
    manager.scan()
    devices = []
    for device_type in dict.fromkeys(b.device_type for b in manager.backends.values()):
        if device_type == "meta":
            continue
        try:
            manager.backend_for(device_type)
        except BackendUnavailableError:
            continue
        devices.append(device_type)
    return sorted(devices, key=lambda d: d != "cpu")


def selected_devices(selected: str | None = None) -> list:
    """The device types a device-parametrised test runs on: ``[selected]`` when given (even if it does not load,
    so the test reports why), else every available one."""
    return [selected] if selected else available_devices()


def to_numpy(x):
    """A host NumPy array of a tensor (any device) or array-like."""
    if hasattr(x, "_storage"):
        return x.detach().cpu().numpy()
    return np.asarray(x)


def assert_close(actual, expected, rtol=None, atol=None, check_dtype=True, equal_nan=True, msg=""):
    """Assert a tensor matches a tensor or array: same shape, dtype (by name), values within tolerance."""
    a = to_numpy(actual)
    e = to_numpy(expected)
    assert a.shape == e.shape, f"{msg} shape {a.shape} != expected {e.shape}"
    if check_dtype and hasattr(actual, "dtype") and hasattr(expected, "dtype"):
        expected_name = expected.dtype.name if hasattr(expected, "_storage") else np.dtype(e.dtype).name
        assert actual.dtype.name == expected_name, f"{msg} dtype {actual.dtype.name} != expected {expected_name}"
    kind = a.dtype.kind
    if kind in "biu" and e.dtype.kind in "biu":
        np.testing.assert_array_equal(a, e, err_msg=msg)
        return
    a64 = a.astype(np.complex128 if kind == "c" else np.float64)
    e64 = e.astype(np.complex128 if e.dtype.kind == "c" else np.float64)
    name = a.dtype.name
    default = {"float16": (1e-3, 1e-3), "bfloat16": (1.6e-2, 1e-2), "float32": (1.3e-6, 1e-5)}.get(name, (1e-7, 1e-7))
    np.testing.assert_allclose(a64, e64, rtol=rtol if rtol is not None else default[0],
                               atol=atol if atol is not None else default[1], equal_nan=equal_nan, err_msg=msg)


def sample_array(shape, dtype: str = "float32", seed: int = 0) -> np.ndarray:
    """Small integer-valued test data of ``dtype`` (exact in every dtype, so comparisons are exact)."""
    from ..dtypes import _BY_NAME

    values = np.random.default_rng(seed).integers(-20, 20, size=shape)
    if dtype == "bool":
        return values > 0
    if dtype == "uint8":
        return np.abs(values).astype(np.uint8)
    return values.astype(_BY_NAME[dtype].numpy)


def with_layout(values: np.ndarray, device: str, layout: str = "contiguous"):
    """``values`` as a tensor on ``device`` laid out ``contiguous``, ``transposed``, ``strided`` or ``expanded``."""
    from .conformance import make_input

    return make_input(values, device, layout)[0]


def check_backend(device: str, expected_failures=(), **options):
    """Run the op-conformance suite and gradient checks against ``device``; see ``core.testing.backend_check``."""
    from .backend_check import check_backend as run

    return run(device, expected_failures, **options)


def __getattr__(name: str):
    # The suites import scipy: loaded on first use, so the pytest plugin (in every session) stays cheap.
    if name in ("BackendReport", "BackendCheckError"):
        from . import backend_check

        return getattr(backend_check, name)
    raise AttributeError(f"module 'core.testing' has no attribute '{name}'")
