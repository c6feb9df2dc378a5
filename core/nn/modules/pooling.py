"""Pooling layers: max, average and adaptive pooling over 1, 2 or 3 spatial dims (``torch.nn.MaxPool2d`` …)."""

from __future__ import annotations

from .. import functional as F
from ..functional._utils import ntuple
from .module import Module

__all__ = ["MaxPool1d", "MaxPool2d", "MaxPool3d", "AvgPool1d", "AvgPool2d", "AvgPool3d", "AdaptiveAvgPool1d",
           "AdaptiveAvgPool2d", "AdaptiveAvgPool3d", "AdaptiveMaxPool1d", "AdaptiveMaxPool2d", "AdaptiveMaxPool3d",
           "LPPool1d", "LPPool2d", "LPPool3d", "MaxUnpool1d", "MaxUnpool2d", "MaxUnpool3d", "FractionalMaxPool2d",
           "FractionalMaxPool3d"]


class _MaxPoolNd(Module):
    """Max over sliding windows; ``stride`` defaults to ``kernel_size``."""

    _functional = None

    def __init__(self, kernel_size, stride=None, padding=0, dilation=1, return_indices: bool = False,
                 ceil_mode: bool = False):
        super().__init__()
        self.kernel_size = kernel_size
        self.stride = stride if stride is not None else kernel_size
        self.padding, self.dilation = padding, dilation
        self.return_indices, self.ceil_mode = return_indices, ceil_mode

    def forward(self, input):
        return type(self)._functional(input, self.kernel_size, self.stride, self.padding, self.dilation,
                                      ceil_mode=self.ceil_mode, return_indices=self.return_indices)

    def extra_repr(self) -> str:
        return (f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}, "
                f"dilation={self.dilation}, ceil_mode={self.ceil_mode}")


class MaxPool1d(_MaxPoolNd):
    """1-D max pooling (``torch.nn.MaxPool1d``)."""

    _functional = staticmethod(F.max_pool1d)


class MaxPool2d(_MaxPoolNd):
    """2-D max pooling (``torch.nn.MaxPool2d``)."""

    _functional = staticmethod(F.max_pool2d)


class MaxPool3d(_MaxPoolNd):
    """3-D max pooling (``torch.nn.MaxPool3d``)."""

    _functional = staticmethod(F.max_pool3d)


class _AvgPoolNd(Module):
    """Shared repr of the average pooling layers."""

    def extra_repr(self) -> str:
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


class AvgPool1d(_AvgPoolNd):
    """1-D average pooling (``torch.nn.AvgPool1d``); stores its sizes as 1-tuples, like PyTorch."""

    def __init__(self, kernel_size, stride=None, padding=0, ceil_mode: bool = False, count_include_pad: bool = True):
        super().__init__()
        self.kernel_size = _single(kernel_size)
        self.stride = _single(stride if stride is not None else kernel_size)
        self.padding = _single(padding)
        self.ceil_mode, self.count_include_pad = ceil_mode, count_include_pad

    def forward(self, input):
        return F.avg_pool1d(input, self.kernel_size, self.stride, self.padding, self.ceil_mode,
                            self.count_include_pad)


class _AvgPool(_AvgPoolNd):
    """2-D / 3-D average pooling with ``divisor_override``."""

    _functional = None

    def __init__(self, kernel_size, stride=None, padding=0, ceil_mode: bool = False, count_include_pad: bool = True,
                 divisor_override=None):
        super().__init__()
        self.kernel_size = kernel_size
        self.stride = stride if stride is not None else kernel_size
        self.padding, self.ceil_mode = padding, ceil_mode
        self.count_include_pad, self.divisor_override = count_include_pad, divisor_override

    def forward(self, input):
        return type(self)._functional(input, self.kernel_size, self.stride, self.padding, self.ceil_mode,
                                      self.count_include_pad, self.divisor_override)


class AvgPool2d(_AvgPool):
    """2-D average pooling (``torch.nn.AvgPool2d``)."""

    _functional = staticmethod(F.avg_pool2d)


class AvgPool3d(_AvgPool):
    """3-D average pooling (``torch.nn.AvgPool3d``)."""

    _functional = staticmethod(F.avg_pool3d)


def _single(value) -> tuple:
    return tuple(value) if isinstance(value, (list, tuple)) else (value,)


class _AdaptiveAvgPoolNd(Module):
    """Average over adaptive windows that give ``output_size`` (None keeps an input size)."""

    _functional = None

    def __init__(self, output_size):
        super().__init__()
        self.output_size = output_size

    def forward(self, input):
        return type(self)._functional(input, self.output_size)

    def extra_repr(self) -> str:
        return f"output_size={self.output_size}"


class AdaptiveAvgPool1d(_AdaptiveAvgPoolNd):
    """1-D adaptive average pooling (``torch.nn.AdaptiveAvgPool1d``)."""

    _functional = staticmethod(F.adaptive_avg_pool1d)


class AdaptiveAvgPool2d(_AdaptiveAvgPoolNd):
    """2-D adaptive average pooling (``torch.nn.AdaptiveAvgPool2d``)."""

    _functional = staticmethod(F.adaptive_avg_pool2d)


class AdaptiveAvgPool3d(_AdaptiveAvgPoolNd):
    """3-D adaptive average pooling (``torch.nn.AdaptiveAvgPool3d``)."""

    _functional = staticmethod(F.adaptive_avg_pool3d)


class _AdaptiveMaxPoolNd(Module):
    """Max over adaptive windows that give ``output_size``; optionally returns the indices too."""

    _functional = None

    def __init__(self, output_size, return_indices: bool = False):
        super().__init__()
        self.output_size, self.return_indices = output_size, return_indices

    def forward(self, input):
        return type(self)._functional(input, self.output_size, self.return_indices)

    def extra_repr(self) -> str:
        return f"output_size={self.output_size}"


class AdaptiveMaxPool1d(_AdaptiveMaxPoolNd):
    """1-D adaptive max pooling (``torch.nn.AdaptiveMaxPool1d``)."""

    _functional = staticmethod(F.adaptive_max_pool1d)


class AdaptiveMaxPool2d(_AdaptiveMaxPoolNd):
    """2-D adaptive max pooling (``torch.nn.AdaptiveMaxPool2d``)."""

    _functional = staticmethod(F.adaptive_max_pool2d)


class AdaptiveMaxPool3d(_AdaptiveMaxPoolNd):
    """3-D adaptive max pooling (``torch.nn.AdaptiveMaxPool3d``)."""

    _functional = staticmethod(F.adaptive_max_pool3d)


class _LPPoolNd(Module):
    """The p-norm of sliding windows; ``stride`` None means ``kernel_size``."""

    _functional = None

    def __init__(self, norm_type: float, kernel_size, stride=None, ceil_mode: bool = False):
        super().__init__()
        self.norm_type, self.kernel_size, self.stride, self.ceil_mode = norm_type, kernel_size, stride, ceil_mode

    def forward(self, input):
        return type(self)._functional(input, float(self.norm_type), self.kernel_size, self.stride, self.ceil_mode)

    def extra_repr(self) -> str:
        return (f"norm_type={self.norm_type}, kernel_size={self.kernel_size}, stride={self.stride}, "
                f"ceil_mode={self.ceil_mode}")


class LPPool1d(_LPPoolNd):
    """1-D power-average pooling (``torch.nn.LPPool1d``)."""

    _functional = staticmethod(F.lp_pool1d)


class LPPool2d(_LPPoolNd):
    """2-D power-average pooling (``torch.nn.LPPool2d``)."""

    _functional = staticmethod(F.lp_pool2d)


class LPPool3d(_LPPoolNd):
    """3-D power-average pooling (``torch.nn.LPPool3d``)."""

    _functional = staticmethod(F.lp_pool3d)


class _MaxUnpoolNd(Module):
    """The partial inverse of max pooling; sizes stored as n-tuples, ``stride`` None means ``kernel_size``."""

    nd, _functional = 1, None

    def __init__(self, kernel_size, stride=None, padding=0):
        super().__init__()
        self.kernel_size = ntuple(kernel_size, self.nd)
        self.stride = ntuple(stride if stride is not None else kernel_size, self.nd)
        self.padding = ntuple(padding, self.nd)

    def forward(self, input, indices, output_size=None):
        return type(self)._functional(input, indices, self.kernel_size, self.stride, self.padding, output_size)

    def extra_repr(self) -> str:
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


class MaxUnpool1d(_MaxUnpoolNd):
    """Inverse of ``MaxPool1d`` given its indices (``torch.nn.MaxUnpool1d``)."""

    nd, _functional = 1, staticmethod(F.max_unpool1d)


class MaxUnpool2d(_MaxUnpoolNd):
    """Inverse of ``MaxPool2d`` given its indices (``torch.nn.MaxUnpool2d``)."""

    nd, _functional = 2, staticmethod(F.max_unpool2d)


class MaxUnpool3d(_MaxUnpoolNd):
    """Inverse of ``MaxPool3d`` given its indices (``torch.nn.MaxUnpool3d``)."""

    nd, _functional = 3, staticmethod(F.max_unpool3d)


class _FractionalMaxPoolNd(Module):
    """Fractional max pooling with a fixed ``output_size`` or ``output_ratio``; ``_random_samples`` (N, C, nd), when
    given, fixes the window placement."""

    nd, _functional = 2, None

    def __init__(self, kernel_size, output_size=None, output_ratio=None, return_indices: bool = False,
                 _random_samples=None):
        super().__init__()
        name = type(self).__name__
        self.kernel_size = ntuple(kernel_size, self.nd)
        self.return_indices = return_indices
        self.register_buffer("_random_samples", _random_samples)
        self.output_size = ntuple(output_size, self.nd) if output_size is not None else None
        self.output_ratio = None
        if output_ratio is not None:
            ratio = tuple(output_ratio) if isinstance(output_ratio, (list, tuple)) else (output_ratio,) * self.nd
            self.output_ratio = ratio * self.nd if len(ratio) == 1 else ratio
        if output_size is None and output_ratio is None:
            raise ValueError(f"{name} requires specifying either an output size, or a pooling ratio")
        if output_size is not None and output_ratio is not None:
            raise ValueError("only one of output_size and output_ratio may be specified")
        if self.output_ratio is not None and not all(0 < r < 1 for r in self.output_ratio):
            raise ValueError(f"output_ratio must be between 0 and 1 (got {output_ratio})")

    def forward(self, input):
        return type(self)._functional(input, self.kernel_size, self.output_size, self.output_ratio,
                                      self.return_indices, _random_samples=self._random_samples)


class FractionalMaxPool2d(_FractionalMaxPoolNd):
    """2-D fractional max pooling (``torch.nn.FractionalMaxPool2d``)."""

    nd, _functional = 2, staticmethod(F.fractional_max_pool2d)


class FractionalMaxPool3d(_FractionalMaxPoolNd):
    """3-D fractional max pooling (``torch.nn.FractionalMaxPool3d``)."""

    nd, _functional = 3, staticmethod(F.fractional_max_pool3d)
