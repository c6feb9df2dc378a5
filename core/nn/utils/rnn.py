"""Variable-length sequences for the recurrent layers (``torch.nn.utils.rnn``): ``PackedSequence`` holds the
sequences of a batch, sorted longest first, time step by time step (``data`` rows of step t are the
``batch_sizes[t]`` sequences still running), and the pad/pack functions convert between it, padded tensors and
lists of tensors. ``RNN``, ``LSTM`` and ``GRU`` accept a PackedSequence and run each sequence to its own length."""

from __future__ import annotations

from collections import namedtuple

from ... import dtypes as dt, ops

__all__ = ["PackedSequence", "invert_permutation", "pack_padded_sequence", "pad_packed_sequence", "pad_sequence",
           "unpad_sequence", "pack_sequence", "unpack_sequence"]


def invert_permutation(permutation):
    """The permutation that undoes ``permutation`` (None stays None)."""
    if permutation is None:
        return None
    inverse = ops.empty_like(permutation)
    inverse.scatter_(0, permutation, ops.arange(permutation.numel(), dtype=permutation.dtype,
                                                device=permutation.device))
    return inverse


class PackedSequence(namedtuple("PackedSequence", ["data", "batch_sizes", "sorted_indices", "unsorted_indices"])):
    """The steps of a batch of variable-length sequences packed together (``torch.nn.utils.rnn.PackedSequence``):
    ``data`` (sum of lengths, *), ``batch_sizes`` (int64, one per time step), and the permutation
    ``sorted_indices`` that sorted the batch by length (None when it was sorted already) with its inverse."""

    def __new__(cls, data, batch_sizes=None, sorted_indices=None, unsorted_indices=None):
        if batch_sizes is None:
            raise TypeError("PackedSequence: batch_sizes is required (build one with pack_padded_sequence or "
                            "pack_sequence)")
        if unsorted_indices is None:
            unsorted_indices = invert_permutation(sorted_indices)
        return super().__new__(cls, data, batch_sizes, sorted_indices, unsorted_indices)

    def to(self, *args, **kwargs) -> "PackedSequence":
        """The same sequence with ``data`` (and the index tensors, to its device) converted by ``Tensor.to``."""
        data = self.data.to(*args, **kwargs)
        if data is self.data:
            return self
        def move(t):
            return None if t is None else t.to(data.device)

        return type(self)(data, self.batch_sizes, move(self.sorted_indices), move(self.unsorted_indices))

    @property
    def is_cuda(self) -> bool:
        return self.data.is_cuda

    def is_pinned(self) -> bool:
        return False


def _lengths_list(lengths) -> list:
    return [int(n) for n in (lengths.tolist() if hasattr(lengths, "tolist") else lengths)]


def _pack_time_major(padded, batch_sizes: list):
    """``data`` of a (T, B, *) tensor whose batch is sorted longest first: step t's first ``batch_sizes[t]`` rows."""
    return ops.cat([padded[t, :size] for t, size in enumerate(batch_sizes)], 0)


def pack_padded_sequence(input, lengths, batch_first: bool = False, enforce_sorted: bool = True) -> PackedSequence:
    """Pack a padded (T, B, *) (or batch_first (B, T, *)) tensor of sequences of the given ``lengths``
    (``torch.nn.utils.rnn.pack_padded_sequence``); with ``enforce_sorted=False`` the batch is sorted here."""
    lengths = _lengths_list(lengths)
    batch_dim = 0 if batch_first else 1
    if len(lengths) != input.shape[batch_dim]:
        raise RuntimeError(f"Expected `len(lengths)` to be equal to batch_size, but got {len(lengths)} (batch_size="
                           f"{input.shape[batch_dim]})")
    if enforce_sorted:
        if any(a < b for a, b in zip(lengths, lengths[1:])):
            raise RuntimeError("`lengths` array must be sorted in decreasing order when `enforce_sorted` is True. "
                               "You can pass `enforce_sorted=False` to pack_padded_sequence and/or pack_sequence to "
                               "sidestep this requirement if you do not need ONNX exportability.")
        sorted_indices = None
    else:
        order = sorted(range(len(lengths)), key=lambda i: -lengths[i])
        sorted_indices = ops.tensor(order, dtype=dt.int64, device=input.device)
        input = ops.index_select(input, batch_dim, sorted_indices)
        lengths = [lengths[i] for i in order]
    if lengths and lengths[-1] <= 0:
        raise RuntimeError("Length of all samples has to be greater than 0, but found an element in 'lengths' that "
                           "is <= 0")
    if batch_first:
        input = input.transpose(0, 1)
    batch_sizes = [sum(1 for n in lengths if n > t) for t in range(lengths[0] if lengths else 0)]
    return PackedSequence(_pack_time_major(input, batch_sizes), ops.tensor(batch_sizes, dtype=dt.int64),
                          sorted_indices, None)


def pad_packed_sequence(sequence: PackedSequence, batch_first: bool = False, padding_value: float = 0.0,
                        total_length: int | None = None):
    """(padded tensor, lengths): the inverse of :func:`pack_padded_sequence`, in the batch's original order, padded
    with ``padding_value`` to ``total_length`` steps if given (``torch.nn.utils.rnn.pad_packed_sequence``)."""
    batch_sizes = _lengths_list(sequence.batch_sizes)
    max_len = len(batch_sizes)
    if total_length is not None:
        if total_length < max_len:
            raise ValueError(f"Expected total_length to be at least the length of the longest sequence in input, but "
                             f"got total_length={total_length} and max sequence length being {max_len}")
    else:
        total_length = max_len
    data, batch = sequence.data, batch_sizes[0] if batch_sizes else 0
    steps, offset = [], 0
    for size in batch_sizes + [0] * (total_length - max_len):
        step = data[offset:offset + size]
        offset += size
        if size < batch:
            fill = ops.full((batch - size,) + tuple(data.shape[1:]), padding_value, dtype=data.dtype,
                            device=data.device)
            step = ops.cat([step, fill], 0)
        steps.append(step)
    padded = ops.stack(steps, 0)
    lengths = ops.tensor([sum(1 for size in batch_sizes if size > b) for b in range(batch)], dtype=dt.int64)
    if sequence.unsorted_indices is not None:
        padded = ops.index_select(padded, 1, sequence.unsorted_indices)
        lengths = ops.index_select(lengths, 0, sequence.unsorted_indices.to("cpu"))
    return (padded.transpose(0, 1) if batch_first else padded), lengths


def pad_sequence(sequences, batch_first: bool = False, padding_value: float = 0.0, padding_side: str = "right"):
    """Stack tensors of shape (L_i, *) into (max L, B, *) (or (B, max L, *) when ``batch_first``), padding each on
    ``padding_side`` with ``padding_value`` (``torch.nn.utils.rnn.pad_sequence``)."""
    if padding_side not in ("left", "right"):
        raise ValueError(f"Expected padding_side to be one of left or right, but got {padding_side}.")
    sequences = list(sequences)
    if not sequences:
        raise RuntimeError("received an empty list of sequences")
    longest = max(s.shape[0] for s in sequences)
    rows = []
    for s in sequences:
        fill = ops.full((longest - s.shape[0],) + tuple(s.shape[1:]), padding_value, dtype=s.dtype, device=s.device)
        rows.append(ops.cat([s, fill] if padding_side == "right" else [fill, s], 0))
    return ops.stack(rows, 0 if batch_first else 1)


def unpad_sequence(padded_sequences, lengths, batch_first: bool = False) -> list:
    """The list of tensors :func:`pad_sequence` padded, cut back to ``lengths``
    (``torch.nn.utils.rnn.unpad_sequence``)."""
    if not batch_first:
        padded_sequences = padded_sequences.transpose(0, 1)
    return [row[:n] for row, n in zip(padded_sequences, _lengths_list(lengths))]


def pack_sequence(sequences, enforce_sorted: bool = True) -> PackedSequence:
    """Pack a list of tensors of shape (L_i, *) (``torch.nn.utils.rnn.pack_sequence``)."""
    lengths = [s.shape[0] for s in sequences]
    return pack_padded_sequence(pad_sequence(sequences), lengths, enforce_sorted=enforce_sorted)


def unpack_sequence(packed_sequences: PackedSequence) -> list:
    """The list of tensors a PackedSequence holds, in the original order (``torch.nn.utils.rnn.unpack_sequence``)."""
    padded, lengths = pad_packed_sequence(packed_sequences, batch_first=True)
    return unpad_sequence(padded, lengths, batch_first=True)
