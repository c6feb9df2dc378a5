"""pytest plugin (loaded wherever core is installed): ``--core-backend NAME`` and the ``core_device`` fixture.

A test that takes ``core_device`` runs once per available device type, or only on ``NAME`` with
``pytest --core-backend NAME``; a plugin author's suite can then be as short as::

    def test_backend_conforms(core_device):
        core.testing.check_backend(core_device, expected_failures=EXPECTED_FAILURES)

core's own suite parametrises its ``device`` fixture from the same option (tests/conftest.py).
"""

from __future__ import annotations


def pytest_addoption(parser):
    group = parser.getgroup("core")
    group.addoption("--core-backend", action="store", default=None,
                    help="run core's device-parametrised tests on this device type only (e.g. cpu, opencl)")


def pytest_generate_tests(metafunc):
    if "core_device" in metafunc.fixturenames:
        from . import selected_devices

        metafunc.parametrize("core_device", selected_devices(metafunc.config.getoption("--core-backend")))
