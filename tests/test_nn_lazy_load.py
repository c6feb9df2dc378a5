"""Lazy modules loading a state dict before their first forward (PyTorch's ``LazyModuleMixin._lazy_load_hook``).

The uninitialised parameters and buffers take the loaded tensors' shapes, the values are copied in, and the first
forward then matches the module the state dict came from (and turns the lazy module into the ordinary one).
"""

from __future__ import annotations

import numpy as np
import pytest

import core
from core import nn
from core.nn.parameter import is_lazy
from core.testing import assert_close


def _input(device, *shape):
    return core.tensor(np.random.default_rng(0).standard_normal(shape), dtype=core.float32, device=device)


CASES = [
    (lambda: nn.Linear(3, 4), lambda: nn.LazyLinear(4), (5, 3), "in_features", 3),
    (lambda: nn.Linear(3, 4, bias=False), lambda: nn.LazyLinear(4, bias=False), (2, 3), "in_features", 3),
    (lambda: nn.Conv2d(3, 4, 3, padding=1), lambda: nn.LazyConv2d(4, 3, padding=1), (2, 3, 5, 5), "in_channels", 3),
    (lambda: nn.Conv1d(4, 6, 2, groups=2), lambda: nn.LazyConv1d(6, 2, groups=2), (2, 4, 7), "in_channels", 4),
    (lambda: nn.ConvTranspose2d(3, 2, 2), lambda: nn.LazyConvTranspose2d(2, 2), (1, 3, 4, 4), "in_channels", 3),
    (lambda: nn.BatchNorm1d(4), lambda: nn.LazyBatchNorm1d(), (6, 4), "num_features", 4),
    (lambda: nn.InstanceNorm1d(3, affine=True), lambda: nn.LazyInstanceNorm1d(affine=True), (2, 3, 5),
     "num_features", 3),
]
IDS = ["linear", "linear-nobias", "conv2d", "conv1d-groups", "convtranspose2d", "batchnorm1d", "instancenorm1d"]


def _randomised(module):
    """Non-default values everywhere, so a copy that did not happen shows."""
    rng = np.random.default_rng(1)
    with core.no_grad():
        for tensor in module.state_dict().values():
            if tensor.is_floating_point():
                tensor.copy_(core.tensor(rng.uniform(0.5, 1.5, tensor.shape), dtype=tensor.dtype))
    return module


@pytest.mark.parametrize("make, make_lazy, shape, size_name, size", CASES, ids=IDS)
def test_lazy_module_loads_a_state_dict_before_its_first_forward(device, make, make_lazy, shape, size_name, size):
    source = _randomised(make()).to(device).eval()
    lazy = make_lazy().to(device).eval()
    assert lazy.has_uninitialized_params()
    result = lazy.load_state_dict(source.state_dict())
    assert list(result.missing_keys) == [] and list(result.unexpected_keys) == []
    assert not lazy.has_uninitialized_params()
    assert getattr(lazy, size_name) == size
    for key, value in source.state_dict().items():
        assert_close(lazy.state_dict()[key], value)
    x = _input(device, *shape)
    assert_close(lazy(x), source(x))
    assert type(lazy) is type(source)


def test_loading_in_training_mode_updates_the_loaded_running_stats(device):
    source = _randomised(nn.BatchNorm1d(4)).to(device)
    lazy = nn.LazyBatchNorm1d().to(device)
    lazy.load_state_dict(source.state_dict())
    x = _input(device, 6, 4)
    assert_close(lazy(x), source(x))
    assert_close(lazy.running_mean, source.running_mean)
    assert int(lazy.num_batches_tracked.item()) == int(source.num_batches_tracked.item())


def test_nested_lazy_modules_use_their_prefix(device):
    source = _randomised(nn.Sequential(nn.Linear(3, 5), nn.ReLU(), nn.Linear(5, 2))).to(device)
    lazy = nn.Sequential(nn.LazyLinear(5), nn.ReLU(), nn.LazyLinear(2)).to(device)
    lazy.load_state_dict(source.state_dict())
    x = _input(device, 4, 3)
    assert_close(lazy(x), source(x))
    assert lazy[2].in_features == 5


def test_a_partial_state_dict_leaves_the_rest_lazy():
    lazy = nn.LazyLinear(4)
    result = lazy.load_state_dict({"weight": nn.Linear(3, 4).weight.detach()}, strict=False)
    assert list(result.missing_keys) == ["bias"]
    assert not is_lazy(lazy.weight) and is_lazy(lazy.bias)
    assert lazy.in_features == 0  # only a fully loaded module knows its size before the forward
    assert tuple(lazy.weight.shape) == (4, 3)


def test_loaded_dtype_follows_the_lazy_module():
    lazy = nn.LazyLinear(4, dtype=core.float64)
    lazy.load_state_dict(nn.Linear(3, 4).state_dict())
    assert lazy.weight.dtype is core.float64
