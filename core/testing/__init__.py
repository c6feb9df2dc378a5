"""Test helpers for core and for plugin authors: available devices, comparison against NumPy, backend checks.

A plugin author checks a device with one call, ``core.testing.check_backend("toy",
expected_failures=(...))`` (the op-conformance suite and gradcheck, see
``core.testing.backend_check``), or with pytest: ``pytest --core-backend NAME`` (the pytest
plugin in ``core.testing.pytest_plugin``) restricts device-parametrised tests (the
``core_device`` fixture; core's own ``device`` fixture) to one device type. ``python -m core.testing.fuzz --device
NAME`` fuzzes a device against the NumPy reference (``core.testing.fuzz``).
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


# rtol, atol per dtype name when assert_close is given none (float64 and the rest: 1e-7, 1e-7)
_DEFAULT_TOLERANCES = {"float16": (1e-3, 1e-3), "bfloat16": (1.6e-2, 1e-2), "float32": (1.3e-6, 1e-5)}
_SHOWN_MISMATCHES = 3  # mismatching elements named in the first line of an assert_close error


def assert_close(actual, expected, rtol=None, atol=None, check_dtype=True, equal_nan=True, msg=""):
    """Assert a tensor matches a tensor or array: same shape, dtype (by name), values within tolerance.

    Integers and bools must be equal; other values pass ``|actual - expected| <= atol + rtol * |expected|``
    (``numpy.testing.assert_allclose``). A mismatch raises AssertionError whose first line says it all:
    ``msg``, how many elements differ, the largest absolute and relative errors and the first few mismatches.
    """
    a = to_numpy(actual)
    e = to_numpy(expected)
    where = f"{msg}: " if msg else ""
    assert a.shape == e.shape, f"{where}shape {a.shape} != expected {e.shape}"
    if check_dtype and hasattr(actual, "dtype") and hasattr(expected, "dtype"):
        expected_name = expected.dtype.name if hasattr(expected, "_storage") else np.dtype(e.dtype).name
        assert actual.dtype.name == expected_name, f"{where}dtype {actual.dtype.name} != expected {expected_name}"
    if a.dtype.kind in "biu" and e.dtype.kind in "biu":
        rtol = atol = None
        mismatched = a != e
    else:
        default = _DEFAULT_TOLERANCES.get(a.dtype.name, (1e-7, 1e-7))
        rtol = default[0] if rtol is None else rtol
        atol = default[1] if atol is None else atol
        mismatched = ~np.isclose(_wide(a), _wide(e), rtol=rtol, atol=atol, equal_nan=equal_nan)
    if mismatched.any():
        raise AssertionError(where + _describe_mismatch(a, e, mismatched, rtol, atol))


def _wide(array: np.ndarray) -> np.ndarray:
    return array.astype(np.complex128 if array.dtype.kind == "c" else np.float64)


def _largest(errors: np.ndarray) -> float:
    known = errors[~np.isnan(errors)]
    return float(known.max()) if known.size else float("nan")


def _describe_mismatch(actual: np.ndarray, expected: np.ndarray, mismatched: np.ndarray, rtol=None,
                       atol=None) -> str:
    """What differs between two same-shaped arrays, ``mismatched`` marking the elements that do (as
    ``numpy.testing`` says it): a first line with the count, the tolerance, the largest absolute and relative
    errors and the first mismatching elements, then both arrays."""
    count, total = int(mismatched.sum()), actual.size
    tolerance = "exact" if rtol is None else f"rtol={rtol:g}, atol={atol:g}"
    with np.errstate(all="ignore"):
        got, want = _wide(actual)[mismatched], _wide(expected)[mismatched]
        absolute = np.abs(got - want)
        relative = absolute / np.abs(want)
    shown = [f"at {tuple(int(i) for i in index)}: got {actual[tuple(index)]!s}, expected {expected[tuple(index)]!s}"
             for index in np.argwhere(mismatched)[:_SHOWN_MISMATCHES]]
    more = f" (and {count - len(shown)} more)" if count > len(shown) else ""
    with np.printoptions(threshold=100, edgeitems=3, linewidth=120):
        arrays = f"\n ACTUAL: {np.array2string(actual, prefix=' ACTUAL: ')}" \
                 f"\n DESIRED: {np.array2string(expected, prefix=' DESIRED: ')}"
    return (f"{count} of {total} elements differ ({tolerance}): max abs error {_largest(absolute):.4g}, "
            f"max rel error {_largest(relative):.4g}; " + "; ".join(shown) + more + arrays)


def sample_array(shape, dtype: str = "float32", seed: int = 0) -> np.ndarray:
    """Small integer-valued test data of ``dtype`` (exact in every dtype, so comparisons are exact)."""
    from ..dtypes import by_name

    values = np.random.default_rng(seed).integers(-20, 20, size=shape)
    if dtype == "bool":
        return values > 0
    if dtype == "uint8":
        return np.abs(values).astype(np.uint8)
    return values.astype(by_name(dtype).numpy)


def with_layout(values: np.ndarray, device: str, layout: str = "contiguous"):
    """``values`` as a tensor on ``device`` laid out ``contiguous``, ``transposed``, ``strided`` or ``expanded``."""
    from .conformance import make_input

    return make_input(values, device, layout)[0]


def check_backend(device: str, expected_failures=(), **options):
    """Run the op-conformance suite and gradient checks against ``device``; see ``core.testing.backend_check``."""
    from .backend_check import check_backend as run

    return run(device, expected_failures, **options)


_SUBMODULES = frozenset({"backend_check", "conformance", "fuzz", "gradients", "pytest_plugin"})


def __getattr__(name: str):
    # The suites import scipy: loaded on first use, so the pytest plugin (in every session) stays cheap.
    if name in ("BackendReport", "BackendCheckError"):
        from . import backend_check

        return getattr(backend_check, name)
    if name in _SUBMODULES:  # core.testing.conformance.OP_DB after a plain `import core`
        import importlib

        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module 'core.testing' has no attribute '{name}'")


def __dir__() -> list:
    """The module's names, the lazily loaded ones included."""
    return sorted(set(globals()) | _SUBMODULES | {"BackendReport", "BackendCheckError"})
