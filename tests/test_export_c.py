"""core.jit.export_c: exported C builds with a plain C99 compiler and matches core's eager outputs."""

import shutil
import struct
import subprocess

import numpy as np
import pytest

import core
import core.nn as nn
import core.nn.functional as F
from core.jit import ExportError, export_c

pytestmark = pytest.mark.skipif(shutil.which("cc") is None or shutil.which("make") is None,
                                reason="needs a C compiler (cc) and make")

STRICT = "-O1 -std=c99 -Wall -Wextra -Werror -pedantic"


def _build(d, cflags="-O1 -std=c99", *make_vars):
    r = subprocess.run(["make", "-s", "-C", str(d), f"CFLAGS={cflags}", *make_vars], capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr
    return d / "model"


def _run_binary(d, inputs, n_out, embedded=False):
    paths = []
    for k, x in enumerate(inputs):
        p = d / f"in{k}.bin"
        np.asarray(x.numpy(), dtype="<f4").tofile(p)
        paths.append(str(p))
    outs = [str(d / f"out{k}.bin") for k in range(n_out)]
    args = [str(d / "model")] + ([] if embedded else [str(d / "model.weights")]) + paths + outs
    r = subprocess.run(args, capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    return [np.fromfile(p, "<f4") for p in outs]


def _check(traced, fn, inputs, d, embedded=False, cflags="-O1 -std=c99"):
    files = export_c(traced, d, embed_weights=embedded)
    assert ("weights" in files) is not embedded
    _build(d, cflags)
    with core.no_grad():
        ref = fn(*inputs)
    refs = list(ref) if isinstance(ref, (tuple, list)) else [ref]
    got = _run_binary(d, inputs, len(refs), embedded)
    for g, r in zip(got, refs):
        np.testing.assert_allclose(g.reshape(r.shape), r.numpy(), rtol=1e-4, atol=1e-5)


class _LSTMNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(10, 8)
        self.lstm = nn.LSTM(8, 12, batch_first=True)
        self.fc = nn.Linear(12, 3)

    def forward(self, x):
        y, (h, _c) = self.lstm(self.emb(x))
        return self.fc(y[:, -1]), h


def _models():
    core.manual_seed(0)
    mlp = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 16), nn.Tanh(), nn.Linear(16, 4), nn.Sigmoid())
    cnn = nn.Sequential(nn.Conv2d(1, 4, 3, padding=1), nn.BatchNorm2d(4), nn.ReLU(), nn.MaxPool2d(2),
                        nn.Conv2d(4, 8, 3, stride=1, dilation=1, groups=2), nn.GELU(), nn.AvgPool2d(2),
                        nn.Flatten(), nn.Linear(32, 10), nn.LogSoftmax(dim=1))
    enc = nn.TransformerEncoder(nn.TransformerEncoderLayer(16, 2, 32, dropout=0.0, batch_first=True), 2)
    rng = np.random.default_rng(0)
    cnn[1].running_mean.copy_(core.tensor(rng.standard_normal(4).astype(np.float32)))
    cnn[1].running_var.copy_(core.tensor(rng.uniform(0.5, 2.0, 4).astype(np.float32)))
    return {
        "mlp": (mlp, (core.tensor(rng.standard_normal((3, 8)).astype(np.float32)),)),
        "cnn": (cnn, (core.tensor(rng.standard_normal((2, 1, 12, 12)).astype(np.float32)),)),
        "transformer": (enc, (core.tensor(rng.standard_normal((2, 5, 16)).astype(np.float32)),)),
        "lstm": (_LSTMNet(), (core.tensor(rng.integers(0, 10, (2, 4))),)),
    }


@pytest.mark.parametrize("name", ["mlp", "cnn", "transformer", "lstm"])
def test_example_models_match_eager(tmp_path, name):
    model, inputs = _models()[name]
    model.eval()
    traced = core.jit.trace(model, inputs)
    _check(traced, model, inputs, tmp_path, embedded=(name == "mlp"))


def test_builds_without_warnings_strict(tmp_path):
    model, inputs = _models()["cnn"]
    model.eval()
    export_c(core.jit.trace(model, inputs), tmp_path)
    _build(tmp_path, STRICT)  # -Werror: any warning fails the build
    enc, x = _models()["transformer"]
    export_c(core.jit.trace(enc.eval(), x), tmp_path / "emb", embed_weights=True)
    _build(tmp_path / "emb", STRICT)


class _GemmEdges(nn.Module):
    """The GEMM's edge cases: K past one K block (300) with ragged M and N, a large enough product to thread, a
    weight also read elsewhere (stored twice: packed and as is), a linear whose weight is computed (packed per
    call), a grouped convolution with stride, padding and dilation, a depthwise one with a bias (a GEMV per channel), and a
    max pooling whose windows leave the image (padding, dilation, ceil_mode)."""

    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(300, 70)
        self.conv = nn.Conv2d(4, 6, 3, stride=2, padding=1, dilation=2, groups=2)
        self.dw = nn.Conv2d(6, 6, 3, padding=1, groups=6)

    def forward(self, x, img):
        y = self.fc(x)
        c = self.dw(self.conv(img).relu())
        return y, F.linear(y, self.fc.weight[:, :70] * 0.5), c, F.max_pool2d(c, 3, 2, 1, 2, ceil_mode=True)


@pytest.mark.parametrize("batch", [1, 7, 64])
@pytest.mark.parametrize("make_vars", [(), ("ARCH=", "OPENMP=")], ids=["detected", "plain-c99"])
def test_gemm_edge_cases(tmp_path, monkeypatch, batch, make_vars):
    monkeypatch.setenv("OMP_NUM_THREADS", "2")
    core.manual_seed(0)
    rng = np.random.default_rng(batch)
    model = _GemmEdges().eval()
    x = core.tensor(rng.standard_normal((batch, 300)).astype(np.float32))
    img = core.tensor(rng.standard_normal((min(batch, 3), 4, 11, 11)).astype(np.float32))
    export_c(core.jit.trace(model, (x, img)), tmp_path)
    _build(tmp_path, "-O2 -std=c99", *make_vars)
    with core.no_grad():
        refs = model(x, img)
    for got, ref in zip(_run_binary(tmp_path, (x, img), 4), refs):
        np.testing.assert_allclose(got.reshape(ref.shape), ref.numpy(), rtol=1e-4, atol=1e-5)
    # one output against NumPy in float64, independent of core's kernels
    w, b = model.fc.weight.detach().numpy().astype(np.float64), model.fc.bias.detach().numpy().astype(np.float64)
    want = x.numpy().astype(np.float64) @ w.T + b
    np.testing.assert_allclose(np.fromfile(tmp_path / "out0.bin", "<f4").reshape(want.shape), want, rtol=1e-4,
                               atol=1e-5)


def _ops(x, y):
    a = (x * 2.0 - y).exp().clamp(max=3.0)  # y broadcasts over x's rows
    s = a.sum(dim=1, keepdim=True) / a.amax(dim=(0, 1))
    p = core.cat([x.permute(1, 0)[:, :2], y.reshape(4, 1)], dim=1)
    w = core.where(x > 0, F.softmax(x, dim=0), -x.abs().sqrt())
    return s, p, w.transpose(0, 1)[1:3], x.amin(dim=0)


def test_traced_function_views_broadcasting_reductions(tmp_path):
    rng = np.random.default_rng(0)
    x = core.tensor(rng.standard_normal((3, 4)).astype(np.float32))
    y = core.tensor(rng.standard_normal(4).astype(np.float32))
    traced = core.jit.trace(_ops, (x, y))
    _check(traced, _ops, (x, y), tmp_path)
    # hand-computed reference for one output, independent of core's eager kernels
    xn, yn = x.numpy().astype(np.float64), y.numpy().astype(np.float64)
    a = np.minimum(np.exp(xn * 2 - yn), 3.0)
    got = np.fromfile(tmp_path / "out0.bin", "<f4").reshape(3, 1)
    np.testing.assert_allclose(got, a.sum(1, keepdims=True) / a.max(), rtol=1e-4, atol=1e-5)


def test_conv1d_pool1d(tmp_path):
    core.manual_seed(0)
    m = nn.Sequential(nn.Conv1d(2, 3, 3, padding=2, dilation=2), nn.MaxPool1d(2, ceil_mode=True),
                      nn.AvgPool1d(2, padding=1, count_include_pad=False))
    x = core.tensor(np.random.default_rng(0).standard_normal((2, 2, 9)).astype(np.float32))
    _check(core.jit.trace(m.eval(), x), m, (x,), tmp_path)


def test_max_pool_propagates_nan(tmp_path):
    x = np.random.default_rng(0).standard_normal((1, 2, 7, 7)).astype(np.float32)
    x[0, 0, 3, 4] = x[0, 1, 0, 0] = np.nan

    def pool(t):
        return F.max_pool2d(t, 3, 2, 1), F.max_pool2d(t, 2)

    t = core.tensor(x)
    _check(core.jit.trace(pool, (t,)), pool, (t,), tmp_path)  # assert_allclose: NaN where core has NaN
    assert np.isnan(np.fromfile(tmp_path / "out1.bin", "<f4")).sum() == 2


def test_unsupported_ops_listed_before_writing(tmp_path):
    def fn(x):
        return x.cumsum(0).flip(0) + 1

    traced = core.jit.trace(fn, core.ones(3, 2))
    with pytest.raises(ExportError, match=r"2 op\(s\).*cumsum.*flip"):
        export_c(traced, tmp_path / "out")
    assert not (tmp_path / "out").exists()


def test_weights_file_format_and_bad_weights(tmp_path):
    model, inputs = _models()["mlp"]
    traced = core.jit.trace(model.eval(), inputs)
    files = export_c(traced, tmp_path)
    blob = files["weights"].read_bytes()
    # version 2: each linear weight w[N, K] is stored as w.T in panels of 16 columns (zero-padded), then its bias
    stored = []
    for layer in (model[0], model[2], model[4]):
        w = layer.weight.detach().numpy()
        n, k = w.shape
        panels = np.zeros((k, -(-n // 16) * 16), np.float32)
        panels[:, :n] = w.T
        stored += [panels.reshape(k, -1, 16).transpose(1, 0, 2).ravel(), layer.bias.detach().numpy()]
    stored = np.concatenate(stored)
    assert blob[:4] == b"CXW1" and struct.unpack("<IQ", blob[4:16]) == (2, stored.size)
    np.testing.assert_array_equal(np.frombuffer(blob[16:], "<f4"), stored)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["Makefile", "main.c", "model.c", "model.h",
                                                          "model.weights"]  # no temporary file left
    _build(tmp_path)
    files["weights"].write_bytes(blob[:-4])  # truncated: model_init fails, the binary reports it
    np.asarray(inputs[0].numpy(), "<f4").tofile(tmp_path / "x.bin")
    r = subprocess.run([str(tmp_path / "model"), str(files["weights"]), str(tmp_path / "x.bin"),
                        str(tmp_path / "y.bin")], capture_output=True, text=True)
    assert r.returncode != 0 and "weights" in r.stderr
    assert "#define MODEL_INPUT0_SHAPE {3, 8}" in files["header"].read_text()


def test_rejects_non_traced():
    with pytest.raises(TypeError, match="export_c"):
        export_c(nn.Linear(2, 2), "unused")


def _matmuls(a, b, c):
    bm = core.bmm(a.unsqueeze(0).expand(2, 3, 4), b.unsqueeze(0).expand(2, 4, 5))
    mean = a.mean(dim=1) + a.mean()
    return core.mm(a, b), core.addmm(c, a, b, beta=0.5, alpha=2.0), bm, core.matmul(a, b[:, 0]), mean


def test_matmul_family_and_mean(tmp_path):
    rng = np.random.default_rng(0)
    a, b, c = (core.tensor(rng.standard_normal(s).astype(np.float32)) for s in ((3, 4), (4, 5), (3, 5)))
    _check(core.jit.trace(_matmuls, (a, b, c)), _matmuls, (a, b, c), tmp_path)
    an, bn, cn = a.numpy().astype(np.float64), b.numpy().astype(np.float64), c.numpy().astype(np.float64)
    got = np.fromfile(tmp_path / "out1.bin", "<f4").reshape(3, 5)
    np.testing.assert_allclose(got, 0.5 * cn + 2.0 * an @ bn, rtol=1e-4, atol=1e-5)


def _indexing(x, i):
    top = x.max(dim=1)  # argmax + gather
    return top.values, x.argmin(dim=0), core.gather(x, 1, i), x.argmax()


def test_argmax_argmin_gather(tmp_path):
    rng = np.random.default_rng(0)
    x = core.tensor(rng.standard_normal((3, 5)).astype(np.float32))
    i = core.tensor(rng.integers(0, 5, (3, 2)))
    _check(core.jit.trace(_indexing, (x, i)), _indexing, (x, i), tmp_path)
    xn, idx = x.numpy(), i.numpy()
    np.testing.assert_array_equal(np.fromfile(tmp_path / "out1.bin", "<f4"), xn.argmin(0))
    np.testing.assert_array_equal(np.fromfile(tmp_path / "out2.bin", "<f4").reshape(3, 2),
                                  np.take_along_axis(xn, idx, 1))


def test_export_from_every_device(device, tmp_path):
    """A model traced on any backend's device exports the same C (weights are copied to the host)."""
    model, (x,) = _models()["cnn"]
    model = model.eval().to(device)
    x = x.to(device)
    traced = core.jit.trace(model, x)
    export_c(traced, tmp_path)
    _build(tmp_path)
    with core.no_grad():
        ref = model(x).cpu().numpy()
    got = _run_binary(tmp_path, [x.cpu()], 1)[0]
    np.testing.assert_allclose(got.reshape(ref.shape), ref, rtol=1e-4, atol=1e-5)


def test_non_tensor_outputs_refused(tmp_path):
    traced = core.jit.trace(lambda x: (x + 1, 3), core.ones(2))
    with pytest.raises(ExportError, match="non-tensor outputs"):
        export_c(traced, tmp_path / "out")
    assert not (tmp_path / "out").exists()
