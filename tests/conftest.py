"""Shared fixtures: ``device`` runs a test once per available backend's device type."""

from __future__ import annotations


from core.testing import available_devices


def pytest_generate_tests(metafunc):
    if "device" in metafunc.fixturenames:
        selected = metafunc.config.getoption("--core-backend", default=None)
        devices = available_devices()
        if selected:
            devices = [d for d in devices if d == selected] or [selected]
        metafunc.parametrize("device", devices)
