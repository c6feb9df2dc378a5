"""pytest plugin: ``--core-backend NAME`` runs device-parametrised suites on one device type only."""

from __future__ import annotations


def pytest_addoption(parser):
    group = parser.getgroup("core")
    group.addoption("--core-backend", action="store", default=None,
                    help="run core's device-parametrised tests on this device type only (e.g. cpu, opencl)")
