"""RNN / LSTM / GRU over a PackedSequence, run as one batch time step by time step over ``batch_sizes``.

The reference is each sequence run alone as an ordinary (L, 1, F) tensor from its own initial states: outputs,
final states and the gradients of the weights, the inputs and the initial states must agree.
"""

from __future__ import annotations

import numpy as np
import pytest

import core
from core import nn
from core.autograd import gradcheck
from core.nn.utils.rnn import pack_sequence, unpack_sequence
from core.testing import assert_close

LENGTHS = [3, 5, 1, 5, 2]
MODULES = [
    ("RNN-tanh", lambda **kw: nn.RNN(3, 4, **kw)),
    ("RNN-relu", lambda **kw: nn.RNN(3, 4, nonlinearity="relu", **kw)),
    ("GRU", lambda **kw: nn.GRU(3, 4, **kw)),
    ("LSTM", lambda **kw: nn.LSTM(3, 4, **kw)),
    ("LSTM-proj", lambda **kw: nn.LSTM(3, 4, proj_size=2, **kw)),
]
SHAPES = [dict(), dict(num_layers=2), dict(bidirectional=True), dict(num_layers=2, bidirectional=True, bias=False)]


def _sequences(device, lengths=LENGTHS, features=3, seed=0):
    rng = np.random.default_rng(seed)
    return [core.tensor(rng.standard_normal((n, features)), dtype=core.float64, device=device).requires_grad_()
            for n in lengths]


def _initial_states(module, batch, device, seed=1):
    rng = np.random.default_rng(seed)
    layers = module.num_layers * (2 if module.bidirectional else 1)
    h_size = module.proj_size or module.hidden_size
    h0 = core.tensor(rng.standard_normal((layers, batch, h_size)), dtype=core.float64, device=device)
    if isinstance(module, nn.LSTM):
        c0 = core.tensor(rng.standard_normal((layers, batch, module.hidden_size)), dtype=core.float64, device=device)
        return (h0.requires_grad_(), c0.requires_grad_())
    return h0.requires_grad_()


def _columns(states, i):
    if isinstance(states, tuple):
        return tuple(s[:, i:i + 1] for s in states)
    return states[:, i:i + 1]


def _as_list(states):
    return list(states) if isinstance(states, tuple) else [states]


def _grads(tensors):
    grads = [t.grad for t in tensors]
    for t in tensors:
        t.grad = None
    return grads


@pytest.mark.parametrize("enforce_sorted", [False, True])
@pytest.mark.parametrize("shape", SHAPES, ids=["1layer", "2layers", "bidir", "2layers-bidir-nobias"])
@pytest.mark.parametrize("name, make", MODULES, ids=[m[0] for m in MODULES])
def test_packed_batch_matches_each_sequence_alone(device, name, make, shape, enforce_sorted):
    module = make(**shape).to(device).double()
    lengths = sorted(LENGTHS, reverse=True) if enforce_sorted else LENGTHS
    seqs = _sequences(device, lengths)
    hx = _initial_states(module, len(seqs), device)
    output, final = module(pack_sequence(seqs, enforce_sorted=enforce_sorted), hx)
    # a weighted loss over everything, so the gradients see every output and final state
    weights = [core.tensor(np.linspace(0.5, 1.5, o.numel()).reshape(tuple(o.shape)), device=device)
               for o in _as_list(final)]
    loss = sum((o * w).sum() for o, w in zip(_as_list(final), weights))
    outputs = unpack_sequence(output)
    loss = loss + sum((o * o).sum() for o in outputs)
    leaves = list(module.parameters()) + seqs + _as_list(hx)
    loss.backward()
    packed_grads = _grads(leaves)

    alone_loss = 0
    for i, seq in enumerate(seqs):
        alone, alone_final = module(seq.unsqueeze(1), _columns(hx, i))
        assert_close(outputs[i].detach(), alone[:, 0].detach())
        for got, want in zip(_as_list(final), _as_list(alone_final)):
            assert_close(got[:, i].detach(), want[:, 0].detach())
        alone_loss = alone_loss + (alone * alone).sum()
        alone_loss = alone_loss + sum((f[:, 0] * w[:, i]).sum() for f, w in zip(_as_list(alone_final), weights))
    alone_loss.backward()
    for got, want in zip(packed_grads, _grads(leaves)):
        assert_close(got, want)


@pytest.mark.parametrize("name, make", MODULES, ids=[m[0] for m in MODULES])
def test_packed_batch_gradcheck(device, name, make):
    module = make(bidirectional=True).to(device).double()
    seqs = _sequences(device, [3, 1, 2])

    def run(a, b, c):
        output, final = module(pack_sequence([a, b, c], enforce_sorted=False))
        return (output.data,) + tuple(_as_list(final))

    assert gradcheck(run, tuple(seqs))


def test_output_keeps_the_packing(device):
    module = nn.GRU(3, 4).to(device).double()
    packed = pack_sequence(_sequences(device), enforce_sorted=False)
    output, h_n = module(packed)
    assert output.batch_sizes.tolist() == packed.batch_sizes.tolist()
    assert output.sorted_indices.tolist() == packed.sorted_indices.tolist()
    assert tuple(output.data.shape) == (sum(LENGTHS), 4) and tuple(h_n.shape) == (1, len(LENGTHS), 4)


def test_wrong_hidden_size_is_rejected(device):
    module = nn.LSTM(3, 4).to(device).double()
    packed = pack_sequence(_sequences(device), enforce_sorted=False)
    bad = core.zeros(1, 2, 4, dtype=core.float64, device=device)
    with pytest.raises(RuntimeError, match="Expected hidden size"):
        module(packed, (bad, bad))
