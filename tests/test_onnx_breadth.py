"""core.onnx.export breadth: indexing, gather/scatter, scans and sorting, recurrent and attention modules, opsets.

Every model is checked by onnx.checker and run in onnxruntime against eager outputs (``_check``)."""

from __future__ import annotations

import numpy as np
import pytest
from test_onnx import _check, _run

import core
import core.nn as nn
import core.nn.functional as F
import core.onnx
from core.testing import to_numpy

onnx = pytest.importorskip("onnx", reason="core.onnx.export needs the onnx package")
ort = pytest.importorskip("onnxruntime", reason="running exported models needs onnxruntime")


def _ops(path) -> list:
    return [n.op_type for n in onnx.load(str(path)).graph.node]


@pytest.fixture
def x():
    rng = np.random.default_rng(0)
    return core.tensor(rng.standard_normal((4, 6, 8)).astype(np.float32))


BASIC = {
    "int": lambda a: a[0],
    "negative": lambda a: a[-1, -3:],
    "step": lambda a: a[:, 1:5:2],
    "none": lambda a: a[..., None],
    "mixed": lambda a: a[1, :, ::3],
    "select": lambda a: a.select(2, -2),
    "ellipsis_int": lambda a: a[..., -1, None, 2:],
}


@pytest.mark.parametrize("kind", sorted(BASIC))
def test_basic_indexing_drops_and_adds_dims_as_eager(kind, x, tmp_path):
    _check(BASIC[kind], (x,), tmp_path / "m.onnx")


def test_int_index_is_a_gather_with_a_scalar_index(x, tmp_path):
    proto = core.onnx.export(lambda a: a[2], (x,), tmp_path / "m.onnx")
    assert [d.dim_value for d in proto.graph.output[0].type.tensor_type.shape.dim] == [6, 8]
    gather = next(n for n in proto.graph.node if n.op_type == "Gather")
    index = next(i for i in proto.graph.initializer if i.name == gather.input[1])
    assert list(index.dims) == []  # a 0-d index drops the dim


_I = core.tensor([0, -1, 2])
_J = core.tensor([[1, 3], [5, -2]])
ADVANCED = {
    "first": lambda a: a[_I],
    "middle": lambda a: a[:, _I],
    "2d": lambda a: a[:, _J],
    "two_adjacent_first": lambda a: a[_I, _I],
    "two_adjacent_middle": lambda a: a[:, _I, _I],
    "broadcast": lambda a: a[:, _J, core.tensor([0, 7])],
    "non_adjacent": lambda a: a[_I, :, _I],
    "with_slice": lambda a: a[1:, _J, 2],
    "index_select": lambda a: a.index_select(2, core.tensor([7, 0, 0])),
}


@pytest.mark.parametrize("kind", sorted(ADVANCED))
def test_advanced_indexing_places_dims_as_numpy(kind, x, tmp_path):
    _check(ADVANCED[kind], (x,), tmp_path / "m.onnx")
    assert {"Gather", "GatherND"} & set(_ops(tmp_path / "m.onnx"))


def _put(index, value, accumulate=False):
    def fn(a):
        y = a.clone()
        if accumulate:
            return y.index_put_(index, value if isinstance(value, core.Tensor) else core.tensor(value), True)
        y[index] = value
        return y

    return fn


PUTS = {
    "int_scalar": _put((_I,), 2.0),
    "middle_rows": _put((slice(None), _I), core.arange(8.0)),
    "two_adjacent_middle": _put((slice(None), _J, core.tensor([0, 7])), core.ones(4, 2, 2)),
    "non_adjacent": _put((_I, slice(None), _I), core.arange(6.0)),
    "accumulate_duplicates": _put((core.tensor([1, 1, -1]),), core.ones(3, 6, 8), accumulate=True),
}


@pytest.mark.parametrize("kind", sorted(PUTS))
def test_index_put_into_a_copy(kind, x, tmp_path):
    _check(PUTS[kind], (x,), tmp_path / "m.onnx", opset_version=16)
    assert "ScatterND" in _ops(tmp_path / "m.onnx")


def test_gather_and_scatter_variants(x, tmp_path):
    rng = np.random.default_rng(0)
    index = core.tensor(rng.integers(0, 8, (4, 6, 3)))

    def fn(a):
        base = core.ones(4, 6, 8)
        return (core.gather(a, -1, index), base.scatter(2, index, a[..., :3]), base.scatter(2, index, 2.5),
                base.scatter_add(2, index, a[..., :3]), base.scatter_reduce(2, index, a[..., :3], "prod"))

    _check(fn, (x,), tmp_path / "m.onnx", opset_version=16)
    ops = _ops(tmp_path / "m.onnx")
    assert "GatherElements" in ops and ops.count("ScatterElements") == 4


@pytest.mark.parametrize("reduce", ["amax", "amin", "sum", "prod"])
@pytest.mark.parametrize("include_self", [True, False])
def test_scatter_reduce_with_and_without_self(reduce, include_self, tmp_path):
    rng = np.random.default_rng(0)
    src = core.tensor(rng.standard_normal((5, 4)).astype(np.float32))
    index = core.tensor(rng.integers(0, 3, (5, 4)))  # duplicates, and untouched positions

    def fn(s):
        return core.full((3, 4), 0.5).scatter_reduce(0, index, s, reduce, include_self=include_self)

    _check(fn, (src,), tmp_path / "m.onnx", opset_version=18)


def test_scatter_reduce_opset_and_in_place_errors(tmp_path):
    index = core.tensor([[0, 1]])
    with pytest.raises(core.onnx.OnnxExporterError, match=r"scatter_ with reduce='amax' needs opset_version >= 18"):
        core.onnx.export(lambda s: core.zeros(2, 2).scatter_reduce(0, index, s, "amax"), core.randn(1, 2),
                         tmp_path / "m.onnx", opset_version=17)
    with pytest.raises(core.onnx.OnnxExporterError, match="writes in place into a tensor that is an input"):
        core.onnx.export(lambda a: a.scatter_(1, index, 1.0), core.randn(2, 2), tmp_path / "m.onnx")
    with pytest.raises(core.onnx.OnnxExporterError, match="'index_put_' writes in place into a tensor that is an"):
        core.onnx.export(lambda a: a.clone()[0].index_put_((index[0],), core.ones(2)), core.randn(2, 2),
                         tmp_path / "m.onnx")
    with pytest.raises(core.onnx.OnnxExporterError, match="index_put_ with accumulate=True needs opset_version >= 16"):
        core.onnx.export(lambda a: a.clone().index_put_((index[0],), core.ones(2, 2), True), core.randn(2, 2),
                         tmp_path / "m.onnx", opset_version=15)
    assert not (tmp_path / "m.onnx").exists()


@pytest.mark.parametrize("opset", [13, 17, 18])
def test_cumsum_sort_topk_arg_and_selection_ops(opset, x, tmp_path):
    ties = core.tensor(np.random.default_rng(0).integers(0, 3, (5, 7)))

    def fn(a, t):
        values, indices = a.sort(1, descending=True)
        top, where_top = a.topk(3, -1, largest=False)
        return (a.cumsum(1), t.cumsum(0), t.cumsum(-1, dtype=core.float64), values, indices, top, where_top,
                t.sort(-1)[1], t.sort(0, descending=True)[1], a.argsort(0), a.argmax(1), a.argmin(-1, keepdim=True),
                a.argmax(), t.isinf(), (a / 0).isinf(),
                core.where(a > 0, a, -a), a.masked_fill(a < 0.2, 3.0), a.clamp(min=-0.5), a.clamp(-0.1, 0.1))

    _check(fn, (x, ties), tmp_path / "m.onnx", opset_version=opset)
    assert onnx.load(str(tmp_path / "m.onnx")).opset_import[0].version == opset
    ops = set(_ops(tmp_path / "m.onnx"))
    assert {"CumSum", "TopK", "ArgMax", "ArgMin", "Where"} <= ops


def test_view_and_reduction_ops_at_opset_18(tmp_path):
    from test_onnx import _view_and_reduction_ops

    x, index = core.randn(2, 4, 6), core.randint(0, 6, (2, 4, 3))
    _check(_view_and_reduction_ops, (x, index), tmp_path / "m.onnx", opset_version=18)


def _rnn_input():
    return core.tensor(np.random.default_rng(0).standard_normal((3, 5, 4)).astype(np.float32))


RNNS = {
    "lstm": lambda: nn.LSTM(4, 6),
    "lstm_2layer_batch_first": lambda: nn.LSTM(4, 6, num_layers=2, batch_first=True),
    "lstm_bidirectional": lambda: nn.LSTM(4, 6, bidirectional=True),
    "lstm_proj": lambda: nn.LSTM(4, 6, proj_size=3),
    "gru": lambda: nn.GRU(4, 6),
    "gru_bidirectional_2layer": lambda: nn.GRU(4, 6, num_layers=2, bidirectional=True, batch_first=True),
    "rnn_tanh": lambda: nn.RNN(4, 6),
    "rnn_relu_2layer": lambda: nn.RNN(4, 6, num_layers=2, nonlinearity="relu", bias=False),
}


@pytest.mark.parametrize("kind", sorted(RNNS))
@pytest.mark.parametrize("opset", [17, 18])
def test_recurrent_modules_match_eager(kind, opset, tmp_path):
    core.manual_seed(0)
    model = RNNS[kind]()
    _check(lambda a: model(a)[0], (_rnn_input(),), tmp_path / "m.onnx", opset_version=opset)
    _check(lambda a: model(a)[1] if kind.startswith(("gru", "rnn")) else model(a)[1][1], (_rnn_input(),),
           tmp_path / "h.onnx", opset_version=opset)


def test_lstm_cell_with_given_state(tmp_path):
    core.manual_seed(0)
    cell = nn.LSTMCell(4, 6)
    h, c = core.randn(5, 6), core.randn(5, 6)
    _check(lambda a, h, c: cell(a, (h, c)), (_rnn_input()[0], h, c), tmp_path / "m.onnx")


def test_attention_and_transformers_match_eager(tmp_path):
    core.manual_seed(0)
    q = core.randn(2, 5, 8)
    kv = core.randn(2, 7, 8)
    mask = core.randn(5, 7) > 0
    mha = nn.MultiheadAttention(8, 2, batch_first=True).eval()
    _check(lambda a, m: mha(a, m, m), (q, kv), tmp_path / "mha.onnx")
    _check(lambda a: F.scaled_dot_product_attention(a, a, a, is_causal=True), (q,), tmp_path / "causal.onnx")
    _check(lambda a, m: F.scaled_dot_product_attention(a, m, m, attn_mask=mask), (q, kv), tmp_path / "mask.onnx")
    encoder = nn.TransformerEncoder(nn.TransformerEncoderLayer(8, 2, 16, batch_first=True), 2).eval()
    _check(encoder, (q,), tmp_path / "enc.onnx")
    decoder = nn.TransformerDecoder(nn.TransformerDecoderLayer(8, 2, 16, batch_first=True, norm_first=True), 2).eval()
    causal = nn.Transformer.generate_square_subsequent_mask(5)
    _check(lambda t, m: decoder(t, m, tgt_mask=causal), (q, kv), tmp_path / "dec.onnx")


def test_unsupported_ops_are_all_listed(tmp_path):
    with pytest.raises(core.onnx.UnsupportedOperatorError,
                       match=r"op 'nonzero' \(node 1\) has no ONNX converter \(nor do: cumprod\)\. Supported ops: "
                             r".*\bcumsum\b.*\bscatter_\b.*\bsort\b"):
        core.onnx.export(lambda a: a[a > 0].cumprod(0), core.randn(3), tmp_path / "m.onnx")


# -- dynamic axes ---------------------------------------------------------------------------------------------------
def _dynamic_models():
    from test_jit import MODELS

    core.manual_seed(0)
    lstm = nn.LSTM(4, 6, num_layers=2, batch_first=True)
    gru = nn.GRU(4, 6, bidirectional=True)
    mha = nn.MultiheadAttention(8, 2, batch_first=True).eval()
    decoder = nn.TransformerDecoder(nn.TransformerDecoderLayer(8, 2, 16, batch_first=True), 2).eval()
    return {  # model, example input maker (batch -> inputs), batch axis
        "mlp": (MODELS["mlp"][0]("cpu").eval(), lambda n: (core.randn(n, *MODELS["mlp"][1][1:]),), 0),
        "lenet": (MODELS["lenet"][0]("cpu").eval(), lambda n: (core.randn(n, *MODELS["lenet"][1][1:]),), 0),
        "encoder": (MODELS["encoder"][0]("cpu").eval(), lambda n: (core.randn(n, 5, 16),), 0),
        "lstm": (lambda a: lstm(a)[0], lambda n: (core.randn(n, 5, 4),), 0),
        "gru_seq_first": (lambda a: gru(a)[1], lambda n: (core.randn(5, n, 4),), 1),
        "mha": (lambda a: mha(a, a, a)[0], lambda n: (core.randn(n, 5, 8),), 0),
        "decoder": (decoder, lambda n: (core.randn(n, 5, 8), core.randn(n, 7, 8)), 0),
        "indexing": (lambda a: (a[:, 1:, 0].cumsum(0).sort(-1)[0], a[:, core.tensor([2, 0])].sum(1), a[..., None],
                                a.sort(0, descending=True)[1], a[:, 1:].flatten(0, 1)),
                     lambda n: (core.randn(n, 4, 8),), 0),
    }


@pytest.mark.parametrize("kind", sorted(_dynamic_models()))
def test_dynamic_batch_runs_at_other_batch_sizes(kind, tmp_path):
    model, inputs, axis = _dynamic_models()[kind]
    expected = model(*inputs(3))
    count = 1 if isinstance(expected, core.Tensor) else len(expected)
    outputs = [f"y{i}" for i in range(count)]
    names = [f"x{i}" for i in range(len(inputs(3)))]
    dynamic = {name: {axis: "batch"} for name in names}
    dynamic.update({name: [0] if kind == "indexing" else {axis: "batch"} for name in outputs})
    proto = core.onnx.export(model, inputs(3), tmp_path / "m.onnx", input_names=names, output_names=outputs,
                             dynamic_axes=dynamic)
    assert proto.graph.input[0].type.tensor_type.shape.dim[axis].dim_param == "batch"
    for batch in (3, 5, 1):
        x = inputs(batch)
        want = model(*x)
        want = [want] if isinstance(want, core.Tensor) else list(want)
        got = _run(tmp_path / "m.onnx", *x)
        for g, w in zip(got, want):
            assert g.shape == tuple(w.shape)
            np.testing.assert_allclose(g, to_numpy(w), rtol=1e-4, atol=1e-5)


def test_dynamic_batch_and_sequence_of_an_encoder(tmp_path):
    from test_jit import MODELS

    model = MODELS["encoder"][0]("cpu").eval()
    axes = {0: "batch", 1: "seq"}
    core.onnx.export(model, core.randn(3, 7, 16), tmp_path / "m.onnx", input_names=["x"], output_names=["y"],
                     dynamic_axes={"x": axes, "y": axes})
    dims = onnx.load(str(tmp_path / "m.onnx")).graph.output[0].type.tensor_type.shape.dim
    assert [d.dim_param or d.dim_value for d in dims] == ["batch", "seq", 16]
    for shape in [(3, 7, 16), (2, 4, 16), (5, 11, 16)]:
        x = core.randn(*shape)
        np.testing.assert_allclose(_run(tmp_path / "m.onnx", x)[0], to_numpy(model(x)), rtol=1e-4, atol=1e-5)


def test_dynamic_axes_errors(tmp_path):
    x = core.randn(3, 4)
    with pytest.raises(ValueError, match=r"dynamic_axes names \['z'\], which are not input or output names"):
        core.onnx.export(lambda a: a + 1, x, tmp_path / "m.onnx", input_names=["x"], dynamic_axes={"z": [0]})
    with pytest.raises(ValueError, match=r"dynamic_axes\['x'\] has axis 2 -> 'x_dynamic_axes_1'"):
        core.onnx.export(lambda a: a + 1, x, tmp_path / "m.onnx", input_names=["x"], dynamic_axes={"x": [2]})
    with pytest.raises(core.onnx.OnnxExporterError, match="makes axis 0 of 'y' dynamic, but the trace computes it"):
        core.onnx.export(lambda a: a.sum(0), x, tmp_path / "m.onnx", input_names=["x"], output_names=["y"],
                         dynamic_axes={"x": [0], "y": [0]})
    assert not (tmp_path / "m.onnx").exists()


def test_models_traced_on_every_device_export(device, tmp_path):
    core.manual_seed(0)
    lstm = nn.LSTM(4, 6, batch_first=True).to(device)
    _check(lambda a: lstm(a)[0], (_rnn_input().to(device),), tmp_path / "lstm.onnx")
    index = core.tensor([2, 0, -1], device=device)
    x = core.tensor(np.random.default_rng(0).standard_normal((3, 4)).astype(np.float32), device=device)

    def fn(a):
        y = core.zeros(3, 4, device=device).scatter_add(1, index[:, None].abs().expand(3, 2), a[:, :2])
        z = a.clone()
        z[index] = 1.5
        return a[index], a[:, 1], y, z, a.cumsum(1), a.sort(0)[0], a.isinf(), a.isnan()

    _check(fn, (x,), tmp_path / "ops.onnx", opset_version=18)


# -- TrainingMode, is_in_onnx_export, producer ---------------------------------------------------------------------
class _ModeProbe(nn.Module):
    """Adds 1 in training mode and 2 in eval mode, 10 more while an export traces it."""

    def forward(self, a):
        return a + (1.0 if self.training else 2.0) + (10.0 if core.onnx.is_in_onnx_export() else 0.0)


@pytest.mark.parametrize("training, start, added", [(core.onnx.TrainingMode.EVAL, True, 12.0),
                                                    (core.onnx.TrainingMode.PRESERVE, True, 11.0),
                                                    (core.onnx.TrainingMode.PRESERVE, False, 12.0),
                                                    (core.onnx.TrainingMode.TRAINING, False, 11.0)])
def test_training_mode_and_is_in_onnx_export(training, start, added, tmp_path):
    model = _ModeProbe().train(start)
    x = core.randn(2, 3)
    assert not core.onnx.is_in_onnx_export()
    proto = core.onnx.export(model, x, tmp_path / "m.onnx", training=training)
    assert model.training is start and not core.onnx.is_in_onnx_export()
    np.testing.assert_allclose(_run(tmp_path / "m.onnx", x)[0], to_numpy(x) + added, rtol=1e-6)
    assert (proto.producer_name, proto.producer_version) == ("core", core.__version__)
    assert (core.onnx.producer_name, core.onnx.producer_version) == ("core", core.__version__)


def test_training_mode_errors(tmp_path):
    with pytest.raises(TypeError, match="training must be a core.onnx.TrainingMode, got True"):
        core.onnx.export(nn.ReLU(), core.randn(2), tmp_path / "m.onnx", training=True)
    with pytest.raises(core.onnx.UnsupportedOperatorError, match="in-place and random ops"):
        core.onnx.export(nn.Dropout(0.5), core.randn(2), tmp_path / "m.onnx", training=core.onnx.TrainingMode.TRAINING)
    assert not core.onnx.is_in_onnx_export()


def test_select_model_mode_for_export():
    model = nn.Sequential(nn.Dropout(0.5)).train()
    with core.onnx.select_model_mode_for_export(model, core.onnx.TrainingMode.EVAL):
        assert not model.training and not model[0].training
    assert model.training and model[0].training
    with pytest.raises(TypeError, match="'mode' should be a core.onnx.TrainingMode enum, but got 'int'"):
        with core.onnx.select_model_mode_for_export(model, 0):
            pass


# -- custom symbolics -------------------------------------------------------------------------------------------------
def _cumprod_symbolic(g, input, dim, dtype=None):
    """cumprod of positive values as exp(cumsum(log x)), built with PyTorch's attribute suffixes."""
    axis = g.op("Constant", value_t=core.tensor(dim))
    return g.op("Exp", g.op("CumSum", g.op("Log", input), axis, exclusive_i=0))


def test_register_custom_op_symbolic_exports_an_unsupported_op(tmp_path):
    x = core.rand(3, 5) + 0.5
    fn = lambda a: a.cumprod(1) * 2  # noqa: E731
    core.onnx.register_custom_op_symbolic("aten::cumprod", _cumprod_symbolic, 17)
    try:
        _check(fn, (x,), tmp_path / "m.onnx", opset_version=18)
        assert {"CumSum", "Exp", "Log"} <= set(_ops(tmp_path / "m.onnx"))
        with pytest.raises(core.onnx.UnsupportedOperatorError, match="op 'cumprod'"):  # registered from 17 on
            core.onnx.export(fn, x, tmp_path / "old.onnx", opset_version=16)
    finally:
        core.onnx.unregister_custom_op_symbolic("aten::cumprod", 17)
    with pytest.raises(core.onnx.UnsupportedOperatorError, match="op 'cumprod'"):
        core.onnx.export(fn, x, tmp_path / "m2.onnx")


def test_custom_symbolic_overrides_a_builtin_and_is_checked(tmp_path):
    x = core.randn(2, 3)
    core.onnx.register_custom_op_symbolic("core::relu", lambda g, a: g.op("Abs", a), 13)
    try:
        core.onnx.export(lambda a: a.relu(), x, tmp_path / "m.onnx")
        np.testing.assert_allclose(_run(tmp_path / "m.onnx", x)[0], np.abs(to_numpy(x)))
        core.onnx.register_custom_op_symbolic("core::relu", lambda g, a: 3, 13)
        with pytest.raises(core.onnx.OnnxExporterError, match="converter of op 'relu' returned \\[3\\]"):
            core.onnx.export(lambda a: a.relu(), x, tmp_path / "m.onnx")
    finally:
        core.onnx.unregister_custom_op_symbolic("core::relu", 13)
    with pytest.raises(ValueError, match="symbolic_name must be '<domain>::<op>'"):
        core.onnx.register_custom_op_symbolic("relu", lambda g, a: a, 13)
    with pytest.raises(TypeError, match="symbolic_fn must be callable"):
        core.onnx.register_custom_op_symbolic("core::relu", None, 13)
