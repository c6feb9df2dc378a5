"""Loss functionals and modules against NumPy formulas (and torch when installed): reductions, class weights,
ignore_index, label smoothing, probability targets, CTC, float64 gradchecks, errors, buffers and reprs."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import core
import core.nn as nn
import core.nn.functional as F
from core.autograd import gradcheck
from core.testing import assert_close

RNG = np.random.default_rng(0)
INPUT = RNG.standard_normal((4, 5))
TARGET = RNG.standard_normal((4, 5))
CLASSES = np.array([1, 0, 4, 2])
CLASS_WEIGHT = np.array([0.5, 1.0, 2.0, 0.25, 1.5])


def t(a, device, dtype=None, requires_grad=False):
    return core.tensor(a, device=device, dtype=dtype, requires_grad=requires_grad)


def reduce(loss, reduction):
    return {"none": loss, "mean": np.mean(loss), "sum": np.sum(loss)}[reduction]


def np_log_softmax(x, dim=1):
    shifted = x - x.max(dim, keepdims=True)
    return shifted - np.log(np.exp(shifted).sum(dim, keepdims=True))


def np_nll(log_probs, target, weight=None, ignore_index=-100, reduction="mean"):
    """Class-index NLL for (N, C, ...) log-probabilities, written with NumPy fancy indexing."""
    weight = np.ones(log_probs.shape[1]) if weight is None else weight
    kept = target != ignore_index
    safe = np.where(kept, target, 0)
    picked = np.take_along_axis(log_probs, safe[:, None], 1)[:, 0]
    sample_weight = weight[safe] * kept
    loss = -picked * sample_weight
    if reduction == "mean":
        return loss.sum() / sample_weight.sum()
    return reduce(loss, reduction)


def np_smoothed_cross_entropy(x, target, smoothing, weight=None, ignore_index=-100, reduction="mean"):
    """PyTorch's label smoothing for class indices: (1 - ε) nll + ε/C Σ_c -w_c log p_c, ignored rows dropped."""
    log_probs = np_log_softmax(x)
    classes = x.shape[1]
    w = np.ones(classes) if weight is None else weight
    kept = target != ignore_index
    smooth = -(log_probs * w.reshape((1, -1) + (1,) * (x.ndim - 2))).sum(1) * kept
    if reduction == "mean":
        smooth = smooth.sum() / (w[np.where(kept, target, 0)] * kept).sum()
    else:
        smooth = reduce(smooth, reduction)
    return (1 - smoothing) * np_nll(log_probs, target, weight, ignore_index, reduction) + smoothing / classes * smooth


# -- regression losses ------------------------------------------------------------------------------------------------

REGRESSION = {
    "mse_loss": ({}, lambda d: d * d),
    "l1_loss": ({}, np.abs),
    "smooth_l1_loss": ({"beta": 0.7}, lambda d: np.where(np.abs(d) < 0.7, 0.5 * d * d / 0.7, np.abs(d) - 0.35)),
    "huber_loss": ({"delta": 0.7}, lambda d: np.where(np.abs(d) < 0.7, 0.5 * d * d, 0.7 * (np.abs(d) - 0.35))),
}


@pytest.mark.parametrize("name", REGRESSION)
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_regression_losses_match_numpy(device, name, reduction):
    kwargs, reference = REGRESSION[name]
    expected = reduce(reference(INPUT - TARGET), reduction)
    assert_close(getattr(F, name)(t(INPUT, device), t(TARGET, device), reduction=reduction, **kwargs), expected)
    x32, y32 = t(INPUT, device, core.float32), t(TARGET, device, core.float32)
    assert_close(getattr(F, name)(x32.T, y32.T, reduction=reduction, **kwargs),
                 np.asarray(reduce(reference(INPUT - TARGET).T, reduction), np.float32))


def test_regression_losses_weights_broadcasting_and_legacy_flags(device):
    weight = RNG.random((4, 5))
    d = INPUT - TARGET
    x, y, w = t(INPUT, device), t(TARGET, device), t(weight, device)
    assert_close(F.mse_loss(x, y, weight=w), (d * d * weight).sum() / weight.sum())
    assert_close(F.l1_loss(x, y, weight=w, reduction="sum"), (np.abs(d) * weight).sum())
    huber = REGRESSION["huber_loss"][1](d)
    assert_close(F.huber_loss(x, y, delta=0.7, weight=w), (huber * weight).mean())
    with pytest.raises(ValueError, match="Weights and input must have the same size"):
        F.mse_loss(x, y, weight=w[0])
    with pytest.warns(UserWarning, match="that is different to the input size"):
        assert_close(F.mse_loss(x, y[0]), ((INPUT - TARGET[0]) ** 2).mean())
    with pytest.warns(UserWarning, match="please use reduction='sum' instead"):
        assert_close(F.mse_loss(x, y, size_average=False), (d * d).sum())
    with pytest.warns(UserWarning, match="please use reduction='none' instead"):
        assert F.l1_loss(x, y, reduce=False).shape == (4, 5)
    assert_close(F.smooth_l1_loss(x, y, beta=0.0), np.abs(d).mean())
    assert_close(F.mse_loss(t(1.5, device), t(0.5, device)), np.float32(1.0))  # 0-d
    assert np.isnan(F.mse_loss(core.empty(0, device=device), core.empty(0, device=device)).item())
    assert F.l1_loss(core.empty(0, device=device), core.empty(0, device=device), reduction="sum").item() == 0


def test_regression_errors(device):
    x = core.randn(2, 3, device=device)
    with pytest.raises(ValueError, match="avg is not a valid value for reduction"):
        F.mse_loss(x, x, reduction="avg")
    with pytest.raises(RuntimeError, match="must match the size of tensor b"), pytest.warns(UserWarning):
        F.l1_loss(x, core.randn(2, 4, device=device))
    with pytest.raises(RuntimeError, match="smooth_l1_loss does not support negative values for beta"):
        F.smooth_l1_loss(x, x, beta=-1)
    with pytest.raises(RuntimeError, match="huber_loss does not support non-positive values for delta"):
        F.huber_loss(x, x, delta=0)


# -- nll / cross entropy ----------------------------------------------------------------------------------------------

@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("ignore_index", [-100, 0, 4])
def test_cross_entropy_and_nll_class_indices(device, reduction, weighted, ignore_index):
    weight = CLASS_WEIGHT if weighted else None
    kwargs = dict(reduction=reduction, ignore_index=ignore_index, weight=None if weight is None else t(weight, device))
    expected = np_nll(np_log_softmax(INPUT), CLASSES, weight, ignore_index, reduction)
    assert_close(F.cross_entropy(t(INPUT, device), t(CLASSES, device), **kwargs), expected)
    assert_close(F.nll_loss(t(np_log_softmax(INPUT), device), t(CLASSES, device), **kwargs), expected)


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("weighted", [False, True])
def test_cross_entropy_label_smoothing(device, reduction, weighted):
    weight = CLASS_WEIGHT if weighted else None
    for ignore_index in (-100, 4):
        got = F.cross_entropy(t(INPUT, device), t(CLASSES, device), None if weight is None else t(weight, device),
                              ignore_index=ignore_index, reduction=reduction, label_smoothing=0.3)
        assert_close(got, np_smoothed_cross_entropy(INPUT, CLASSES, 0.3, weight, ignore_index, reduction))


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_cross_entropy_probability_targets(device, reduction):
    probabilities = RNG.random((4, 5))
    probabilities /= probabilities.sum(1, keepdims=True)
    log_probs = np_log_softmax(INPUT)
    for weight, smoothing in [(None, 0.0), (CLASS_WEIGHT, 0.0), (CLASS_WEIGHT, 0.2)]:
        target = probabilities * (1 - smoothing) + smoothing / 5
        per_sample = -(log_probs * target * (1 if weight is None else weight)).sum(1)
        expected = {"none": per_sample, "sum": per_sample.sum(), "mean": per_sample.sum() / 4}[reduction]
        got = F.cross_entropy(t(INPUT, device), t(probabilities, device), None if weight is None else t(weight, device),
                              reduction=reduction, label_smoothing=smoothing)
        assert_close(got, expected)


def test_cross_entropy_spatial_and_unbatched_inputs(device):
    x = RNG.standard_normal((2, 5, 3, 2))
    target = RNG.integers(0, 5, (2, 3, 2))
    target[0, 1, 1] = -100
    log_probs = np_log_softmax(x)
    assert_close(F.cross_entropy(t(x, device), t(target, device), t(CLASS_WEIGHT, device)),
                 np_nll(log_probs, target, CLASS_WEIGHT))
    assert_close(F.cross_entropy(t(x, device), t(target, device), reduction="none"),
                 np_nll(log_probs, target, reduction="none"))
    assert_close(F.cross_entropy(t(x, device), t(target, device), label_smoothing=0.1),
                 np_smoothed_cross_entropy(x, target, 0.1))
    probabilities = np.exp(np_log_softmax(RNG.standard_normal((2, 5, 3, 2))))
    assert_close(F.cross_entropy(t(x, device), t(probabilities, device), reduction="none"),
                 -(log_probs * probabilities).sum(1))
    row = INPUT[0]
    assert_close(F.cross_entropy(t(row, device), t(2, device)), -np_log_softmax(row, 0)[2])
    assert_close(F.cross_entropy(t(row, device), t(2, device), label_smoothing=0.2),
                 -0.8 * np_log_softmax(row, 0)[2] - 0.2 / 5 * np_log_softmax(row, 0).sum())
    assert_close(F.nll_loss(t(row, device), t(3, device), reduction="none"), np.array(-row[3]))


def test_cross_entropy_edge_cases(device):
    x = t(INPUT, device)
    assert np.isnan(F.cross_entropy(x, t([-100] * 4, device)).item())  # every target ignored: 0 / 0
    assert F.cross_entropy(x, t([-100] * 4, device), reduction="sum").item() == 0
    empty = core.empty(0, 5, device=device)
    assert np.isnan(F.cross_entropy(empty, core.empty(0, dtype=core.int64, device=device)).item())
    assert F.nll_loss(empty, core.empty(0, dtype=core.int64, device=device), reduction="sum").item() == 0
    int32_targets = t(CLASSES, device, core.int32)
    assert_close(F.cross_entropy(x, int32_targets), np_nll(np_log_softmax(INPUT), CLASSES))
    x32 = t(INPUT, device, core.float32)
    assert_close(F.cross_entropy(x32.T.contiguous().T, t(CLASSES, device)),
                 np.float32(np_nll(np_log_softmax(INPUT), CLASSES)), rtol=1e-5)
    assert F.cross_entropy(t(INPUT, device, core.float16), t(CLASSES, device)).dtype == core.float16
    stable = F.cross_entropy(t([[1000.0, 0.0], [0.0, -1000.0]], device), t([1, 1], device), reduction="none")
    assert_close(stable, np.array([1000.0, 1000.0], np.float32))


@settings(max_examples=25, deadline=None)
@given(batch=st.integers(1, 5), classes=st.integers(1, 5), spatial=st.lists(st.integers(1, 3), max_size=2),
       seed=st.integers(0, 1000))
def test_cross_entropy_random_shapes(batch, classes, spatial, seed):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((batch, classes, *spatial))
    target = rng.integers(0, classes, (batch, *spatial))
    weight = rng.random(classes) + 0.1
    assert_close(F.cross_entropy(t(x, "cpu"), t(target, "cpu"), t(weight, "cpu")),
                 np_nll(np_log_softmax(x), target, weight))


def test_classification_errors_match_pytorch(device):
    x = t(INPUT, device)
    with pytest.raises(IndexError, match="Target 5 is out of bounds."):
        F.cross_entropy(x, t([0, 1, 5, 2], device))
    with pytest.raises(IndexError, match="Target -3 is out of bounds."):
        F.nll_loss(x, t([0, 1, -3, 2], device))
    with pytest.raises(IndexError, match="Target 7 is out of bounds."):
        F.cross_entropy(x, t([-100, 7, 1, 2], device))
    with pytest.raises(ValueError, match=r"Expected input batch_size \(4\) to match target batch_size \(2\)."):
        F.cross_entropy(x, t([0, 1], device))
    with pytest.raises(RuntimeError, match="expected target dtype to be Long or Byte, but got Float"):
        F.nll_loss(x, t([0.0, 1.0, 2.0, 3.0], device))
    with pytest.raises(RuntimeError, match="Expected floating point type for target with class probabilities"):
        F.cross_entropy(x, t(np.zeros((4, 5), np.int64), device))
    with pytest.raises(RuntimeError, match=r"defined either for all 5 classes .* shape: \[3\]"):
        F.cross_entropy(x, t(CLASSES, device), weight=core.ones(3, device=device))
    with pytest.raises(RuntimeError, match="label_smoothing must be between 0.0 and 1.0. Got: 1.5"):
        F.cross_entropy(x, t(CLASSES, device), label_smoothing=1.5)
    with pytest.raises(RuntimeError, match="multi-target not supported"):
        F.nll_loss(x, t(np.zeros((4, 2), np.int64), device))
    with pytest.raises(RuntimeError, match=r"Expected target size \[2, 4\], got \[2, 3\]"):
        F.nll_loss(core.randn(2, 3, 4, device=device), t(np.zeros((2, 3), np.int64), device))


# -- binary, divergence, embedding, ranking ---------------------------------------------------------------------------

def np_bce(p, y, w=1.0):
    return -w * (y * np.maximum(np.log(p), -100) + (1 - y) * np.maximum(np.log(1 - p), -100))


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_binary_cross_entropy(device, reduction):
    p, y, w = RNG.random((3, 4)), RNG.random((3, 4)), RNG.random(4)
    p[0, 0], p[1, 1], y[0, 0] = 0.0, 1.0, 1.0  # saturated probabilities hit the -100 clamp
    with np.errstate(divide="ignore"):
        expected = reduce(np_bce(p, y, w), reduction)
    assert_close(F.binary_cross_entropy(t(p, device), t(y, device), t(w, device), reduction=reduction), expected)
    x = t(p, device, requires_grad=True)
    F.binary_cross_entropy(x, t(y, device)).backward()
    assert np.isfinite(x.grad.cpu().numpy()).all()


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_binary_cross_entropy_with_logits(device, reduction):
    x, y = RNG.standard_normal((3, 4)) * 30, RNG.random((3, 4))
    w, pos = RNG.random((3, 1)), RNG.random(4) + 0.5
    log_sigmoid = -np.logaddexp(0, -x)
    expected = reduce(w * ((1 - y) * x - (1 + (pos - 1) * y) * log_sigmoid), reduction)
    got = F.binary_cross_entropy_with_logits(t(x, device), t(y, device), t(w, device), reduction=reduction,
                                             pos_weight=t(pos, device))
    assert_close(got, expected)
    assert_close(F.binary_cross_entropy_with_logits(t(x, device), t(y, device), reduction=reduction),
                 reduce((1 - y) * x - log_sigmoid, reduction))


def test_binary_errors(device):
    p = core.rand(3, device=device)
    with pytest.raises(ValueError, match="is different to the input size"):
        F.binary_cross_entropy(p, core.rand(3, 1, device=device))
    with pytest.raises(ValueError, match="must be the same as input size"):
        F.binary_cross_entropy_with_logits(p, core.rand(3, 1, device=device))
    with pytest.raises(RuntimeError, match="all elements of input should be between 0 and 1"):
        F.binary_cross_entropy(p * 3 + 0.5, p)


@pytest.mark.parametrize("reduction", ["mean", "sum", "none", "batchmean"])
@pytest.mark.parametrize("log_target", [False, True])
def test_kl_div(device, reduction, log_target):
    q = np.log(RNG.dirichlet(np.ones(4), 3))
    p = RNG.dirichlet(np.ones(4), 3)
    if not log_target:
        p[0, 0] = 0.0  # 0 log 0 = 0 (a log target of -inf gives NaN, as in PyTorch)
    with np.errstate(divide="ignore"):
        target = np.log(p) if log_target else p
        pointwise = p * (np.log(np.where(p > 0, p, 1)) - q)
    expected = pointwise.sum() / 3 if reduction == "batchmean" else reduce(pointwise, reduction)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        got = F.kl_div(t(q, device), t(target, device), reduction=reduction, log_target=log_target)
    assert_close(got, expected)


def test_kl_div_warns_for_mean(device):
    with pytest.warns(UserWarning, match="'batchmean' divides only by the batch size"):
        F.kl_div(core.zeros(2, device=device), core.ones(2, device=device))


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_cosine_embedding_and_margin_ranking(device, reduction):
    a, b = RNG.standard_normal((4, 3)), RNG.standard_normal((4, 3))
    b[3] = 0.0  # a zero vector: the epsilon keeps it finite
    y = np.array([1.0, -1.0, -1.0, 1.0])
    cosine = (a * b).sum(1) / np.sqrt(((a * a).sum(1) + 1e-12) * ((b * b).sum(1) + 1e-12))
    expected = np.where(y == 1, 1 - cosine, np.maximum(cosine + 0.2, 0))
    got = F.cosine_embedding_loss(t(a, device), t(b, device), t(y, device), margin=-0.2, reduction=reduction)
    assert_close(got, reduce(expected, reduction))
    assert_close(F.cosine_embedding_loss(t(a[0], device), t(b[0], device), t(np.array(1.0), device)), 1 - cosine[0])
    x1, x2 = RNG.standard_normal(4), RNG.standard_normal(4)
    assert_close(F.margin_ranking_loss(t(x1, device), t(x2, device), t(y, device), margin=0.3, reduction=reduction),
                 reduce(np.maximum(0, -y * (x1 - x2) + 0.3), reduction))


def test_pair_loss_errors(device):
    x = core.randn(2, 3, device=device)
    with pytest.raises(RuntimeError, match=r"1D target tensor expects 2D input tensors, but found inputs with sizes "
                                           r"\[3\] and \[3\]"):
        F.cosine_embedding_loss(x[0], x[1], core.ones(3, device=device))
    with pytest.raises(RuntimeError, match="0D target tensor expects 1D input tensors"):
        F.cosine_embedding_loss(x, x, core.ones((), device=device))
    with pytest.raises(RuntimeError, match="All input tensors should have same dimension"):
        F.margin_ranking_loss(x[0], x[1], core.ones(3, 1, device=device))


# -- CTC --------------------------------------------------------------------------------------------------------------

def np_ctc(log_probs, target, blank=0):
    """-log p(target | log_probs (T, C)) by the textbook alpha recursion, one state at a time."""
    extended = [blank]
    for label in target:
        extended += [label, blank]
    steps, width = log_probs.shape[0], len(extended)
    alpha = np.full(width, -np.inf)
    alpha[0] = log_probs[0, blank]
    if width > 1:
        alpha[1] = log_probs[0, extended[1]]
    for step in range(1, steps):
        previous = alpha.copy()
        for s in range(width):
            terms = [previous[s]] + ([previous[s - 1]] if s >= 1 else [])
            if s >= 2 and extended[s] != blank and extended[s] != extended[s - 2]:
                terms.append(previous[s - 2])
            alpha[s] = np.logaddexp.reduce(terms) + log_probs[step, extended[s]]
    return -np.logaddexp.reduce(alpha[-2:] if width > 1 else alpha)


CTC_LOGITS = RNG.standard_normal((8, 3, 4))
CTC_LOG_PROBS = np_log_softmax(CTC_LOGITS, 2)
CTC_TARGETS = np.array([[1, 2, 2], [3, 1, 0], [2, 0, 0]])
CTC_TARGET_LENGTHS = [3, 2, 0]
CTC_INPUT_LENGTHS = [8, 6, 5]


def np_ctc_batch():
    return np.array([np_ctc(CTC_LOG_PROBS[:length, n], CTC_TARGETS[n, :target_length])
                     for n, (length, target_length) in enumerate(zip(CTC_INPUT_LENGTHS, CTC_TARGET_LENGTHS))])


@pytest.mark.parametrize("reduction", ["none", "mean", "sum"])
def test_ctc_loss_padded_and_concatenated_targets(device, reduction):
    losses = np_ctc_batch()
    expected = {"none": losses, "sum": losses.sum(),
                "mean": (losses / np.maximum(CTC_TARGET_LENGTHS, 1)).mean()}[reduction]
    got = F.ctc_loss(t(CTC_LOG_PROBS, device), t(CTC_TARGETS, device), t(CTC_INPUT_LENGTHS, device),
                     t(CTC_TARGET_LENGTHS, device), reduction=reduction)
    assert_close(got, expected)
    concatenated = np.concatenate([CTC_TARGETS[n, :k] for n, k in enumerate(CTC_TARGET_LENGTHS)])
    got = F.ctc_loss(t(CTC_LOG_PROBS, device), t(concatenated, device), tuple(CTC_INPUT_LENGTHS),
                     tuple(CTC_TARGET_LENGTHS), reduction=reduction)
    assert_close(got, expected)


def test_ctc_loss_blank_unbatched_impossible_and_zero_infinity(device):
    blank_last = np_ctc(CTC_LOG_PROBS[:, 0], [0, 1, 1], blank=3)
    got = F.ctc_loss(t(CTC_LOG_PROBS[:, :1], device), t([[0, 1, 1]], device), [8], [3], blank=3, reduction="sum")
    assert_close(got, blank_last)
    unbatched = F.ctc_loss(t(CTC_LOG_PROBS[:, 0], device), t([1, 2], device), t(8, device), t(2, device),
                           reduction="none")
    assert unbatched.shape == () and np.isclose(unbatched.item(), np_ctc(CTC_LOG_PROBS[:, 0], [1, 2]))
    # three repeated labels need at least five frames
    x = t(CTC_LOG_PROBS[:, :1], device, requires_grad=True)
    impossible = F.ctc_loss(x, t([[2, 2, 2]], device), [4], [3], reduction="none")
    assert impossible.item() == float("inf")
    zeroed = F.ctc_loss(x, t([[2, 2, 2]], device), [4], [3], zero_infinity=True, reduction="sum")
    assert zeroed.item() == 0.0
    zeroed.backward()
    assert (x.grad.cpu().numpy() == 0).all()
    empty_input = F.ctc_loss(t(CTC_LOG_PROBS[:, :2], device), t([[1], [1]], device), [0, 0], [0, 1], reduction="none")
    assert empty_input.tolist() == [0.0, float("inf")]


def test_ctc_loss_errors(device):
    log_probs = t(CTC_LOG_PROBS, device)
    with pytest.raises(RuntimeError, match="Expected input_lengths to have value at most 8, but got value 9"):
        F.ctc_loss(log_probs, t(CTC_TARGETS, device), [9, 8, 8], CTC_TARGET_LENGTHS)
    with pytest.raises(RuntimeError, match="input_lengths must be of size batch_size"):
        F.ctc_loss(log_probs, t(CTC_TARGETS, device), [8, 8], CTC_TARGET_LENGTHS)
    with pytest.raises(RuntimeError, match="Expected tensor to have size at least 4 at dimension 1"):
        F.ctc_loss(log_probs, t(CTC_TARGETS, device), CTC_INPUT_LENGTHS, [4, 1, 1])
    with pytest.raises(IndexError, match="Target 4 is out of bounds."):
        F.ctc_loss(log_probs, t([[4], [1], [1]], device), CTC_INPUT_LENGTHS, [1, 1, 1])


def test_ctc_gradcheck_and_gradient_through_log_softmax(device):
    logits = t(CTC_LOGITS[:4, :2, :3], device, requires_grad=True)
    targets, input_lengths, target_lengths = t([[1, 2], [1, 1]], device), [4, 3], [2, 1]

    def loss(x):
        return F.ctc_loss(F.log_softmax(x, 2), targets, input_lengths, target_lengths)

    assert gradcheck(loss, (logits,))
    log_probs = t(np_log_softmax(CTC_LOGITS[:4, :2, :3], 2), device, requires_grad=True)
    assert gradcheck(lambda x: F.ctc_loss(x, targets, input_lengths, target_lengths, reduction="none"), (log_probs,))


# -- gradients --------------------------------------------------------------------------------------------------------

def test_loss_gradchecks(device):
    rng = np.random.default_rng(1)
    x = t(rng.standard_normal((3, 4)), device, requires_grad=True)
    y = t(rng.standard_normal((3, 4)), device, requires_grad=True)
    for name, (kwargs, _) in REGRESSION.items():
        for reduction in ("mean", "none"):
            function = getattr(F, name)

            def loss(a, b, function=function, reduction=reduction, kwargs=kwargs):
                return function(a, b, reduction=reduction, **kwargs)

            assert gradcheck(loss, (x, y)), name
    targets, weight = t([1, 3, 0], device), t(CLASS_WEIGHT[:4], device)
    assert gradcheck(lambda a: F.cross_entropy(a, targets, weight, label_smoothing=0.2, ignore_index=0), (x,))
    assert gradcheck(lambda a: F.nll_loss(a, targets, weight, reduction="sum"), (x,))
    probabilities = t(rng.dirichlet(np.ones(4), 3), device, requires_grad=True)
    assert gradcheck(lambda a, p: F.cross_entropy(a, p, weight, label_smoothing=0.1), (x, probabilities))
    p = t(rng.random((3, 4)) * 0.8 + 0.1, device, requires_grad=True)
    q = t(rng.random((3, 4)), device, requires_grad=True)
    bce_weight = t(rng.random(4), device)
    assert gradcheck(lambda a, b: F.binary_cross_entropy(a, b, bce_weight), (p, q))
    assert gradcheck(lambda a, b: F.binary_cross_entropy_with_logits(a, b, pos_weight=t([1.0, 2.0, 0.5, 3.0], device,
                                                                                        core.float64)), (x, q))
    log_q = t(np.log(rng.dirichlet(np.ones(4), 3)), device, requires_grad=True)
    assert gradcheck(lambda a, b: F.kl_div(a, b, reduction="batchmean"), (log_q, p))
    assert gradcheck(lambda a, b: F.kl_div(a, b, reduction="sum", log_target=True), (log_q, y))
    signs = t([1.0, -1.0, -1.0], device)
    assert gradcheck(lambda a, b: F.cosine_embedding_loss(a, b, signs, margin=-0.5), (x, y))
    assert gradcheck(lambda a, b: F.margin_ranking_loss(a, b, signs[:, None].expand(3, 4), margin=0.1), (x, y))


# -- modules ----------------------------------------------------------------------------------------------------------

def test_loss_modules_match_functionals(device):
    x, y = t(INPUT, device), t(TARGET, device)
    weight = t(CLASS_WEIGHT, device)
    classes = t(CLASSES, device)
    pairs = [
        (nn.MSELoss(reduction="sum"), F.mse_loss(x, y, reduction="sum"), (x, y)),
        (nn.L1Loss(), F.l1_loss(x, y), (x, y)),
        (nn.SmoothL1Loss(beta=0.5), F.smooth_l1_loss(x, y, beta=0.5), (x, y)),
        (nn.HuberLoss(delta=0.5), F.huber_loss(x, y, delta=0.5), (x, y)),
        (nn.CrossEntropyLoss(weight, ignore_index=4, label_smoothing=0.1),
         F.cross_entropy(x, classes, weight, ignore_index=4, label_smoothing=0.1), (x, classes)),
        (nn.NLLLoss(weight, reduction="none"), F.nll_loss(x, classes, weight, reduction="none"), (x, classes)),
        (nn.BCELoss(weight), F.binary_cross_entropy(F.sigmoid(x), F.sigmoid(y), weight), (F.sigmoid(x), F.sigmoid(y))),
        (nn.BCEWithLogitsLoss(weight, pos_weight=weight),
         F.binary_cross_entropy_with_logits(x, F.sigmoid(y), weight, pos_weight=weight), (x, F.sigmoid(y))),
        (nn.KLDivLoss(reduction="batchmean", log_target=True), F.kl_div(x, y, reduction="batchmean", log_target=True),
         (x, y)),
        (nn.CosineEmbeddingLoss(0.1), F.cosine_embedding_loss(x, y, t([1.0, -1, 1, -1], device), 0.1),
         (x, y, t([1.0, -1, 1, -1], device))),
        (nn.MarginRankingLoss(0.1), F.margin_ranking_loss(x, y, y.sign(), 0.1), (x, y, y.sign())),
        (nn.CTCLoss(reduction="sum"), F.ctc_loss(t(CTC_LOG_PROBS, device), t(CTC_TARGETS, device), CTC_INPUT_LENGTHS,
                                                 CTC_TARGET_LENGTHS, reduction="sum"),
         (t(CTC_LOG_PROBS, device), t(CTC_TARGETS, device), CTC_INPUT_LENGTHS, CTC_TARGET_LENGTHS)),
    ]
    for module, expected, inputs in pairs:
        assert_close(module(*inputs), expected, msg=repr(module))


def test_loss_module_buffers_reprs_and_state_dict(device):
    weight = t(CLASS_WEIGHT, device)
    module = nn.CrossEntropyLoss(weight=weight)
    assert repr(module) == "CrossEntropyLoss()" and repr(nn.CTCLoss()) == "CTCLoss()"
    assert list(module.state_dict()) == ["weight"] and module.weight is weight
    assert list(nn.NLLLoss().state_dict()) == [] and nn.NLLLoss().weight is None
    both = nn.BCEWithLogitsLoss(weight=weight, pos_weight=weight * 2)
    assert list(both.state_dict()) == ["weight", "pos_weight"]
    assert list(nn.BCELoss(weight).state_dict()) == ["weight"]
    copy = nn.CrossEntropyLoss(weight=core.ones(5, device=device, dtype=core.float64))
    copy.load_state_dict(module.state_dict())
    x, classes = t(INPUT, device), t(CLASSES, device)
    assert_close(copy(x, classes), module(x, classes))
    assert nn.MSELoss().reduction == "mean" and nn.CTCLoss(blank=2).blank == 2
    with pytest.warns(UserWarning, match="please use reduction='sum' instead"):
        assert nn.L1Loss(size_average=False).reduction == "sum"
    for cls in (nn.MSELoss, nn.L1Loss, nn.SmoothL1Loss, nn.HuberLoss, nn.NLLLoss, nn.BCELoss, nn.BCEWithLogitsLoss,
                nn.KLDivLoss, nn.CosineEmbeddingLoss, nn.MarginRankingLoss):
        assert repr(cls()) == f"{cls.__name__}()"


# -- torch as an oracle -----------------------------------------------------------------------------------------------

def test_against_torch():
    torch = pytest.importorskip("torch")
    tf = torch.nn.functional
    x, classes, weight = INPUT, CLASSES, CLASS_WEIGHT
    for kwargs in [{}, {"weight": weight}, {"ignore_index": 4, "weight": weight, "label_smoothing": 0.2},
                   {"label_smoothing": 0.3, "reduction": "sum"}, {"ignore_index": 1, "reduction": "none"}]:
        ours_x, theirs_x = t(x, "cpu", requires_grad=True), torch.tensor(x, requires_grad=True)
        ours = F.cross_entropy(ours_x, t(classes, "cpu"), **{k: t(v, "cpu") if isinstance(v, np.ndarray) else v
                                                              for k, v in kwargs.items()})
        theirs = tf.cross_entropy(theirs_x, torch.tensor(classes), **{
            k: torch.tensor(v) if isinstance(v, np.ndarray) else v for k, v in kwargs.items()})
        assert_close(ours, theirs.detach().numpy(), msg=str(kwargs))
        ours.sum().backward()
        theirs.sum().backward()
        assert_close(ours_x.grad, theirs_x.grad.numpy(), msg=str(kwargs))
    # CTC: torch's gradient is defined through log_softmax, so compare gradients with respect to the logits
    ours_x, theirs_x = t(CTC_LOGITS, "cpu", requires_grad=True), torch.tensor(CTC_LOGITS, requires_grad=True)
    ours = F.ctc_loss(F.log_softmax(ours_x, 2), t(CTC_TARGETS, "cpu"), CTC_INPUT_LENGTHS, CTC_TARGET_LENGTHS)
    theirs = tf.ctc_loss(tf.log_softmax(theirs_x, 2), torch.tensor(CTC_TARGETS), CTC_INPUT_LENGTHS,
                         CTC_TARGET_LENGTHS)
    assert_close(ours, theirs.detach().numpy())
    ours.backward()
    theirs.backward()
    assert_close(ours_x.grad, theirs_x.grad.numpy())
    p, q = RNG.random((3, 4)), RNG.random((3, 4))
    pairs = [(F.binary_cross_entropy(t(p, "cpu"), t(q, "cpu")), tf.binary_cross_entropy(torch.tensor(p),
                                                                                           torch.tensor(q))),
             (F.binary_cross_entropy_with_logits(t(x, "cpu"), t(TARGET, "cpu").sigmoid(), pos_weight=t(weight, "cpu")),
              tf.binary_cross_entropy_with_logits(torch.tensor(x), torch.tensor(TARGET).sigmoid(),
                                                  pos_weight=torch.tensor(weight))),
             (F.huber_loss(t(x, "cpu"), t(TARGET, "cpu"), delta=0.4),
              tf.huber_loss(torch.tensor(x), torch.tensor(TARGET), delta=0.4))]
    for ours, theirs in pairs:
        assert_close(ours, theirs.numpy())
    theirs_module = torch.nn.BCEWithLogitsLoss(weight=torch.ones(5), pos_weight=torch.ones(5))
    ours_module = nn.BCEWithLogitsLoss(weight=core.zeros(5), pos_weight=core.zeros(5))
    ours_module.load_state_dict({k: core.tensor(v.numpy()) for k, v in theirs_module.state_dict().items()})
    assert list(ours_module.state_dict()) == list(theirs_module.state_dict())
    assert repr(nn.CrossEntropyLoss()) == repr(torch.nn.CrossEntropyLoss())
