"""Optimizer updates (core.ops.optimizers, csrc/optim.c): fused ``sgd_update_`` / ``adam_update_``, one C pass per
parameter.

The kernels take dense float32/float64 tensors of one shape and dtype whose
storages are distinct; anything else (complex views, mixed dtypes, strided
state, aliasing) runs the op's decomposition, which has the same numerics.
"""

from __future__ import annotations

from ..layout import pointer

__all__ = ["kernels"]

_DTYPES = ("float32", "float64")


def _dense_and_distinct(tensors) -> bool:
    first = tensors[0]
    if first.dtype.name not in _DTYPES:
        return False
    storages = set()
    for t in tensors:
        if t.dtype is not first.dtype or t._shape != first._shape or not t.is_contiguous() \
                or t.device != first.device or id(t._storage) in storages:
            return False
        storages.add(id(t._storage))
    return True


def _pointer(ffi, t):
    return pointer(ffi, "optimizer update", t)


def kernels(ctx) -> dict:
    """``{op: kernel}`` for the fused updates, each falling back to the op's reference (its decomposition)."""
    ffi, lib = ctx.ffi, ctx.lib
    sgd_base, adam_base = ctx.reference("sgd_update_"), ctx.reference("adam_update_")
    sgd_c = {d: getattr(lib, f"ccc_sgd_update_{d}") for d in _DTYPES}
    adam_c = {d: getattr(lib, f"ccc_adam_update_{d}") for d in _DTYPES}

    def sgd(param, grad, momentum_buffer, lr, momentum, dampening, weight_decay, nesterov):
        tensors = (param, grad) if momentum_buffer is None else (param, grad, momentum_buffer)
        if (momentum != 0 and momentum_buffer is None) or not _dense_and_distinct(tensors):
            return sgd_base(param, grad, momentum_buffer, lr, momentum, dampening, weight_decay, nesterov)
        buf = ffi.NULL if momentum_buffer is None or momentum == 0 else _pointer(ffi, momentum_buffer)
        sgd_c[param.dtype.name](param.numel(), _pointer(ffi, param), _pointer(ffi, grad), buf, float(lr),
                                float(momentum), float(dampening), float(weight_decay), bool(nesterov))
        param._storage.version += 1
        if buf != ffi.NULL:
            momentum_buffer._storage.version += 1
        return param

    def adam(param, grad, exp_avg, exp_avg_sq, max_exp_avg_sq, step, lr, beta1, beta2, eps, weight_decay,
             decoupled):
        state = (exp_avg, exp_avg_sq) if max_exp_avg_sq is None else (exp_avg, exp_avg_sq, max_exp_avg_sq)
        if not _dense_and_distinct((param, grad, *state)):
            return adam_base(param, grad, exp_avg, exp_avg_sq, max_exp_avg_sq, step, lr, beta1, beta2, eps,
                             weight_decay, decoupled)
        vmax = ffi.NULL if max_exp_avg_sq is None else _pointer(ffi, max_exp_avg_sq)
        adam_c[param.dtype.name](param.numel(), _pointer(ffi, param), _pointer(ffi, grad), _pointer(ffi, exp_avg),
                                 _pointer(ffi, exp_avg_sq), vmax, float(lr), float(beta1), float(beta2), float(eps),
                                 float(weight_decay), bool(decoupled), lr / (1 - beta1 ** step),
                                 (1 - beta2 ** step) ** 0.5)
        for t in (param, *state):
            t._storage.version += 1
        return param

    return {"sgd_update_": sgd, "adam_update_": adam}
