"""Device moves and casts are the ``_to_copy`` operator: autograd records them, the JIT traces them.

PyTorch's rule: ``x.to(device)``, ``.cpu()``, ``.to(dtype)``, ``.double()``
record ``ToCopyBackward0``, whose gradient goes back to the input's device and
dtype; ``.to()`` returns ``self`` when nothing changes; a tensor that does not
require grad stays a plain leaf.
"""

from __future__ import annotations

import importlib
import itertools
from pathlib import Path

import numpy as np
import pytest
from conftest import isolated_plugin_manager

import core
import core.nn as nn
from core import jit
from core.autograd import gradcheck
from core.testing import available_devices

DEVICES = available_devices()
PAIRS = [pair for pair in itertools.product(DEVICES, DEVICES) if pair[0] != pair[1]]
FIXTURES = Path(__file__).parent / "fixtures"


def _other(device: str, dtype=None) -> str:
    """The first other available device type (that holds ``dtype``, when given: webgpu has no float64)."""
    others = [d for d in DEVICES if d != device]
    if dtype is not None:
        others = [d for d in others if _holds(d, dtype)]
    if not others:
        pytest.skip(f"needs a second available device type{' holding ' + dtype.name if dtype else ''} to move to")
    return others[0]


def _holds(device: str, dtype) -> bool:
    try:
        core.zeros(1, dtype=dtype, device=device)
    except TypeError:  # the device's backend lacks the dtype
        return False
    return True


def _close(actual, expected, rtol=1e-5, atol=1e-6):
    np.testing.assert_allclose(actual.detach().cpu().numpy(), np.asarray(expected), rtol=rtol, atol=atol)


# -- autograd through .to() --------------------------------------------------------------------------------

@pytest.mark.parametrize("src,dst", PAIRS or [pytest.param("cpu", "cpu", marks=pytest.mark.skip("one device"))])
def test_gradient_of_a_move_fills_grad_on_the_source_device(src, dst):
    x = core.randn(4, 3, device=src, requires_grad=True)
    y = x.to(dst)
    assert y.device.type == dst and type(y.grad_fn).__name__ == "ToCopyBackward0"
    y.exp().sum().backward()
    assert x.grad.device == x.device and x.grad.dtype is x.dtype
    _close(x.grad, np.exp(x.detach().cpu().numpy()), rtol=1e-5)


@pytest.mark.parametrize("src,dst", PAIRS or [pytest.param("cpu", "cpu", marks=pytest.mark.skip("one device"))])
def test_move_and_cast_in_one_call_goes_back_to_both(src, dst):
    x = core.randn(5, device=src, requires_grad=True)
    y = x.to(dst, core.float64)
    assert (y.device.type, y.dtype) == (dst, core.float64)
    (y * y).sum().backward()
    assert x.grad.device == x.device and x.grad.dtype is core.float32
    _close(x.grad, 2 * x.detach().cpu().numpy())


def test_cpu_method_records_the_move(device):
    x = core.randn(3, device=device, requires_grad=True)
    y = (x * 2).cpu()
    assert y.device.type == "cpu" and y.grad_fn is not None
    y.sum().backward()
    _close(x.grad, [2.0, 2.0, 2.0])


@pytest.mark.parametrize("convert", [lambda t: t.to(core.float64), lambda t: t.double(),
                                     lambda t: t.type(core.float64), lambda t: t.to(dtype=core.float64)],
                         ids=["to", "double", "type", "to_kwarg"])
def test_dtype_cast_records_grad_fn_and_casts_the_gradient_back(device, convert):
    x = core.randn(4, device=device, requires_grad=True)
    y = convert(x)
    assert y.dtype is core.float64 and type(y.grad_fn).__name__ == "ToCopyBackward0"
    (y * 3).sum().backward()
    assert x.grad.dtype is core.float32 and x.grad.device == x.device
    _close(x.grad, [3.0] * 4)


def test_cast_to_an_integer_dtype_is_not_differentiable(device):
    x = core.randn(4, device=device, requires_grad=True)
    y = x.to(core.int64)
    assert y.grad_fn is None and not y.requires_grad


def test_to_without_a_change_returns_self_and_copy_true_records(device):
    x = core.randn(3, device=device, requires_grad=True)
    assert x.to(device) is x and x.to(x.dtype) is x and x.to(x) is x
    assert x.to(device, non_blocking=True) is x
    y = x.to(device, copy=True)
    assert y is not x and y.grad_fn is not None
    y.sum().backward()
    _close(x.grad, [1.0, 1.0, 1.0])


def test_move_of_a_tensor_without_grad_stays_a_plain_leaf(device):
    x = core.randn(3, device=device)
    for y in (x.to(_other(device) if len(DEVICES) > 1 else device, copy=True), x.double(), x.to(core.float16)):
        assert y.grad_fn is None and not y.requires_grad and y.is_leaf
    with core.no_grad():
        z = core.randn(3, device=device, requires_grad=True).double()
    assert z.grad_fn is None and not z.requires_grad


def test_second_order_gradient_through_a_move(device):
    other = _other(device)
    x = core.tensor([1.0, 2.0, 3.0], device=device, requires_grad=True)
    y = (x.to(other) ** 3).sum()
    (g,) = core.autograd.grad(y, x, create_graph=True)
    assert g.device == x.device and g.grad_fn is not None
    g.sum().backward()
    _close(x.grad, [6.0, 12.0, 18.0])


def test_gradcheck_in_float64_through_a_device_move(device):
    other = _other(device, core.float64)
    x = core.randn(3, 2, dtype=core.float64, device=device, requires_grad=True)
    assert gradcheck(lambda a: (a.to(other).sin() * 2).to(device), (x,))
    assert gradcheck(lambda a: a.to(other) * a.to(other).cos(), (x,))


def test_gradient_of_a_cpu_scalar_operand_stays_on_the_cpu(device):
    other = _other("cpu") if device == "cpu" else device
    w = core.randn(3, device=other, requires_grad=True)
    s = core.tensor(2.0, requires_grad=True)  # a 0-d CPU tensor may join an op on any device, as in PyTorch
    (w * s).sum().backward()
    assert s.grad.device.type == "cpu" and w.grad.device == w.device
    _close(s.grad, w.detach().sum().item(), rtol=1e-5)


def test_copy_from_another_device_passes_the_gradient_to_the_source(device):
    other = _other(device)
    x = core.randn(3, device=other, requires_grad=True)
    buffer = core.zeros(3, device=device)
    buffer.copy_(x)
    (buffer * 2).sum().backward()
    assert x.grad.device == x.device
    _close(x.grad, [2.0, 2.0, 2.0])


def test_model_split_across_devices_trains(device):
    other = _other(device)
    first, second = nn.Linear(4, 8).to(device), nn.Linear(8, 1).to(other)
    optimizer = core.optim.SGD(list(first.parameters()) + list(second.parameters()), lr=0.1)
    x, target = core.randn(16, 4, device=device), core.randn(16, 1, device=other)
    before = first.weight.detach().clone()
    losses = []
    for _ in range(20):
        optimizer.zero_grad()
        loss = ((second(first(x).relu().to(other)) - target) ** 2).mean()
        loss.backward()
        assert first.weight.grad is not None and first.weight.grad.device == first.weight.device
        optimizer.step()
        losses.append(loss.item())
    assert losses[-1] < losses[0]
    assert not np.allclose(first.weight.detach().cpu().numpy(), before.cpu().numpy())


# -- meta ----------------------------------------------------------------------------------------------

def test_move_to_meta_keeps_shape_dtype_and_grad_fn():
    x = core.randn(2, 3, requires_grad=True)
    y = x.to("meta", core.float64)
    assert y.device.type == "meta" and y.shape == (2, 3) and y.dtype is core.float64
    assert type(y.grad_fn).__name__ == "ToCopyBackward0"
    m = core.empty(2, device="meta", requires_grad=True)
    z = m.double()
    assert z.device.type == "meta" and z.grad_fn is not None


def test_move_out_of_meta_raises_like_pytorch():
    m = core.empty(2, 3, device="meta")
    with pytest.raises(NotImplementedError, match="Cannot copy out of meta tensor; no data!"):
        m.cpu()
    with pytest.raises(NotImplementedError, match="Cannot copy out of meta tensor"):
        core.zeros(2, 3).copy_(m)


# -- the JIT -------------------------------------------------------------------------------------------

def test_traced_move_is_an_ordinary_op_that_replays_and_differentiates(device):
    other = _other(device)

    def fn(a):
        return (a.to(other).exp() * 2).to(device).sum()

    traced = jit.trace(fn, core.randn(3, device=device))
    ops = [n.op for n in traced.raw_graph.nodes]
    assert ops.count("_to_copy") == 2 and "jit::to_device" not in ops
    x = core.randn(3, device=device, requires_grad=True)
    out = traced(x)
    _close(out, fn(x.detach()))
    out.backward()
    assert x.grad.device == x.device
    _close(x.grad, 2 * np.exp(x.detach().cpu().numpy()))


def test_traced_same_device_cast_becomes_a_pure_copy(device):
    traced = jit.trace(lambda a: a.double() * 2, core.randn(3, device=device))
    assert "_to_copy" in [n.op for n in traced.raw_graph.nodes]
    assert "jit::copy" in [n.op for n in traced.graph.nodes] or "jit::fused" in [n.op for n in traced.graph.nodes]
    x = core.randn(3, device=device)
    out = traced(x)
    assert out.dtype is core.float64
    _close(out, x.double() * 2)


# -- a third-party device ----------------------------------------------------------------------------------

@pytest.fixture
def manager(entry_points):
    with isolated_plugin_manager(str(FIXTURES / "core_testdev"), "core_testdev") as fresh:
        yield fresh


def test_gradient_flows_through_a_move_to_a_plugin_device(manager):
    manager.register_plugin(importlib.import_module("core_testdev"), name="testdev")
    x = core.tensor([0.5, 1.0, 2.0], requires_grad=True)
    y = x.to("testdev")
    assert y.device.type == "testdev" and y.grad_fn is not None
    (y * y).cpu().sum().backward()
    assert x.grad.device.type == "cpu"
    _close(x.grad, [1.0, 2.0, 4.0])
