"""core.optim against PyTorch's documented algorithms.

Each optimizer replays a fixed sequence of hand-set gradients; the parameters are compared with a NumPy
transcription of the pseudo-code in PyTorch's docs (and with torch.optim when it is installed). Also: state dicts
(PyTorch's layout, round trips in the middle of training, casting, errors), zero_grad, param groups, hooks.
"""

from __future__ import annotations

import copy
import math
import warnings

import numpy as np
import pytest

import core
from core import optim
from core.nn import Parameter
from core.testing import assert_close

SHAPE = (3, 4)
STEPS = 5


def _data(seed: int = 0):
    rng = np.random.default_rng(seed)
    return rng.standard_normal(SHAPE), [rng.standard_normal(SHAPE) for _ in range(STEPS)]


# -- NumPy transcriptions of the pseudo-code in PyTorch's docs ---------------------------------------------------

def ref_sgd(x, grads, lr=1e-3, momentum=0, dampening=0, weight_decay=0, nesterov=False, maximize=False):
    b = None
    for g in grads:
        g = -g if maximize else g
        if weight_decay:
            g = g + weight_decay * x
        if momentum:
            b = g.copy() if b is None else momentum * b + (1 - dampening) * g
            g = g + momentum * b if nesterov else b
        x = x - lr * g
    return x


def ref_adam(x, grads, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0, amsgrad=False, maximize=False,
             decoupled_weight_decay=False):
    b1, b2 = betas
    m = v = v_max = np.zeros_like(x)
    for t, g in enumerate(grads, 1):
        g = -g if maximize else g
        if weight_decay and decoupled_weight_decay:
            x = x * (1 - lr * weight_decay)
        elif weight_decay:
            g = g + weight_decay * x
        m = b1 * m + (1 - b1) * g
        v = b2 * v + (1 - b2) * g * g
        m_hat = m / (1 - b1 ** t)
        if amsgrad:
            v_max = np.maximum(v_max, v)
            v_hat = v_max / (1 - b2 ** t)
        else:
            v_hat = v / (1 - b2 ** t)
        x = x - lr * m_hat / (np.sqrt(v_hat) + eps)
    return x


def ref_adamw(x, grads, weight_decay=1e-2, **options):
    return ref_adam(x, grads, weight_decay=weight_decay, decoupled_weight_decay=True, **options)


def ref_rmsprop(x, grads, lr=1e-2, alpha=0.99, eps=1e-8, weight_decay=0, momentum=0, centered=False,
                maximize=False):
    v = g_ave = b = np.zeros_like(x)
    for g in grads:
        g = -g if maximize else g
        if weight_decay:
            g = g + weight_decay * x
        v = alpha * v + (1 - alpha) * g * g
        v_tilde = v
        if centered:
            g_ave = alpha * g_ave + (1 - alpha) * g
            v_tilde = v - g_ave ** 2
        if momentum > 0:
            b = momentum * b + g / (np.sqrt(v_tilde) + eps)
            x = x - lr * b
        else:
            x = x - lr * g / (np.sqrt(v_tilde) + eps)
    return x


def ref_adagrad(x, grads, lr=1e-2, lr_decay=0, weight_decay=0, initial_accumulator_value=0, eps=1e-10,
                maximize=False):
    state_sum = np.full_like(x, initial_accumulator_value)
    for t, g in enumerate(grads, 1):
        g = -g if maximize else g
        clr = lr / (1 + (t - 1) * lr_decay)
        if weight_decay:
            g = g + weight_decay * x
        state_sum = state_sum + g * g
        x = x - clr * g / (np.sqrt(state_sum) + eps)
    return x


def ref_adadelta(x, grads, lr=1.0, rho=0.9, eps=1e-6, weight_decay=0, maximize=False):
    v = u = np.zeros_like(x)
    for g in grads:
        g = -g if maximize else g
        if weight_decay:
            g = g + weight_decay * x
        v = rho * v + (1 - rho) * g * g
        dx = np.sqrt(u + eps) / np.sqrt(v + eps) * g
        u = rho * u + (1 - rho) * dx * dx
        x = x - lr * dx
    return x


def ref_adamax(x, grads, lr=2e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0, maximize=False):
    b1, b2 = betas
    m = u = np.zeros_like(x)
    for t, g in enumerate(grads, 1):
        g = -g if maximize else g
        if weight_decay:
            g = g + weight_decay * x
        m = b1 * m + (1 - b1) * g
        u = np.maximum(b2 * u, np.abs(g) + eps)
        x = x - lr / (1 - b1 ** t) * m / u
    return x


def ref_nadam(x, grads, lr=2e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0, momentum_decay=4e-3,
              decoupled_weight_decay=False, maximize=False):
    b1, b2 = betas
    m = v = np.zeros_like(x)
    mu_product = np.float32(1.0)  # PyTorch keeps the running product of the mu_t in a float32 scalar
    for t, g in enumerate(grads, 1):
        g = -g if maximize else g
        if weight_decay and decoupled_weight_decay:
            x = x * (1 - lr * weight_decay)
        elif weight_decay:
            g = g + weight_decay * x
        mu = b1 * (1 - 0.5 * 0.96 ** (t * momentum_decay))
        mu_next = b1 * (1 - 0.5 * 0.96 ** ((t + 1) * momentum_decay))
        mu_product = np.float32(mu_product * np.float32(mu))
        m = b1 * m + (1 - b1) * g
        v = b2 * v + (1 - b2) * g * g
        m_hat = mu_next * m / (1 - float(mu_product) * mu_next) + (1 - mu) * g / (1 - float(mu_product))
        v_hat = v / (1 - b2 ** t)
        x = x - lr * m_hat / (np.sqrt(v_hat) + eps)
    return x


CASES = {
    "SGD": (ref_sgd, [
        dict(lr=0.1),
        dict(lr=0.1, momentum=0.9),
        dict(lr=0.1, momentum=0.9, dampening=0.3, weight_decay=0.05),
        dict(lr=0.1, momentum=0.8, nesterov=True, weight_decay=0.1),
        dict(lr=0.05, momentum=0.9, nesterov=True, maximize=True),
    ]),
    "Adam": (ref_adam, [
        dict(),
        dict(lr=0.1, betas=(0.8, 0.9), eps=1e-6),
        dict(lr=0.1, weight_decay=0.1, amsgrad=True),
        dict(lr=0.1, weight_decay=0.1, decoupled_weight_decay=True, maximize=True),
        dict(lr=0.1, amsgrad=True, maximize=True),
    ]),
    "AdamW": (ref_adamw, [
        dict(),
        dict(lr=0.1, weight_decay=0.2),
        dict(lr=0.1, weight_decay=0.2, amsgrad=True, maximize=True),
    ]),
    "RMSprop": (ref_rmsprop, [
        dict(),
        dict(lr=0.05, alpha=0.9, eps=1e-4, weight_decay=0.1),
        dict(lr=0.05, centered=True),
        dict(lr=0.05, momentum=0.5),
        dict(lr=0.05, momentum=0.5, centered=True, weight_decay=0.1, maximize=True),
    ]),
    "Adagrad": (ref_adagrad, [
        dict(),
        dict(lr=0.1, lr_decay=0.1),
        dict(lr=0.1, weight_decay=0.1, initial_accumulator_value=0.5, eps=1e-6),
        dict(lr=0.1, lr_decay=0.05, maximize=True),
    ]),
    "Adadelta": (ref_adadelta, [
        dict(),
        dict(lr=0.5, rho=0.8, eps=1e-4),
        dict(lr=0.5, weight_decay=0.1, maximize=True),
    ]),
    "Adamax": (ref_adamax, [
        dict(),
        dict(lr=0.1, betas=(0.8, 0.9), eps=1e-4),
        dict(lr=0.1, weight_decay=0.1, maximize=True),
    ]),
    "NAdam": (ref_nadam, [
        dict(),
        dict(lr=0.1, betas=(0.8, 0.9), momentum_decay=0.01),
        dict(lr=0.1, weight_decay=0.1),
        dict(lr=0.1, weight_decay=0.1, decoupled_weight_decay=True, maximize=True),
    ]),
}
CASE_IDS = [(name, i) for name, (_, options) in CASES.items() for i in range(len(options))]


def _replay(name, options, device, dtype, x0, grads, grad_transform=lambda g: g):
    p = Parameter(core.tensor(x0, dtype=dtype, device=device))
    opt = getattr(optim, name)([p], **options)
    for g in grads:
        p.grad = grad_transform(core.tensor(g, dtype=dtype, device=device))
        opt.step()
    return p, opt


@pytest.mark.parametrize("name,index", CASE_IDS, ids=[f"{n}-{i}" for n, i in CASE_IDS])
@pytest.mark.parametrize("dtype", [core.float64, core.float32])
def test_matches_documented_algorithm(name, index, dtype, device):
    reference, cases = CASES[name]
    options = cases[index]
    x0, grads = _data(index)
    p, _ = _replay(name, options, device, dtype, x0, grads)
    expected = reference(x0, grads, **options)
    tolerances = dict(rtol=1e-9, atol=1e-11) if dtype is core.float64 else dict(rtol=1e-5, atol=2e-6)
    assert_close(p.detach(), expected, check_dtype=False, **tolerances)
    assert p.dtype is dtype


@pytest.mark.parametrize("name,index", CASE_IDS, ids=[f"{n}-{i}" for n, i in CASE_IDS])
def test_matches_torch(name, index, device):
    torch = pytest.importorskip("torch")
    options = CASES[name][1][index]
    x0, grads = _data(index + 10)
    p, opt = _replay(name, options, device, core.float64, x0, grads)
    q = torch.nn.Parameter(torch.tensor(x0))
    topt = getattr(torch.optim, name)([q], **options)
    for g in grads:
        q.grad = torch.tensor(g)
        topt.step()
    assert_close(p.detach(), q.detach().numpy(), rtol=1e-12, atol=1e-14)
    # Same state keys and values, same param-group keys.
    ours, theirs = opt.state_dict(), topt.state_dict()
    assert ours["state"].keys() == theirs["state"].keys()
    for key, value in theirs["state"].get(0, {}).items():
        assert_close(ours["state"][0][key], value.numpy(), check_dtype=False, rtol=1e-12, atol=1e-14)
    assert ours["param_groups"][0].keys() == theirs["param_groups"][0].keys()
    assert repr(opt).replace("core.", "") == repr(topt).replace("torch.", "")


@pytest.mark.parametrize("name", list(CASES))
def test_complex_params_update_as_real_pairs(name, device):
    # PyTorch steps a complex parameter as its real view: real and imaginary parts are separate coordinates.
    reference, cases = CASES[name]
    options = cases[-1]
    x0, grads = _data(3)
    xc = x0[:, :2] + 1j * x0[:, 2:]
    gc = [g[:, :2] + 1j * g[:, 2:] for g in grads]
    p, _ = _replay(name, options, device, core.complex128, xc, gc)
    expected = reference(np.stack([xc.real, xc.imag], -1), [np.stack([g.real, g.imag], -1) for g in gc], **options)
    assert_close(p.detach(), expected[..., 0] + 1j * expected[..., 1], rtol=1e-9, atol=1e-11)


@pytest.mark.parametrize("name", list(CASES))
def test_non_contiguous_gradients(name, device):
    reference, cases = CASES[name]
    options = cases[-1]
    x0, grads = _data(4)
    p, _ = _replay(name, options, device, core.float64, x0, [g.T.copy() for g in grads], lambda g: g.t())
    assert_close(p.detach(), reference(x0, grads, **options), rtol=1e-9, atol=1e-11)


@pytest.mark.parametrize("dtype", [core.float16, core.bfloat16])
@pytest.mark.parametrize("name", ["SGD", "Adam"])
def test_low_precision_params(name, dtype, device):
    reference, cases = CASES[name]
    options = dict(lr=0.01, **({"momentum": 0.9} if name == "SGD" else {}))
    x0, grads = _data(5)
    p, opt = _replay(name, options, device, dtype, x0, grads)
    assert p.dtype is dtype
    assert all(t.dtype is dtype for k, t in opt.state[p].items() if k != "step")
    low = core.tensor(x0, dtype=dtype).double().numpy()  # the rounded start the optimizer actually saw
    assert_close(p.detach(), reference(low, grads, **options), check_dtype=False, rtol=2e-2, atol=2e-2)


# -- state layout and state dicts -------------------------------------------------------------------------------

STATE_KEYS = {
    "SGD": {"momentum_buffer"}, "Adam": {"step", "exp_avg", "exp_avg_sq"}, "AdamW": {"step", "exp_avg", "exp_avg_sq"},
    "RMSprop": {"step", "square_avg"}, "Adagrad": {"step", "sum"}, "Adadelta": {"step", "square_avg", "acc_delta"},
    "Adamax": {"step", "exp_avg", "exp_inf"}, "NAdam": {"step", "mu_product", "exp_avg", "exp_avg_sq"},
}


@pytest.mark.parametrize("name", list(CASES))
def test_state_keys_and_step_counter(name, device):
    options = {"momentum": 0.9} if name == "SGD" else {}
    x0, grads = _data()
    p, opt = _replay(name, options, device, core.float32, x0, grads[:3])
    assert set(opt.state[p]) == STATE_KEYS[name]
    if "step" in opt.state[p]:
        step = opt.state[p]["step"]
        assert step.dtype is core.float32 and step.dim() == 0 and step.item() == 3.0


def test_optional_state_buffers(device):
    p = Parameter(core.zeros(2, device=device))
    p.grad = core.ones(2, device=device)
    opt = optim.Adam([p], amsgrad=True)
    opt.step()
    assert "max_exp_avg_sq" in opt.state[p]
    opt = optim.RMSprop([p], momentum=0.5, centered=True)
    opt.step()
    assert set(opt.state[p]) == {"step", "square_avg", "momentum_buffer", "grad_avg"}
    opt = optim.SGD([p], lr=0.1)  # no momentum: SGD keeps no state at all
    opt.step()
    assert len(opt.state) == 0 and opt.state_dict()["state"] == {}


def test_adagrad_state_exists_before_the_first_step(device):
    p = Parameter(core.zeros(3, device=device))
    opt = optim.Adagrad([p], initial_accumulator_value=0.25)
    assert_close(opt.state[p]["sum"], np.full(3, 0.25, np.float32))
    assert opt.state_dict()["state"][0]["step"].item() == 0.0


def test_params_without_gradients_are_skipped(device):
    a, b = Parameter(core.ones(2, device=device)), Parameter(core.ones(2, device=device))
    a.grad = core.ones(2, device=device)
    opt = optim.Adam([a, b], lr=0.1)
    opt.step()
    assert b not in opt.state and a in opt.state
    assert_close(b.detach(), np.ones(2, np.float32))
    assert list(opt.state_dict()["state"]) == [0]


def test_state_dict_layout(device):
    a, b, c = (Parameter(core.ones(2, device=device)) for _ in range(3))
    opt = optim.SGD([{"params": [a, b]}, {"params": [c], "lr": 0.5}], lr=0.1, momentum=0.9)
    for p in (a, c):
        p.grad = core.ones(2, device=device)
    opt.step()
    sd = opt.state_dict()
    assert set(sd) == {"state", "param_groups"}
    assert sorted(sd["state"]) == [0, 2]
    assert sd["state"][0]["momentum_buffer"] is opt.state[a]["momentum_buffer"]
    assert [g["params"] for g in sd["param_groups"]] == [[0, 1], [2]]
    assert sd["param_groups"][1]["lr"] == 0.5 and sd["param_groups"][0]["lr"] == 0.1
    assert sd["param_groups"][0] == {"lr": 0.1, "momentum": 0.9, "dampening": 0, "weight_decay": 0,
                                     "nesterov": False, "maximize": False, "foreach": None,
                                     "differentiable": False, "fused": None, "params": [0, 1]}
    assert opt.param_groups[0]["params"][0] is a  # state_dict() did not touch the live groups


@pytest.mark.parametrize("name", list(CASES))
def test_state_dict_round_trip_mid_training(name, device):
    options = CASES[name][1][-1]
    x0, grads = _data(6)
    p, opt = _replay(name, options, device, core.float64, x0, grads[:3])
    saved = copy.deepcopy(opt.state_dict())
    q = Parameter(p.detach().clone())
    fresh = getattr(optim, name)([q], lr=123.0)  # options come back from the state dict
    fresh.load_state_dict(saved)
    assert fresh.param_groups[0]["lr"] == opt.param_groups[0]["lr"]
    assert fresh.param_groups[0]["params"][0] is q
    for g in grads[3:]:
        p.grad = core.tensor(g, device=device)
        q.grad = core.tensor(g, device=device)
        opt.step()
        fresh.step()
    # Loading casts every state tensor but "step" to the param's dtype, NAdam's float32 mu_product too (as PyTorch).
    exact = dict(rtol=1e-9, atol=1e-11) if name == "NAdam" else dict(rtol=0, atol=0)
    assert_close(q.detach(), p.detach(), **exact)
    assert_close(p.detach(), CASES[name][0](x0, grads, **options), rtol=1e-9, atol=1e-11)


def test_load_state_dict_casts_state_to_the_param_dtype(device):
    p = Parameter(core.zeros(3, dtype=core.float64, device=device))
    p.grad = core.ones(3, dtype=core.float64, device=device)
    opt = optim.Adam([p])
    opt.step()
    q = Parameter(core.zeros(3, dtype=core.float32, device=device))
    other = optim.Adam([q])
    other.load_state_dict(opt.state_dict())
    assert other.state[q]["exp_avg"].dtype is core.float32
    assert other.state[q]["step"].dtype is core.float32 and other.state[q]["step"].item() == 1.0


def test_load_state_dict_with_a_python_number_step(device):
    # Checkpoints from older PyTorch versions keep "step" as a number.
    x0, grads = _data(9)
    p, opt = _replay("Adam", {"lr": 0.1}, device, core.float64, x0, grads[:2])
    saved = copy.deepcopy(opt.state_dict())
    saved["state"][0]["step"] = 2
    q = Parameter(p.detach().clone())
    other = optim.Adam([q])
    other.load_state_dict(saved)
    assert isinstance(other.state[q]["step"], core.Tensor) and other.state[q]["step"].item() == 2.0
    for g in grads[2:]:
        q.grad = core.tensor(g, device=device)
        other.step()
    assert_close(q.detach(), ref_adam(x0, grads, lr=0.1), rtol=1e-9, atol=1e-11)


def test_load_state_dict_errors(device):
    a, b = Parameter(core.ones(2, device=device)), Parameter(core.ones(2, device=device))
    opt = optim.SGD([a, b], lr=0.1)
    with pytest.raises(ValueError, match="different number of parameter groups"):
        optim.SGD([{"params": [a]}, {"params": [b]}], lr=0.1).load_state_dict(opt.state_dict())
    with pytest.raises(ValueError, match="doesn't match the size of optimizer's group"):
        optim.SGD([a], lr=0.1).load_state_dict(opt.state_dict())


def test_load_torch_state_dict_and_continue_like_torch(device):
    torch = pytest.importorskip("torch")
    x0, grads = _data(7)
    q = torch.nn.Parameter(torch.tensor(x0))
    topt = torch.optim.AdamW([q], lr=0.05, amsgrad=True)
    for g in grads[:3]:
        q.grad = torch.tensor(g)
        topt.step()
    tsd = topt.state_dict()
    converted = {"state": {k: {n: core.tensor(v.numpy()) for n, v in s.items()} for k, s in tsd["state"].items()},
                 "param_groups": tsd["param_groups"]}
    p = Parameter(core.tensor(q.detach().numpy().copy(), device=device))
    opt = optim.AdamW([p])
    opt.load_state_dict(converted)
    for g in grads[3:]:
        q.grad = torch.tensor(g)
        p.grad = core.tensor(g, device=device)
        topt.step()
        opt.step()
    assert_close(p.detach(), q.detach().numpy(), rtol=1e-12, atol=1e-14)


# -- gradients, groups, closures, hooks --------------------------------------------------------------------------

def test_zero_grad(device):
    p = Parameter(core.ones(3, device=device))
    opt = optim.SGD([p], lr=0.1)
    p.grad = core.ones(3, device=device)
    opt.zero_grad(set_to_none=False)
    assert p.grad is not None
    assert_close(p.grad, np.zeros(3, np.float32))
    opt.zero_grad()
    assert p.grad is None
    opt.zero_grad()  # no gradient: nothing to do


def test_param_groups_with_different_options(device):
    x0, grads = _data(8)
    a = Parameter(core.tensor(x0, dtype=core.float64, device=device))
    b = Parameter(core.tensor(x0, dtype=core.float64, device=device))
    opt = optim.SGD([{"params": [a]}, {"params": [b], "lr": 0.01, "momentum": 0.5}], lr=0.1, momentum=0.9)
    assert opt.param_groups[1]["dampening"] == 0 and opt.param_groups[1]["nesterov"] is False
    for g in grads:
        a.grad = core.tensor(g, device=device)
        b.grad = core.tensor(g, device=device)
        opt.step()
    assert_close(a.detach(), ref_sgd(x0, grads, lr=0.1, momentum=0.9))
    assert_close(b.detach(), ref_sgd(x0, grads, lr=0.01, momentum=0.5))


def test_add_param_group(device):
    a, b = Parameter(core.ones(2, device=device)), Parameter(core.ones(2, device=device))
    opt = optim.Adam([a], lr=0.1)
    opt.add_param_group({"params": b, "betas": (0.5, 0.6)})
    assert opt.param_groups[1]["params"] == [b] or opt.param_groups[1]["params"][0] is b
    assert opt.param_groups[1]["lr"] == 0.1 and opt.param_groups[1]["betas"] == (0.5, 0.6)
    with pytest.raises(ValueError, match="some parameters appear in more than one parameter group"):
        opt.add_param_group({"params": [a]})
    with pytest.raises(TypeError, match="param_group must be a dict"):
        opt.add_param_group([a])
    with pytest.raises(TypeError, match="ordered collections"):
        opt.add_param_group({"params": {Parameter(core.ones(1))}})
    with pytest.warns(UserWarning, match="duplicate parameters"):
        optim.SGD([a, a], lr=0.1)


def test_named_parameters_are_accepted(device):
    model = core.nn.Linear(2, 3)
    opt = optim.SGD(model.named_parameters(), lr=0.1)
    assert opt.param_groups[0]["param_names"] == ["weight", "bias"]
    assert opt.state_dict()["param_groups"][0]["param_names"] == ["weight", "bias"]


def test_constructor_errors(device):
    p = Parameter(core.ones(2, device=device))
    with pytest.raises(ValueError, match="optimizer got an empty parameter list"):
        optim.SGD([], lr=0.1)
    with pytest.raises(TypeError, match="iterable of Tensors or dicts"):
        optim.SGD(p, lr=0.1)
    with pytest.raises(TypeError, match="optimizer can only optimize Tensors"):
        optim.SGD([1.0], lr=0.1)
    with pytest.raises(ValueError, match="can't optimize a non-leaf Tensor"):
        optim.SGD([p * 2], lr=0.1)
    with pytest.raises(ValueError, match="Invalid learning rate: -1"):
        optim.Adam([p], lr=-1)
    with pytest.raises(ValueError, match="Nesterov momentum requires a momentum and zero dampening"):
        optim.SGD([p], lr=0.1, nesterov=True)
    with pytest.raises(ValueError, match="Invalid beta parameter at index 1: 1.0"):
        optim.NAdam([p], betas=(0.9, 1.0))
    with pytest.raises(ValueError, match="Invalid rho value: 1.5"):
        optim.Adadelta([p], rho=1.5)
    with pytest.raises(ValueError, match="Invalid momentum value: -0.1"):
        optim.RMSprop([p], momentum=-0.1)
    with pytest.raises(ValueError, match="Invalid initial_accumulator_value value: -1"):
        optim.Adagrad([p], initial_accumulator_value=-1)


def test_required_option():
    from core.optim.optimizer import required

    class Custom(optim.Optimizer):
        def __init__(self, params, lr=required):
            super().__init__(params, {"lr": lr})

    p = Parameter(core.ones(1))
    with pytest.raises(ValueError, match="didn't specify a value of required optimization parameter lr"):
        Custom([p])
    assert Custom([{"params": [p], "lr": 0.5}]).param_groups[0]["lr"] == 0.5


def test_closure_and_training_with_autograd(device):
    core.manual_seed(0)
    x = core.randn(32, 3, device=device)
    w_true = core.tensor([[1.0], [-2.0], [0.5]], device=device)
    y = x @ w_true
    model = core.nn.Linear(3, 1).to(device)
    opt = optim.SGD(model.parameters(), lr=0.1, momentum=0.5)

    def closure():
        opt.zero_grad()
        loss = ((model(x) - y) ** 2).mean()
        loss.backward()
        return loss

    first = opt.step(closure).item()
    for _ in range(60):
        last = opt.step(closure).item()
    assert last < 1e-3 * first
    assert_close(model.weight.detach(), w_true.t(), rtol=0, atol=1e-4)
    assert model.weight.grad_fn is None and model.weight.requires_grad


def test_step_hooks(device):
    p = Parameter(core.ones(1, device=device))
    p.grad = core.ones(1, device=device)
    opt = optim.SGD([p], lr=0.5)
    calls = []
    pre = opt.register_step_pre_hook(lambda o, args, kwargs: calls.append(("pre", p.item())))
    opt.register_step_post_hook(lambda o, args, kwargs: calls.append(("post", p.item())))
    opt.step()
    assert calls == [("pre", 1.0), ("post", 0.5)]
    pre.remove()
    opt.step()
    assert calls[-1] == ("post", 0.0) and len(calls) == 3


def test_state_dict_hooks(device):
    p = Parameter(core.ones(1, device=device))
    opt = optim.SGD([p], lr=0.5)
    opt.register_state_dict_post_hook(lambda o, sd: {**sd, "extra": 1})
    assert opt.state_dict()["extra"] == 1
    seen = []
    opt.register_load_state_dict_post_hook(lambda o: seen.append(o))
    opt.load_state_dict({"state": {}, "param_groups": [dict(opt.state_dict()["param_groups"][0], lr=0.25)]})
    assert seen == [opt] and opt.param_groups[0]["lr"] == 0.25


def test_custom_optimizer_overriding_step(device):
    class Sign(optim.Optimizer):
        def __init__(self, params, lr=0.1):
            super().__init__(params, {"lr": lr})

        def step(self, closure=None):
            with core.no_grad():
                for group in self.param_groups:
                    for p in group["params"]:
                        p.sub_(p.grad.sign(), alpha=group["lr"])

    p = Parameter(core.tensor([1.0, 2.0], device=device))
    p.grad = core.tensor([-3.0, 4.0], device=device)
    opt = Sign([p])
    hits = []
    opt.register_step_post_hook(lambda *a: hits.append(1))
    opt.step()
    assert_close(p.detach(), np.array([1.1, 1.9], np.float32))
    assert hits == [1] and opt._opt_called


def test_repr_and_pickle_round_trip(device):
    import pickle

    p = Parameter(core.ones(2, device=device))
    p.grad = core.ones(2, device=device)
    opt = optim.Adam([p], lr=0.1)
    opt.step()
    text = repr(opt)
    assert text.startswith("Adam (\nParameter Group 0\n    amsgrad: False\n    betas: (0.9, 0.999)\n")
    assert text.endswith("    weight_decay: 0\n)")
    clone = pickle.loads(pickle.dumps(opt))
    assert clone.param_groups[0]["lr"] == 0.1 and len(clone.state) == 1



def test_tensor_lr(device):
    p = Parameter(core.tensor([1.0], dtype=core.float64, device=device))
    p.grad = core.tensor([2.0], dtype=core.float64, device=device)
    optim.SGD([p], lr=core.tensor(0.25)).step()
    assert math.isclose(p.item(), 0.5)


def test_lbfgs_style_closure_gets_grad_mode(device):
    p = Parameter(core.ones(1, device=device))
    opt = optim.SGD([p], lr=0.1)
    modes = []

    def closure():
        modes.append(core.is_grad_enabled())
        p.grad = core.ones(1, device=device)
        return 1.0

    with core.no_grad(), warnings.catch_warnings():
        assert opt.step(closure) == 1.0
    assert modes == [True]
