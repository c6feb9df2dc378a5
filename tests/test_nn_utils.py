"""``core.nn.utils``: gradient clipping by norm and by value, parameters <-> vector, against NumPy (and torch)."""

from __future__ import annotations

import math

import numpy as np
import pytest

import core
import core.nn as nn
from core.nn.utils import (clip_grad_norm, clip_grad_norm_, clip_grad_value_, clip_grads_with_norm_, get_total_norm,
                           parameters_to_vector, vector_to_parameters)
from core.testing import assert_close, to_numpy


def npy(x):
    """A host NumPy copy of a tensor on any device (detached)."""
    return to_numpy(x.detach())


def params_with_grads(device, dtype=core.float64, seed=0):
    rng = np.random.default_rng(seed)
    shapes = [(3, 4), (5,), (2, 2, 2)]
    params, grads = [], []
    for shape in shapes:
        p = nn.Parameter(core.tensor(rng.standard_normal(shape), device=device, dtype=dtype))
        g = rng.standard_normal(shape) * 3
        p.grad = core.tensor(g, device=device, dtype=dtype)
        params.append(p)
        grads.append(g)
    return params, grads


def np_total_norm(grads, norm_type):
    flat = np.concatenate([g.ravel() for g in grads])
    if norm_type == math.inf:
        return np.abs(flat).max()
    return (np.abs(flat) ** norm_type).sum() ** (1 / norm_type)


@pytest.mark.parametrize("norm_type", [2.0, 1, 3.5, math.inf, "inf"])
@pytest.mark.parametrize("max_norm", [0.5, 1e6])
def test_clip_grad_norm(device, norm_type, max_norm):
    params, grads = params_with_grads(device)
    total = clip_grad_norm_(params, max_norm, norm_type=norm_type)
    expected = np_total_norm(grads, float(norm_type))
    assert total.shape == ()
    assert_close(total, np.float64(expected))
    coefficient = min(1.0, max_norm / (expected + 1e-6))
    for p, g in zip(params, grads):
        assert_close(p.grad, g * coefficient)
    if max_norm < expected:
        assert abs(np_total_norm([npy(p.grad) for p in params], float(norm_type)) - max_norm) < 1e-5


def test_clip_grad_norm_inputs(device):
    params, grads = params_with_grads(device)
    single = params[0]
    total = clip_grad_norm_(single, 1.0)  # a single tensor
    assert_close(total, np.float64(np.linalg.norm(grads[0])))
    params, grads = params_with_grads(device)
    params[1].grad = None  # parameters without gradients are skipped
    total = clip_grad_norm_((p for p in params), 1.0)  # a generator is consumed once
    assert_close(total, np.float64(np_total_norm([grads[0], grads[2]], 2.0)))
    assert params[1].grad is None
    assert_close(params[0].grad, grads[0] / (total.item() + 1e-6))
    assert clip_grad_norm_([], 1.0).item() == 0.0
    with pytest.warns(UserWarning, match="empty generator"):
        clip_grad_norm_((p for p in []), 1.0)


def test_clip_grad_norm_module_and_dtype(device):
    model = nn.Linear(4, 3).to(device)
    model(core.randn(5, 4, device=device)).sum().backward()
    grads = [npy(p.grad).copy() for p in model.parameters()]
    total = clip_grad_norm_(model.parameters(), 0.1)
    assert total.dtype == core.float32
    assert_close(total, np.float32(np_total_norm(grads, 2.0)), rtol=1e-5, atol=1e-6)
    assert abs(np_total_norm([npy(p.grad) for p in model.parameters()], 2.0) - 0.1) < 1e-5


def test_clip_grad_norm_nonfinite(device):
    params, _ = params_with_grads(device)
    params[0].grad[0, 0] = float("nan")
    with pytest.raises(RuntimeError, match="The total norm of order 2.0 for gradients from `parameters` is non-finite"):
        clip_grad_norm_(params, 1.0, error_if_nonfinite=True)
    params, _ = params_with_grads(device)
    params[1].grad[0] = float("inf")
    total = clip_grad_norm_(params, 1.0)  # default: scales by the non-finite norm anyway
    assert math.isinf(total.item())


def test_clip_grad_norm_deprecated_alias(device):
    params, grads = params_with_grads(device)
    with pytest.warns(FutureWarning, match="deprecated"):
        total = clip_grad_norm(params, 1.0)
    assert_close(total, np.float64(np_total_norm(grads, 2.0)))


def test_total_norm_and_clip_with_norm_separately(device):
    params, grads = params_with_grads(device)
    total = get_total_norm([p.grad for p in params], 2.0)
    assert_close(total, np.float64(np_total_norm(grads, 2.0)))
    clip_grads_with_norm_(params, 1.0, total)
    for p, g in zip(params, grads):
        assert_close(p.grad, g / (total.item() + 1e-6))


def test_clip_grad_norm_does_not_record_graph(device):
    params, _ = params_with_grads(device)
    total = clip_grad_norm_(params, 1.0)
    assert not total.requires_grad
    assert all(p.grad.grad_fn is None for p in params)


def test_clip_grad_value(device):
    params, grads = params_with_grads(device)
    assert clip_grad_value_(params, 1.5) is None
    for p, g in zip(params, grads):
        assert_close(p.grad, np.clip(g, -1.5, 1.5))
    single, grads = params_with_grads(device)
    clip_grad_value_(single[0], 0.1)
    assert_close(single[0].grad, np.clip(grads[0], -0.1, 0.1))
    assert_close(single[1].grad, grads[1])


def test_parameters_to_vector_and_back(device):
    model = nn.Sequential(nn.Linear(3, 2), nn.Linear(2, 1)).to(device)
    params = list(model.parameters())
    vec = parameters_to_vector(model.parameters())
    assert vec.shape == (sum(p.numel() for p in params),)
    assert_close(vec, np.concatenate([npy(p).ravel() for p in params]))
    new = core.arange(vec.numel(), dtype=core.float32, device=device)
    vector_to_parameters(new, model.parameters())
    offset = 0
    for p in params:
        assert_close(p.detach(), np.arange(offset, offset + p.numel(), dtype=np.float32).reshape(p.shape))
        offset += p.numel()
    assert all(isinstance(p, nn.Parameter) and p.requires_grad for p in model.parameters())
    out = model(core.ones(1, 3, device=device))
    out.sum().backward()
    assert params[0].grad.shape == params[0].shape
    with pytest.raises(TypeError, match="expected core.Tensor, but got: list"):
        vector_to_parameters([1.0, 2.0], model.parameters())


def test_parameters_to_vector_is_differentiable(device):
    p = nn.Parameter(core.ones(2, 2, device=device))
    q = nn.Parameter(core.ones(3, device=device))
    (parameters_to_vector([p, q]) * core.arange(7.0, device=device)).sum().backward()
    assert_close(p.grad, np.arange(4.0, dtype=np.float32).reshape(2, 2))
    assert_close(q.grad, np.arange(4.0, 7.0, dtype=np.float32))


def test_clip_grad_norm_matches_torch(device):
    torch = pytest.importorskip("torch")
    for norm_type in (2.0, 1.0, math.inf, 0.5):
        params, grads = params_with_grads(device, seed=3)
        theirs = [torch.nn.Parameter(torch.zeros(g.shape, dtype=torch.float64)) for g in grads]
        for p, g in zip(theirs, grads):
            p.grad = torch.tensor(g)
        expected = torch.nn.utils.clip_grad_norm_(theirs, 2.0, norm_type=norm_type)
        total = clip_grad_norm_(params, 2.0, norm_type=norm_type)
        assert_close(total, expected.numpy())
        for ours, their in zip(params, theirs):
            assert_close(ours.grad, their.grad.numpy())
