"""pytest plugin (loaded wherever core is installed): ``--core-backend NAME`` and the ``core_device`` fixture.

A test that takes ``core_device`` runs once per available device type, or only on ``NAME`` with
``pytest --core-backend NAME``; a plugin author's suite can then be as short as::

    def test_backend_conforms(core_device):
        core.testing.check_backend(core_device, expected_failures=EXPECTED_FAILURES)

core's own suite parametrises its ``device`` fixture from the same option (tests/conftest.py).

A device without float64 (WebGPU; OpenCL without ``cl_khr_fp64``) refuses float64 and complex128 tensors with a
TypeError; a test parametrised with such a device (``device``, ``core_device``, or any parameter naming one) that
fails with exactly that refusal is reported as skipped, with the reason, rather than failed: the device declares
the limit (``Runtime.supports_float64``).
"""

from __future__ import annotations

import pytest



def pytest_addoption(parser):
    group = parser.getgroup("core")
    group.addoption("--core-backend", action="store", default=None,
                    help="run core's device-parametrised tests on this device type only (e.g. cpu, opencl)")


def pytest_generate_tests(metafunc):
    if "core_device" in metafunc.fixturenames:
        from . import selected_devices

        metafunc.parametrize("core_device", selected_devices(metafunc.config.getoption("--core-backend")))


def _refusal(exc: BaseException) -> TypeError | None:
    """The TypeError in ``exc``'s chain, if any (``pytest.warns``/``raises`` report "DID NOT ..." over it)."""
    seen = set()
    while exc is not None and id(exc) not in seen:
        if isinstance(exc, TypeError):
            return exc
        seen.add(id(exc))
        exc = exc.__cause__ or exc.__context__
    return None


def _refusing_device(item, message: str) -> str | None:
    """A device the test item is parametrised with (``device``, ``core_device`` or any other parameter naming a
    device, e.g. a transfer's ``src``/``dst``) whose float64 refusal ``message`` is."""
    from .backend_check import refuses_float64

    params = getattr(getattr(item, "callspec", None), "params", {})
    for value in params.values():
        if isinstance(value, str) and value:
            try:
                if refuses_float64(value, message):
                    return value
            except Exception:  # noqa: BLE001 - not a device string, or a device that does not load
                continue
    return None


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item):
    try:
        return (yield)
    except (Exception, pytest.fail.Exception) as exc:  # a "DID NOT WARN" failure may sit over the refusal
        refusal = _refusal(exc)
        device = _refusing_device(item, str(refusal)) if refusal is not None else None
        if device is None:
            raise
        # reported at the test's own location, as a skip mark's is (pytest's _use_item_location, pytest >= 7)
        raise pytest.skip.Exception(f"{device} has no float64 ({refusal})", _use_item_location=True) from None
