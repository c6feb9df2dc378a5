"""Every test starts from seed 0 (the autouse ``seed_every_test`` fixture of tests/conftest.py), so no test
depends on draws left over by the tests before it: each of these fails when that fixture is gone."""

from __future__ import annotations

import random

import numpy as np
import pytest

import core


def _draws(device: str) -> dict:
    return {"core": core.rand(4, device=device).tolist(), "numpy": np.random.rand(4).tolist(),
            "random": [random.random() for _ in range(4)]}


def _seed_0_draws(device: str) -> dict:
    core.manual_seed(0)
    np.random.seed(0)
    random.seed(0)
    return _draws(device)


@pytest.mark.parametrize("run", ["first", "second"])  # the second run sees what the first one drew and seeded
def test_a_test_draws_what_seed_0_draws(device, run):
    assert _draws(device) == _seed_0_draws(device)


@pytest.mark.parametrize("run", ["first", "second"])
def test_a_module_draws_the_seed_0_parameters(run):
    layer = core.nn.Linear(3, 2)
    core.manual_seed(0)
    assert layer.weight.tolist() == core.nn.Linear(3, 2).weight.tolist()
    core.rand(5)  # left over for the next test, which still starts from seed 0
