"""Recurrent layers: ``RNN``, ``LSTM``, ``GRU`` and their single-step cells, with PyTorch's parameter names."""

from __future__ import annotations

import math
import numbers
import warnings

from ... import ops
from ...ops.nn_functions import _recurrent, gru_step, lstm_step, rnn_step
from .. import functional as F, init
from ..parameter import Parameter
from ..utils.rnn import PackedSequence
from .module import Module

__all__ = ["RNNBase", "RNN", "LSTM", "GRU", "RNNCellBase", "RNNCell", "LSTMCell", "GRUCell"]

_GATES = {"RNN_TANH": 1, "RNN_RELU": 1, "LSTM": 4, "GRU": 3}


class RNNBase(Module):
    """The shared machinery of ``RNN``, ``LSTM`` and ``GRU`` (``torch.nn.RNNBase``)."""

    def __init__(self, mode: str, input_size: int, hidden_size: int, num_layers: int = 1, bias: bool = True,
                 batch_first: bool = False, dropout: float = 0.0, bidirectional: bool = False, proj_size: int = 0,
                 device=None, dtype=None):
        super().__init__()
        if not isinstance(dropout, numbers.Number) or isinstance(dropout, bool) or not 0 <= dropout <= 1:
            raise ValueError("dropout should be a number in range [0, 1] representing the probability of an element "
                             "being zeroed")
        if dropout > 0 and num_layers == 1:
            warnings.warn("dropout option adds dropout after all but last recurrent layer, so non-zero dropout "
                          f"expects num_layers greater than 1, but got dropout={dropout} and num_layers={num_layers}",
                          stacklevel=3)
        if not isinstance(bias, bool):
            raise TypeError(f"bias should be of type bool, got: {type(bias).__name__}")
        if not isinstance(batch_first, bool):
            raise TypeError(f"batch_first should be of type bool, got: {type(batch_first).__name__}")
        if not isinstance(input_size, int):
            raise TypeError(f"input_size should be of type int, got: {type(input_size).__name__}")
        if input_size <= 0:
            raise ValueError("input_size must be greater than zero")
        if not isinstance(hidden_size, int):
            raise TypeError(f"hidden_size should be of type int, got: {type(hidden_size).__name__}")
        if hidden_size <= 0:
            raise ValueError("hidden_size must be greater than zero")
        if num_layers <= 0:
            raise ValueError("num_layers must be greater than zero")
        if proj_size < 0:
            raise ValueError("proj_size should be a positive integer or zero to disable projections")
        if proj_size >= hidden_size:
            raise ValueError("proj_size has to be smaller than hidden_size")
        if mode not in _GATES:
            raise ValueError("Unrecognized RNN mode: " + mode)
        self.mode = mode
        self.input_size, self.hidden_size, self.num_layers = input_size, hidden_size, num_layers
        self.bias, self.batch_first, self.dropout = bias, batch_first, float(dropout)
        self.bidirectional, self.proj_size = bidirectional, proj_size
        gate_size = _GATES[mode] * hidden_size
        num_directions = 2 if bidirectional else 1
        real_hidden_size = proj_size if proj_size > 0 else hidden_size
        self._flat_weights_names: list = []
        self._all_weights: list = []
        for layer in range(num_layers):
            for direction in range(num_directions):
                layer_input_size = input_size if layer == 0 else real_hidden_size * num_directions
                shapes = {"weight_ih": (gate_size, layer_input_size), "weight_hh": (gate_size, real_hidden_size)}
                if bias:
                    shapes.update(bias_ih=(gate_size,), bias_hh=(gate_size,))
                if proj_size > 0:
                    shapes["weight_hr"] = (proj_size, hidden_size)
                suffix = "_reverse" if direction == 1 else ""
                names = []
                for kind, shape in shapes.items():
                    name = f"{kind}_l{layer}{suffix}"
                    setattr(self, name, Parameter(ops.empty(*shape, device=device, dtype=dtype)))
                    names.append(name)
                self._flat_weights_names.extend(names)
                self._all_weights.append(names)
        self.reset_parameters()

    @property
    def _flat_weights(self) -> list:
        return [getattr(self, name, None) for name in self._flat_weights_names]

    @property
    def all_weights(self) -> list:
        """The parameters of each (layer, direction), in PyTorch's order."""
        return [[getattr(self, name) for name in names] for names in self._all_weights]

    def flatten_parameters(self) -> None:
        """A no-op: there is no cuDNN weight buffer to compact (``torch.nn.RNNBase.flatten_parameters``)."""

    def reset_parameters(self) -> None:
        """Every weight and bias U(±1/√hidden_size)."""
        stdv = 1.0 / math.sqrt(self.hidden_size) if self.hidden_size > 0 else 0
        for weight in self.parameters():
            init.uniform_(weight, -stdv, stdv)

    def extra_repr(self) -> str:
        s = f"{self.input_size}, {self.hidden_size}"
        if self.proj_size != 0:
            s += f", proj_size={self.proj_size}"
        if self.num_layers != 1:
            s += f", num_layers={self.num_layers}"
        if self.bias is not True:
            s += f", bias={self.bias}"
        if self.batch_first is not False:
            s += f", batch_first={self.batch_first}"
        if self.dropout != 0:
            s += f", dropout={self.dropout}"
        if self.bidirectional is not False:
            s += f", bidirectional={self.bidirectional}"
        return s

    # -- argument checks (PyTorch's messages) -----------------------------------------------------------------------
    def check_input(self, input, batch_sizes=None) -> None:
        """dtype, rank and feature size of a batched input."""
        weight = self._flat_weights[0]
        if input.dtype != weight.dtype:
            raise ValueError(f"RNN input dtype ({input.dtype}) does not match weight dtype ({weight.dtype}). "
                             f"Convert input: input.to({weight.dtype}), or convert model: model.to({input.dtype})")
        if input.dim() != 3:
            raise RuntimeError(f"input must have 3 dimensions, got {input.dim()}")
        if self.input_size != input.shape[-1]:
            raise RuntimeError(f"input.size(-1) must be equal to input_size. Expected {self.input_size}, "
                               f"got {input.shape[-1]}")

    def get_expected_hidden_size(self, input, batch_sizes=None) -> tuple:
        mini_batch = input.shape[0] if self.batch_first else input.shape[1]
        num_directions = 2 if self.bidirectional else 1
        size = self.proj_size if self.proj_size > 0 else self.hidden_size
        return (self.num_layers * num_directions, mini_batch, size)

    def check_hidden_size(self, hx, expected_hidden_size, msg: str = "Expected hidden size {}, got {}") -> None:
        if tuple(hx.shape) != tuple(expected_hidden_size):
            raise RuntimeError(msg.format(tuple(expected_hidden_size), list(hx.shape)))

    def check_forward_args(self, input, hidden, batch_sizes=None) -> None:
        self.check_input(input, batch_sizes)
        self.check_hidden_size(hidden, self.get_expected_hidden_size(input, batch_sizes))

    def _batched(self, input, name: str):
        """Validate ranks; an unbatched input (and its states) get a batch dim of 1."""
        if input.dim() not in (2, 3):
            raise ValueError(f"{name}: Expected input to be 2D or 3D, got {input.dim()}D "
                             f"{'tensor ' if name == 'RNN' else ''}instead")
        is_batched = input.dim() == 3
        if not is_batched:
            input = input.unsqueeze(0 if self.batch_first else 1)
        return input, is_batched

    def _zeros_state(self, input, size: int):
        num_directions = 2 if self.bidirectional else 1
        batch = input.shape[0] if self.batch_first else input.shape[1]
        return ops.zeros(self.num_layers * num_directions, batch, size, dtype=input.dtype, device=input.device)

    # -- the recurrence ---------------------------------------------------------------------------------------------
    def _run(self, input, h0, c0=None):
        """Every layer and direction over a (T, N, F) input (``core.lstm``/``gru``/``rnn_*`` with the flat weights):
        (output, h_n, c_n or None)."""
        states = [h0] if c0 is None else [h0, c0]
        output, *finals = _recurrent(self.mode.lower(), input, states, self._flat_weights, self.bias,
                                     self.num_layers, self.dropout, self.training, self.bidirectional, False)
        return output, finals[0], finals[1] if c0 is not None else None

    def _forward_packed(self, packed, states: list, sizes: list):
        """A PackedSequence input, run as one batch time step by time step over ``batch_sizes`` (at step t the first
        ``batch_sizes[t]`` sequences advance), from initial states in the batch's original order (zeros when
        ``states`` is None), like the returned final states; the output is packed like the input."""
        data = packed.data
        if data.shape[-1] != self.input_size:
            raise RuntimeError(f"input.size(-1) must be equal to input_size. Expected {self.input_size}, "
                               f"got {data.shape[-1]}")
        batch = int(packed.batch_sizes[0])
        expected = [(self.num_layers * (2 if self.bidirectional else 1), batch, size) for size in sizes]
        if states is None:
            states = [ops.zeros(*shape, dtype=data.dtype, device=data.device) for shape in expected]
        for state, shape in zip(states, expected):
            self.check_hidden_size(state, shape)
        if packed.sorted_indices is not None:  # the packed batch runs longest first
            states = [ops.index_select(state, 1, packed.sorted_indices) for state in states]
        output, *finals = _recurrent(self.mode.lower(), data, states, self._flat_weights, self.bias, self.num_layers,
                                     self.dropout, self.training, self.bidirectional, False,
                                     packed.batch_sizes.tolist())
        if packed.unsorted_indices is not None:
            finals = [ops.index_select(final, 1, packed.unsorted_indices) for final in finals]
        out = PackedSequence(output, packed.batch_sizes, packed.sorted_indices, packed.unsorted_indices)
        return out, finals

    def _forward(self, input, hx, name: str):
        """RNN / GRU forward: (output, h_n)."""
        if isinstance(input, PackedSequence):
            output, (h_n,) = self._forward_packed(input, None if hx is None else [hx], [self.hidden_size])
            return output, h_n
        input, is_batched = self._batched(input, name)
        if hx is not None:
            if is_batched and hx.dim() != 3:
                raise RuntimeError(f"For batched 3-D input, hx should also be 3-D but got {hx.dim()}-D tensor")
            if not is_batched:
                if hx.dim() != 2:
                    raise RuntimeError(f"For unbatched 2-D input, hx should also be 2-D but got {hx.dim()}-D tensor")
                hx = hx.unsqueeze(1)
        else:
            hx = self._zeros_state(input, self.hidden_size)
        self.check_forward_args(input, hx)
        time_major = input.transpose(0, 1) if self.batch_first else input
        output, h_n, _ = self._run(time_major, hx)
        if self.batch_first:
            output = output.transpose(0, 1)
        if not is_batched:
            output, h_n = output.squeeze(0 if self.batch_first else 1), h_n.squeeze(1)
        return output, h_n


class RNN(RNNBase):
    """Elman RNN, h_t = tanh/relu(x_t W_ihᵀ + b_ih + h_{t-1} W_hhᵀ + b_hh) (``torch.nn.RNN``)."""

    def __init__(self, *args, **kwargs):
        if "proj_size" in kwargs:
            raise ValueError("proj_size argument is only supported for LSTM, not RNN or GRU")
        if len(args) > 3:  # RNN(input_size, hidden_size, num_layers, nonlinearity, ...)
            self_nonlinearity = args[3]
            args = args[:3] + args[4:]
        else:
            self_nonlinearity = kwargs.pop("nonlinearity", "tanh")
        if self_nonlinearity not in ("tanh", "relu"):
            raise ValueError(f"Unknown nonlinearity '{self_nonlinearity}'. Select from 'tanh' or 'relu'.")
        super().__init__("RNN_TANH" if self_nonlinearity == "tanh" else "RNN_RELU", *args, **kwargs)
        self.nonlinearity = self_nonlinearity

    def forward(self, input, hx=None):
        """(output (L, N, D*H), h_n (D*num_layers, N, H)); batch_first swaps L and N of input and output."""
        return self._forward(input, hx, "RNN")


class GRU(RNNBase):
    """Gated recurrent unit, gates r, z, n (``torch.nn.GRU``)."""

    def __init__(self, *args, **kwargs):
        if "proj_size" in kwargs:
            raise ValueError("proj_size argument is only supported for LSTM, not RNN or GRU")
        super().__init__("GRU", *args, **kwargs)

    def forward(self, input, hx=None):
        """(output (L, N, D*H), h_n (D*num_layers, N, H)); batch_first swaps L and N of input and output."""
        return self._forward(input, hx, "GRU")


class LSTM(RNNBase):
    """Long short-term memory, gates i, f, g, o, optional ``proj_size`` (``torch.nn.LSTM``)."""

    def __init__(self, *args, **kwargs):
        super().__init__("LSTM", *args, **kwargs)

    def get_expected_cell_size(self, input, batch_sizes=None) -> tuple:
        mini_batch = input.shape[0] if self.batch_first else input.shape[1]
        num_directions = 2 if self.bidirectional else 1
        return (self.num_layers * num_directions, mini_batch, self.hidden_size)

    def check_forward_args(self, input, hidden, batch_sizes=None) -> None:
        self.check_input(input, batch_sizes)
        self.check_hidden_size(hidden[0], self.get_expected_hidden_size(input, batch_sizes),
                               "Expected hidden[0] size {}, got {}")
        self.check_hidden_size(hidden[1], self.get_expected_cell_size(input, batch_sizes),
                               "Expected hidden[1] size {}, got {}")

    def forward(self, input, hx=None):
        """(output, (h_n, c_n)); h_n has proj_size features when set, c_n hidden_size."""
        if isinstance(input, PackedSequence):
            sizes = [self.proj_size if self.proj_size > 0 else self.hidden_size, self.hidden_size]
            output, (h_n, c_n) = self._forward_packed(input, None if hx is None else list(hx), sizes)
            return output, (h_n, c_n)
        input, is_batched = self._batched(input, "LSTM")
        if hx is None:
            real_hidden_size = self.proj_size if self.proj_size > 0 else self.hidden_size
            hx = (self._zeros_state(input, real_hidden_size), self._zeros_state(input, self.hidden_size))
        elif is_batched:
            if hx[0].dim() != 3 or hx[1].dim() != 3:
                raise RuntimeError("For batched 3-D input, hx and cx should also be 3-D but got "
                                   f"({hx[0].dim()}-D, {hx[1].dim()}-D) tensors")
        else:
            if hx[0].dim() != 2 or hx[1].dim() != 2:
                raise RuntimeError("For unbatched 2-D input, hx and cx should also be 2-D but got "
                                   f"({hx[0].dim()}-D, {hx[1].dim()}-D) tensors")
            hx = (hx[0].unsqueeze(1), hx[1].unsqueeze(1))
        self.check_forward_args(input, hx)
        time_major = input.transpose(0, 1) if self.batch_first else input
        output, h_n, c_n = self._run(time_major, hx[0], hx[1])
        if self.batch_first:
            output = output.transpose(0, 1)
        if not is_batched:
            output, h_n, c_n = output.squeeze(0 if self.batch_first else 1), h_n.squeeze(1), c_n.squeeze(1)
        return output, (h_n, c_n)


# -- cells -------------------------------------------------------------------------------------------------------------
class RNNCellBase(Module):
    """Shared parameters of the single-step cells: weight_ih, weight_hh, bias_ih, bias_hh (``torch.nn.RNNCellBase``)."""

    def __init__(self, input_size: int, hidden_size: int, bias: bool, num_chunks: int, device=None, dtype=None):
        super().__init__()
        self.input_size, self.hidden_size, self.bias = input_size, hidden_size, bias
        self.weight_ih = Parameter(ops.empty(num_chunks * hidden_size, input_size, device=device, dtype=dtype))
        self.weight_hh = Parameter(ops.empty(num_chunks * hidden_size, hidden_size, device=device, dtype=dtype))
        if bias:
            self.bias_ih = Parameter(ops.empty(num_chunks * hidden_size, device=device, dtype=dtype))
            self.bias_hh = Parameter(ops.empty(num_chunks * hidden_size, device=device, dtype=dtype))
        else:
            self.register_parameter("bias_ih", None)
            self.register_parameter("bias_hh", None)
        self.reset_parameters()

    def extra_repr(self) -> str:
        s = f"{self.input_size}, {self.hidden_size}"
        if self.bias is not True:
            s += f", bias={self.bias}"
        if getattr(self, "nonlinearity", "tanh") != "tanh":
            s += f", nonlinearity={self.nonlinearity}"
        return s

    def reset_parameters(self) -> None:
        """Every weight and bias U(±1/√hidden_size)."""
        stdv = 1.0 / math.sqrt(self.hidden_size) if self.hidden_size > 0 else 0
        for weight in self.parameters():
            init.uniform_(weight, -stdv, stdv)

    def _prepare(self, input, states, name: str):
        """Validate ranks; unbatched input and states get a batch dim of 1. Returns (input, states, is_batched)."""
        if input.dim() not in (1, 2):
            raise ValueError(f"{name}: Expected input to be 1D or 2D, got {input.dim()}D instead")
        for i, state in enumerate(states):
            if state is not None and state.dim() not in (1, 2):
                label = "hidden" if len(states) == 1 else f"hx[{i}]"
                raise ValueError(f"{name}: Expected {label} to be 1D or 2D, got {state.dim()}D instead")
        is_batched = input.dim() == 2
        if not is_batched:
            input = input.unsqueeze(0)
        zeros = None
        prepared = []
        for state in states:
            if state is None:
                if zeros is None:
                    zeros = ops.zeros(input.shape[0], self.hidden_size, dtype=input.dtype, device=input.device)
                prepared.append(zeros)
            else:
                prepared.append(state if is_batched else state.unsqueeze(0))
        return input, prepared, is_batched

    def _input_gates(self, input):
        if input.shape[-1] != self.input_size:
            raise RuntimeError(f"input has inconsistent input_size: got {input.shape[-1]} expected {self.input_size}")
        return F.linear(input, self.weight_ih, self.bias_ih)


class RNNCell(RNNCellBase):
    """One Elman RNN step, h' = tanh/relu(x W_ihᵀ + b_ih + h W_hhᵀ + b_hh) (``torch.nn.RNNCell``)."""

    def __init__(self, input_size: int, hidden_size: int, bias: bool = True, nonlinearity: str = "tanh", device=None,
                 dtype=None):
        super().__init__(input_size, hidden_size, bias, num_chunks=1, device=device, dtype=dtype)
        self.nonlinearity = nonlinearity

    def forward(self, input, hx=None):
        input, (hx,), is_batched = self._prepare(input, (hx,), "RNNCell")
        if self.nonlinearity not in ("tanh", "relu"):
            raise RuntimeError(f"Unknown nonlinearity: {self.nonlinearity}")
        h = rnn_step(self._input_gates(input), hx, self.weight_hh, self.bias_hh, relu=self.nonlinearity == "relu")
        return h if is_batched else h.squeeze(0)


class LSTMCell(RNNCellBase):
    """One LSTM step; returns (h', c') (``torch.nn.LSTMCell``)."""

    def __init__(self, input_size: int, hidden_size: int, bias: bool = True, device=None, dtype=None):
        super().__init__(input_size, hidden_size, bias, num_chunks=4, device=device, dtype=dtype)

    def forward(self, input, hx=None):
        states = (None, None) if hx is None else tuple(hx)
        input, (h, c), is_batched = self._prepare(input, states, "LSTMCell")
        h, c = lstm_step(self._input_gates(input), h, c, self.weight_hh, self.bias_hh)
        return (h, c) if is_batched else (h.squeeze(0), c.squeeze(0))


class GRUCell(RNNCellBase):
    """One GRU step (``torch.nn.GRUCell``)."""

    def __init__(self, input_size: int, hidden_size: int, bias: bool = True, device=None, dtype=None):
        super().__init__(input_size, hidden_size, bias, num_chunks=3, device=device, dtype=dtype)

    def forward(self, input, hx=None):
        input, (hx,), is_batched = self._prepare(input, (hx,), "GRUCell")
        h = gru_step(self._input_gates(input), hx, self.weight_hh, self.bias_hh)
        return h if is_batched else h.squeeze(0)
