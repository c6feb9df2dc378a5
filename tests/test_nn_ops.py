"""The big nn functions are single dispatcher ops: one traced node each, a decomposition, backend-overridable.

``linear``, ``convolution``, ``max_pool``, ``avg_pool``, ``batch_norm``, ``layer_norm`` and ``gelu`` are
composites: the front-end functions (``F.xxx``) check and normalise their arguments, then call the op once. A trace
records that one call (what an exporter maps to Conv, MaxPool, LayerNormalization...), a backend may register a
fused kernel for it, and all of them have their own
derivative formulas (one autograd node calling a ``xxx_backward`` composite).
"""

from __future__ import annotations

import contextlib

import pytest

import core
import core.jit as jit
import core.nn.functional as F
from core.autograd import gradcheck, gradgradcheck
from core.dispatch import OPERATORS, backend_key
from core.testing import assert_close, sample_array


def _tensor(shape, device, seed=0, dtype="float32", requires_grad=False):
    return core.tensor(sample_array(shape, dtype, seed), device=device, requires_grad=requires_grad)


def _cases(device):
    """(op name, a function of x that calls it, x's shape) for each op, in the order of ``_IDS``."""
    w_lin, b_lin = _tensor((5, 8), device, 1), _tensor((5,), device, 2)
    w_conv, b_conv = _tensor((4, 3, 3, 3), device, 3), _tensor((4,), device, 4)
    w_conv1d, w_conv3d = _tensor((4, 3, 3), device, 5), _tensor((3, 1, 2, 2, 2), device, 6)
    w_ln = _tensor((8,), device, 7)
    running_mean, running_var, w_bn = _tensor((3,), device, 8), _tensor((3,), device, 9).abs() + 0.5, w_ln[:3].clone()
    return [
        ("linear", lambda x: F.linear(x, w_lin, b_lin), (2, 3, 8)),
        ("linear", lambda x: F.linear(x, w_lin), (4, 8)),
        ("convolution", lambda x: F.conv2d(x, w_conv, b_conv, stride=2, padding=1), (2, 3, 8, 8)),
        ("convolution", lambda x: F.conv1d(x, w_conv1d, padding="same", dilation=2), (2, 3, 9)),
        ("convolution", lambda x: F.conv3d(x, w_conv3d, groups=3), (1, 3, 4, 5, 5)),
        ("max_pool", lambda x: F.max_pool2d(x, 3, 2, 1, ceil_mode=True), (2, 3, 8, 8)),
        ("max_pool", lambda x: F.max_pool1d(x, 2, dilation=2), (2, 3, 9)),
        ("avg_pool", lambda x: F.avg_pool2d(x, 3, 2, 1, count_include_pad=False), (2, 3, 8, 8)),
        ("avg_pool", lambda x: F.avg_pool3d(x, 2, divisor_override=3), (1, 2, 4, 4, 4)),
        ("layer_norm", lambda x: F.layer_norm(x, 8, w_ln, None, eps=1e-3), (2, 3, 8)),
        ("layer_norm", lambda x: F.layer_norm(x, (3, 8)), (2, 3, 8)),
        ("gelu", lambda x: F.gelu(x), (2, 3, 8)),
        ("gelu", lambda x: F.gelu(x, approximate="tanh"), (2, 3, 8)),
        ("batch_norm", lambda x: F.batch_norm(x, running_mean, running_var, w_bn, None), (2, 3, 8)),
        ("batch_norm", lambda x: F.batch_norm(x, None, None, training=True), (2, 3, 4, 4)),
    ]


_IDS = ["linear", "linear-nobias", "conv2d", "conv1d-same", "conv3d-groups", "max_pool2d-ceil", "max_pool1d-dilated",
        "avg_pool2d", "avg_pool3d-divisor", "layer_norm-weight", "layer_norm-2d", "gelu", "gelu-tanh",
        "batch_norm-eval", "batch_norm-training"]


@pytest.mark.parametrize("i", range(len(_IDS)), ids=_IDS)
def test_trace_records_one_node_that_replays(device, i):
    name, fn, shape = _cases(device)[i]
    x = _tensor(shape, device)
    traced = jit.trace(fn, x, optimize=False)
    assert [node.op for node in traced.raw_graph.nodes] == [name]
    assert OPERATORS[name].decomposition is not None and not OPERATORS[name].primitive
    other = _tensor(shape, device, seed=9)
    assert_close(traced(other), fn(other))


def test_op_arguments_are_normalised_for_exporters(device):
    x = _tensor((2, 3, 8, 8), device)
    conv = jit.trace(lambda x: F.conv2d(x, _tensor((4, 3, 3, 3), device), None, 2, (1, 0), 1), x, optimize=False)
    assert conv.raw_graph.nodes[0].args[2:] == (None, (2, 2), (1, 0), (1, 1), 1)
    pool = jit.trace(lambda x: F.max_pool2d(x, (3, 2)), x, optimize=False)
    assert pool.raw_graph.nodes[0].args[1:] == ((3, 2), (3, 2), (0, 0), (1, 1), False)
    avg = jit.trace(lambda x: F.avg_pool2d(x, 2, padding=1), x, optimize=False)
    assert avg.raw_graph.nodes[0].args[1:] == ((2, 2), (2, 2), (1, 1), False, True, None)
    ln = jit.trace(lambda x: F.layer_norm(x, [8]), x, optimize=False)
    assert ln.raw_graph.nodes[0].args[1:] == ((8,), None, None, 1e-5)


def test_unbatched_inputs_reach_the_ops_batched(device):
    x = _tensor((3, 8, 8), device)
    w = _tensor((4, 3, 3, 3), device, 1)
    for fn, name in ((lambda x: F.conv2d(x, w), "convolution"), (lambda x: F.max_pool2d(x, 2), "max_pool"),
                     (lambda x: F.avg_pool2d(x, 2), "avg_pool")):
        graph = jit.trace(fn, x, optimize=False).raw_graph
        (node,) = [n for n in graph.nodes if n.op == name]
        assert node.args[0].shape[0] == 1 and len(node.args[0].shape) == 4
        assert fn(x).dim() == 3


def test_same_padding_pads_the_odd_extra_first_and_passes_symmetric_ints(device):
    x = _tensor((1, 2, 7), device)
    w = _tensor((3, 2, 4), device, 1)  # total padding 3: one on the left, two on the right
    graph = jit.trace(lambda x: F.conv1d(x, w, padding="same"), x, optimize=False).raw_graph
    (node,) = [n for n in graph.nodes if n.op == "convolution"]
    assert node.args[4] == (1,) and node.args[0].shape == (1, 2, 8)
    out = F.conv1d(x, w, padding="same")
    expected = F.conv1d(F.pad(x, (1, 2)), w)
    assert out.shape == (1, 3, 7)
    assert_close(out, expected)


@contextlib.contextmanager
def _kernel(name: str, device: str, fn):
    """``fn`` registered as op ``name``'s kernel on ``device`` for the duration (the previous one put back)."""
    op, key = OPERATORS[name], backend_key(device)
    previous = op.kernels.get(key.bit), op.owners.get(key.bit)
    op.register_kernel(key, fn, owner="tests/test_nn_ops.py", override=True)
    try:
        yield
    finally:
        if previous[0] is None:
            del op.kernels[key.bit], op.owners[key.bit]
        else:
            op.kernels[key.bit], op.owners[key.bit] = previous
        op._cache.clear()


@pytest.mark.parametrize("i", range(len(_IDS)), ids=_IDS)
def test_a_backend_kernel_overrides_the_decomposition(device, i):
    name, fn, shape = _cases(device)[i]
    x = _tensor(shape, device)
    expected = fn(x)
    calls = []

    def fused(*args):
        calls.append(args)
        return OPERATORS[name].decomposition(*args) + 1

    with _kernel(name, device, fused):
        out = fn(x)
    assert len(calls) == 1 and calls[0][0].shape[0] == x.shape[0]
    assert_close(out, expected + 1)
    assert_close(fn(x), expected)  # the decomposition is back


_WITH_DERIVATIVE = {
    "layer_norm": ((3, 8), (8,), lambda x, w: F.layer_norm(x, (8,), w)),
    "gelu": ((3, 8), (8,), lambda x, w: F.gelu(x * w)),
    "convolution": ((2, 3, 6, 6), (4, 3, 3, 3), lambda x, w: F.conv2d(x, w, padding=1)),
    "max_pool": ((2, 3, 6, 6), (6,), lambda x, w: F.max_pool2d(x * w, 2)),
    "avg_pool": ((2, 3, 6, 6), (6,), lambda x, w: F.avg_pool2d(x * w, 3, 2, 1)),
    "batch_norm": ((2, 3, 4), (3,), lambda x, w: F.batch_norm(x, None, None, w, training=True)),
}
_NODES = {"layer_norm": "LayerNorm", "gelu": "Gelu", "convolution": "Convolution", "max_pool": "MaxPool",
          "avg_pool": "AvgPool", "batch_norm": "BatchNorm"}


@pytest.mark.parametrize("name", list(_WITH_DERIVATIVE))
def test_ops_with_a_derivative_use_the_backend_kernel_under_autograd(device, name):
    x_shape, w_shape, fn = _WITH_DERIVATIVE[name]
    x = _tensor(x_shape, device, requires_grad=True)
    w = _tensor(w_shape, device, 1, requires_grad=True)
    calls = []

    def fused(*args):
        calls.append(args)
        return OPERATORS[name].decomposition(*args)

    with _kernel(name, device, fused):
        out = fn(x, w)
    assert len(calls) == 1 and out.grad_fn.name().startswith(_NODES[name])
    out.sum().backward()
    assert x.grad is not None and w.grad is not None


def test_composites_without_a_derivative_differentiate_through_their_parts(device):
    g, y = _tensor((2, 3), device, requires_grad=True), _tensor((2, 3), device, 1, requires_grad=True)
    out = OPERATORS["tanh_backward"](g, y)  # a backward composite: double backward goes through its parts
    assert not out.grad_fn.name().startswith("TanhBackward")
    out.sum().backward()
    assert g.grad.shape == g.shape and y.grad.shape == y.shape


@pytest.mark.parametrize("args", [(3, 2, 1), (2,), (3, 1, 1, False, False), (3, 2, 1, True), (2, 1, 0, True, True, 3),
                                  ((2, 3), (1, 2), (1, 0), False, True, 5)])
def test_avg_pool_derivative_gradcheck(device, args):
    x = _double((2, 2, 7, 6), device, 0)
    assert gradcheck(lambda x: F.avg_pool2d(x, *args), (x,))
    assert gradgradcheck(lambda x: F.avg_pool2d(x, *args), (x,))


def test_avg_pool_1d_and_3d_derivative_gradcheck(device):
    x1, x3 = _double((2, 3, 9), device, 0), _double((1, 2, 4, 5, 3), device, 1)
    assert gradcheck(lambda x: F.avg_pool1d(x, 3, 2, 1, True, False), (x1,))
    assert gradcheck(lambda x: F.avg_pool3d(x, 2, (1, 2, 1), 1, True, False, 2), (x3,))


def _double(shape, device, seed):
    return _tensor(shape, device, seed, dtype="float64", requires_grad=True)


@pytest.mark.parametrize("affine", ["none", "weight", "both"])
def test_layer_norm_derivative_gradcheck(device, affine):
    x = _double((2, 3, 4), device, 0)
    w, b = _double((3, 4), device, 1), _double((3, 4), device, 2)
    weight = None if affine == "none" else w
    bias = b if affine == "both" else None
    leaves = (x,) + tuple(t for t in (weight, bias) if t is not None)

    def fn(x, *params):
        return F.layer_norm(x, (3, 4), *params, eps=1e-3)

    assert gradcheck(fn, leaves)
    assert gradgradcheck(fn, leaves)


def test_layer_norm_over_every_dim_gradcheck(device):
    x, w = _double((2, 5), device, 0), _double((2, 5), device, 1)
    assert gradcheck(lambda x, w: F.layer_norm(x, (2, 5), w), (x, w))


@pytest.mark.parametrize("approximate", ["none", "tanh"])
def test_gelu_derivative_gradcheck(device, approximate):
    x = _double((3, 5), device, 0)
    assert gradcheck(lambda x: F.gelu(x, approximate), (x,))
    assert gradgradcheck(lambda x: F.gelu(x, approximate), (x,))


@pytest.mark.parametrize("name", ["layer_norm", "gelu"])
def test_derivative_matches_the_decomposition_in_float32(device, name):
    x = _tensor((4, 16), device, requires_grad=True)
    w, b = _tensor((16,), device, 1, requires_grad=True), _tensor((16,), device, 2, requires_grad=True)
    args, leaves = ((x, (16,), w, b, 1e-5), (x, w, b)) if name == "layer_norm" else ((x, "none"), (x,))
    g = _tensor((4, 16), device, 3)
    with_formula = core.autograd.grad(OPERATORS[name](*args), leaves, g)
    through_parts = core.autograd.grad(OPERATORS[name].decomposition(*args), leaves, g)
    for a, e in zip(with_formula, through_parts):
        assert_close(a, e, rtol=1e-4, atol=1e-5)


def test_errors_are_raised_before_the_op_runs(device):
    x = _tensor((2, 3, 8), device)
    calls = []
    with _kernel("gelu", device, lambda *args: calls.append(args)):
        with pytest.raises(RuntimeError, match="approximate argument must be either none or tanh"):
            F.gelu(x, approximate="fast")
    with _kernel("layer_norm", device, lambda *args: calls.append(args)):
        with pytest.raises(RuntimeError, match=r"Given normalized_shape=\[4\]"):
            F.layer_norm(x, 4)
    with _kernel("convolution", device, lambda *args: calls.append(args)):
        with pytest.raises(RuntimeError, match="expected input\\[2, 3, 8\\] to have 6 channels"):
            F.conv1d(x, _tensor((4, 6, 3), device))
    with _kernel("max_pool", device, lambda *args: calls.append(args)):
        with pytest.raises(RuntimeError, match="pad should be at most half of effective kernel size"):
            F.max_pool1d(x, 2, padding=2)
    assert not calls


# -- convolution and max_pool derivatives: one node each, calling convolution_backward / max_pool_backward --------
_CONV_GRAD_CASES = {  # name: (input shape, weight shape, F.conv kwargs)
    "conv2d": ((1, 4, 5, 4), (4, 2, 3, 2), {"stride": (2, 1), "padding": 1, "dilation": (1, 2), "groups": 2}),
    "conv1d-same": ((2, 3, 6), (2, 3, 4), {"padding": "same"}),
    "conv3d": ((1, 2, 3, 3, 3), (2, 2, 2, 2, 2), {"padding": (0, 1, 0)}),
}


def _conv_fn(x_shape):
    return {3: F.conv1d, 4: F.conv2d, 5: F.conv3d}[len(x_shape)]


@pytest.mark.parametrize("case", list(_CONV_GRAD_CASES))
def test_convolution_derivative_gradcheck_and_gradgradcheck(device, case):
    x_shape, w_shape, kwargs = _CONV_GRAD_CASES[case]
    x, w, b = _double(x_shape, device, 0), _double(w_shape, device, 1), _double(w_shape[:1], device, 2)
    conv = _conv_fn(x_shape)
    assert gradcheck(lambda x, w, b: conv(x, w, b, **kwargs), (x, w, b))
    assert gradgradcheck(lambda x, w: conv(x, w, None, **kwargs), (x, w))


@pytest.mark.parametrize("args", [(3, 2, 1, 1, True), (2, 1, 0, 2, False)], ids=["ceil-padded", "dilated"])
def test_max_pool_derivative_gradcheck_and_gradgradcheck(device, args):
    core.manual_seed(0)  # distinct values: finite differences are meaningless at ties
    x = core.randn(1, 2, 7, 6, dtype=core.float64).to(device).requires_grad_()
    assert gradcheck(lambda x: F.max_pool2d(x, *args), (x,))
    assert gradgradcheck(lambda x: F.max_pool2d(x, *args), (x,))


@pytest.mark.parametrize("case", list(_CONV_GRAD_CASES))
def test_convolution_backward_matches_autograd_through_the_decomposition(device, case):
    x_shape, w_shape, kwargs = _CONV_GRAD_CASES[case]
    x, w, b = (_tensor(s, device, i, requires_grad=True) for i, s in enumerate((x_shape, w_shape, w_shape[:1])))
    calls = []

    def op_by_op(*args):  # the convolution op, differentiated through its parts
        calls.append(args)
        return OPERATORS["convolution"].decomposition(*args)

    out = _conv_fn(x_shape)(x, w, b, **kwargs)
    g = _tensor(tuple(out.shape), device, 3)
    with _kernel("convolution", device, op_by_op):
        expected = core.autograd.grad(_conv_fn(x_shape)(x, w, b, **kwargs), (x, w, b), g)
    assert len(calls) == 1
    stride, padding, dilation, groups = calls[0][3:]
    for mask in [(True, True, True), (False, True, False), (True, False, True)]:
        got = OPERATORS["convolution_backward"](g, calls[0][0], w, stride, padding, dilation, groups, mask)
        for wanted, grad, want in zip(mask, got, expected):
            assert (grad is None) == (not wanted)
            if wanted:
                # 'same' pads the input before the op: compare on the op's own (padded) input
                assert_close(grad if grad.shape == want.shape else grad[..., :want.shape[-1]], want,
                             rtol=1e-4, atol=1e-5)


def test_convolution_backward_is_asked_only_for_the_gradients_needed(device):
    x, w = _tensor((2, 3, 6, 6), device), _tensor((4, 3, 3, 3), device, 1, requires_grad=True)
    masks = []

    def spy(*args):
        masks.append(args[-1])
        return OPERATORS["convolution_backward"].decomposition(*args)

    with _kernel("convolution_backward", device, spy):
        F.conv2d(x, w, _tensor((4,), device, 2)).sum().backward()
    assert masks == [(False, True, False)] and x.grad is None and w.grad.shape == w.shape


def test_max_pool_backward_matches_the_gradient_through_the_indices(device):
    # ties: the first maximum of each window gets the gradient, as through max_pool2d(return_indices=True)
    x = core.tensor(sample_array((2, 3, 7, 6), "float32", 0).round(), device=device, requires_grad=True)
    args = (3, 2, 1, 1, True)
    g = _tensor((2, 3, 4, 4), device, 1)
    expected = core.autograd.grad(F.max_pool2d(x, *args, return_indices=True)[0], (x,), g)[0]
    assert_close(core.autograd.grad(F.max_pool2d(x, *args), (x,), g)[0], expected)


@pytest.mark.parametrize("shape", [(5,), (3, 5), (2, 3, 5)])
@pytest.mark.parametrize("with_bias", [True, False])
def test_linear_is_one_node_with_exact_gradients(shape, with_bias):
    x = core.randn(*shape, dtype=core.float64, requires_grad=True)
    w = core.randn(4, 5, dtype=core.float64, requires_grad=True)
    b = core.randn(4, dtype=core.float64, requires_grad=True) if with_bias else None
    inputs = (x, w, b) if with_bias else (x, w)
    fn = (lambda x, w, b: F.linear(x, w, b)) if with_bias else (lambda x, w: F.linear(x, w))
    assert gradcheck(fn, inputs)
    assert gradgradcheck(fn, inputs)
    out = F.linear(x, w, b)
    assert type(out.grad_fn).__name__ == "LinearBackward0"
    out.sum().backward()
    assert w.grad.is_contiguous()  # computed as g.T @ x: the engine can keep it as .grad without a copy


# -- layer_norm and gelu derivatives: one node each, calling layer_norm_backward / gelu_backward ---------------------
def _spied(name: str, device: str, calls: list):
    """``name``'s decomposition as its kernel on ``device``, recording each call's arguments in ``calls``."""

    def spy(*args):
        calls.append(args)
        return OPERATORS[name].decomposition(*args)

    return _kernel(name, device, spy)


@pytest.mark.parametrize("affine", ["none", "weight", "both"])
def test_layer_norm_gradients_go_through_layer_norm_backward(device, affine):
    x = _double((2, 3, 4), device, 0)
    w, b = _double((4,), device, 1), _double((4,), device, 2)
    params = {"none": (), "weight": (w,), "both": (w, b)}[affine]

    def fn(x, *params):
        return F.layer_norm(x, (4,), *params, eps=1e-3)

    calls = []
    with _spied("layer_norm_backward", device, calls):
        assert gradcheck(fn, (x, *params))
        assert gradgradcheck(fn, (x, *params))
    assert calls and all(args[-1] == (True, affine != "none", affine == "both") for args in calls)


def test_layer_norm_backward_is_asked_only_for_the_gradients_needed(device):
    x = _tensor((2, 3, 8), device)
    w, b = _tensor((8,), device, 1, requires_grad=True), _tensor((8,), device, 2)
    calls = []
    with _spied("layer_norm_backward", device, calls):
        F.layer_norm(x, 8, w, b).sum().backward()
    assert len(calls) == 1 and calls[0][-1] == (False, True, False) and x.grad is None and w.grad.shape == (8,)


def test_layer_norm_backward_reduces_the_affine_gradients_to_normalized_shape(device):
    x, g = _tensor((2, 3, 4), device), _tensor((2, 3, 4), device, 1)
    for shape, expected in (((4,), (4,)), ((3, 4), (3, 4)), ((2, 3, 4), (2, 3, 4))):
        w = _tensor(shape, device, 2)
        _, grad_w, grad_b = OPERATORS["layer_norm_backward"](g, x, shape, w, None, 1e-5, (False, True, True))
        assert tuple(grad_w.shape) == expected and tuple(grad_b.shape) == expected
        leading = tuple(range(3 - len(shape)))
        assert_close(grad_b, g.sum(leading) if leading else g)


@pytest.mark.parametrize("approximate", ["none", "tanh"])
def test_gelu_gradients_go_through_gelu_backward(device, approximate):
    x = _double((3, 5), device, 0)
    calls = []
    with _spied("gelu_backward", device, calls):
        assert gradcheck(lambda x: F.gelu(x, approximate), (x,))
        assert gradgradcheck(lambda x: F.gelu(x, approximate), (x,))
    assert calls and all(args[2] == approximate for args in calls)


# -- batch_norm: one node per call, its derivative calling batch_norm_backward -------------------------------------
@pytest.mark.parametrize("training", [True, False])
@pytest.mark.parametrize("affine", ["none", "weight", "both"])
def test_batch_norm_derivative_gradcheck(device, training, affine):
    x = _double((3, 2, 4), device, 0)
    w, b = _double((2,), device, 1), _double((2,), device, 2)
    params = {"none": (), "weight": (w,), "both": (w, b)}[affine]
    running_mean = _tensor((2,), device, 3, dtype="float64")
    running_var = _tensor((2,), device, 4, dtype="float64").abs() + 0.5

    def fn(x, *params):  # fresh running statistics per call: training updates them
        return F.batch_norm(x, running_mean.clone(), running_var.clone(), *params, training=training, eps=1e-3)

    calls = []
    with _spied("batch_norm_backward", device, calls):
        assert gradcheck(fn, (x, *params))
        assert gradgradcheck(fn, (x, *params))
    assert calls and all(args[-1] == (True, affine != "none", affine == "both") and args[5] is training
                         for args in calls)


def test_batch_norm_derivative_matches_the_decomposition_in_float32(device):
    x = _tensor((4, 3, 5), device, requires_grad=True)
    w, b = _tensor((3,), device, 1, requires_grad=True), _tensor((3,), device, 2, requires_grad=True)
    g = _tensor((4, 3, 5), device, 3)
    for training in (True, False):
        stats = [_tensor((3,), device, 4), _tensor((3,), device, 5).abs() + 0.5]
        args = (x, stats[0].clone(), stats[1].clone(), w, b, training, 0.1, 1e-5)
        with_formula = core.autograd.grad(OPERATORS["batch_norm"](*args), (x, w, b), g)
        parts_args = (x, stats[0].clone(), stats[1].clone(), w, b, training, 0.1, 1e-5)
        through_parts = core.autograd.grad(OPERATORS["batch_norm"].decomposition(*parts_args), (x, w, b), g)
        for a, e in zip(with_formula, through_parts):
            assert_close(a, e, rtol=1e-4, atol=1e-5)


def test_batch_norm_errors_are_raised_before_the_op_runs(device):
    calls = []
    with _kernel("batch_norm", device, lambda *args: calls.append(args)):
        with pytest.raises(RuntimeError, match="running_mean should contain 3 elements not 4"):
            F.batch_norm(_tensor((2, 3, 8), device), _tensor((4,), device), _tensor((3,), device))
        with pytest.raises(ValueError, match="Expected more than 1 value per channel when training"):
            F.batch_norm(_tensor((1, 3), device), None, None, training=True)
    assert not calls


def test_traced_batch_norm_module_is_one_node_that_updates_the_running_statistics(device):
    model = core.nn.Sequential(core.nn.Conv2d(3, 4, 3), core.nn.BatchNorm2d(4)).to(device)
    twin = core.nn.Sequential(core.nn.Conv2d(3, 4, 3), core.nn.BatchNorm2d(4)).to(device)
    twin.load_state_dict(model.state_dict())
    x = _tensor((2, 3, 6, 6), device)
    traced = jit.trace(model, x)
    assert [n.op for n in traced.graph.nodes].count("batch_norm") == 1
    bn = model[1]
    bn.reset_running_stats()
    for seed in (1, 2):  # the traced module and the eager twin update the same statistics
        other = _tensor((2, 3, 6, 6), device, seed)
        assert_close(traced(other), twin(other))
        assert_close(bn.running_mean, twin[1].running_mean)
        assert_close(bn.running_var, twin[1].running_var)
    assert int(bn.num_batches_tracked.item()) == 2
    traced.eval(), twin.eval()
    assert_close(traced(x), twin(x))


# -- cross_entropy over class indices: one cross_entropy_loss node, differentiated by cross_entropy_loss_backward ----
def _class_targets(shape, device, classes: int, ignored: bool):
    """int64 class indices of ``shape`` (every third one -100 when ``ignored``)."""
    target = (_tensor(shape, device, 5).abs() * 97).long() % classes
    if ignored:
        target.view(-1)[::3] = -100
    return target


@pytest.mark.parametrize("shape", [(5, 4), (3, 4, 2, 3)], ids=["2d", "4d"])
def test_cross_entropy_traces_one_cross_entropy_loss_node(device, shape):
    target = _class_targets(shape[:1] + shape[2:], device, 4, ignored=True).int()  # int32: converted in the op
    weight = _tensor((4,), device, 1).abs() + 0.5

    def fn(x):
        return F.cross_entropy(x, target, weight, ignore_index=-100, reduction="sum")

    x = _tensor(shape, device)
    traced = jit.trace(fn, x, optimize=False)
    assert [node.op for node in traced.raw_graph.nodes] == ["cross_entropy_loss"]
    assert traced.raw_graph.nodes[0].args[3:] == ("sum", -100)
    other = _tensor(shape, device, seed=9)
    assert_close(traced(other), fn(other))


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("shape", [(5, 4), (2, 4, 3)], ids=["2d", "3d"])
def test_cross_entropy_gradients_go_through_cross_entropy_loss_backward(device, reduction, weighted, shape):
    x = _double(shape, device, 0)
    target = _class_targets(shape[:1] + shape[2:], device, 4, ignored=True)
    weight = _tensor((4,), device, 1, dtype="float64").abs() + 0.5 if weighted else None

    def fn(x):
        return F.cross_entropy(x, target, weight, reduction=reduction)

    calls = []
    with _spied("cross_entropy_loss_backward", device, calls):
        out = fn(x)
        assert out.grad_fn.name().startswith("CrossEntropyLoss")
        assert gradcheck(fn, (x,))
        assert gradgradcheck(fn, (x,))
    assert calls


def test_cross_entropy_backward_gives_zeros_when_every_target_is_ignored(device):
    x = _tensor((3, 4), device, requires_grad=True)
    loss = F.cross_entropy(x, core.full((3,), -100, dtype=core.int64, device=device))
    loss.backward()
    assert loss.isnan().item() and not x.grad.any().item()  # PyTorch's result: a nan mean, zero gradients


@pytest.mark.parametrize("case", ["probabilities", "label_smoothing", "unbatched", "weight_requires_grad"])
def test_cross_entropy_routes_other_cases_to_the_log_softmax_path(device, case):
    x = _double((5, 4), device, 0)
    target = _class_targets((5,), device, 4, ignored=False)
    weight = None
    kwargs = {}
    if case == "probabilities":
        target = _tensor((5, 4), device, 2, dtype="float64").softmax(1)
    elif case == "label_smoothing":
        kwargs["label_smoothing"] = 0.1
    elif case == "unbatched":
        x, target = _double((4,), device, 0), target[0]
    else:
        weight = _double((4,), device, 3)
    calls = []
    with _spied("cross_entropy_loss", device, calls):
        out = F.cross_entropy(x, target, weight, **kwargs)
    assert not calls
    leaves = (x,) if weight is None else (x, weight)
    assert gradcheck(lambda *leaves: F.cross_entropy(*leaves[:1], target, *leaves[1:], **kwargs), leaves)
    torch = pytest.importorskip("torch")
    expected = torch.nn.functional.cross_entropy(
        *(torch.tensor(t.detach().cpu().numpy()) for t in (x, target)),
        None if weight is None else torch.tensor(weight.detach().cpu().numpy()), **kwargs)
    assert_close(out.detach().cpu(), core.tensor(expected.numpy()))
