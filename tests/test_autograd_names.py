"""torch.autograd's remaining names against PyTorch's documented behaviour: the legacy ``variable`` module,
``SavedTensor`` hooks on ``grad_fn._raw_saved_<name>``, the multithreading and view-replay flags, the
``__torch_function__`` protocol (has_torch_function / handle_torch_function) and ``NestedIOFunction``."""

from __future__ import annotations

import threading

import numpy as np
import pytest

import core
from core.autograd import (NestedIOFunction, SavedTensor, handle_torch_function, has_torch_function,
                           is_multithreading_enabled, is_view_replay_enabled, set_multithreading_enabled)
from core.autograd.grad_mode import _set_view_replay_enabled
from core.testing import assert_close

F64 = core.float64


def test_variable_module_is_the_legacy_wrapper(device):
    from core.autograd import variable

    t = core.tensor([1.0, 2.0], device=device)
    v = variable.Variable(t, requires_grad=True)
    assert v is not t and v.requires_grad and isinstance(v, core.Tensor) and isinstance(t, variable.Variable)
    assert core.autograd.Variable is variable.Variable
    (v * 3).sum().backward()
    assert_close(v.grad, np.array([3.0, 3.0], np.float32))


# -- SavedTensor -------------------------------------------------------------------------------------------

def test_raw_saved_tensor_hooks_run_at_pack_and_unpack_time(device):
    x = core.tensor([1.0, 2.0, 3.0], requires_grad=True, device=device)
    y = x.pow(2)
    assert_close(y.grad_fn._saved_self, np.array([1.0, 2.0, 3.0], np.float32))
    assert y.grad_fn._saved_exponent == 2
    raw = y.grad_fn._raw_saved_self
    assert isinstance(raw, SavedTensor)
    log = []

    def pack(t):
        log.append("pack")
        return t.detach() * 2  # what backward will see: the gradient proves the hook's value was used

    def unpack(packed):
        log.append("unpack")
        return packed

    raw.register_hooks(pack, unpack)
    assert log == ["pack"]  # packed as soon as the hooks are registered
    assert_close(y.grad_fn._saved_self, np.array([2.0, 4.0, 6.0], np.float32))
    assert log == ["pack", "unpack"]  # reading _saved_self unpacks
    y.sum().backward()
    assert log[-1] == "unpack"
    assert_close(x.grad, 2 * 2 * np.array([1.0, 2.0, 3.0], np.float32))  # 2 * (packed x)


def test_saved_tensor_hooks_on_an_output_and_their_errors(device):
    x = core.tensor([0.0, 1.0], requires_grad=True, device=device, dtype=F64)
    y = x.exp()
    raw = y.grad_fn._raw_saved_result
    raw.register_hooks(lambda t: t.detach().cpu().numpy(), lambda a: core.tensor(a, device=device))
    with pytest.raises(RuntimeError, match="hooks have already been set"):
        raw.register_hooks(lambda t: t, lambda t: t)
    with pytest.raises(TypeError, match="callables"):
        x.sin().grad_fn._raw_saved_self.register_hooks(1, 2)
    y.sum().backward()
    assert_close(x.grad, np.exp([0.0, 1.0]))
    with pytest.raises(RuntimeError, match="backward through the graph a second time"):
        raw.register_hooks(lambda t: t, lambda t: t)
    with pytest.raises(AttributeError, match="_raw_saved_nothing"):
        y.grad_fn._raw_saved_nothing  # noqa: B018 - reading it raises
    with pytest.raises(RuntimeError, match="backward through the graph a second time"):
        y.grad_fn._saved_result  # noqa: B018 - freed by backward
    with core.autograd.graph.saved_tensors_hooks(lambda t: t, lambda t: t):
        z = x * x
    with pytest.raises(RuntimeError, match="hooks have already been set"):  # the context's hooks hold it
        z.grad_fn._raw_saved_self.register_hooks(lambda t: t, lambda t: t)


def test_saved_tensor_hooks_keep_gradcheck_exact(device):
    def f(a, b):
        out = a * b
        out.grad_fn._raw_saved_other.register_hooks(lambda t: t.cpu(), lambda t: t.to(device))
        return out.sin()

    rng = np.random.default_rng(0)
    a = core.tensor(rng.standard_normal(4), dtype=F64, requires_grad=True, device=device)
    b = core.tensor(rng.standard_normal(4), dtype=F64, requires_grad=True, device=device)
    assert core.autograd.gradcheck(f, (a, b))


# -- thread flags -------------------------------------------------------------------------------------------

def test_multithreading_flag_as_call_context_and_decorator():
    assert is_multithreading_enabled()
    with set_multithreading_enabled(False):
        assert not is_multithreading_enabled()
    assert is_multithreading_enabled()
    set_multithreading_enabled(False)
    try:
        assert not is_multithreading_enabled()
    finally:
        set_multithreading_enabled(True)

    @set_multithreading_enabled(False)
    def inside():
        return is_multithreading_enabled()

    assert is_multithreading_enabled() and inside() is False and is_multithreading_enabled()
    with core.inference_mode():
        assert not is_multithreading_enabled()  # PyTorch's InferenceMode turns it off
        with core.inference_mode(False):
            assert is_multithreading_enabled()
    assert is_multithreading_enabled()


def test_flags_are_thread_local_and_backward_still_runs(device):
    seen = []
    with set_multithreading_enabled(False), _set_view_replay_enabled(True):
        worker = threading.Thread(target=lambda: seen.append((is_multithreading_enabled(), is_view_replay_enabled())))
        worker.start()
        worker.join()
        x = core.tensor([1.0, 2.0], requires_grad=True, device=device)
        (x * x).sum().backward()
    assert seen == [(True, False)]
    assert_close(x.grad, np.array([2.0, 4.0], np.float32))


def test_view_replay_flag():
    assert not is_view_replay_enabled()
    with _set_view_replay_enabled(True):
        assert is_view_replay_enabled()
    assert not is_view_replay_enabled()


# -- __torch_function__ ------------------------------------------------------------------------------------

HANDLED: dict = {}


def my_mean(input):
    """A public API that defers to __torch_function__ overrides, as PyTorch's functions do."""
    if has_torch_function((input,)):
        return handle_torch_function(my_mean, (input,), input)
    return core.mean(input)


def my_add(a, b):
    if has_torch_function((a, b)):
        return handle_torch_function(my_add, (a, b), a, b)
    return core.add(a, b)


class ScalarTensor:
    """The duck-typed class of PyTorch's "Extending torch with a Tensor-like type"."""

    def __init__(self, N, value):
        self._N, self._value = N, value

    def tensor(self):
        return self._value * core.eye(self._N)

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        if func is my_mean:
            return float(args[0]._value) / args[0]._N
        if func is my_add:
            seen = [type(a).__name__ for a in args]
            return ("ScalarTensor", seen, types)
        return NotImplemented


class SubScalar(ScalarTensor):
    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        if func is my_add:
            return ("SubScalar", types)
        return NotImplemented


class Declines:
    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        return NotImplemented


def test_has_torch_function(device):
    t = core.ones(2, device=device)
    assert not has_torch_function((t, 1.0, None)) and not has_torch_function(())
    assert has_torch_function((t, ScalarTensor(2, 3.0)))


def test_handle_torch_function_dispatches_to_the_override(device):
    d = ScalarTensor(5, 2.0)
    assert my_mean(d) == pytest.approx(0.4)
    assert_close(my_mean(core.tensor([1.0, 3.0], device=device)), np.array(2.0, np.float32))  # plain tensors: no
    name, seen, types = my_add(d, core.ones(1, device=device))
    assert name == "ScalarTensor" and seen == ["ScalarTensor", "Tensor"] and types == (ScalarTensor,)


def test_subclasses_come_before_superclasses_and_all_declining_is_a_type_error():
    base, sub = ScalarTensor(2, 1.0), SubScalar(2, 1.0)
    assert my_add(base, sub) == ("SubScalar", (SubScalar, ScalarTensor))
    with pytest.raises(TypeError, match="no implementation found for .*my_add.* on types that implement "
                                        "__torch_function__"):
        my_add(Declines(), Declines())
    assert my_add(Declines(), base)[0] == "ScalarTensor"  # the first declines, the next answers


# -- NestedIOFunction -------------------------------------------------------------------------------------

class PairProduct(NestedIOFunction):
    """(a, b), scale -> (a * b * scale, (a + b,)): nested inputs and outputs."""

    def forward_extended(self, pair, scale):
        a, b = pair
        self.save_for_backward((a, b), scale)
        return a * b * scale, (a + b,)

    def backward_extended(self, grad_product, grad_sums):
        (a, b), scale = self.saved_tensors
        (grad_sum,) = grad_sums
        return (grad_product * b * scale + grad_sum, grad_product * a * scale + grad_sum), None


def test_nested_io_function_forward_and_backward_by_hand(device):
    a = core.tensor([1.0, 2.0], requires_grad=True, device=device)
    b = core.tensor([3.0, 4.0], requires_grad=True, device=device)
    product, (total,) = PairProduct()((a, b), 2.0)
    assert_close(product, np.array([6.0, 16.0], np.float32))
    assert_close(total, np.array([4.0, 6.0], np.float32))
    (product.sum() + (total * total).sum()).backward()
    a_, b_ = np.array([1.0, 2.0]), np.array([3.0, 4.0])
    assert_close(a.grad, (2 * b_ + 2 * (a_ + b_)).astype(np.float32))
    assert_close(b.grad, (2 * a_ + 2 * (a_ + b_)).astype(np.float32))


def test_nested_io_function_gradcheck(device):
    rng = np.random.default_rng(0)
    a = core.tensor(rng.standard_normal(3), dtype=F64, requires_grad=True, device=device)
    b = core.tensor(rng.standard_normal(3), dtype=F64, requires_grad=True, device=device)

    def f(a, b):
        product, (total,) = PairProduct()((a, b), 1.5)
        return product * total

    assert core.autograd.gradcheck(f, (a, b))


def test_nested_io_function_needs_forward_extended():
    with pytest.raises(NotImplementedError, match="forward_extended"):
        NestedIOFunction()(core.ones(1))


# -- enforce_grad_layout_policy ---------------------------------------------------------------------------

def test_new_grad_takes_the_leaf_layout_unless_the_policy_is_relaxed(device):
    from core.autograd import enforce_grad_layout_policy

    p = core.empty(2, 3, 4, device=device).permute(2, 0, 1).requires_grad_()
    (p * 2).sum().backward()
    assert p.grad.stride() == p.stride() == (1, 12, 4)
    assert_close(p.grad, np.full((4, 2, 3), 2.0, np.float32))
    p.grad = None
    with enforce_grad_layout_policy(False):
        (p * 2).sum().backward()  # the incoming row-major gradient is stolen, not copied
    assert p.grad.stride() == (6, 3, 1)
    assert_close(p.grad, np.full((4, 2, 3), 2.0, np.float32))
    gappy = core.empty(4, 6, device=device)[:, ::2].detach().requires_grad_()
    (gappy * 3).sum().backward()
    assert gappy.grad.stride() == (3, 1)  # not dense: row-major
    assert enforce_grad_layout_policy(True).mode and core.autograd.grad_mode.tls.grad_layout_policy
