"""Recurrent layers: RNN/LSTM/GRU and their cells against NumPy references (and PyTorch when importable)."""

from __future__ import annotations

import numpy as np
import pytest

import core
from core import nn
from core.autograd import gradcheck
from core.testing import assert_close

MODES = {"RNN": 1, "LSTM": 4, "GRU": 3}


def _sigmoid(x):
    return 1 / (1 + np.exp(-x))


# -- NumPy references -----------------------------------------------------------------------------------------------
def np_lstm_step(x, h, c, w_ih, w_hh, b_ih, b_hh):
    """One LSTM step, gates i, f, g, o."""
    i, f, g, o = np.split(x @ w_ih.T + b_ih + h @ w_hh.T + b_hh, 4, axis=-1)
    c = _sigmoid(f) * c + _sigmoid(i) * np.tanh(g)
    return _sigmoid(o) * np.tanh(c), c


def np_gru_step(x, h, w_ih, w_hh, b_ih, b_hh):
    """One GRU step, gates r, z, n with n = tanh(W_in x + b_in + r * (W_hn h + b_hn))."""
    x_r, x_z, x_n = np.split(x @ w_ih.T + b_ih, 3, axis=-1)
    h_r, h_z, h_n = np.split(h @ w_hh.T + b_hh, 3, axis=-1)
    r, z = _sigmoid(x_r + h_r), _sigmoid(x_z + h_z)
    n = np.tanh(x_n + r * h_n)
    return (1 - z) * n + z * h


def np_recurrent(mode, params, x, h0, c0, num_layers, bidirectional):
    """Full multi-layer (bi)directional recurrence over a time-major (T, N, F) array."""
    dirs = 2 if bidirectional else 1
    layer_input, h_n, c_n = x, [], []
    for layer in range(num_layers):
        outs = []
        for d in range(dirs):
            sfx = f"_l{layer}" + ("_reverse" if d else "")
            w_ih, w_hh, b_ih, b_hh = (params[n + sfx] for n in ("weight_ih", "weight_hh", "bias_ih", "bias_hh"))
            h, c = h0[layer * dirs + d], c0[layer * dirs + d] if c0 is not None else None
            steps = range(x.shape[0])[::-1] if d else range(x.shape[0])
            out = [None] * x.shape[0]
            for t in steps:
                if mode == "LSTM":
                    h, c = np_lstm_step(layer_input[t], h, c, w_ih, w_hh, b_ih, b_hh)
                elif mode == "GRU":
                    h = np_gru_step(layer_input[t], h, w_ih, w_hh, b_ih, b_hh)
                else:
                    h = np.tanh(layer_input[t] @ w_ih.T + b_ih + h @ w_hh.T + b_hh)
                out[t] = h
            outs.append(np.stack(out))
            h_n.append(h)
            c_n.append(c)
        layer_input = np.concatenate(outs, -1)
    return layer_input, np.stack(h_n), (np.stack(c_n) if c0 is not None else None)


def _params(module):
    return {k: v.cpu().numpy().astype(np.float64) for k, v in module.state_dict().items()}


def _split(mode, result):
    """(output, h_n, c_n or None) from a module's result."""
    output, state = result
    return (output, *state) if mode == "LSTM" else (output, state, None)


# -- parameters, init, repr -----------------------------------------------------------------------------------------
@pytest.mark.parametrize("mode", MODES)
def test_parameter_names_shapes_and_init(mode, device):
    m = getattr(nn, mode)(3, 5, num_layers=2, bidirectional=True, device=device)
    gates = MODES[mode] * 5
    expected = {}
    for layer, in_size in ((0, 3), (1, 10)):
        for sfx in ("", "_reverse"):
            expected.update({f"weight_ih_l{layer}{sfx}": (gates, in_size), f"weight_hh_l{layer}{sfx}": (gates, 5),
                             f"bias_ih_l{layer}{sfx}": (gates,), f"bias_hh_l{layer}{sfx}": (gates,)})
    assert {k: tuple(v.shape) for k, v in m.state_dict().items()} == expected
    assert list(m.state_dict())[:4] == ["weight_ih_l0", "weight_hh_l0", "bias_ih_l0", "bias_hh_l0"]
    bound = 1 / np.sqrt(5)
    for p in m.parameters():
        assert p.requires_grad and np.abs(p.detach().cpu().numpy()).max() <= bound
    assert len(m.all_weights) == 4 and m.all_weights[1][0] is m.weight_ih_l0_reverse
    assert [n for n, _ in nn.GRU(3, 5, bias=False).named_parameters()] == ["weight_ih_l0", "weight_hh_l0"]
    assert tuple(nn.LSTM(3, 5, proj_size=2).weight_hr_l0.shape) == (2, 5)
    assert tuple(nn.LSTM(3, 5, proj_size=2).weight_hh_l0.shape) == (20, 2)


def test_reprs():
    assert repr(nn.RNN(10, 20)) == "RNN(10, 20)"
    assert repr(nn.RNN(10, 20, 2, "relu")) == "RNN(10, 20, num_layers=2)"
    assert repr(nn.LSTM(10, 20, num_layers=2, bias=False, batch_first=True, dropout=0.5, bidirectional=True,
                        proj_size=5)) == ("LSTM(10, 20, proj_size=5, num_layers=2, bias=False, batch_first=True, "
                                          "dropout=0.5, bidirectional=True)")
    assert repr(nn.GRU(4, 8, batch_first=True)) == "GRU(4, 8, batch_first=True)"
    assert repr(nn.RNNCell(3, 4, bias=False, nonlinearity="relu")) == "RNNCell(3, 4, bias=False, nonlinearity=relu)"
    assert repr(nn.LSTMCell(3, 4)) == "LSTMCell(3, 4)"
    assert repr(nn.GRUCell(3, 4)) == "GRUCell(3, 4)"


# -- against NumPy --------------------------------------------------------------------------------------------------
def test_lstm_and_gru_cells_match_numpy(device):
    rng = np.random.default_rng(0)
    x, h, c = rng.standard_normal((2, 3)), rng.standard_normal((2, 4)), rng.standard_normal((2, 4))
    lstm = nn.LSTMCell(3, 4, device=device, dtype=core.float64)
    p = _params(lstm)
    h1, c1 = lstm(core.tensor(x, device=device), (core.tensor(h, device=device), core.tensor(c, device=device)))
    eh, ec = np_lstm_step(x, h, c, p["weight_ih"], p["weight_hh"], p["bias_ih"], p["bias_hh"])
    assert_close(h1, eh)
    assert_close(c1, ec)
    gru = nn.GRUCell(3, 4, device=device, dtype=core.float64)
    p = _params(gru)
    assert_close(gru(core.tensor(x, device=device), core.tensor(h, device=device)),
                 np_gru_step(x, h, p["weight_ih"], p["weight_hh"], p["bias_ih"], p["bias_hh"]))
    rnn = nn.RNNCell(3, 4, nonlinearity="relu", device=device, dtype=core.float64)
    p = _params(rnn)
    assert_close(rnn(core.tensor(x, device=device), core.tensor(h, device=device)),
                 np.maximum(x @ p["weight_ih"].T + p["bias_ih"] + h @ p["weight_hh"].T + p["bias_hh"], 0))


def test_cells_default_state_and_unbatched(device):
    x = core.randn(3, device=device)
    for cell in (nn.RNNCell(3, 4, device=device), nn.GRUCell(3, 4, device=device)):
        out = cell(x)
        assert tuple(out.shape) == (4,)
        assert_close(out, cell(x.unsqueeze(0), core.zeros(1, 4, device=device))[0])
    h, c = nn.LSTMCell(3, 4, device=device)(x)
    assert tuple(h.shape) == (4,) and tuple(c.shape) == (4,)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("num_layers,bidirectional", [(1, False), (2, True)])
def test_sequence_matches_numpy(mode, num_layers, bidirectional, device):
    rng = np.random.default_rng(1)
    m = getattr(nn, mode)(3, 4, num_layers=num_layers, bidirectional=bidirectional, device=device,
                          dtype=core.float64)
    dirs = 2 if bidirectional else 1
    x = rng.standard_normal((5, 2, 3))
    h0 = rng.standard_normal((num_layers * dirs, 2, 4))
    c0 = rng.standard_normal((num_layers * dirs, 2, 4)) if mode == "LSTM" else None
    state = core.tensor(h0, device=device)
    if mode == "LSTM":
        state = (state, core.tensor(c0, device=device))
    out, h_n, c_n = _split(mode, m(core.tensor(x, device=device), state))
    e_out, e_h, e_c = np_recurrent(mode, _params(m), x, h0, c0, num_layers, bidirectional)
    assert tuple(out.shape) == (5, 2, 4 * dirs)
    assert_close(out, e_out)
    assert_close(h_n, e_h)
    if mode == "LSTM":
        assert_close(c_n, e_c)


# -- layout, states, dropout ------------------------------------------------------------------------------------------
@pytest.mark.parametrize("mode", MODES)
def test_batch_first_and_unbatched_agree(mode, device):
    core.manual_seed(0)
    m = getattr(nn, mode)(3, 4, num_layers=2, bidirectional=True, device=device)
    mb = getattr(nn, mode)(3, 4, num_layers=2, bidirectional=True, batch_first=True, device=device)
    mb.load_state_dict(m.state_dict())
    x = core.randn(5, 2, 3, device=device)
    out, h_n, c_n = _split(mode, m(x))
    out_b, h_b, c_b = _split(mode, mb(x.transpose(0, 1)))
    assert tuple(out_b.shape) == (2, 5, 8)
    assert_close(out_b, out.transpose(0, 1))
    assert_close(h_b, h_n)  # h_n is (layers*dirs, N, H) whatever batch_first says
    out_u, h_u, _ = _split(mode, m(x[:, 1]))
    assert tuple(out_u.shape) == (5, 8) and tuple(h_u.shape) == (4, 4)
    assert_close(out_u, out[:, 1])
    assert_close(h_u, h_n[:, 1])
    out_ub, _, _ = _split(mode, mb(x[:, 1]))  # unbatched input is (L, H_in) also with batch_first
    assert_close(out_ub, out[:, 1])


@pytest.mark.parametrize("mode", MODES)
def test_initial_state_continues_a_sequence(mode, device):
    m = getattr(nn, mode)(3, 4, num_layers=2, device=device)
    x = core.randn(6, 2, 3, device=device)
    full, h_full, _ = _split(mode, m(x))
    first, state = m(x[:4])
    second, state = m(x[4:], state)
    assert_close(core.cat([first, second]), full)
    assert_close(state[0] if mode == "LSTM" else state, h_full)


def test_unbatched_initial_state(device):
    m = nn.LSTM(3, 4, device=device)
    x, h0, c0 = core.randn(5, 3, device=device), core.randn(1, 4, device=device), core.randn(1, 4, device=device)
    out, (h, c) = m(x, (h0, c0))
    out_b, (h_b, c_b) = m(x.unsqueeze(1), (h0.unsqueeze(1), c0.unsqueeze(1)))
    assert_close(out, out_b[:, 0])
    assert_close(c, c_b[:, 0])


def test_lstm_proj_size(device):
    m = nn.LSTM(3, 6, num_layers=2, proj_size=2, bidirectional=True, dtype=core.float64, device=device)
    out, (h, c) = m(core.randn(4, 2, 3, dtype=core.float64, device=device))
    assert tuple(out.shape) == (4, 2, 4) and tuple(h.shape) == (4, 2, 2) and tuple(c.shape) == (4, 2, 6)
    assert_close(out[-1, :, :2], h[2])  # the last layer's forward direction


def test_dropout_between_layers_only_while_training(device):
    m = nn.GRU(3, 8, num_layers=2, dropout=0.5, device=device)
    plain = nn.GRU(3, 8, num_layers=2, device=device)
    plain.load_state_dict(m.state_dict())
    x = core.randn(4, 2, 3, device=device)
    m.eval()
    assert_close(m(x)[0], plain(x)[0])
    m.train()
    core.manual_seed(1)
    a = m(x)[0]
    assert not np.allclose(a.detach().cpu().numpy(), plain(x)[0].detach().cpu().numpy())
    with pytest.warns(UserWarning, match="non-zero dropout expects num_layers greater than 1"):
        nn.LSTM(3, 4, dropout=0.2)


def test_state_dict_round_trip(device):
    for mode in MODES:
        m = getattr(nn, mode)(3, 4, num_layers=2, bidirectional=True, device=device)
        other = getattr(nn, mode)(3, 4, num_layers=2, bidirectional=True, device=device)
        other.load_state_dict(m.state_dict())
        x = core.randn(3, 2, 3, device=device)
        assert_close(_split(mode, other(x))[0], _split(mode, m(x))[0])


def test_float64_module_and_backward(device):
    m = nn.LSTM(3, 4, num_layers=2, device=device).double()
    x = core.randn(3, 2, 3, dtype=core.float64, device=device, requires_grad=True)
    out, (h, c) = m(x)
    assert out.dtype == core.float64
    (out.sum() + c.sum()).backward()
    assert x.grad is not None and all(p.grad is not None for p in m.parameters())


# -- gradients ------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("mode", MODES)
def test_gradcheck_two_steps(mode, device):
    m = getattr(nn, mode)(2, 2, bidirectional=True, device=device, dtype=core.float64)
    x = core.randn(2, 1, 2, dtype=core.float64, device=device, requires_grad=True)
    h0 = core.randn(2, 1, 2, dtype=core.float64, device=device, requires_grad=True)
    state = (h0, core.randn(2, 1, 2, dtype=core.float64, device=device)) if mode == "LSTM" else h0

    def run(x, h0, *weights):
        return _split(mode, m(x, state))[0]

    assert gradcheck(run, (x, h0, *m.parameters()))


@pytest.mark.parametrize("cls", ["RNNCell", "LSTMCell", "GRUCell"])
def test_gradcheck_cells(cls, device):
    m = getattr(nn, cls)(2, 3, device=device, dtype=core.float64)
    x = core.randn(2, 2, dtype=core.float64, device=device, requires_grad=True)
    h = core.randn(2, 3, dtype=core.float64, device=device, requires_grad=True)
    state = (h, core.randn(2, 3, dtype=core.float64, device=device)) if cls == "LSTMCell" else h

    def run(x, h, *weights):
        out = m(x, state)
        return out[0] + out[1] if cls == "LSTMCell" else out

    assert gradcheck(run, (x, h, *m.parameters()))


# -- errors ---------------------------------------------------------------------------------------------------------
def test_errors(device):
    m = nn.LSTM(3, 4, device=device)
    with pytest.raises(RuntimeError, match="input.size\\(-1\\) must be equal to input_size. Expected 3, got 5"):
        m(core.randn(2, 1, 5, device=device))
    with pytest.raises(ValueError, match="LSTM: Expected input to be 2D or 3D, got 4D instead"):
        m(core.randn(2, 1, 1, 3, device=device))
    with pytest.raises(RuntimeError, match=r"Expected hidden\[0\] size \(1, 1, 4\), got \[1, 2, 4\]"):
        m(core.randn(2, 1, 3, device=device), (core.zeros(1, 2, 4, device=device), core.zeros(1, 1, 4,
                                                                                                device=device)))
    with pytest.raises(RuntimeError, match="hx and cx should also be 3-D"):
        m(core.randn(2, 1, 3, device=device), (core.zeros(1, 4, device=device), core.zeros(1, 4, device=device)))
    with pytest.raises(ValueError, match="does not match weight dtype"):
        m(core.randn(2, 1, 3, dtype=core.float64, device=device))
    gru = nn.GRU(3, 4, device=device)
    with pytest.raises(RuntimeError, match=r"Expected hidden size \(1, 2, 4\), got \[1, 2, 5\]"):
        gru(core.randn(2, 2, 3, device=device), core.zeros(1, 2, 5, device=device))
    with pytest.raises(RuntimeError, match="For unbatched 2-D input, hx should also be 2-D"):
        gru(core.randn(2, 3, device=device), core.zeros(1, 1, 4, device=device))
    with pytest.raises(ValueError, match="proj_size argument is only supported for LSTM"):
        nn.GRU(3, 4, proj_size=2)
    with pytest.raises(ValueError, match="Unknown nonlinearity 'sigmoid'"):
        nn.RNN(3, 4, nonlinearity="sigmoid")
    with pytest.raises(ValueError, match="proj_size has to be smaller than hidden_size"):
        nn.LSTM(3, 4, proj_size=4)
    with pytest.raises(ValueError, match="dropout should be a number in range"):
        nn.RNN(3, 4, dropout=1.5)
    with pytest.raises(ValueError, match="GRUCell: Expected input to be 1D or 2D, got 3D instead"):
        nn.GRUCell(3, 4)(core.randn(1, 1, 3))


# -- against PyTorch ------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("mode,kwargs", [
    ("RNN", {}), ("RNN", {"nonlinearity": "relu", "num_layers": 2}), ("LSTM", {}), ("GRU", {}),
    ("LSTM", {"num_layers": 2, "bidirectional": True, "batch_first": True}),
    ("GRU", {"num_layers": 2, "bidirectional": True, "bias": False}), ("LSTM", {"proj_size": 2, "num_layers": 2}),
])
def test_matches_torch(mode, kwargs, device):
    torch = pytest.importorskip("torch")
    t_module = getattr(torch.nn, mode)(3, 5, **kwargs).double()
    m = getattr(nn, mode)(3, 5, **kwargs, device=device, dtype=core.float64)
    assert list(m.state_dict()) == list(t_module.state_dict())
    assert repr(m) == repr(t_module)
    m.load_state_dict({k: core.tensor(v.cpu().numpy(), device=device) for k, v in t_module.state_dict().items()})
    x = np.random.default_rng(2).standard_normal((2, 4, 3) if kwargs.get("batch_first") else (4, 2, 3))
    t_out, t_h, t_c = _split(mode, t_module(torch.tensor(x, requires_grad=True)))
    xc = core.tensor(x, device=device, requires_grad=True)
    out, h, c = _split(mode, m(xc))
    assert_close(out, t_out.detach().cpu().numpy())
    assert_close(h, t_h.detach().cpu().numpy())
    if mode == "LSTM":
        assert_close(c, t_c.detach().cpu().numpy())
    t_x = torch.tensor(x, requires_grad=True)
    t_out = _split(mode, t_module(t_x))[0]
    (t_out * t_out).sum().backward()
    (out * out).sum().backward()
    assert_close(xc.grad, t_x.grad.cpu().numpy())
    t_grads = {n: p.grad.cpu().numpy() for n, p in t_module.named_parameters()}
    for name, p in m.named_parameters():
        assert_close(p.grad, t_grads[name])


@pytest.mark.parametrize("cls", ["RNNCell", "LSTMCell", "GRUCell"])
def test_cells_match_torch(cls, device):
    torch = pytest.importorskip("torch")
    t_cell = getattr(torch.nn, cls)(3, 4).double()
    cell = getattr(nn, cls)(3, 4, device=device, dtype=core.float64)
    assert list(cell.state_dict()) == list(t_cell.state_dict()) and repr(cell) == repr(t_cell)
    cell.load_state_dict({k: core.tensor(v.cpu().numpy(), device=device) for k, v in t_cell.state_dict().items()})
    x = np.random.default_rng(3).standard_normal((2, 3))
    t_out, out = t_cell(torch.tensor(x)), cell(core.tensor(x, device=device))
    if cls == "LSTMCell":
        assert_close(out[0], t_out[0].detach().cpu().numpy())
        assert_close(out[1], t_out[1].detach().cpu().numpy())
    else:
        assert_close(out, t_out.detach().cpu().numpy())
