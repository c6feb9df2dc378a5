"""Shared fixtures: ``device`` runs a test once per available backend's device type."""

from __future__ import annotations

import importlib.metadata

import pytest

from core.plugins.manager import ENTRY_POINT_GROUP
from core.testing import available_devices


def pytest_generate_tests(metafunc):
    if "device" in metafunc.fixturenames:
        selected = metafunc.config.getoption("--core-backend", default=None)
        devices = available_devices()
        if selected:
            devices = [d for d in devices if d == selected] or [selected]
        metafunc.parametrize("device", devices)


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
    fake: list = []
    real = importlib.metadata.entry_points
    monkeypatch.setattr(importlib.metadata, "entry_points",
                        lambda **kw: list(fake) if kw.get("group") == ENTRY_POINT_GROUP else real(**kw))
    return fake
