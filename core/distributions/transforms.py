"""Invertible transforms of random variables with their log-abs-det-Jacobians
(``torch.distributions.transforms``)."""

from __future__ import annotations

import math
import numbers

import core

from . import constraints

__all__ = ["Transform", "ComposeTransform", "ExpTransform", "AffineTransform", "SigmoidTransform", "TanhTransform",
           "AbsTransform", "PowerTransform", "SoftplusTransform", "SoftmaxTransform", "StickBreakingTransform",
           "identity_transform", "IndependentTransform", "ReshapeTransform", "LowerCholeskyTransform",
           "PositiveDefiniteTransform", "CumulativeDistributionTransform", "CatTransform", "StackTransform",
           "CorrCholeskyTransform"]


def _sum_rightmost(value, dim: int):
    """``value`` summed over its ``dim`` rightmost dims."""
    return value.reshape(value.shape[:value.dim() - dim] + (-1,)).sum(-1) if dim > 0 else value


class Transform:
    """An invertible (or not) map ``y = t(x)`` with ``inv`` and ``log_abs_det_jacobian``
    (``torch.distributions.transforms.Transform``)."""

    bijective = False
    domain = constraints.real
    codomain = constraints.real

    def __init__(self, cache_size: int = 0):
        if cache_size not in (0, 1):
            raise ValueError("cache_size must be 0 or 1")
        self._cache_size = cache_size
        self._inv = None
        self._cached_x_y = (None, None)

    @property
    def event_dim(self) -> int:
        if self.domain.event_dim == self.codomain.event_dim:
            return self.domain.event_dim
        raise ValueError("Please use either .domain.event_dim or .codomain.event_dim")

    @property
    def inv(self):
        """The inverse transform: ``t.inv(t(x)) == x``."""
        inv = self._inv
        if inv is None:
            inv = _InverseTransform(self)
            self._inv = inv
        return inv

    @property
    def sign(self):
        """The sign of the Jacobian determinant, where it is constant."""
        raise NotImplementedError

    def forward_shape(self, shape):
        return shape

    def inverse_shape(self, shape):
        return shape

    def __eq__(self, other):
        return self is other

    def __ne__(self, other):
        return not self.__eq__(other)

    __hash__ = object.__hash__

    def __call__(self, x):
        if self._cache_size == 0:
            return self._call(x)
        x_old, y_old = self._cached_x_y
        if x is x_old:
            return y_old
        y = self._call(x)
        self._cached_x_y = x, y
        return y

    def _inv_call(self, y):
        if self._cache_size == 0:
            return self._inverse(y)
        x_old, y_old = self._cached_x_y
        if y is y_old:
            return x_old
        x = self._inverse(y)
        self._cached_x_y = x, y
        return x

    def _call(self, x):
        raise NotImplementedError

    def _inverse(self, y):
        raise NotImplementedError

    def log_abs_det_jacobian(self, x, y):
        """``log |dy/dx|`` elementwise (summed over the transform's event dims)."""
        raise NotImplementedError

    def __repr__(self) -> str:
        return self.__class__.__name__ + "()"


class _InverseTransform(Transform):
    """The inverse of a transform."""

    def __init__(self, transform):
        super().__init__(cache_size=transform._cache_size)
        self._inv = transform

    @property
    def domain(self):
        return self._inv.codomain

    @property
    def codomain(self):
        return self._inv.domain

    @property
    def bijective(self):
        return self._inv.bijective

    @property
    def sign(self):
        return self._inv.sign

    @property
    def inv(self):
        return self._inv

    def __eq__(self, other):
        return isinstance(other, _InverseTransform) and self._inv == other._inv

    __hash__ = object.__hash__

    def __call__(self, x):
        return self._inv._inv_call(x)

    def log_abs_det_jacobian(self, x, y):
        return -self._inv.log_abs_det_jacobian(y, x)


class ComposeTransform(Transform):
    """The transforms of ``parts`` applied in order (``torch.distributions.transforms.ComposeTransform``)."""

    def __init__(self, parts, cache_size: int = 0):
        super().__init__(cache_size=cache_size)
        self.parts = list(parts)

    def __eq__(self, other):
        return isinstance(other, ComposeTransform) and self.parts == other.parts

    __hash__ = object.__hash__

    @property
    def domain(self):
        if not self.parts:
            return constraints.real
        domain = self.parts[0].domain
        event_dim = self.parts[-1].codomain.event_dim
        for part in reversed(self.parts):
            event_dim += part.domain.event_dim - part.codomain.event_dim
            event_dim = max(event_dim, part.domain.event_dim)
        if event_dim > domain.event_dim:
            domain = constraints.independent(domain, event_dim - domain.event_dim)
        return domain

    @property
    def codomain(self):
        if not self.parts:
            return constraints.real
        codomain = self.parts[-1].codomain
        event_dim = self.parts[0].domain.event_dim
        for part in self.parts:
            event_dim += part.codomain.event_dim - part.domain.event_dim
            event_dim = max(event_dim, part.codomain.event_dim)
        if event_dim > codomain.event_dim:
            codomain = constraints.independent(codomain, event_dim - codomain.event_dim)
        return codomain

    @property
    def bijective(self):
        return all(p.bijective for p in self.parts)

    @property
    def sign(self):
        sign = 1
        for p in self.parts:
            sign = sign * p.sign
        return sign

    @property
    def inv(self):
        return ComposeTransform([p.inv for p in reversed(self.parts)])

    def __call__(self, x):
        for part in self.parts:
            x = part(x)
        return x

    def forward_shape(self, shape):
        for part in self.parts:
            shape = part.forward_shape(shape)
        return shape

    def inverse_shape(self, shape):
        for part in reversed(self.parts):
            shape = part.inverse_shape(shape)
        return shape

    def log_abs_det_jacobian(self, x, y):
        if not self.parts:
            return core.zeros_like(x)
        xs = [x]
        for part in self.parts[:-1]:
            xs.append(part(xs[-1]))
        xs.append(y)
        terms, event_dim = [], self.domain.event_dim
        for part, xi, yi in zip(self.parts, xs[:-1], xs[1:]):
            terms.append(_sum_rightmost(part.log_abs_det_jacobian(xi, yi), event_dim - part.domain.event_dim))
            event_dim += part.codomain.event_dim - part.domain.event_dim
        result = terms[0]
        for term in terms[1:]:
            result = result + term
        return result

    def __repr__(self) -> str:
        return "ComposeTransform(\n    " + ",\n    ".join(repr(p) for p in self.parts) + "\n)"


identity_transform = ComposeTransform([])


class ExpTransform(Transform):
    """``y = exp(x)`` (``torch.distributions.transforms.ExpTransform``)."""

    domain = constraints.real
    codomain = constraints.positive
    bijective = True
    sign = +1

    def __eq__(self, other):
        return isinstance(other, ExpTransform)

    __hash__ = object.__hash__

    def _call(self, x):
        return x.exp()

    def _inverse(self, y):
        return y.log()

    def log_abs_det_jacobian(self, x, y):
        return x


class PowerTransform(Transform):
    """``y = x ** exponent`` on the positive reals (``torch.distributions.transforms.PowerTransform``)."""

    domain = constraints.positive
    codomain = constraints.positive
    bijective = True

    def __init__(self, exponent, cache_size: int = 0):
        super().__init__(cache_size=cache_size)
        self.exponent = exponent

    def __eq__(self, other):
        return isinstance(other, PowerTransform) and bool(core.as_tensor(self.exponent == other.exponent).all())

    __hash__ = object.__hash__

    @property
    def sign(self):
        if isinstance(self.exponent, numbers.Real):
            return 1 if self.exponent > 0 else -1 if self.exponent < 0 else 0
        return self.exponent.sign()

    def _call(self, x):
        return x.pow(self.exponent)

    def _inverse(self, y):
        return y.pow(1 / self.exponent)

    def log_abs_det_jacobian(self, x, y):
        return (self.exponent * y / x).abs().log()


class SigmoidTransform(Transform):
    """``y = sigmoid(x)`` (``torch.distributions.transforms.SigmoidTransform``)."""

    domain = constraints.real
    codomain = constraints.unit_interval
    bijective = True
    sign = +1

    def __eq__(self, other):
        return isinstance(other, SigmoidTransform)

    __hash__ = object.__hash__

    def _call(self, x):
        finfo = core.finfo(x.dtype)
        return core.sigmoid(x).clamp(min=finfo.tiny, max=1.0 - finfo.eps)

    def _inverse(self, y):
        finfo = core.finfo(y.dtype)
        y = y.clamp(min=finfo.tiny, max=1.0 - finfo.eps)
        return y.log() - (-y).log1p()

    def log_abs_det_jacobian(self, x, y):
        softplus = core.nn.functional.softplus
        return -softplus(-x) - softplus(x)


class SoftplusTransform(Transform):
    """``y = log(1 + exp(x))`` (``torch.distributions.transforms.SoftplusTransform``)."""

    domain = constraints.real
    codomain = constraints.positive
    bijective = True
    sign = +1

    def __eq__(self, other):
        return isinstance(other, SoftplusTransform)

    __hash__ = object.__hash__

    def _call(self, x):
        return core.nn.functional.softplus(x)

    def _inverse(self, y):
        return (-y).expm1().neg().log() + y

    def log_abs_det_jacobian(self, x, y):
        return -core.nn.functional.softplus(-x)


class TanhTransform(Transform):
    """``y = tanh(x)`` (``torch.distributions.transforms.TanhTransform``)."""

    domain = constraints.real
    codomain = constraints.interval(-1.0, 1.0)
    bijective = True
    sign = +1

    def __eq__(self, other):
        return isinstance(other, TanhTransform)

    __hash__ = object.__hash__

    def _call(self, x):
        return x.tanh()

    def _inverse(self, y):
        return core.atanh(y)

    def log_abs_det_jacobian(self, x, y):
        return 2.0 * (math.log(2.0) - x - core.nn.functional.softplus(-2.0 * x))


class AbsTransform(Transform):
    """``y = |x|`` (not invertible: ``inv`` returns the positive root) (``torch.distributions.AbsTransform``)."""

    domain = constraints.real
    codomain = constraints.positive

    def __eq__(self, other):
        return isinstance(other, AbsTransform)

    __hash__ = object.__hash__

    def _call(self, x):
        return x.abs()

    def _inverse(self, y):
        return y


class AffineTransform(Transform):
    """``y = loc + scale * x`` (``torch.distributions.transforms.AffineTransform``)."""

    bijective = True

    def __init__(self, loc, scale, event_dim: int = 0, cache_size: int = 0):
        super().__init__(cache_size=cache_size)
        self.loc, self.scale, self._event_dim = loc, scale, event_dim

    @property
    def event_dim(self):
        return self._event_dim

    @property
    def domain(self):
        return constraints.real if self._event_dim == 0 else constraints.independent(constraints.real,
                                                                                      self._event_dim)

    codomain = domain

    def __eq__(self, other):
        if not isinstance(other, AffineTransform):
            return False
        same = []
        for a, b in ((self.loc, other.loc), (self.scale, other.scale)):
            if isinstance(a, numbers.Number) and isinstance(b, numbers.Number):
                same.append(a == b)
            else:
                same.append(bool((core.as_tensor(a) == core.as_tensor(b)).all()))
        return all(same)

    __hash__ = object.__hash__

    @property
    def sign(self):
        if isinstance(self.scale, numbers.Real):
            return 1 if float(self.scale) > 0 else -1 if float(self.scale) < 0 else 0
        return self.scale.sign()

    def _call(self, x):
        return self.loc + self.scale * x

    def _inverse(self, y):
        return (y - self.loc) / self.scale

    def log_abs_det_jacobian(self, x, y):
        scale = self.scale
        if isinstance(scale, numbers.Real):
            result = core.full_like(x, math.log(abs(scale)))
        else:
            result = scale.abs().log().expand(core.broadcast_shapes(scale.shape, x.shape))
        if self._event_dim:
            result = _sum_rightmost(result, self._event_dim)
            shape = x.shape[:x.dim() - self._event_dim]
            result = result.expand(shape) if result.dim() <= len(shape) else result
        return result


class SoftmaxTransform(Transform):
    """``y = softmax(x)`` over the last dim; not bijective (``torch.distributions.SoftmaxTransform``)."""

    domain = constraints.real_vector
    codomain = constraints.simplex

    def __eq__(self, other):
        return isinstance(other, SoftmaxTransform)

    __hash__ = object.__hash__

    def _call(self, x):
        probs = (x - x.max(-1, keepdim=True).values).exp()
        return probs / probs.sum(-1, keepdim=True)

    def _inverse(self, y):
        return y.log()


class StickBreakingTransform(Transform):
    """The stick-breaking map from ``R^(K-1)`` onto the ``K``-simplex
    (``torch.distributions.transforms.StickBreakingTransform``)."""

    domain = constraints.real_vector
    codomain = constraints.simplex
    bijective = True

    def __eq__(self, other):
        return isinstance(other, StickBreakingTransform)

    __hash__ = object.__hash__

    def _call(self, x):
        offset = x.shape[-1] + 1 - x.new_ones(x.shape[-1]).cumsum(-1)
        z = core.sigmoid(x - offset.log())
        z_cumprod = (1 - z).cumprod(-1)
        pad = core.ones(x.shape[:-1] + (1,), dtype=x.dtype, device=x.device)
        return core.cat([z, pad], -1) * core.cat([pad, z_cumprod], -1)

    def _inverse(self, y):
        y_crop = y[..., :-1]
        offset = y.shape[-1] - y.new_ones(y_crop.shape[-1]).cumsum(-1)
        sf = (1 - y_crop.cumsum(-1)).clamp(min=core.finfo(y.dtype).tiny)
        return y_crop.log() - sf.log() + offset.log()

    def log_abs_det_jacobian(self, x, y):
        offset = x.shape[-1] + 1 - x.new_ones(x.shape[-1]).cumsum(-1)
        x = x - offset.log()
        detj = (-x + core.nn.functional.logsigmoid(x) + y[..., :-1].log()).sum(-1)
        return detj

    def forward_shape(self, shape):
        return shape[:-1] + (shape[-1] + 1,)

    def inverse_shape(self, shape):
        return shape[:-1] + (shape[-1] - 1,)


class IndependentTransform(Transform):
    """``base_transform`` with its ``reinterpreted_batch_ndims`` rightmost dims made event dims: the
    log-abs-det-Jacobian sums over them (``torch.distributions.transforms.IndependentTransform``)."""

    def __init__(self, base_transform, reinterpreted_batch_ndims: int, cache_size: int = 0):
        super().__init__(cache_size=cache_size)
        self.base_transform, self.reinterpreted_batch_ndims = base_transform, reinterpreted_batch_ndims

    @property
    def domain(self):
        return constraints.independent(self.base_transform.domain, self.reinterpreted_batch_ndims)

    @property
    def codomain(self):
        return constraints.independent(self.base_transform.codomain, self.reinterpreted_batch_ndims)

    @property
    def bijective(self):
        return self.base_transform.bijective

    @property
    def sign(self):
        return self.base_transform.sign

    def _call(self, x):
        return self.base_transform(x)

    def _inverse(self, y):
        return self.base_transform.inv(y)

    def log_abs_det_jacobian(self, x, y):
        return _sum_rightmost(self.base_transform.log_abs_det_jacobian(x, y), self.reinterpreted_batch_ndims)

    def forward_shape(self, shape):
        return self.base_transform.forward_shape(shape)

    def inverse_shape(self, shape):
        return self.base_transform.inverse_shape(shape)

    def __repr__(self) -> str:
        return f"IndependentTransform({self.base_transform!r}, {self.reinterpreted_batch_ndims})"


class ReshapeTransform(Transform):
    """Reshapes the rightmost ``in_shape`` dims to ``out_shape`` (same number of elements)
    (``torch.distributions.transforms.ReshapeTransform``)."""

    bijective = True

    def __init__(self, in_shape, out_shape, cache_size: int = 0):
        self.in_shape, self.out_shape = core.Size(tuple(in_shape)), core.Size(tuple(out_shape))
        if self.in_shape.numel() != self.out_shape.numel():
            raise ValueError("in_shape, out_shape have different numbers of elements")
        super().__init__(cache_size=cache_size)

    @property
    def domain(self):
        return constraints.independent(constraints.real, len(self.in_shape))

    @property
    def codomain(self):
        return constraints.independent(constraints.real, len(self.out_shape))

    def _call(self, x):
        return x.reshape(x.shape[:x.dim() - len(self.in_shape)] + self.out_shape)

    def _inverse(self, y):
        return y.reshape(y.shape[:y.dim() - len(self.out_shape)] + self.in_shape)

    def forward_shape(self, shape):
        cut = len(shape) - len(self.in_shape)
        if cut < 0 or tuple(shape[cut:]) != tuple(self.in_shape):
            raise ValueError(f"Shape mismatch: expected {tuple(shape[cut:])} but got {tuple(self.in_shape)}")
        return core.Size(tuple(shape[:cut]) + tuple(self.out_shape))

    def inverse_shape(self, shape):
        cut = len(shape) - len(self.out_shape)
        if cut < 0 or tuple(shape[cut:]) != tuple(self.out_shape):
            raise ValueError(f"Shape mismatch: expected {tuple(shape[cut:])} but got {tuple(self.out_shape)}")
        return core.Size(tuple(shape[:cut]) + tuple(self.in_shape))

    def log_abs_det_jacobian(self, x, y):
        return core.zeros(x.shape[:x.dim() - len(self.in_shape)], dtype=x.dtype, device=x.device)


class LowerCholeskyTransform(Transform):
    """An unconstrained square matrix to a lower-triangular one with a positive diagonal: the strictly lower part
    kept and the diagonal exponentiated (``torch.distributions.transforms.LowerCholeskyTransform``)."""

    domain = constraints.independent(constraints.real, 2)
    codomain = constraints.lower_cholesky

    def __eq__(self, other):
        return isinstance(other, LowerCholeskyTransform)

    __hash__ = object.__hash__

    def _call(self, x):
        return x.tril(-1) + x.diagonal(dim1=-2, dim2=-1).exp().diag_embed()

    def _inverse(self, y):
        return y.tril(-1) + y.diagonal(dim1=-2, dim2=-1).log().diag_embed()


class PositiveDefiniteTransform(Transform):
    """An unconstrained square matrix to a positive-definite one, ``L L^T`` of its ``LowerCholeskyTransform``
    (``torch.distributions.transforms.PositiveDefiniteTransform``)."""

    domain = constraints.independent(constraints.real, 2)
    codomain = constraints.positive_definite

    def __eq__(self, other):
        return isinstance(other, PositiveDefiniteTransform)

    __hash__ = object.__hash__

    def _call(self, x):
        x = LowerCholeskyTransform()(x)
        return x @ x.mT

    def _inverse(self, y):
        return LowerCholeskyTransform().inv(core.linalg.cholesky(y))


class CumulativeDistributionTransform(Transform):
    """``y = distribution.cdf(x)``, onto the unit interval
    (``torch.distributions.transforms.CumulativeDistributionTransform``)."""

    bijective = True
    codomain = constraints.unit_interval
    sign = +1

    def __init__(self, distribution, cache_size: int = 0):
        super().__init__(cache_size=cache_size)
        self.distribution = distribution

    @property
    def domain(self):
        return self.distribution.support

    def _call(self, x):
        return self.distribution.cdf(x)

    def _inverse(self, y):
        return self.distribution.icdf(y)

    def log_abs_det_jacobian(self, x, y):
        return self.distribution.log_prob(x)


class _Concatenated(Transform):
    """The transforms of ``tseq`` applied to slices of one tensor along ``dim``."""

    def __init__(self, tseq, dim: int, cache_size: int = 0):
        if not all(isinstance(t, Transform) for t in tseq):
            raise TypeError(f"{type(self).__name__}: every element of tseq must be a Transform")
        super().__init__(cache_size=cache_size)
        self.transforms, self.dim = list(tseq), dim

    @property
    def bijective(self):
        return all(t.bijective for t in self.transforms)

    @property
    def domain(self):
        return constraints.real

    codomain = domain

    def _map(self, x, method):
        parts = self._split(x)
        return self._join([method(t)(part) for t, part in zip(self.transforms, parts)])

    def _call(self, x):
        return self._map(x, lambda t: t)

    def _inverse(self, y):
        return self._map(y, lambda t: t.inv)

    def log_abs_det_jacobian(self, x, y):
        return self._join([t.log_abs_det_jacobian(a, b)
                           for t, a, b in zip(self.transforms, self._split(x), self._split(y))])


class CatTransform(_Concatenated):
    """The transforms of ``tseq`` applied to consecutive slices of ``lengths`` along ``dim``, concatenated
    (``torch.distributions.transforms.CatTransform``)."""

    def __init__(self, tseq, dim: int = 0, lengths=None, cache_size: int = 0):
        super().__init__(tseq, dim, cache_size)
        self.lengths = [1] * len(self.transforms) if lengths is None else list(lengths)
        if len(self.lengths) != len(self.transforms):
            raise ValueError("CatTransform: lengths must have one entry per transform")

    def _split(self, x):
        return core.split(x, self.lengths, dim=self.dim)

    def _join(self, parts):
        return core.cat(parts, dim=self.dim)


class StackTransform(_Concatenated):
    """The transforms of ``tseq`` applied to the slices of ``dim`` (one each), stacked back
    (``torch.distributions.transforms.StackTransform``)."""

    def __init__(self, tseq, dim: int = 0, cache_size: int = 0):
        super().__init__(tseq, dim, cache_size)

    def _split(self, x):
        return core.unbind(x, self.dim)

    def _join(self, parts):
        return core.stack(parts, dim=self.dim)


def _tril_flat_index(n: int, diag: int, device):
    """Row-major flat positions of the entries of an ``n x n`` matrix on or below diagonal ``diag``."""
    rows, cols = core.tril_indices(n, n, offset=diag, device=device)
    return rows * n + cols


def _vec_to_tril(vec, diag: int = 0):
    """A lower-triangular matrix filled row by row from the last dim of ``vec`` (below diagonal ``diag``)."""
    count = vec.shape[-1]
    n = round((-(1 + 2 * diag) + ((1 + 2 * diag) ** 2 + 8 * count) ** 0.5) / 2)
    index = _tril_flat_index(n, diag, vec.device).expand(vec.shape)
    flat = core.zeros(vec.shape[:-1] + (n * n,), dtype=vec.dtype, device=vec.device).scatter(-1, index, vec)
    return flat.reshape(vec.shape[:-1] + (n, n))


def _tril_to_vec(mat, diag: int = 0):
    """The entries of ``mat`` on or below diagonal ``diag``, row by row, along a last dim."""
    n = mat.shape[-1]
    return mat.flatten(-2).index_select(-1, _tril_flat_index(n, diag, mat.device))


class CorrCholeskyTransform(Transform):
    """An unconstrained vector of ``D (D - 1) / 2`` reals to the lower Cholesky factor of a ``D x D`` correlation
    matrix: tanh into ``(-1, 1)``, then stick-breaking along each row
    (``torch.distributions.transforms.CorrCholeskyTransform``)."""

    domain = constraints.real_vector
    codomain = constraints.corr_cholesky
    bijective = True

    def __eq__(self, other):
        return isinstance(other, CorrCholeskyTransform)

    __hash__ = object.__hash__

    def _call(self, x):
        eps = core.finfo(x.dtype).eps
        r = _vec_to_tril(x.tanh().clamp(min=-1 + eps, max=1 - eps), diag=-1)
        z1m_cumprod_sqrt = (1 - r.pow(2)).sqrt().cumprod(-1)
        n = r.shape[-1]
        eye = core.eye(n, dtype=x.dtype, device=x.device)
        ones = core.ones(r.shape[:-1] + (1,), dtype=x.dtype, device=x.device)
        return (r + eye) * core.cat([ones, z1m_cumprod_sqrt[..., :-1]], -1)

    def _inverse(self, y):
        y_cumsum = 1 - (y * y).cumsum(-1)
        ones = core.ones(y.shape[:-1] + (1,), dtype=y.dtype, device=y.device)
        shifted = core.cat([ones, y_cumsum[..., :-1]], -1)
        t = _tril_to_vec(y, diag=-1) / _tril_to_vec(shifted, diag=-1).sqrt()
        return (core.log1p(t) - core.log1p(-t)) / 2

    def log_abs_det_jacobian(self, x, y, intermediates=None):
        y1m_cumsum = 1 - (y * y).cumsum(-1)
        stick_breaking_logdet = 0.5 * _tril_to_vec(y1m_cumsum, diag=-2).log().sum(-1)
        tanh_logdet = -2 * (x + core.nn.functional.softplus(-2 * x) - math.log(2.0)).sum(-1)
        return stick_breaking_logdet + tanh_logdet

    def forward_shape(self, shape):
        n = round((0.25 + 2 * shape[-1]) ** 0.5 + 0.5)
        if n * (n - 1) // 2 != shape[-1]:
            raise ValueError("Input is not a flattend lower-diagonal number")
        return core.Size(tuple(shape[:-1]) + (n, n))

    def inverse_shape(self, shape):
        if len(shape) < 2 or shape[-2] != shape[-1]:
            raise ValueError("Input must be a square matrix")
        n = shape[-1]
        return core.Size(tuple(shape[:-2]) + (n * (n - 1) // 2,))
