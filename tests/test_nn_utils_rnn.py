"""core.nn.utils.rnn on every device: padding and packing variable-length sequences against hand-built NumPy
arrays (PyTorch's documented layouts), round trips, errors, gradients through packing, and RNN/LSTM/GRU on a
PackedSequence equal to running each sequence alone."""

from __future__ import annotations

import numpy as np
import pytest

import core
from core import nn
from core.autograd import gradcheck
from core.nn.utils.rnn import (PackedSequence, invert_permutation, pack_padded_sequence, pack_sequence,
                               pad_packed_sequence, pad_sequence, unpack_sequence, unpad_sequence)
from core.testing import assert_close


def _np(t):
    return t.detach().cpu().numpy()


def _sequences(device, lengths=(3, 5, 1), features=2, dtype=np.float32):
    rng = np.random.default_rng(0)
    arrays = [rng.standard_normal((n, features)).astype(dtype) for n in lengths]
    return arrays, [core.tensor(a, device=device) for a in arrays]


def _np_pad(arrays, padding_value=0.0, left=False):
    longest = max(len(a) for a in arrays)
    out = np.full((len(arrays), longest) + arrays[0].shape[1:], padding_value, dtype=arrays[0].dtype)
    for i, a in enumerate(arrays):
        if left:
            out[i, longest - len(a):] = a
        else:
            out[i, :len(a)] = a
    return out


def test_pad_sequence(device):
    arrays, seqs = _sequences(device)
    assert_close(_np(pad_sequence(seqs)), _np_pad(arrays).transpose(1, 0, 2))
    assert_close(_np(pad_sequence(seqs, batch_first=True, padding_value=-1.0)), _np_pad(arrays, -1.0))
    assert_close(_np(pad_sequence(seqs, True, padding_side="left")), _np_pad(arrays, left=True))
    padded = pad_sequence(seqs, batch_first=True)
    for got, want in zip(unpad_sequence(padded, core.tensor([3, 5, 1]), batch_first=True), arrays):
        assert_close(_np(got), want)
    with pytest.raises(ValueError, match="Expected padding_side to be one of left or right"):
        pad_sequence(seqs, padding_side="middle")


def test_pack_sequence_layout(device):
    arrays, seqs = _sequences(device)
    packed = pack_sequence(seqs, enforce_sorted=False)
    assert isinstance(packed, PackedSequence) and packed.batch_sizes.tolist() == [3, 2, 2, 1, 1]
    assert packed.sorted_indices.tolist() == [1, 0, 2] and packed.unsorted_indices.tolist() == [1, 0, 2]
    order = [arrays[1], arrays[0], arrays[2]]  # longest first; then time step by time step
    expected = np.concatenate([np.stack([a[t] for a in order if len(a) > t]) for t in range(5)])
    assert_close(_np(packed.data), expected)
    for got, want in zip(unpack_sequence(packed), arrays):
        assert_close(_np(got), want)
    padded, lengths = pad_packed_sequence(packed, batch_first=True, padding_value=9.0, total_length=7)
    assert lengths.tolist() == [3, 5, 1] and lengths.dtype == core.int64
    want = np.full((3, 7, 2), 9.0, dtype=np.float32)
    want[:, :5] = _np_pad(arrays, 9.0)
    assert_close(_np(padded), want)
    with pytest.raises(ValueError, match="Expected total_length to be at least"):
        pad_packed_sequence(packed, total_length=2)
    with pytest.raises(RuntimeError, match="must be sorted in decreasing order"):
        pack_sequence(seqs)


def test_pack_padded_sequence(device):
    arrays, seqs = _sequences(device, lengths=(4, 4, 2))
    packed = pack_padded_sequence(core.tensor(_np_pad(arrays), device=device), [4, 4, 2], batch_first=True)
    assert packed.sorted_indices is None and packed.batch_sizes.tolist() == [3, 3, 2, 2]
    padded, lengths = pad_packed_sequence(packed)
    assert_close(_np(padded), _np_pad(arrays).transpose(1, 0, 2)) and lengths.tolist() == [4, 4, 2]
    assert_close(invert_permutation(core.tensor([2, 0, 1])), core.tensor([1, 2, 0]))
    x = core.tensor(np.random.default_rng(1).standard_normal((3, 4, 2)), device=device, requires_grad=True)
    assert gradcheck(lambda v: pack_padded_sequence(v, [2, 4, 3], True, enforce_sorted=False).data, (x,))
    with pytest.raises(RuntimeError, match="Length of all samples has to be greater than 0"):
        pack_padded_sequence(x, [2, 0, 3], True, enforce_sorted=False)


@pytest.mark.parametrize("kind", ["RNN", "GRU", "LSTM"])
@pytest.mark.parametrize("bidirectional", [False, True])
def test_recurrent_layers_on_packed_sequences(device, kind, bidirectional):
    arrays, seqs = _sequences(device, dtype=np.float64)
    layer = getattr(nn, kind)(2, 3, num_layers=2, bidirectional=bidirectional).to(device).double()
    packed = pack_sequence(seqs, enforce_sorted=False)
    states = 2 * (2 if bidirectional else 1)
    h0 = core.tensor(np.random.default_rng(2).standard_normal((states, 3, 3)), device=device)
    hx = (h0, h0 * 0.5) if kind == "LSTM" else h0
    output, final = layer(packed, hx)
    assert isinstance(output, PackedSequence) and output.batch_sizes.tolist() == packed.batch_sizes.tolist()
    outputs = unpack_sequence(output)
    for i, seq in enumerate(seqs):  # each sequence alone, from its own initial state
        alone_hx = (h0[:, i:i + 1], h0[:, i:i + 1] * 0.5) if kind == "LSTM" else h0[:, i:i + 1]
        alone, alone_final = layer(seq.unsqueeze(1), alone_hx)
        assert_close(_np(outputs[i]), _np(alone[:, 0]))
        if kind == "LSTM":
            assert_close(_np(final[0][:, i]), _np(alone_final[0][:, 0]))
            assert_close(_np(final[1][:, i]), _np(alone_final[1][:, 0]))
        else:
            assert_close(_np(final[:, i]), _np(alone_final[:, 0]))
    default_output, _ = layer(packed)
    assert tuple(default_output.data.shape) == (9, 3 * (2 if bidirectional else 1))
