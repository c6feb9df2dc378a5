"""core.optim's RAdam, ASGD, Rprop, Adafactor, SparseAdam and LBFGS against PyTorch's documented algorithms.

Each optimizer replays hand-set gradients and is compared with a NumPy transcription of the algorithm box in
PyTorch's docs (ASGD/Adafactor/SparseAdam: of PyTorch's single-tensor implementation, which the docs describe).
LBFGS must minimize the Rosenbrock function; state dicts round trip with PyTorch's key names.
"""

from __future__ import annotations

import copy
import math

import numpy as np
import pytest

import core
from core import optim
from core.nn import Parameter
from core.testing import assert_close

SHAPE = (3, 4)
STEPS = 6


def _data(seed: int = 0, shape=SHAPE):
    rng = np.random.default_rng(seed)
    return rng.standard_normal(shape), [rng.standard_normal(shape) for _ in range(STEPS)]


def ref_radam(x, grads, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0, decoupled_weight_decay=False,
              maximize=False):
    b1, b2 = betas
    m = v = np.zeros_like(x)
    rho_inf = 2 / (1 - b2) - 1
    for t, g in enumerate(grads, 1):
        g = -g if maximize else g
        if weight_decay and decoupled_weight_decay:
            x = x * (1 - lr * weight_decay)
        elif weight_decay:
            g = g + weight_decay * x
        m = b1 * m + (1 - b1) * g
        v = b2 * v + (1 - b2) * g * g
        m_hat = m / (1 - b1 ** t)
        rho_t = rho_inf - 2 * t * b2 ** t / (1 - b2 ** t)
        if rho_t > 5:
            l_t = np.sqrt(1 - b2 ** t) / (np.sqrt(v) + eps)
            r_t = math.sqrt((rho_t - 4) * (rho_t - 2) * rho_inf / ((rho_inf - 4) * (rho_inf - 2) * rho_t))
            x = x - lr * m_hat * l_t * r_t
        else:
            x = x - lr * m_hat
    return x


def ref_asgd(x, grads, lr=1e-2, lambd=1e-4, alpha=0.75, t0=1e6, weight_decay=0, maximize=False):
    eta, mu = np.float32(lr), np.float32(1.0)  # PyTorch keeps eta and mu as float32 scalar tensors
    ax = np.zeros_like(x)
    for t, g in enumerate(grads, 1):
        g = -g if maximize else g
        if weight_decay:
            g = g + weight_decay * x
        x = x * (1 - lambd * float(eta)) - float(eta) * g
        ax = ax + (x - ax) * float(mu) if mu != 1 else x.copy()
        eta = np.float32(lr / (1 + lambd * lr * t) ** alpha)
        mu = np.float32(1 / max(1, t - t0))
    return x, ax


def ref_rprop(x, grads, lr=1e-2, etas=(0.5, 1.2), step_sizes=(1e-6, 50), maximize=False):
    eta_minus, eta_plus = etas
    prev = np.zeros_like(x)
    size = np.full_like(x, lr)
    for g in grads:
        g = -g if maximize else g
        prod = g * prev
        size = np.clip(size * np.where(prod > 0, eta_plus, np.where(prod < 0, eta_minus, 1.0)), *step_sizes)
        g = np.where(prod < 0, 0.0, g)
        x = x - np.sign(g) * size
        prev = g
    return x


def ref_adafactor(x, grads, lr=1e-2, beta2_decay=-0.8, eps=(None, 1e-3), d=1.0, weight_decay=0.0, maximize=False):
    eps1 = np.finfo(np.float64).eps if eps[0] is None else eps[0]
    r = c = v = None
    for t, g in enumerate(grads, 1):
        g = -g if maximize else g
        w = t ** beta2_decay  # 1 - beta2_t
        rho = min(lr, 1 / math.sqrt(t))
        alpha = max(eps[1], np.sqrt(np.mean(x * x))) * rho
        x = x * (1 - lr * weight_decay)
        if g.ndim > 1:
            r = (1 - w) * (0 if r is None else r) + w * np.mean(g * g, axis=-1, keepdims=True)
            c = (1 - w) * (0 if c is None else c) + w * np.mean(g * g, axis=-2, keepdims=True)
            var = r @ c / np.maximum(np.mean(r, axis=-2, keepdims=True), eps1)
        else:
            v = (1 - w) * (0 if v is None else v) + w * g * g
            var = v
        u = g / np.sqrt(np.maximum(var, eps1 * eps1))
        u = u / max(1.0, np.sqrt(np.mean(u * u)) / d)
        x = x - alpha * u
    return x


CASES = {
    "RAdam": (ref_radam, [
        dict(),
        dict(lr=0.1, betas=(0.5, 0.6), eps=1e-6),  # rho_t > 5 from the 2nd step on: the rectified branch
        dict(lr=0.1, betas=(0.5, 0.6), weight_decay=0.1),
        dict(lr=0.1, betas=(0.5, 0.6), weight_decay=0.1, decoupled_weight_decay=True, maximize=True),
    ]),
    "ASGD": (lambda *a, **k: ref_asgd(*a, **k)[0], [
        dict(),
        dict(lr=0.1, lambd=0.01, alpha=0.5, t0=2, weight_decay=0.1),
        dict(lr=0.05, t0=0, maximize=True),
    ]),
    "Rprop": (ref_rprop, [
        dict(),
        dict(lr=0.1, etas=(0.3, 1.5), step_sizes=(0.05, 0.2)),
        dict(lr=0.1, maximize=True),
    ]),
    "Adafactor": (ref_adafactor, [
        dict(),
        dict(lr=0.5, beta2_decay=-0.5, eps=(1e-3, 1e-2), d=1.5, weight_decay=0.1),
        dict(lr=0.2, maximize=True),
    ]),
}
CASE_IDS = [(name, i) for name, (_, options) in CASES.items() for i in range(len(options))]


def _replay(name, options, device, dtype, x0, grads):
    p = Parameter(core.tensor(x0, dtype=dtype, device=device))
    opt = getattr(optim, name)([p], **options)
    for g in grads:
        p.grad = core.tensor(g, dtype=dtype, device=device)
        opt.step()
    return p, opt


@pytest.mark.parametrize("name,index", CASE_IDS, ids=[f"{n}-{i}" for n, i in CASE_IDS])
def test_matches_documented_algorithm(name, index, device):
    reference, cases = CASES[name]
    options = cases[index]
    x0, grads = _data(index)
    p, _ = _replay(name, options, device, core.float64, x0, grads)
    assert_close(p.detach(), reference(x0, grads, **options), rtol=1e-9, atol=1e-11)


@pytest.mark.parametrize("name", ["RAdam", "ASGD", "Rprop", "Adafactor"])
def test_vector_and_float32_params(name, device):
    reference, cases = CASES[name]
    options = cases[1]
    x0, grads = _data(7, shape=(5,))
    p, _ = _replay(name, options, device, core.float32, x0, grads)
    if name == "Adafactor":  # eps1 defaults to the parameter dtype's epsilon
        options = dict(options, eps=(options["eps"][0] or float(np.finfo(np.float32).eps), options["eps"][1]))
    assert_close(p.detach(), reference(x0, grads, **options), check_dtype=False, rtol=1e-5, atol=1e-5)


def test_asgd_average_and_state(device):
    x0, grads = _data(2)
    options = dict(lr=0.1, t0=2)
    p, opt = _replay("ASGD", options, device, core.float64, x0, grads)
    x, ax = ref_asgd(x0, grads, **options)
    state = opt.state[p]
    assert set(state) == {"step", "eta", "mu", "ax"}
    assert_close(state["ax"], ax, rtol=1e-9, atol=1e-11)
    assert state["eta"].item() == pytest.approx(0.1 / (1 + 1e-4 * 0.1 * STEPS) ** 0.75, rel=1e-6)
    assert state["mu"].item() == pytest.approx(1 / (STEPS - 2))


STATE_KEYS = {
    "RAdam": ({}, {"step", "exp_avg", "exp_avg_sq"}),
    "ASGD": ({}, {"step", "eta", "mu", "ax"}),
    "Rprop": ({}, {"step", "prev", "step_size"}),
    "Adafactor": ({}, {"step", "row_var", "col_var"}),
    "Muon": ({"lr": 0.02}, {"momentum_buffer"}),
}


@pytest.mark.parametrize("name", list(STATE_KEYS))
def test_state_dict_round_trip(name, device):
    options, keys = STATE_KEYS[name]
    x0, grads = _data(3)
    p, opt = _replay(name, options, device, core.float64, x0, grads[:3])
    assert set(opt.state[p]) == keys
    saved = copy.deepcopy(opt.state_dict())
    assert set(saved["state"][0]) == keys
    q = Parameter(p.detach().clone())
    other = getattr(optim, name)([q], **options)
    other.load_state_dict(saved)
    for g in grads[3:]:
        p.grad = core.tensor(g, dtype=core.float64, device=device)
        q.grad = core.tensor(g, dtype=core.float64, device=device)
        opt.step()
        other.step()
    # Loading casts floating state to the parameter's dtype (as PyTorch), so ASGD's float32 eta/mu become float64.
    assert_close(q.detach(), p.detach(), rtol=1e-9, atol=1e-11)
    whole, _ = _replay(name, options, device, core.float64, x0, grads)
    assert_close(q.detach(), whole.detach(), rtol=1e-9, atol=1e-11)


def test_constructor_defaults_and_errors():
    p = Parameter(core.zeros(2))
    assert optim.RAdam([p]).defaults["decoupled_weight_decay"] is False
    assert optim.ASGD([p]).defaults["t0"] == 1e6
    assert optim.Rprop([p]).defaults["etas"] == (0.5, 1.2)
    assert optim.Adafactor([p]).defaults["eps"] == (None, 1e-3)
    assert optim.LBFGS([p]).defaults["max_eval"] == 25
    for flags in (dict(foreach=False, maximize=True, capturable=True), dict(foreach=None)):
        optim.RAdam([p], **flags)
        optim.Rprop([p], **flags)
        optim.ASGD([p], **flags)
    with pytest.raises(ValueError, match="Invalid eta values"):
        optim.Rprop([p], etas=(1.5, 1.2))
    with pytest.raises(ValueError, match="beta2_decay should be <= 0"):
        optim.Adafactor([p], beta2_decay=0.5)
    with pytest.raises(ValueError, match="Invalid beta parameter"):
        optim.RAdam([p], betas=(1.0, 0.9))
    with pytest.raises(RuntimeError, match="only 'strong_wolfe' is supported"):
        optim.LBFGS([p], line_search_fn="armijo")
    with pytest.raises(ValueError, match="per-parameter options"):
        optim.LBFGS([{"params": [p]}, {"params": [Parameter(core.zeros(1))]}])
    with pytest.raises(RuntimeError, match="LBFGS requires a closure"):
        optim.LBFGS([p]).step(None)


# -- SparseAdam ---------------------------------------------------------------------------------------------------

def test_sparse_adam_updates_only_touched_entries(device):
    rng = np.random.default_rng(4)
    x0 = rng.standard_normal((5, 3))
    p = Parameter(core.tensor(x0, device=device))
    options = dict(lr=0.1, betas=(0.8, 0.9), eps=1e-6)
    opt = optim.SparseAdam([p], **options)
    x, m, v = x0.copy(), np.zeros_like(x0), np.zeros_like(x0)
    rows_per_step = [[0, 2, 2], [1, 2], [4, 0]]
    for t, rows in enumerate(rows_per_step, 1):
        values = rng.standard_normal((len(rows), 3))
        dense = np.zeros_like(x0)
        np.add.at(dense, rows, values)  # duplicate indices add up when the gradient is coalesced
        p.grad = core.sparse_coo_tensor(core.tensor([rows]), core.tensor(values), (5, 3)).to(device)
        opt.step()
        touched = np.zeros((5, 1), dtype=bool)
        touched[rows] = True
        m = np.where(touched, 0.8 * m + 0.2 * dense, m)
        v = np.where(touched, 0.9 * v + 0.1 * dense * dense, v)
        step = 0.1 * math.sqrt(1 - 0.9 ** t) / (1 - 0.8 ** t)
        x = np.where(touched, x - step * m / (np.sqrt(v) + 1e-6), x)
    assert_close(p.detach(), x, rtol=1e-9, atol=1e-11)
    assert set(opt.state_dict()["state"][0]) == {"step", "exp_avg", "exp_avg_sq"}
    assert_close(opt.state[p]["exp_avg"], m, rtol=1e-9, atol=1e-11)


def test_sparse_adam_errors():
    p = Parameter(core.zeros(3))
    opt = optim.SparseAdam([p])
    p.grad = core.ones(3)
    with pytest.raises(RuntimeError, match="SparseAdam does not support dense gradients"):
        opt.step()
    with pytest.raises(ValueError, match="Invalid learning rate"):
        optim.SparseAdam([p], lr=0.0)


# -- LBFGS --------------------------------------------------------------------------------------------------------

def _rosenbrock(xy):
    return (1 - xy[0]) ** 2 + 100 * (xy[1] - xy[0] ** 2) ** 2


@pytest.mark.parametrize("line_search_fn", [None, "strong_wolfe"])
def test_lbfgs_minimizes_rosenbrock(line_search_fn, device):
    xy = Parameter(core.tensor([-1.5, 2.0], dtype=core.float64, device=device))
    lr = 1 if line_search_fn else 0.1
    opt = optim.LBFGS([xy], lr=lr, max_iter=50, history_size=10, line_search_fn=line_search_fn)

    def closure():
        opt.zero_grad()
        loss = _rosenbrock(xy)
        loss.backward()
        return loss

    first = closure().item()
    for _ in range(40 if line_search_fn else 100):
        loss = opt.step(closure)
    assert loss.item() < first
    assert_close(xy.detach(), np.array([1.0, 1.0]), rtol=0, atol=1e-4)
    state = opt.state_dict()["state"][0]
    assert {"func_evals", "n_iter", "d", "t", "old_dirs", "old_stps", "ro", "H_diag", "prev_flat_grad",
            "prev_loss"} <= set(state)


def test_lbfgs_first_iteration_is_scaled_steepest_descent(device):
    # One iteration: d = -g and t = min(1, 1/|g|_1) * lr, as PyTorch's LBFGS starts.
    x0 = np.array([0.3, -0.7, 1.1])
    p = Parameter(core.tensor(x0, device=device))
    opt = optim.LBFGS([p], lr=0.5, max_iter=1)

    def closure():
        opt.zero_grad()
        loss = (p * p * core.tensor([1.0, 2.0, 3.0], device=device)).sum()
        loss.backward()
        return loss

    opt.step(closure)
    g = 2 * np.array([1.0, 2.0, 3.0]) * x0
    assert_close(p.detach(), x0 - min(1.0, 1 / np.abs(g).sum()) * 0.5 * g, rtol=1e-12, atol=1e-14)


def test_lbfgs_exact_on_quadratic_with_line_search(device):
    # On a convex quadratic, L-BFGS with a Wolfe line search reaches the minimizer A^-1 b.
    rng = np.random.default_rng(5)
    m = rng.standard_normal((4, 4))
    a = m @ m.T + 4 * np.eye(4)
    b = rng.standard_normal(4)
    x = Parameter(core.zeros(4, dtype=core.float64, device=device))
    at, bt = core.tensor(a, device=device), core.tensor(b, device=device)
    opt = optim.LBFGS([x], max_iter=100, line_search_fn="strong_wolfe", tolerance_grad=1e-12,
                      tolerance_change=1e-15)

    def closure():
        opt.zero_grad()
        loss = 0.5 * (x @ (at @ x)) - bt @ x
        loss.backward()
        return loss

    opt.step(closure)
    assert_close(x.detach(), np.linalg.solve(a, b), rtol=1e-7, atol=1e-8)


# -- swa_utils ----------------------------------------------------------------------------------------------------

from core.optim import swa_utils  # noqa: E402


def _snapshots(seed=6, count=4):
    rng = np.random.default_rng(seed)
    return [(rng.standard_normal((2, 3)), rng.standard_normal(2)) for _ in range(count)]


def _averaged(snapshots, device, **kwargs):
    model = core.nn.Linear(3, 2, dtype=core.float64).to(device)
    swa = swa_utils.AveragedModel(model, **kwargs)
    for weight, bias in snapshots:
        with core.no_grad():
            model.weight.copy_(core.tensor(weight, device=device))
            model.bias.copy_(core.tensor(bias, device=device))
        swa.update_parameters(model)
    return swa


def test_averaged_model_swa_mean(device):
    snaps = _snapshots()
    swa = _averaged(snaps, device)
    assert swa.n_averaged.item() == len(snaps) and swa.n_averaged.dtype is core.int64
    assert_close(swa.module.weight.detach(), np.mean([w for w, _ in snaps], axis=0), rtol=1e-12, atol=1e-14)
    assert_close(swa.module.bias.detach(), np.mean([b for _, b in snaps], axis=0), rtol=1e-12, atol=1e-14)
    x = np.random.default_rng(1).standard_normal((4, 3))
    out = swa(core.tensor(x, device=device))
    expected = x @ np.mean([w for w, _ in snaps], axis=0).T + np.mean([b for _, b in snaps], axis=0)
    assert_close(out.detach(), expected, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("kind", ["avg_fn", "multi_avg_fn"])
def test_averaged_model_ema(kind, device):
    snaps = _snapshots(7)
    decay = 0.7
    fn = swa_utils.get_ema_avg_fn(decay) if kind == "avg_fn" else swa_utils.get_ema_multi_avg_fn(decay)
    swa = _averaged(snaps, device, **{kind: fn})
    ema = snaps[0][0]
    for weight, _ in snaps[1:]:
        ema = decay * ema + (1 - decay) * weight
    assert_close(swa.module.weight.detach(), ema, rtol=1e-12, atol=1e-14)


def test_swa_avg_fn_matches_multi_avg_fn(device):
    snaps = _snapshots(8)
    a = _averaged(snaps, device, avg_fn=swa_utils.get_swa_avg_fn())
    b = _averaged(snaps, device, multi_avg_fn=swa_utils.get_swa_multi_avg_fn())
    assert_close(a.module.weight.detach(), b.module.weight.detach(), rtol=1e-12, atol=1e-14)
    assert_close(a.module.weight.detach(), np.mean([w for w, _ in snaps], axis=0), rtol=1e-12, atol=1e-14)
    with pytest.raises(ValueError, match="only one of avg_fn and multi_avg_fn"):
        swa_utils.AveragedModel(core.nn.Linear(1, 1), avg_fn=swa_utils.get_swa_avg_fn(),
                                multi_avg_fn=swa_utils.get_swa_multi_avg_fn())


def test_averaged_model_buffers(device):
    rng = np.random.default_rng(9)
    model = core.nn.BatchNorm1d(3, dtype=core.float64).to(device)
    plain = swa_utils.AveragedModel(model)
    averaged = swa_utils.AveragedModel(model, use_buffers=True)
    means = []
    for _ in range(3):
        model(core.tensor(rng.standard_normal((8, 3)) + 2, device=device))
        means.append(model.running_mean.detach().cpu().numpy().copy())
        plain.update_parameters(model)
        averaged.update_parameters(model)
    assert_close(plain.module.running_mean.detach(), means[-1], rtol=1e-12, atol=1e-14)  # copied
    assert_close(averaged.module.running_mean.detach(), np.mean(means, axis=0), rtol=1e-12, atol=1e-14)


def test_update_bn_recomputes_statistics(device):
    rng = np.random.default_rng(10)
    batches = [rng.standard_normal((5, 3)) * 2 + 1 for _ in range(3)]
    model = core.nn.Sequential(core.nn.BatchNorm1d(3, momentum=0.3, dtype=core.float64)).to(device)
    model.eval()
    loader = [(core.tensor(b, device=device), core.zeros(5)) for b in batches]
    swa_utils.update_bn(loader, model)
    bn = model[0]
    # momentum=None: the cumulative average of the batch statistics (unbiased variance), as PyTorch
    assert_close(bn.running_mean.detach(), np.mean([b.mean(0) for b in batches], axis=0), rtol=1e-12, atol=1e-14)
    assert_close(bn.running_var.detach(), np.mean([b.var(0, ddof=1) for b in batches], axis=0), rtol=1e-12,
                 atol=1e-14)
    assert bn.momentum == 0.3 and not model.training and bn.num_batches_tracked.item() == 3


@pytest.mark.parametrize("strategy", ["cos", "linear"])
def test_swalr_anneals_to_swa_lr(strategy):
    p = Parameter(core.zeros(2))
    opt = optim.SGD([p], lr=1.0)
    sched = swa_utils.SWALR(opt, swa_lr=0.1, anneal_epochs=4, anneal_strategy=strategy)
    anneal = (lambda t: (1 - math.cos(math.pi * t)) / 2) if strategy == "cos" else (lambda t: t)
    lrs = [opt.param_groups[0]["lr"]]
    for _ in range(6):
        opt.step()
        sched.step()
        lrs.append(opt.param_groups[0]["lr"])
    expected = [0.1 * anneal(min(1, t / 4)) + 1.0 * (1 - anneal(min(1, t / 4))) for t in range(7)]
    assert lrs == pytest.approx(expected, rel=1e-12)
    assert sched.get_last_lr() == pytest.approx([0.1])
    with pytest.raises(ValueError, match="anneal_strategy must by one of"):
        swa_utils.SWALR(opt, swa_lr=0.1, anneal_strategy="exp")
    with pytest.raises(ValueError, match="anneal_epochs must be equal or greater than 0"):
        swa_utils.SWALR(opt, swa_lr=0.1, anneal_epochs=-1)


# -- Muon ---------------------------------------------------------------------------------------------------------

def _bf16(a):
    """Round to bfloat16 (round to nearest even on the float32 bits), as every bfloat16 op result is."""
    bits = np.asarray(a, dtype=np.float32).view(np.uint32).astype(np.uint64)
    bits = ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16) << 16
    return bits.astype(np.uint32).view(np.float32).astype(np.float64)


def ref_newton_schulz(g, coefficients=(3.4445, -4.7750, 2.0315), steps=5, eps=1e-7):
    a, b, c = coefficients
    x = _bf16(g)
    tall = x.shape[0] > x.shape[1]
    x = x.T if tall else x
    x = _bf16(x / max(_bf16(np.linalg.norm(x)), eps))
    for _ in range(steps):
        gram = _bf16(x @ x.T)
        x = _bf16(_bf16(a * x) + _bf16(_bf16(_bf16(b * gram) + _bf16(c * _bf16(gram @ gram))) @ x))
    return x.T if tall else x


def ref_muon(x, grads, lr=1e-3, weight_decay=0.1, momentum=0.95, nesterov=True, adjust_lr_fn=None):
    buf = np.zeros_like(x)
    rows, cols = x.shape
    scale = math.sqrt(max(1, rows / cols)) if adjust_lr_fn in (None, "original") else 0.2 * math.sqrt(max(rows, cols))
    for g in grads:
        buf = buf + (g - buf) * (1 - momentum)
        update = g + (buf - g) * momentum if nesterov else buf
        x = x * (1 - lr * weight_decay) - lr * scale * ref_newton_schulz(update)
    return x


@pytest.mark.parametrize("options", [
    dict(), dict(lr=0.02, momentum=0.9, nesterov=False, adjust_lr_fn="match_rms_adamw"),
    dict(lr=0.02, weight_decay=0.0, use_addmm=True)])
@pytest.mark.parametrize("shape", [(3, 5), (6, 2)])
def test_muon_matches_documented_algorithm(options, shape, device):
    x0, grads = _data(11, shape=shape)
    p, opt = _replay("Muon", options, device, core.float64, x0, grads[:3])
    reference = {k: v for k, v in options.items() if k != "use_addmm"}
    expected = ref_muon(x0, grads[:3], **reference)
    # The Newton-Schulz iteration runs in bfloat16 (as PyTorch) and amplifies rounding differences: compare the
    # total displacement (bfloat16 vs float64 alone differ by ~5% here; a wrong rule or scale by far more).
    moved = p.detach().cpu().numpy() - x0
    assert np.linalg.norm(moved - (expected - x0)) / np.linalg.norm(expected - x0) < 0.12
    assert set(opt.state[p]) == {"momentum_buffer"}


def test_muon_orthogonalizes_and_checks():
    g = np.random.default_rng(12).standard_normal((4, 7))
    out = core.optim.muon._zeropower_via_newtonschulz(core.tensor(g), (3.4445, -4.7750, 2.0315), 5, 1e-7, False)
    singular = np.linalg.svd(out.double().numpy(), compute_uv=False)
    assert out.dtype is core.bfloat16 and np.all((singular > 0.5) & (singular < 1.5))
    with pytest.raises(ValueError, match="Muon only supports 2D parameters"):
        optim.Muon([Parameter(core.zeros(3))])
    with pytest.raises(ValueError, match="Adjust learning rate function"):
        optim.Muon([Parameter(core.zeros(2, 2))], adjust_lr_fn="other")


def test_lbfgs_state_dict_round_trip(device):
    a = core.tensor([[3.0, 1.0], [1.0, 2.0]], device=device, dtype=core.float64)

    def run(param, opt, steps):
        def closure():
            opt.zero_grad()
            loss = (param @ (a @ param)) + (param ** 4).sum() - param.sum()
            loss.backward()
            return loss
        for _ in range(steps):
            opt.step(closure)

    p = Parameter(core.tensor([1.5, -2.0], dtype=core.float64, device=device))
    opt = optim.LBFGS([p], max_iter=2, history_size=3)
    run(p, opt, 2)
    saved = copy.deepcopy(opt.state_dict())
    # max_eval defaults to max_iter * 5 // 4 = 2 evaluations, so each step stops after one iteration (as PyTorch)
    assert saved["state"][0]["n_iter"] == 2 and saved["state"][0]["func_evals"] == 4
    q = Parameter(p.detach().clone())
    other = optim.LBFGS([q], max_iter=2, history_size=3)
    other.load_state_dict(saved)
    run(p, opt, 2)
    run(q, other, 2)
    assert_close(q.detach(), p.detach(), rtol=1e-12, atol=1e-14)
    whole = Parameter(core.tensor([1.5, -2.0], dtype=core.float64, device=device))
    run(whole, optim.LBFGS([whole], max_iter=2, history_size=3), 4)
    assert_close(q.detach(), whole.detach(), rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("name", ["RAdam", "ASGD", "Rprop"])
def test_complex_params_update_as_real_pairs(name, device):
    # PyTorch steps a complex parameter as its real view: real and imaginary parts are separate coordinates.
    reference, cases = CASES[name]
    options = cases[-1]
    x0, grads = _data(13)
    xc = x0[:, :2] + 1j * x0[:, 2:]
    gc = [g[:, :2] + 1j * g[:, 2:] for g in grads]
    p, _ = _replay(name, options, device, core.complex128, xc, gc)
    expected = reference(np.stack([xc.real, xc.imag], -1), [np.stack([g.real, g.imag], -1) for g in gc], **options)
    assert_close(p.detach(), expected[..., 0] + 1j * expected[..., 1], rtol=1e-9, atol=1e-11)


# -- swap_in_optimizer_params_and_state ---------------------------------------------------------------------------

def test_swap_in_optimizer_params_and_state(device):
    x0, grads = _data(14)
    live, opt = _replay("Adam", dict(lr=0.1), device, core.float64, x0, grads[:2])
    live_before = live.detach().clone()
    live_state = {k: v.clone() for k, v in opt.state[live].items()}
    saved = copy.deepcopy(opt.state_dict())
    saved["param_groups"][0]["lr"] = 0.05  # the swapped-in group options are used inside the context
    fake = Parameter(core.tensor(x0, device=device) + 1.0)
    fake.grad = core.tensor(grads[2], device=device)
    with optim.swap_in_optimizer_params_and_state(opt, {"w": fake}, saved):
        assert opt.param_groups[0]["params"][0] is fake and opt.param_groups[0]["lr"] == 0.05
        opt.step()
    # the live optimizer is untouched and back in place
    assert opt.param_groups[0]["params"][0] is live and opt.param_groups[0]["lr"] == 0.1
    assert_close(live.detach(), live_before, rtol=0, atol=0)
    assert_close(opt.state[live]["exp_avg"], live_state["exp_avg"], rtol=0, atol=0)
    # the swapped-in parameter and state moved exactly as one more Adam step (lr 0.05) from the saved state would
    ref = Parameter(core.tensor(x0, device=device) + 1.0)
    ref_opt = optim.Adam([ref], lr=0.05)
    ref_opt.load_state_dict(copy.deepcopy(opt.state_dict()) | {"param_groups": saved["param_groups"]})
    ref.grad = core.tensor(grads[2], device=device)
    ref_opt.step()
    assert_close(fake.detach(), ref.detach(), rtol=1e-12, atol=1e-14)
    assert_close(saved["state"][0]["exp_avg"], ref_opt.state[ref]["exp_avg"], rtol=1e-12, atol=1e-14)
    with pytest.raises(RuntimeError, match="different number of params"):
        bad = copy.deepcopy(saved)
        bad["param_groups"][0]["params"] = []
        with optim.swap_in_optimizer_params_and_state(opt, {"w": fake}, bad):
            pass
    with pytest.raises(RuntimeError, match="requires initialized optimizer state"):
        with optim.swap_in_optimizer_params_and_state(optim.Adam([Parameter(core.zeros(1))]), {}, saved):
            pass


# -- more behaviour -----------------------------------------------------------------------------------------------

def test_lbfgs_least_squares_over_several_params(device):
    # The flat view spans weight and bias: the result is the least-squares fit.
    rng = np.random.default_rng(15)
    x, y = rng.standard_normal((20, 3)), rng.standard_normal((20, 2))
    model = core.nn.Linear(3, 2, dtype=core.float64).to(device)
    xt, yt = core.tensor(x, device=device), core.tensor(y, device=device)
    opt = optim.LBFGS(model.parameters(), max_iter=200, line_search_fn="strong_wolfe", tolerance_grad=1e-12,
                      tolerance_change=1e-15)

    def closure():
        opt.zero_grad()
        loss = ((model(xt) - yt) ** 2).mean()
        loss.backward()
        return loss

    opt.step(closure)
    coef, *_ = np.linalg.lstsq(np.hstack([x, np.ones((20, 1))]), y, rcond=None)
    assert_close(model.weight.detach(), coef[:3].T, rtol=1e-6, atol=1e-8)
    assert_close(model.bias.detach(), coef[3], rtol=1e-6, atol=1e-8)


def test_sparse_adam_maximize_and_sparse_params():
    p = Parameter(core.zeros(4, dtype=core.float64))
    opt = optim.SparseAdam([p], lr=0.1, maximize=True)
    p.grad = core.sparse_coo_tensor(core.tensor([[1, 3]]), core.tensor([2.0, -1.0], dtype=core.float64), (4,))
    opt.step()
    # first step: m_hat / sqrt(v_hat) = sign(g), so maximize moves each touched entry by +lr * sign(g)
    assert_close(p.detach(), np.array([0.0, 0.1, 0.0, -0.1]), rtol=1e-6, atol=1e-8)
    sparse = core.sparse_coo_tensor(core.tensor([[0]]), core.tensor([1.0]), (2,)).requires_grad_()
    with pytest.raises(ValueError, match=r"Sparse params at indices \[\[0, 1\]\]: SparseAdam requires dense"):
        optim.SparseAdam([Parameter(core.zeros(2)), sparse])
    with pytest.raises(ValueError, match=r"Complex params at indices \[\[1, 0\]\]: SparseAdam does not support"):
        optim.SparseAdam([{"params": [Parameter(core.zeros(2))]}, {"params": [Parameter(core.zeros(2) * 1j)]}])


def test_adafactor_and_muon_refuse_complex():
    p = Parameter(core.zeros(2, 2, dtype=core.complex64))
    p.grad = core.ones(2, 2, dtype=core.complex64)
    for name in ("Adafactor", "Muon"):
        with pytest.raises(RuntimeError, match=f"{name} does not support complex parameters"):
            getattr(optim, name)([p]).step()


def test_swalr_state_dict_round_trip():
    def make():
        opt = optim.SGD([Parameter(core.zeros(1))], lr=1.0)
        return opt, swa_utils.SWALR(opt, swa_lr=0.2, anneal_epochs=5, anneal_strategy="linear")

    opt, sched = make()
    for _ in range(2):
        opt.step()
        sched.step()
    saved = copy.deepcopy(sched.state_dict())
    other_opt, other = make()
    other_opt.load_state_dict(opt.state_dict())
    other.load_state_dict(saved)
    for _ in range(2):
        for o, s in ((opt, sched), (other_opt, other)):
            o.step()
            s.step()
    assert other.get_last_lr() == pytest.approx(sched.get_last_lr(), rel=1e-15)
    assert sched.get_last_lr() == pytest.approx([0.2 * 0.8 + 1.0 * 0.2])
