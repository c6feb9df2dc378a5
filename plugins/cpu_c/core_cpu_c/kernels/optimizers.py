"""Optimizer updates (core.ops.optimizers, csrc/optim.c): fused ``sgd_update_`` / ``adam_update_``, one C pass per
parameter over dense tensors of one shape whose storages are distinct (strided state or aliasing: the decomposition).
"""

from __future__ import annotations

from core.backends.api import contiguous_strides, note_c_call, planning

from ..context import FLOATS, Family
from ..layout import noted

__all__ = ["kernels", "OPS"]

OPS = ("sgd_update_", "adam_update_")


def _dense_and_distinct(tensors) -> bool:
    """Whether the tensors are dense float32/float64 of one shape, dtype and device, with distinct storages."""
    first = tensors[0]
    d, shape, device = first.dtype, first._shape, first._storage.device
    if d.name not in FLOATS:
        return False
    dense = contiguous_strides(shape)
    storages = []
    for t in tensors:
        storage = t._storage
        if t.dtype is not d or t._shape != shape or storage.device is not device or storage in storages \
                or (t._stride != dense and not t.is_contiguous()):
            return False
        storages.append(storage)
    return True


class _Optimizers(Family):
    ops, c_names = OPS, {op: op.rstrip("_") for op in OPS}  # sgd_update_ -> ccc_sgd_update_<dtype>

    def _pointer(self, t):
        return self.pointer("optimizer update", t)

    def sgd_update_(self, param, grad, momentum_buffer, lr, momentum, dampening, weight_decay, nesterov):
        """SGD with momentum, dampening, weight decay and Nesterov, in place (``torch.optim.SGD``)."""
        tensors = (param, grad) if momentum_buffer is None else (param, grad, momentum_buffer)
        if (momentum != 0 and momentum_buffer is None) or not _dense_and_distinct(tensors):
            return self.base["sgd_update_"](param, grad, momentum_buffer, lr, momentum, dampening, weight_decay,
                                            nesterov)
        buf = self.ffi.NULL if momentum_buffer is None or momentum == 0 else self._pointer(momentum_buffer)
        fn = self.c["sgd_update_", param.dtype.name]
        numbers = (float(lr), float(momentum), float(dampening), float(weight_decay), bool(nesterov))
        fn(param.numel(), self._pointer(param), self._pointer(grad), buf, *numbers)
        param._storage.version += 1
        if buf != self.ffi.NULL:
            momentum_buffer._storage.version += 1
        if planning():  # a capture: the replay calls C itself
            state = (param,) if buf == self.ffi.NULL else (param, momentum_buffer)
            ffi = self.ffi
            note_c_call(fn, (param.numel(), noted(ffi, param), noted(ffi, grad),
                             noted(ffi, momentum_buffer if len(state) == 2 else None), *numbers), ffi.from_buffer,
                        None, state)
        return param

    def adam_update_(self, param, grad, exp_avg, exp_avg_sq, max_exp_avg_sq, step, lr, beta1, beta2, eps,
                     weight_decay, decoupled):
        """Adam / AdamW (``decoupled``) with optional AMSGrad state, in place (``torch.optim.Adam``)."""
        state = (exp_avg, exp_avg_sq) if max_exp_avg_sq is None else (exp_avg, exp_avg_sq, max_exp_avg_sq)
        if not _dense_and_distinct((param, grad, *state)):
            return self.base["adam_update_"](param, grad, exp_avg, exp_avg_sq, max_exp_avg_sq, step, lr, beta1,
                                             beta2, eps, weight_decay, decoupled)
        pointers = [self._pointer(t) for t in (param, grad, exp_avg, exp_avg_sq)]
        vmax = self.ffi.NULL if max_exp_avg_sq is None else self._pointer(max_exp_avg_sq)
        self.c["adam_update_", param.dtype.name](param.numel(), *pointers, vmax, float(lr), float(beta1),
                                                 float(beta2), float(eps), float(weight_decay), bool(decoupled),
                                                 lr / (1 - beta1 ** step), (1 - beta2 ** step) ** 0.5)
        for t in (param, *state):
            t._storage.version += 1
        return param


def kernels(ctx) -> dict:
    """{op: kernel} for :data:`OPS`, each falling back to the op's reference (its decomposition)."""
    return _Optimizers(ctx).kernels()
