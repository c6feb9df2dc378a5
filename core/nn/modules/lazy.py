"""Lazy layers: their input size (in_features, in_channels, num_features) is read from the first input, when their
``UninitializedParameter``/``UninitializedBuffer`` get their shapes; then the module becomes the ordinary layer
(``torch.nn.LazyLinear`` …)."""

from __future__ import annotations

import itertools

from ...autograd import no_grad
from ..parameter import UninitializedBuffer, UninitializedParameter, is_lazy
from .conv import Conv1d, Conv2d, Conv3d, ConvTranspose1d, ConvTranspose2d, ConvTranspose3d
from .linear import Linear
from .normalization import BatchNorm1d, BatchNorm2d, BatchNorm3d, InstanceNorm1d, InstanceNorm2d, InstanceNorm3d

__all__ = ["LazyModuleMixin", "LazyLinear", "LazyConv1d", "LazyConv2d", "LazyConv3d", "LazyConvTranspose1d",
           "LazyConvTranspose2d", "LazyConvTranspose3d", "LazyBatchNorm1d", "LazyBatchNorm2d", "LazyBatchNorm3d",
           "LazyInstanceNorm1d", "LazyInstanceNorm2d", "LazyInstanceNorm3d"]


class LazyModuleMixin:
    """Runs ``initialize_parameters(*input)`` before the first forward, then turns the module into
    ``cls_to_become`` (``torch.nn.modules.lazy.LazyModuleMixin``)."""

    cls_to_become = None

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._initialize_hook = self.register_forward_pre_hook(self._infer_parameters, with_kwargs=True)

    def has_uninitialized_params(self) -> bool:
        """Whether a parameter or buffer still waits for its shape."""
        return any(is_lazy(t) for t in itertools.chain(self._parameters.values(), self._buffers.values()))

    def initialize_parameters(self, *args, **kwargs) -> None:
        """Materialise the parameters from the first input (each lazy layer defines it)."""
        raise NotImplementedError(f"initialize_parameters is not implemented for {type(self).__name__}")

    def _lazy_load_hook(self, state_dict, prefix: str) -> None:
        """Materialise the uninitialised tensors that ``state_dict`` holds, with its shapes (PyTorch's
        ``_lazy_load_hook``), so ``load_state_dict`` can fill them before the first forward."""
        from ...tensor import Tensor

        loaded = False
        for name, tensor in itertools.chain(self._parameters.items(), self._buffers.items()):
            value = state_dict[prefix + name] if prefix + name in state_dict else None
            if is_lazy(tensor) and isinstance(value, Tensor) and not is_lazy(value):
                with no_grad():
                    tensor.materialize(value.shape)
                loaded = True
        if loaded and not self.has_uninitialized_params():
            self._sizes_from_parameters()

    def _sizes_from_parameters(self) -> None:
        """Set the inferred size attribute (``in_features`` …) from the materialised parameters."""

    @staticmethod
    def _infer_parameters(module, args, kwargs=None):
        module.initialize_parameters(*args, **(kwargs or {}))
        if module.has_uninitialized_params():
            raise RuntimeError(f"module {module._get_name()} has not been fully initialized")
        module._initialize_hook.remove()
        del module._initialize_hook
        if module.cls_to_become is not None:
            module.__class__ = module.cls_to_become


class LazyLinear(LazyModuleMixin, Linear):
    """A Linear layer whose ``in_features`` is the last dim of its first input (``torch.nn.LazyLinear``)."""

    cls_to_become = Linear

    def __init__(self, out_features: int, bias: bool = True, device=None, dtype=None):
        super().__init__(0, 0, False)
        self.weight = UninitializedParameter(device=device, dtype=dtype)
        self.out_features = out_features
        if bias:
            self.bias = UninitializedParameter(device=device, dtype=dtype)

    def reset_parameters(self) -> None:
        if not self.has_uninitialized_params() and self.in_features != 0:
            super().reset_parameters()

    def _sizes_from_parameters(self) -> None:
        self.in_features = self.weight.shape[1]

    def initialize_parameters(self, input) -> None:
        if self.has_uninitialized_params():
            with no_grad():
                self.in_features = input.shape[-1]
                self.weight.materialize((self.out_features, self.in_features))
                if self.bias is not None:
                    self.bias.materialize((self.out_features,))
                self.reset_parameters()


class _LazyConvMixin(LazyModuleMixin):
    """``in_channels`` from the channel dim of the first (batched or unbatched) input."""

    def _lazy_init(self, out_channels: int, bias: bool, device, dtype) -> None:
        self.weight = UninitializedParameter(device=device, dtype=dtype)
        self.out_channels = out_channels
        if bias:
            self.bias = UninitializedParameter(device=device, dtype=dtype)

    def reset_parameters(self) -> None:
        if not self.has_uninitialized_params() and self.in_channels != 0:
            super().reset_parameters()

    def _sizes_from_parameters(self) -> None:
        self.in_channels = self.weight.shape[0] if self.transposed else self.weight.shape[1] * self.groups

    def initialize_parameters(self, input, *args, **kwargs) -> None:
        if self.has_uninitialized_params():
            self.in_channels = input.shape[0 if input.dim() == self._nd + 1 else 1]
            if self.in_channels % self.groups != 0:
                raise ValueError("in_channels must be divisible by groups")
            if self.transposed:
                shape = (self.in_channels, self.out_channels // self.groups)
            else:
                shape = (self.out_channels, self.in_channels // self.groups)
            with no_grad():
                self.weight.materialize(shape + tuple(self.kernel_size))
                if self.bias is not None:
                    self.bias.materialize((self.out_channels,))
                self.reset_parameters()


def _lazy_conv(name: str, base: type) -> type:
    def __init__(self, out_channels: int, kernel_size, stride=1, padding=0, dilation=1, groups: int = 1,
                 bias: bool = True, padding_mode: str = "zeros", device=None, dtype=None):
        LazyModuleMixin.__init__(self, 0, 0, kernel_size, stride, padding, dilation, groups, False, padding_mode)
        self._lazy_init(out_channels, bias, device, dtype)

    doc = f"A {base.__name__} whose ``in_channels`` comes from its first input (``torch.nn.{name}``)."
    return type(name, (_LazyConvMixin, base), {"__init__": __init__, "cls_to_become": base, "__doc__": doc,
                                                "__module__": __name__})


def _lazy_conv_transpose(name: str, base: type) -> type:
    def __init__(self, out_channels: int, kernel_size, stride=1, padding=0, output_padding=0, groups: int = 1,
                 bias: bool = True, dilation=1, padding_mode: str = "zeros", device=None, dtype=None):
        LazyModuleMixin.__init__(self, 0, 0, kernel_size, stride, padding, output_padding, groups, False, dilation,
                                 padding_mode)
        self._lazy_init(out_channels, bias, device, dtype)

    doc = f"A {base.__name__} whose ``in_channels`` comes from its first input (``torch.nn.{name}``)."
    return type(name, (_LazyConvMixin, base), {"__init__": __init__, "cls_to_become": base, "__doc__": doc,
                                                "__module__": __name__})


LazyConv1d = _lazy_conv("LazyConv1d", Conv1d)
LazyConv2d = _lazy_conv("LazyConv2d", Conv2d)
LazyConv3d = _lazy_conv("LazyConv3d", Conv3d)
LazyConvTranspose1d = _lazy_conv_transpose("LazyConvTranspose1d", ConvTranspose1d)
LazyConvTranspose2d = _lazy_conv_transpose("LazyConvTranspose2d", ConvTranspose2d)
LazyConvTranspose3d = _lazy_conv_transpose("LazyConvTranspose3d", ConvTranspose3d)


class _LazyNormMixin(LazyModuleMixin):
    """``num_features`` from the channel dim of the first input."""

    def _lazy_init(self, affine: bool, track_running_stats: bool, device, dtype) -> None:
        from ... import dtypes as dt, ops

        self.affine, self.track_running_stats = affine, track_running_stats
        if affine:
            self.weight = UninitializedParameter(device=device, dtype=dtype)
            self.bias = UninitializedParameter(device=device, dtype=dtype)
        if track_running_stats:
            self.running_mean = UninitializedBuffer(device=device, dtype=dtype)
            self.running_var = UninitializedBuffer(device=device, dtype=dtype)
            self.num_batches_tracked = ops.tensor(0, dtype=dt.int64, device=device)

    def reset_parameters(self) -> None:
        if not self.has_uninitialized_params() and self.num_features != 0:
            super().reset_parameters()

    def _sizes_from_parameters(self) -> None:
        tensors = (self.weight, self.bias, self.running_mean, self.running_var)
        self.num_features = next(t.shape[0] for t in tensors if t is not None)

    def initialize_parameters(self, input) -> None:
        if self.has_uninitialized_params():
            self.num_features = input.shape[self._channel_dim(input)]
            with no_grad():
                for name in ("weight", "bias", "running_mean", "running_var"):
                    tensor = getattr(self, name)
                    if is_lazy(tensor):
                        tensor.materialize((self.num_features,))
                self.reset_parameters()


def _lazy_norm(name: str, base: type, affine: bool, track_running_stats: bool, unbatched_dims: int | None) -> type:
    def __init__(self, eps: float = 1e-5, momentum: float | None = 0.1, affine: bool = affine,
                 track_running_stats: bool = track_running_stats, device=None, dtype=None):
        LazyModuleMixin.__init__(self, 0, eps, momentum, False, False)
        self._lazy_init(affine, track_running_stats, device, dtype)

    def _channel_dim(self, input) -> int:  # an instance norm's unbatched input has its channels first
        return 0 if input.dim() == unbatched_dims else 1

    doc = f"A {base.__name__} whose ``num_features`` comes from its first input (``torch.nn.{name}``)."
    return type(name, (_LazyNormMixin, base), {"__init__": __init__, "_channel_dim": _channel_dim,
                                                "cls_to_become": base, "__doc__": doc, "__module__": __name__})


LazyBatchNorm1d = _lazy_norm("LazyBatchNorm1d", BatchNorm1d, True, True, None)
LazyBatchNorm2d = _lazy_norm("LazyBatchNorm2d", BatchNorm2d, True, True, None)
LazyBatchNorm3d = _lazy_norm("LazyBatchNorm3d", BatchNorm3d, True, True, None)
LazyInstanceNorm1d = _lazy_norm("LazyInstanceNorm1d", InstanceNorm1d, False, False, 2)
LazyInstanceNorm2d = _lazy_norm("LazyInstanceNorm2d", InstanceNorm2d, False, False, 3)
LazyInstanceNorm3d = _lazy_norm("LazyInstanceNorm3d", InstanceNorm3d, False, False, 4)
