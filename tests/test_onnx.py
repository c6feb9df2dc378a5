"""core.onnx.export: models checked by onnx.checker and run by onnxruntime against eager outputs; errors."""

from __future__ import annotations

import numpy as np
import pytest
from test_jit import MODELS

import core
import core.jit as jit
import core.nn as nn
import core.nn.functional as F
import core.onnx
from core.testing import to_numpy

onnx = pytest.importorskip("onnx", reason="core.onnx.export needs the onnx package")
ort = pytest.importorskip("onnxruntime", reason="running exported models needs onnxruntime")


def _run(path, *inputs) -> list:
    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    return session.run(None, {i.name: to_numpy(x) for i, x in zip(session.get_inputs(), inputs)})


def _check(model, inputs: tuple, path, **kwargs) -> None:
    """Export, check the file, run it with onnxruntime and compare every output with eager ``model``."""
    proto = core.onnx.export(model, inputs, path, **kwargs)
    onnx.checker.check_model(onnx.load(str(path)), full_check=True)
    expected = model(*inputs)
    expected = [expected] if isinstance(expected, core.Tensor) else list(expected)
    outputs = _run(path, *inputs)
    assert len(outputs) == len(expected) == len(proto.graph.output)
    for got, want in zip(outputs, expected):
        want = to_numpy(want)
        assert got.dtype == want.dtype and got.shape == want.shape
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("kind", sorted(MODELS))
def test_models_match_eager(kind, tmp_path):
    build, shape = MODELS[kind]
    model = build("cpu").eval()
    x = core.randn(*shape)
    _check(model, (x,), tmp_path / f"{kind}.onnx")
    initializers = {i.name for i in onnx.load(str(tmp_path / f"{kind}.onnx")).graph.initializer}
    assert set(dict(model.named_parameters())) <= initializers


def test_module_in_training_mode_is_exported_in_eval_mode_and_put_back(tmp_path):
    model = MODELS["encoder"][0]("cpu").train()
    x = core.randn(2, 5, 16)
    proto = core.onnx.export(model, x, tmp_path / "enc.onnx")
    assert model.training and all(m.training for m in model.modules())
    assert not {"Dropout", "RandomUniformLike", "Bernoulli"} & {n.op_type for n in proto.graph.node}
    np.testing.assert_allclose(_run(tmp_path / "enc.onnx", x)[0], to_numpy(model.eval()(x)), rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("opset", [17, 20])
@pytest.mark.parametrize("approximate", ["none", "tanh"])
def test_gelu_layer_norm_and_linear_variants(opset, approximate, tmp_path):
    model = nn.Sequential(nn.Linear(8, 12, bias=False), nn.GELU(approximate=approximate), nn.LayerNorm(12),
                          nn.LayerNorm(12, elementwise_affine=False), nn.Linear(12, 4))
    _check(model, (core.randn(2, 3, 8),), tmp_path / "m.onnx", opset_version=opset)
    ops = {n.op_type for n in onnx.load(str(tmp_path / "m.onnx")).graph.node}
    assert ("Gelu" in ops) == (opset >= 20) and "LayerNormalization" in ops


def test_convolution_and_pooling_variants(tmp_path):
    model = nn.Sequential(
        nn.Conv2d(4, 6, 3, stride=2, padding=1, groups=2), nn.ReLU(), nn.MaxPool2d(3, stride=1, padding=1),
        nn.Conv2d(6, 6, 3, dilation=2, padding=2), nn.AvgPool2d(2, ceil_mode=True),
        nn.AvgPool2d(2, stride=1, padding=1, count_include_pad=False), nn.MaxPool2d(2, ceil_mode=True))
    _check(model, (core.randn(2, 4, 11, 11),), tmp_path / "conv.onnx")
    conv1d = nn.Sequential(nn.Conv1d(3, 5, 3, padding=1), nn.MaxPool1d(2), nn.AvgPool1d(2))
    _check(conv1d, (core.randn(2, 3, 16),), tmp_path / "conv1d.onnx")


def test_batch_norm_is_exported_as_batch_normalization(tmp_path):
    model = nn.Sequential(nn.Conv2d(3, 4, 3), nn.BatchNorm2d(4), nn.ReLU(), nn.BatchNorm2d(4, affine=False),
                          nn.Flatten(), nn.Linear(16, 6), nn.BatchNorm1d(6))
    for _ in range(2):  # non-trivial running statistics
        model(core.randn(5, 3, 4, 4))
    _check(model.eval(), (core.randn(2, 3, 4, 4),), tmp_path / "bn.onnx")
    ops = [n.op_type for n in onnx.load(str(tmp_path / "bn.onnx")).graph.node]
    assert ops.count("BatchNormalization") == 3
    running_mean, running_var = core.zeros(3), core.ones(3)
    with pytest.raises(core.onnx.OnnxExporterError, match="batch_norm in training mode"):
        core.onnx.export(lambda x: F.batch_norm(x, running_mean, running_var, training=True), (core.randn(2, 3),),
                         tmp_path / "train.onnx")


def _view_and_reduction_ops(x, index):
    """What the decompositions of pooling, attention and normalisation record, plus casts and fills."""
    windows = x.unfold(2, 3, 2)
    best = core.gather(windows, 3, windows.argmax(-1, keepdim=True)).squeeze(-1)
    normed = x * core.rsqrt((x * x).sum((1,), keepdim=True) + 1e-5)
    joined = core.cat([x.narrow(2, 0, 2), x[:, 1:3, ::2].transpose(1, 2)], 1)
    leaky = core.where(x > 0, x, 0.1 * x).clamp(-1, 1)
    attention = core.softmax(x.permute(0, 2, 1), -1).flip(1)
    rows = x.select(1, -1).unsqueeze(0).expand(3, 2, 6)
    mixed = x.to(core.int64).float() / 3 - 2 ** x.abs() + core.zeros(2, 4, 6)
    return (windows.amax(-1) + best, normed, joined, leaky, attention, rows, mixed, (x == 0).any(),
            core.gather(x, 2, index), x.mean(1), x.argmin(), core.log_softmax(x, 1).exp().sigmoid())


def test_view_reduction_and_elementwise_ops(tmp_path):
    x, index = core.randn(2, 4, 6), core.randint(0, 6, (2, 4, 3))
    _check(_view_and_reduction_ops, (x, index), tmp_path / "ops.onnx",
           input_names=["data", "picks"], output_names=[f"y{i}" for i in range(12)])
    session = ort.InferenceSession(str(tmp_path / "ops.onnx"))
    assert [i.name for i in session.get_inputs()] == ["data", "picks"] and session.get_outputs()[0].name == "y0"


def test_traced_programs_are_exported_as_traced(tmp_path):
    model = MODELS["mlp"][0]("cpu")
    x = core.randn(*MODELS["mlp"][1])
    core.onnx.export(jit.trace(model, x), None, tmp_path / "traced.onnx")
    np.testing.assert_allclose(_run(tmp_path / "traced.onnx", x)[0], to_numpy(model(x)), rtol=1e-4, atol=1e-5)
    w = core.randn(6, requires_grad=True)
    fn = jit.trace(lambda a: F.relu(a * w).sum(-1, keepdim=True), core.randn(3, 6))
    core.onnx.export(fn, None, tmp_path / "fn.onnx")
    y = core.randn(3, 6)
    np.testing.assert_allclose(_run(tmp_path / "fn.onnx", y)[0], to_numpy(fn(y)), rtol=1e-4, atol=1e-5)


# -- errors ---------------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("shape", [(6, 4), (3, 4, 2, 5)])
def test_cross_entropy_is_exported_as_softmax_cross_entropy_loss(reduction, shape, tmp_path):
    x = core.randn(*shape)
    target = core.randint(0, shape[1], shape[:1] + shape[2:])
    target[0] = 2  # ignore_index: skipped, and not counted by 'mean'
    weight = core.rand(shape[1]) + 0.5

    def loss(x, target):
        return F.cross_entropy(x, target, weight, ignore_index=2, reduction=reduction)

    _check(loss, (x, target), tmp_path / "ce.onnx")
    _check(lambda x, target: F.cross_entropy(x, target, reduction=reduction), (x, target), tmp_path / "ce2.onnx")
    ops = [n.op_type for n in onnx.load(str(tmp_path / "ce.onnx")).graph.node]
    assert "SoftmaxCrossEntropyLoss" in ops


def test_unsupported_op_names_it_and_lists_supported_ones(tmp_path):
    with pytest.raises(core.onnx.UnsupportedOperatorError, match=r"op 'cumprod' .*Supported ops: .*\brelu\b"):
        core.onnx.export(lambda a: a.cumprod(0), core.randn(3), tmp_path / "x.onnx")
    with pytest.raises(core.onnx.UnsupportedOperatorError, match="op 'uniform_'.*in-place and random ops"):
        core.onnx.export(lambda a: a + core.rand(3), core.randn(3), tmp_path / "x.onnx")
    assert not (tmp_path / "x.onnx").exists()


def test_bad_arguments(tmp_path):
    x = core.randn(3)
    with pytest.raises(ValueError, match=r"opset_version must be an int in \[13, "):
        core.onnx.export(lambda a: a + 1, x, tmp_path / "x.onnx", opset_version=9)
    with pytest.raises(ValueError, match="input_names must be 1 non-empty strings"):
        core.onnx.export(lambda a: a + 1, x, tmp_path / "x.onnx", input_names=["a", "b"])
    with pytest.raises(core.onnx.OnnxExporterError, match="returns 3, which is not a tensor"):
        core.onnx.export(lambda a: (a + 1, 3), x, tmp_path / "x.onnx")
    with pytest.raises(core.onnx.OnnxExporterError, match="layer_norm needs opset_version >= 17"):
        core.onnx.export(nn.LayerNorm(3), x, tmp_path / "x.onnx", opset_version=16)
    with pytest.raises(core.onnx.OnnxExporterError, match="ceil_mode=True has a last window that starts in the"):
        core.onnx.export(nn.MaxPool1d(3, 3, padding=1, ceil_mode=True), core.randn(1, 1, 5), tmp_path / "x.onnx")
    with pytest.raises(TypeError, match="model must be a Module, a function or a traced program"):
        core.onnx.export(3, x, tmp_path / "x.onnx")
