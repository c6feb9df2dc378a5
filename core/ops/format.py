"""Printing tensors the way PyTorch does (``torch/_tensor_str.py``), from host NumPy data.

Only the elements that will be shown are copied to the host: a summarised
dimension (more than ``threshold`` elements in all) is narrowed to its first
and last ``edgeitems`` on the device before the copy.
"""

from __future__ import annotations

import contextlib
import dataclasses
import math

import numpy as np

from .. import dtypes as dt

__all__ = ["set_printoptions"]
METHODS: dict = {}


@dataclasses.dataclass
class PrintOptions:
    """The options ``set_printoptions`` changes (``torch._tensor_str.PRINT_OPTS``)."""

    precision: int = 4
    threshold: float = 1000
    edgeitems: int = 3
    linewidth: int = 80
    sci_mode: bool | None = None


PRINT_OPTS = PrintOptions()
_PROFILES = {"default": (4, 1000, 3, 80), "short": (2, 1000, 2, 80), "full": (4, math.inf, 3, 80)}


def set_printoptions(precision=None, threshold=None, edgeitems=None, linewidth=None, profile=None,
                     sci_mode=None) -> None:
    """Set options for printing tensors (``torch.set_printoptions``); ``sci_mode`` is always reset when omitted."""
    if profile is not None:
        if profile not in _PROFILES:
            raise ValueError(f"set_printoptions(): profile must be one of {', '.join(_PROFILES)}, got {profile!r}")
        (PRINT_OPTS.precision, PRINT_OPTS.threshold, PRINT_OPTS.edgeitems,
         PRINT_OPTS.linewidth) = _PROFILES[profile]
    if precision is not None:
        PRINT_OPTS.precision = precision
    if threshold is not None:
        PRINT_OPTS.threshold = threshold
    if edgeitems is not None:
        PRINT_OPTS.edgeitems = edgeitems
    if linewidth is not None:
        PRINT_OPTS.linewidth = linewidth
    PRINT_OPTS.sci_mode = sci_mode


def get_printoptions() -> dict:
    """The current print options, as keyword arguments of :func:`set_printoptions`."""
    return dataclasses.asdict(PRINT_OPTS)


@contextlib.contextmanager
def printoptions(**kwargs):
    """Change the print options inside a ``with`` block."""
    old = get_printoptions()
    set_printoptions(**kwargs)
    try:
        yield
    finally:
        set_printoptions(**old)


# -- element formatting -----------------------------------------------------------------------------

class _Formatter:
    """Chooses one width and notation for every element shown (``torch._tensor_str._Formatter``)."""

    def __init__(self, values: np.ndarray, floating: bool):
        self.floating = floating
        self.int_mode = True
        self.sci_mode = False
        self.max_width = 1
        flat = values.reshape(-1)
        if not floating:
            for value in flat.tolist():
                self.max_width = max(self.max_width, len(f"{value}"))
            return
        finite = flat[np.isfinite(flat) & (flat != 0)].astype(np.float64)
        if finite.size == 0:
            return
        magnitude = np.abs(finite)
        low, high = magnitude.min(), magnitude.max()
        self.int_mode = bool(np.all(finite == np.ceil(finite)))
        self.sci_mode = (high / low > 1000.0 or high > 1.0e8 or low < 1.0e-4) if PRINT_OPTS.sci_mode is None \
            else PRINT_OPTS.sci_mode
        precision = PRINT_OPTS.precision
        if self.sci_mode:
            widths = (len(f"{v:.{precision}e}") for v in finite.tolist())
        elif self.int_mode:  # one more character for the '.' that marks a float
            widths = (len(f"{v:.0f}") + 1 for v in finite.tolist())
        else:
            widths = (len(f"{v:.{precision}f}") for v in finite.tolist())
        self.max_width = max(self.max_width, *widths)

    def format(self, value) -> str:
        if not self.floating:
            text = f"{value}"
        elif self.sci_mode:
            text = f"{value:{self.max_width}.{PRINT_OPTS.precision}e}"
        elif self.int_mode:
            text = f"{value:.0f}"
            if not (math.isinf(value) or math.isnan(value)):
                text += "."
        else:
            text = f"{value:.{PRINT_OPTS.precision}f}"
        return (self.max_width - len(text)) * " " + text


class _ComplexFormatter:
    """Formats complex values with one formatter for the real parts and one for the imaginary parts."""

    def __init__(self, values: np.ndarray):
        self.real = _Formatter(values.real, True)
        self.imag = _Formatter(values.imag, True)

    def width(self) -> int:
        return self.real.max_width + self.imag.max_width + 1  # the 'j'

    def format(self, value) -> str:
        real = self.real.format(value.real)
        imag = (self.imag.format(value.imag) + "j").lstrip()
        return real + imag if imag[0] in "+-" else real + "+" + imag


# -- layout -------------------------------------------------------------------------------------------

def _rows(n: int, summarized: bool) -> list:
    """Indexes into a (possibly narrowed) dimension, with None where '...' goes."""
    edge = PRINT_OPTS.edgeitems
    if not summarized:
        return list(range(n))
    return list(range(edge)) + [None] + list(range(n - edge, n))


def _vector_str(values: np.ndarray, summarized: bool, indent: int, formatter) -> str:
    width = formatter.width() if isinstance(formatter, _ComplexFormatter) else formatter.max_width
    per_line = max(1, math.floor((PRINT_OPTS.linewidth - indent) / (width + 2)))
    if summarized and not PRINT_OPTS.edgeitems:
        data = ["..."]
    else:
        items = values.tolist()
        data = [" ..." if i is None else formatter.format(items[i]) for i in _rows(len(items), summarized)]
    lines = [", ".join(data[i:i + per_line]) for i in range(0, len(data), per_line)]
    return "[" + (",\n" + " " * (indent + 1)).join(lines) + "]"


def _tensor_str(values: np.ndarray, summarized: tuple, indent: int, formatter) -> str:
    if values.ndim == 0:
        return formatter.format(values.item())
    if values.ndim == 1:
        return _vector_str(values, summarized[0], indent, formatter)
    slices = ["..." if i is None else _tensor_str(values[i], summarized[1:], indent + 1, formatter)
              for i in _rows(values.shape[0], summarized[0])]
    return "[" + ("," + "\n" * (values.ndim - 1) + " " * (indent + 1)).join(slices) + "]"


def _host_values(t, summarize: bool) -> tuple:
    """The elements to print as a host array, and which dimensions are summarised ('...')."""
    edge = PRINT_OPTS.edgeitems
    summarized = tuple(summarize and n > 2 * edge for n in t.shape)

    def fetch(part, dim):
        if dim == part.dim():
            return np.asarray(part.cpu().numpy())
        if not summarized[dim]:
            return fetch(part, dim + 1)
        n = part.shape[dim]
        if not edge:  # nothing of this dimension is shown; skip fetching empty views
            return np.empty(part.shape[:dim] + (0,) + part.shape[dim + 1:], part.dtype.numpy)
        pieces = [fetch(part.narrow(dim, 0, edge), dim + 1), fetch(part.narrow(dim, n - edge, edge), dim + 1)]
        return np.concatenate(pieces, axis=dim)

    values = fetch(t.detach(), 0)
    if t.dtype is dt.bfloat16:  # ml_dtypes' bfloat16 formats through float32, which holds it exactly
        values = values.astype(np.float32)
    return values, summarized


def _formatter_for(values: np.ndarray, t):
    if t.dtype.is_complex:
        return _ComplexFormatter(values)
    return _Formatter(values, t.dtype.is_floating_point)


def _grad_fn_name(t) -> str | None:
    grad_fn = getattr(t, "grad_fn", None)
    if grad_fn is None:
        return None
    name = getattr(grad_fn, "name", None)
    name = name() if callable(name) else name
    return str(name or type(grad_fn).__name__).rsplit("::", 1)[-1]


def _add_suffixes(text: str, suffixes: list, indent: int, force_newline: bool = False) -> str:
    parts = [text]
    last_line_len = len(text) - text.rfind("\n") + 1  # PyTorch's arithmetic, kept for identical wrapping
    for suffix in suffixes:
        if force_newline or last_line_len + len(suffix) + 2 > PRINT_OPTS.linewidth:
            force_newline = False
            parts.append(",\n" + " " * indent + suffix)
            last_line_len = indent + len(suffix)
        else:
            parts.append(", " + suffix)
            last_line_len += len(suffix) + 2
    parts.append(")")
    return "".join(parts)


def _component_str(t, indent: int) -> str:
    """One component of a sparse tensor (its indices or values) as ``_tensor_str`` prints it, at ``indent``."""
    if t.numel() == 0:
        return "[]" + ", size=" + str(tuple(t.shape))
    values, summarized = _host_values(t, t.numel() > PRINT_OPTS.threshold)
    return _tensor_str(values, summarized, indent, _formatter_for(values, t))


def _format_sparse(t, indent: int, suffixes: list) -> str:
    """The body of a sparse tensor's repr: its components, named as PyTorch names them."""
    names = [("indices", t._indices)] if t.layout.name == "sparse_coo" else \
        [("crow_indices" if t.layout.name in ("sparse_csr", "sparse_bsr") else "ccol_indices", t._compressed),
         ("col_indices" if t.layout.name in ("sparse_csr", "sparse_bsr") else "row_indices", t._plain)]
    names.append(("values", t._values.detach()))
    suffixes += ["size=" + str(tuple(t.shape)), f"nnz={t._values.shape[0]}"]
    parts = [f"{name}=tensor(" + _component_str(part, indent + len(name) + 8) + ")" for name, part in names]
    return (",\n" + " " * indent).join(parts)


def _format_quantized(t, indent: int, suffixes: list, has_default_dtype: bool) -> str:
    """The body of a quantized tensor's repr (its dequantized values); its size, dtype and parameters go to
    ``suffixes``."""
    suffixes.append("size=" + str(tuple(t.shape)))
    if not has_default_dtype:
        suffixes.append(f"dtype={t.dtype!r}")
    suffixes.append(f"quantization_scheme={t.qscheme()!r}")
    if t._axis is None:
        suffixes += [f"scale={t.q_scale()}", f"zero_point={t.q_zero_point()}"]
    else:
        suffixes += [f"scale={t.q_per_channel_scales()!r}", f"zero_point={t.q_per_channel_zero_points()!r}",
                     f"axis={t.q_per_channel_axis()}"]
    values = t.dequantize()
    if values.numel() == 0:
        return "[]"
    host, summarized = _host_values(values, values.numel() > PRINT_OPTS.threshold)
    return _tensor_str(host, summarized, indent, _formatter_for(host, values))


def format_tensor(t) -> str:
    """``repr(tensor)``, laid out as ``torch._tensor_str._str`` does (sparse ones as components, size, nnz)."""
    prefix = "tensor("
    indent = len(prefix)
    suffixes = []
    if t.device.type != "cpu":
        suffixes.append(f"device='{t.device}'")
    default = dt.get_default_dtype()
    default_complex = dt.complex128 if default is dt.float64 else dt.complex64
    has_default_dtype = t.dtype in (default, default_complex, dt.int64, dt.bool)
    shape = str(tuple(t.shape))
    sparse = t.layout.name != "strided"
    if sparse:
        body = _format_sparse(t, indent, suffixes)
        if not has_default_dtype:
            suffixes.append(f"dtype={t.dtype!r}")
        suffixes.append(f"layout={t.layout!r}")
    elif t.is_quantized:  # the dequantized values, then the quantization parameters, as torch._tensor_str
        body = _format_quantized(t, indent, suffixes, has_default_dtype)
    elif t.device.type == "meta":
        suffixes.append("size=" + shape)
        if t.dtype is not default:
            suffixes.append(f"dtype={t.dtype!r}")
        body = "..."
    elif t.numel() == 0:
        if t.dim() != 1:
            suffixes.append("size=" + shape)
        if t.dtype is not default:  # no element shows the dtype, so it is always named
            suffixes.append(f"dtype={t.dtype!r}")
        body = "[]"
    else:
        if not PRINT_OPTS.edgeitems:
            suffixes.append("size=" + shape)
        if not has_default_dtype:
            suffixes.append(f"dtype={t.dtype!r}")
        values, summarized = _host_values(t, t.numel() > PRINT_OPTS.threshold)
        body = _tensor_str(values, summarized, indent, _formatter_for(values, t))
    grad_fn = _grad_fn_name(t)
    if grad_fn is not None:
        suffixes.append(f"grad_fn=<{grad_fn}>")
    elif t.requires_grad:
        suffixes.append("requires_grad=True")
    return _add_suffixes(prefix + body, suffixes, indent, force_newline=t.layout.name == "sparse_coo")
