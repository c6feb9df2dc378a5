"""core.optim.lr_scheduler: learning-rate (and momentum) sequences against closed forms, and against
torch.optim.lr_scheduler when it is installed; state-dict round trips; warnings and errors as in PyTorch.
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
from core.optim import lr_scheduler as sched

LRS = (0.1, 0.05)


def make_optimizer(kind: str = "SGD", lrs=LRS, device="cpu", lib=None):
    """An optimizer with one param group per learning rate (from torch when ``lib`` is torch)."""
    if lib is None:
        params = [Parameter(core.zeros(2, device=device)) for _ in lrs]
        module = optim
    else:
        params = [lib.nn.Parameter(lib.zeros(2)) for _ in lrs]
        module = lib.optim
    options = {"momentum": 0.9} if kind == "SGD" else {}
    return getattr(module, kind)([{"params": [p], "lr": lr} for p, lr in zip(params, lrs)], **options)


def run(scheduler, optimizer, steps: int, metrics=None) -> list:
    """The rates after construction and after each of ``steps`` (optimizer step, scheduler step) pairs."""
    out = [scheduler.get_last_lr()]
    for i in range(steps):
        optimizer.step()
        if metrics is None:
            scheduler.step()
        else:
            scheduler.step(metrics[i])
        out.append(scheduler.get_last_lr())
        assert out[-1] == [g["lr"] for g in optimizer.param_groups]
    return out


def momenta(optimizer) -> list:
    return [g["betas"][0] if "betas" in g else g["momentum"] for g in optimizer.param_groups]


def assert_sequences(actual, expected):
    np.testing.assert_allclose(np.array(actual, dtype=float), np.array(expected, dtype=float), rtol=1e-12,
                               atol=1e-15)


# -- closed forms ---------------------------------------------------------------------------------------------

CLOSED_FORMS = {
    "StepLR": (dict(step_size=3, gamma=0.5), lambda b, t: b * 0.5 ** (t // 3)),
    "MultiStepLR": (dict(milestones=[2, 5, 5, 9], gamma=0.5),
                    lambda b, t: b * 0.5 ** sum(t >= m for m in [2, 5, 5, 9])),
    "ExponentialLR": (dict(gamma=0.9), lambda b, t: b * 0.9 ** t),
    "CosineAnnealingLR": (dict(T_max=7, eta_min=0.001),
                          lambda b, t: 0.001 + (b - 0.001) * (1 + math.cos(math.pi * t / 7)) / 2),
    "LambdaLR": (dict(lr_lambda=lambda e: 1 / (1 + e)), lambda b, t: b / (1 + t)),
    "MultiplicativeLR": (dict(lr_lambda=lambda e: 0.95), lambda b, t: b * 0.95 ** t),
    "LinearLR": (dict(start_factor=0.2, end_factor=0.9, total_iters=6),
                 lambda b, t: b * (0.2 + 0.7 * min(t, 6) / 6)),
    "ConstantLR": (dict(factor=0.5, total_iters=4), lambda b, t: b * (0.5 if t < 4 else 1.0)),
    "PolynomialLR": (dict(total_iters=8, power=2.0), lambda b, t: b * (1 - min(t, 8) / 8) ** 2),
    "CosineAnnealingWarmRestarts": (dict(T_0=3, T_mult=2, eta_min=0.001),
                                    lambda b, t: _sgdr(b, t, 3, 2, 0.001)),
}


def _sgdr(base: float, t: int, t0: int, mult: int, eta_min: float) -> float:
    period, start = t0, 0
    while t >= start + period:
        start, period = start + period, period * mult
    return eta_min + (base - eta_min) * (1 + math.cos(math.pi * (t - start) / period)) / 2


@pytest.mark.parametrize("name", list(CLOSED_FORMS))
def test_matches_closed_form(name, device):
    options, formula = CLOSED_FORMS[name]
    opt = make_optimizer(device=device)
    s = getattr(sched, name)(opt, **options)
    lrs = run(s, opt, 30)
    assert_sequences(lrs, [[formula(b, t) for b in LRS] for t in range(31)])


def test_cosine_annealing_keeps_going_past_t_max(device):
    # The recursive form continues the cosine past T_max: the rate climbs back up to the initial one.
    opt = make_optimizer(device=device)
    s = sched.CosineAnnealingLR(opt, T_max=4)
    lrs = run(s, opt, 12)
    assert_sequences(lrs, [[b * (1 + math.cos(math.pi * t / 4)) / 2 for b in LRS] for t in range(13)])


def test_cyclic_lr_modes(device):
    for mode, scale in [("triangular", lambda c, it: 1.0), ("triangular2", lambda c, it: 1 / 2 ** (c - 1)),
                        ("exp_range", lambda c, it: 0.9 ** it)]:
        opt = make_optimizer(device=device)
        s = sched.CyclicLR(opt, base_lr=0.01, max_lr=[0.1, 0.2], step_size_up=4, step_size_down=2, mode=mode,
                           gamma=0.9)
        lrs, moms = [s.get_last_lr()], [momenta(opt)]
        for _ in range(20):
            opt.step()
            s.step()
            lrs.append(s.get_last_lr())
            moms.append(momenta(opt))
        expected_lrs, expected_moms = [], []
        for it in range(21):
            cycle = it // 6 + 1
            pos = it % 6
            height = pos / 4 if pos <= 4 else (6 - pos) / 2
            expected_lrs.append([0.01 + (m - 0.01) * height * scale(cycle, it) for m in (0.1, 0.2)])
            expected_moms.append([0.9 - 0.1 * height * scale(cycle, it)] * 2)
        assert_sequences(lrs, expected_lrs)
        assert_sequences(moms, expected_moms)


def test_cyclic_lr_cycles_adam_beta1_and_checks_the_optimizer(device):
    opt = make_optimizer("Adam", device=device)
    s = sched.CyclicLR(opt, 0.001, 0.01, step_size_up=2, base_momentum=0.7, max_momentum=0.95)
    assert opt.param_groups[0]["betas"] == (0.95, 0.999)
    opt.step()
    s.step()
    assert math.isclose(opt.param_groups[0]["betas"][0], 0.95 - 0.25 * 0.5)
    assert opt.param_groups[0]["betas"][1] == 0.999
    with pytest.raises(ValueError, match="optimizer must support momentum or beta1"):
        sched.CyclicLR(make_optimizer("Adagrad", device=device), 0.001, 0.01)
    with pytest.raises(ValueError, match="mode is invalid and scale_fn is None"):
        sched.CyclicLR(make_optimizer(device=device), 0.001, 0.01, mode="sawtooth")


def test_cyclic_lr_custom_scale_fn(device):
    opt = make_optimizer(device=device)
    s = sched.CyclicLR(opt, 0.0, 1.0, step_size_up=1, scale_fn=lambda x: 0.5, scale_mode="iterations",
                       cycle_momentum=False)
    lrs = run(s, opt, 4)
    assert_sequences(lrs, [[0.0, 0.0], [0.5, 0.5], [0.0, 0.0], [0.5, 0.5], [0.0, 0.0]])


@pytest.mark.parametrize("three_phase", [False, True])
@pytest.mark.parametrize("anneal", ["cos", "linear"])
def test_one_cycle_lr(anneal, three_phase, device):
    total, max_lr = 20, (1.0, 2.0)
    opt = make_optimizer("Adam", device=device)
    s = sched.OneCycleLR(opt, max_lr=list(max_lr), total_steps=total, anneal_strategy=anneal,
                         three_phase=three_phase)

    def anneal_fn(start, end, pct):
        if anneal == "cos":
            return end + (start - end) / 2 * (math.cos(math.pi * pct) + 1)
        return start + (end - start) * pct

    up = 0.3 * total - 1
    phases = ([(up, "init", "max", 0.95, 0.85), (2 * 0.3 * total - 2, "max", "init", 0.85, 0.95),
               (total - 1, "init", "min", 0.95, 0.95)] if three_phase else
              [(up, "init", "max", 0.95, 0.85), (total - 1, "max", "min", 0.85, 0.95)])
    lrs, moms = [s.get_last_lr()], [momenta(opt)]
    for _ in range(total - 1):
        opt.step()
        s.step()
        lrs.append(s.get_last_lr())
        moms.append(momenta(opt))
    expected_lrs, expected_moms = [], []
    for t in range(total):
        index = next(i for i, phase in enumerate(phases) if t <= phase[0] or i == len(phases) - 1)
        start = phases[index - 1][0] if index else 0.0
        end, a, b, ma, mb = phases[index]
        pct = (t - start) / (end - start)
        values = [{"init": m / 25, "max": m, "min": m / 25 / 1e4} for m in max_lr]
        expected_lrs.append([anneal_fn(v[a], v[b], pct) for v in values])
        expected_moms.append([anneal_fn(ma, mb, pct)] * 2)
    assert_sequences(lrs, expected_lrs)
    assert_sequences(moms, expected_moms)
    assert math.isclose(lrs[0][0], 1.0 / 25) and math.isclose(lrs[-1][0], 1.0 / 25 / 1e4)
    opt.step()
    s.step()
    with pytest.raises(ValueError, match=f"Tried to step {total + 1} times"):
        s.step()


def test_one_cycle_lr_arguments(device):
    opt = make_optimizer(device=device)
    assert sched.OneCycleLR(opt, 0.1, epochs=3, steps_per_epoch=4).total_steps == 12
    with pytest.raises(ValueError, match="You must define either total_steps OR"):
        sched.OneCycleLR(opt, 0.1)
    with pytest.raises(ValueError, match="Expected positive integer total_steps, but got 0"):
        sched.OneCycleLR(opt, 0.1, total_steps=0)
    with pytest.raises(ValueError, match="anneal_strategy must be one of 'cos' or 'linear'"):
        sched.OneCycleLR(opt, 0.1, total_steps=5, anneal_strategy="step")
    with pytest.raises(ValueError, match="Expected float between 0 and 1 pct_start"):
        sched.OneCycleLR(opt, 0.1, total_steps=5, pct_start=1.5)
    with pytest.raises(ValueError, match="max_lr must have the same length as optimizer.param_groups"):
        sched.OneCycleLR(opt, [0.1], total_steps=5)


def test_sequential_lr(device):
    opt = make_optimizer(device=device)
    warmup = sched.LinearLR(opt, start_factor=0.1, total_iters=4)
    decay = sched.ExponentialLR(opt, gamma=0.9)
    s = sched.SequentialLR(opt, [warmup, decay], milestones=[4])
    lrs = run(s, opt, 10)
    expected = [[b * (0.1 + 0.9 * t / 4) if t < 4 else b * 0.9 ** (t - 4) for b in LRS] for t in range(11)]
    assert_sequences(lrs, expected)


def test_chained_scheduler(device):
    opt = make_optimizer(device=device)
    s = sched.ChainedScheduler([sched.ConstantLR(opt, factor=0.5, total_iters=3), sched.ExponentialLR(opt, 0.9)])
    lrs = run(s, opt, 6)
    assert_sequences(lrs, [[b * 0.9 ** t * (0.5 if t < 3 else 1) for b in LRS] for t in range(7)])


def test_reduce_lr_on_plateau(device):
    opt = make_optimizer(device=device)
    s = sched.ReduceLROnPlateau(opt, mode="min", factor=0.5, patience=2, cooldown=1, min_lr=[0.02, 0.0])
    metrics = [5, 4, 4, 4, 4, 4, 4, 3.9999, 4, 4, 4, 4, 4]
    lrs = run(s, opt, len(metrics), metrics)
    # Improvements at steps 1, 2; three bad epochs (3, 4, 5) > patience: reduce at 5; cooldown eats step 6;
    # then 7 (a relative change of 2.5e-5 < threshold: bad), 8, 9 reduce at 9; cooldown 10; 11, 12, 13 reduce at 13.
    expected = [LRS] * 5 + [(0.05, 0.025)] * 4 + [(0.025, 0.0125)] * 4 + [(0.02, 0.00625)]
    assert_sequences(lrs, expected)
    assert s.num_bad_epochs == 0 and s.cooldown_counter == 1


@pytest.mark.parametrize("mode,threshold_mode,metrics,reductions", [
    ("max", "rel", [1.0, 1.05, 1.0501, 1.2, 1.21, 1.22], 1),
    ("max", "abs", [1.0, 1.2, 1.25, 1.29, 1.3], 0),
    ("min", "abs", [1.0, 0.95, 0.94, 0.93, 0.92], 1),
])
def test_reduce_lr_on_plateau_modes(mode, threshold_mode, metrics, reductions, device):
    opt = make_optimizer(device=device)
    s = sched.ReduceLROnPlateau(opt, mode=mode, threshold_mode=threshold_mode, threshold=0.05, patience=1)
    for m in metrics:
        s.step(m)
    assert_sequences(s.get_last_lr(), [b * 0.1 ** reductions for b in LRS])


def test_reduce_lr_on_plateau_errors(device):
    opt = make_optimizer(device=device)
    with pytest.raises(ValueError, match="Factor should be < 1.0."):
        sched.ReduceLROnPlateau(opt, factor=1.0)
    with pytest.raises(ValueError, match="mode average is unknown!"):
        sched.ReduceLROnPlateau(opt, mode="average")
    with pytest.raises(ValueError, match="threshold mode pct is unknown!"):
        sched.ReduceLROnPlateau(opt, threshold_mode="pct")
    with pytest.raises(ValueError, match="expected 2 min_lrs, got 1"):
        sched.ReduceLROnPlateau(opt, min_lr=[0.1])
    with pytest.raises(TypeError, match="int is not an Optimizer"):
        sched.ReduceLROnPlateau(3)


def test_warm_restarts_with_fractional_epochs(device):
    opt = make_optimizer(device=device)
    s = sched.CosineAnnealingWarmRestarts(opt, T_0=2, T_mult=2, eta_min=0.0)
    for epoch in [0.0, 0.5, 1.75, 2.0, 3.5, 6.0, 6.25, 13.0]:
        s.step(epoch)  # the documented per-batch use: no deprecation warning here
        assert_sequences(s.get_last_lr(), [_sgdr_float(b, epoch) for b in LRS])
        assert s.last_epoch == math.floor(epoch)
    with pytest.raises(ValueError, match="Expected non-negative epoch, but got -1"):
        s.step(-1)
    with pytest.raises(ValueError, match="Expected positive integer T_0, but got 0"):
        sched.CosineAnnealingWarmRestarts(opt, T_0=0)
    with pytest.raises(ValueError, match="Expected integer T_mult >= 1, but got 0"):
        sched.CosineAnnealingWarmRestarts(opt, T_0=1, T_mult=0)


def _sgdr_float(base: float, epoch: float) -> float:
    period, start = 2, 0
    while epoch >= start + period:
        start, period = start + period, period * 2
    return base * (1 + math.cos(math.pi * (epoch - start) / period)) / 2


@pytest.mark.parametrize("name", ["StepLR", "MultiStepLR", "ExponentialLR", "CosineAnnealingLR", "LinearLR",
                                  "ConstantLR", "PolynomialLR"])
def test_step_with_epoch_uses_the_closed_form(name, device):
    options, formula = CLOSED_FORMS[name]
    opt = make_optimizer(device=device)
    s = getattr(sched, name)(opt, **options)
    opt.step()
    for epoch in [3, 7, 2, 12]:
        with pytest.warns(UserWarning, match="epoch parameter"):
            s.step(epoch)
        assert_sequences(s.get_last_lr(), [formula(b, epoch) for b in LRS])


# -- state dicts ----------------------------------------------------------------------------------------------

def _builders():
    return {
        "StepLR": lambda o: sched.StepLR(o, 3, 0.5),
        "MultiStepLR": lambda o: sched.MultiStepLR(o, [2, 5], 0.5),
        "ExponentialLR": lambda o: sched.ExponentialLR(o, 0.9),
        "CosineAnnealingLR": lambda o: sched.CosineAnnealingLR(o, 5, 0.001),
        "CosineAnnealingWarmRestarts": lambda o: sched.CosineAnnealingWarmRestarts(o, 2, 2),
        "CyclicLR": lambda o: sched.CyclicLR(o, 0.01, 0.1, 3, mode="exp_range", gamma=0.95),
        "OneCycleLR": lambda o: sched.OneCycleLR(o, 0.5, total_steps=20),
        "LambdaLR": lambda o: sched.LambdaLR(o, _Decay(0.8)),
        "MultiplicativeLR": lambda o: sched.MultiplicativeLR(o, lambda e: 0.9),
        "LinearLR": lambda o: sched.LinearLR(o, 0.1, 1.0, 6),
        "ConstantLR": lambda o: sched.ConstantLR(o, 0.25, 5),
        "SequentialLR": lambda o: sched.SequentialLR(o, [sched.ConstantLR(o, 0.5, 3), sched.StepLR(o, 2, 0.5)],
                                                     [4]),
        "ChainedScheduler": lambda o: sched.ChainedScheduler([sched.LinearLR(o, 0.5, 1.0, 4),
                                                              sched.ExponentialLR(o, 0.9)]),
        "ReduceLROnPlateau": lambda o: sched.ReduceLROnPlateau(o, patience=1, factor=0.5),
    }


class _Decay:
    """A callable object: its attributes travel in LambdaLR's state dict."""

    def __init__(self, rate: float):
        self.rate = rate

    def __call__(self, epoch: int) -> float:
        return self.rate ** epoch


METRICS = [3.0, 2.0, 2.0, 2.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0]


@pytest.mark.parametrize("name", list(_builders()))
def test_state_dict_round_trip(name, device):
    build = _builders()[name]
    plateau = name == "ReduceLROnPlateau"
    opt = make_optimizer(device=device)
    s = build(opt)
    run(s, opt, 6, METRICS[:6] if plateau else None)
    saved = copy.deepcopy((opt.state_dict(), s.state_dict()))
    assert "optimizer" not in saved[1]
    rest = run(s, opt, 8, METRICS[6:] if plateau else None)

    opt2 = make_optimizer(device=device)
    s2 = build(opt2)
    if name == "LambdaLR":
        s2.lr_lambdas[0].rate = 0.123  # restored from the state dict below
    opt2.load_state_dict(saved[0])
    s2.load_state_dict(saved[1])
    if name == "LambdaLR":
        assert s2.lr_lambdas[0].rate == 0.8
    assert run(s2, opt2, 8, METRICS[6:] if plateau else None) == rest


def test_resume_with_last_epoch(device):
    opt = make_optimizer(device=device)
    with pytest.raises(KeyError, match="param 'initial_lr' is not specified in param_groups\\[0\\]"):
        sched.StepLR(opt, 2, last_epoch=3)
    s = sched.ExponentialLR(opt, 0.5)
    run(s, opt, 3)
    resumed = sched.ExponentialLR(opt, 0.5, last_epoch=s.last_epoch)
    assert resumed.last_epoch == 4 and resumed.base_lrs == list(LRS)
    assert_sequences(resumed.get_last_lr(), [b * 0.5 ** 3 for b in LRS])


# -- warnings and errors --------------------------------------------------------------------------------------

def test_warns_when_stepped_before_the_optimizer(device):
    opt = make_optimizer(device=device)
    s = sched.StepLR(opt, 2)
    with pytest.warns(UserWarning, match="Detected call of `lr_scheduler.step\\(\\)` before `optimizer.step\\(\\)`"):
        s.step()
    opt = make_optimizer(device=device)
    s = sched.StepLR(opt, 2)
    opt.step()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        s.step()
        s.step()


def test_get_lr_outside_step_warns(device):
    opt = make_optimizer(device=device)
    s = sched.ExponentialLR(opt, 0.5)
    with pytest.warns(UserWarning, match="please use `get_last_lr\\(\\)`"):
        s.get_lr()


def test_scheduler_errors(device):
    opt = make_optimizer(device=device)
    with pytest.raises(TypeError, match="list is not an Optimizer"):
        sched.StepLR([], 2)
    with pytest.raises(ValueError, match="Expected 2 lr_lambdas, but got 1"):
        sched.LambdaLR(opt, [lambda e: 1.0])
    with pytest.raises(TypeError, match="lr_lambda should be a function, but got float"):
        sched.MultiplicativeLR(opt, 0.5)
    with pytest.raises(ValueError, match="Constant multiplicative factor expected to be between 0 and 1."):
        sched.ConstantLR(opt, factor=2.0)
    with pytest.raises(ValueError, match="Starting multiplicative factor expected to be greater than 0"):
        sched.LinearLR(opt, start_factor=0)
    with pytest.raises(ValueError, match="Sequential Schedulers expects number of schedulers provided to be one "
                                         "more than the number of milestone points"):
        sched.SequentialLR(opt, [sched.StepLR(opt, 2)], milestones=[3])
    with pytest.raises(ValueError, match="does not support `ReduceLROnPlateau`"):
        sched.SequentialLR(opt, [sched.StepLR(opt, 2), sched.ReduceLROnPlateau(opt)], milestones=[3])
    with pytest.raises(ValueError, match="expects all schedulers to belong to the same optimizer"):
        sched.SequentialLR(opt, [sched.StepLR(opt, 2), sched.StepLR(make_optimizer(device=device), 2)], [3])


def test_tensor_learning_rate_is_updated_in_place(device):
    p = Parameter(core.zeros(2, device=device))
    lr = core.tensor(0.1, dtype=core.float64)
    opt = optim.SGD([p], lr=lr)
    s = sched.ExponentialLR(opt, 0.5)
    opt.step()
    s.step()
    assert opt.param_groups[0]["lr"] is lr and math.isclose(lr.item(), 0.05)
    assert math.isclose(s.get_last_lr()[0].item(), 0.05) and s.get_last_lr()[0] is not lr


# -- against PyTorch ------------------------------------------------------------------------------------------

TORCH_CASES = {
    "StepLR": ("SGD", lambda m, o: m.StepLR(o, 3, 0.5)),
    "MultiStepLR": ("SGD", lambda m, o: m.MultiStepLR(o, [2, 5, 5, 9], 0.5)),
    "ExponentialLR": ("SGD", lambda m, o: m.ExponentialLR(o, 0.9)),
    "CosineAnnealingLR": ("SGD", lambda m, o: m.CosineAnnealingLR(o, 7, 0.01)),
    "CosineAnnealingWarmRestarts": ("SGD", lambda m, o: m.CosineAnnealingWarmRestarts(o, 3, 2, 0.001)),
    "CyclicLR-tri2": ("SGD", lambda m, o: m.CyclicLR(o, 0.01, 0.1, 4, 3, mode="triangular2")),
    "CyclicLR-exp": ("Adam", lambda m, o: m.CyclicLR(o, [0.01, 0.02], 0.1, 4, mode="exp_range", gamma=0.9)),
    "OneCycleLR": ("SGD", lambda m, o: m.OneCycleLR(o, 1.0, total_steps=31)),
    "OneCycleLR-3": ("Adam", lambda m, o: m.OneCycleLR(o, [1.0, 2.0], total_steps=31, three_phase=True,
                                                       anneal_strategy="linear")),
    "LambdaLR": ("SGD", lambda m, o: m.LambdaLR(o, [lambda e: 0.95 ** e, lambda e: 1 / (e + 1)])),
    "MultiplicativeLR": ("SGD", lambda m, o: m.MultiplicativeLR(o, lambda e: 0.95)),
    "LinearLR": ("SGD", lambda m, o: m.LinearLR(o, 0.2, 0.9, 6)),
    "ConstantLR": ("SGD", lambda m, o: m.ConstantLR(o, 0.5, 4)),
    "PolynomialLR": ("SGD", lambda m, o: m.PolynomialLR(o, 8, 2.0)),
    "SequentialLR": ("SGD", lambda m, o: m.SequentialLR(o, [m.LinearLR(o, 0.1, 1.0, 5), m.ExponentialLR(o, 0.9),
                                                           m.CosineAnnealingLR(o, 5)], [5, 12])),
    "ChainedScheduler": ("SGD", lambda m, o: m.ChainedScheduler([m.ConstantLR(o, 0.5, 4), m.ExponentialLR(o, 0.9)])),
    "ReduceLROnPlateau": ("SGD", lambda m, o: m.ReduceLROnPlateau(o, patience=2, cooldown=1, factor=0.5,
                                                                  min_lr=0.02)),
}


@pytest.mark.parametrize("name", list(TORCH_CASES))
def test_matches_torch(name, device):
    torch = pytest.importorskip("torch")
    kind, build = TORCH_CASES[name]
    metrics = [5, 4, 4, 4, 4, 4] + [3] * 30 if name == "ReduceLROnPlateau" else None
    sequences = []
    for lib, module in ((None, sched), (torch, torch.optim.lr_scheduler)):
        opt = make_optimizer(kind, lib=lib, device=device)
        s = build(module, opt)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            lrs = [(s.get_last_lr(), momenta(opt))]
            for i in range(30):
                opt.step()
                s.step(metrics[i]) if metrics else s.step()
                lrs.append((s.get_last_lr(), momenta(opt)))
        sequences.append(lrs)
    assert sequences[0] == sequences[1]
