"""The optim family: fused ``sgd_update_`` and ``adam_update_``, one WGSL pass per parameter, the decompositions'
numerics (core/ops/optimizers.py) step for step in float32. They take dense float32 tensors of one shape on one
device with distinct storages and a number as learning rate; anything else declines to the decomposition."""

from __future__ import annotations

from ._common import MAIN, f32, is_tensor, run

__all__ = ["kernels"]

_SGD = MAIN + """    if (i >= $n) { return; }
    let w = param[$po + i];
    var g = grad[$go + i] + bitcast<f32>($wd) * w;
    MOMENTUM
    param[$po + i] = w - bitcast<f32>($lr) * g;
}
"""

_MOMENTUM = """let b = buf[$bo + i] * bitcast<f32>($mom) + g * bitcast<f32>($keep);
    buf[$bo + i] = b;
    g = select(b, g + b * bitcast<f32>($mom), $nesterov == 1);"""

_ADAM = MAIN + """    if (i >= $n) { return; }
    let w = param[$po + i] * bitcast<f32>($decay);
    let g = grad[$go + i] + bitcast<f32>($wd) * w;
    let m = exp_avg[$mo + i] + bitcast<f32>($b1c) * (g - exp_avg[$mo + i]);
    var v = exp_avg_sq[$vo + i] * bitcast<f32>($b2) + g * g * bitcast<f32>($b2c);
    exp_avg[$mo + i] = m;
    exp_avg_sq[$vo + i] = v;
    AMSGRAD
    param[$po + i] = w - bitcast<f32>($step_size) * (m / (sqrt(v) / bitcast<f32>($bc2) + bitcast<f32>($eps)));
}
"""


def _fits(*tensors) -> bool:
    """Dense float32 tensors of one shape and device whose storages are distinct (None skipped)."""
    given = [t for t in tensors if t is not None]
    first = given[0]
    return all(t.dtype.name == "float32" and t._shape == first._shape and t.is_contiguous()
               and t.device == first.device for t in given) and len({id(t._storage) for t in given}) == len(given)


def _bump(*tensors) -> None:
    """Mark the tensors (None skipped) as written in place."""
    for t in (t for t in tensors if t is not None):
        t._storage.version += 1


def sgd_update_(param, grad, momentum_buffer, lr, momentum, dampening, weight_decay, nesterov):
    """SGD with momentum, dampening, weight decay and Nesterov, in place (``torch.optim.SGD``)."""
    buf = momentum_buffer if momentum != 0 else None
    if (momentum != 0 and buf is None) or is_tensor(lr) or not _fits(param, grad, buf):
        return NotImplemented
    n = param.numel()
    if n:
        run(("sgd", buf is not None), _SGD.replace("MOMENTUM", _MOMENTUM if buf is not None else ""),
            [("param", param, "f32")] + ([("buf", buf, "f32")] if buf is not None else []), [("grad", grad, "f32")],
            n, dict(n=n, po=param._offset, go=grad._offset, bo=0 if buf is None else buf._offset,
                          wd=f32(weight_decay), mom=f32(momentum), keep=f32(1 - dampening), nesterov=int(nesterov),
                          lr=f32(lr)))
    _bump(param, buf)
    return param


def adam_update_(param, grad, exp_avg, exp_avg_sq, max_exp_avg_sq, step, lr, beta1, beta2, eps, weight_decay,
                 decoupled):
    """Adam / AdamW (``decoupled``) with optional AMSGrad state, in place (``torch.optim.Adam``)."""
    if is_tensor(lr) or is_tensor(step) or not _fits(param, grad, exp_avg, exp_avg_sq, max_exp_avg_sq):
        return NotImplemented
    n = param.numel()
    amsgrad = max_exp_avg_sq is not None
    if n:
        writes = [("param", param, "f32"), ("exp_avg", exp_avg, "f32"), ("exp_avg_sq", exp_avg_sq, "f32")]
        if amsgrad:
            writes.append(("vmax", max_exp_avg_sq, "f32"))
        source = _ADAM.replace("AMSGRAD", "v = max(vmax[$xo + i], v); vmax[$xo + i] = v;" * amsgrad)
        run(("adam", amsgrad), source, writes, [("grad", grad, "f32")], n, dict(
            n=n, po=param._offset, go=grad._offset, mo=exp_avg._offset, vo=exp_avg_sq._offset,
            xo=max_exp_avg_sq._offset if amsgrad else 0,
            decay=f32(1 - lr * weight_decay if decoupled else 1), wd=f32(0 if decoupled else weight_decay),
            b1c=f32(1 - beta1), b2=f32(beta2), b2c=f32(1 - beta2), eps=f32(eps),
            step_size=f32(lr / (1 - beta1 ** step)), bc2=f32((1 - beta2 ** step) ** 0.5)))
    _bump(param, exp_avg, exp_avg_sq, max_exp_avg_sq)
    return param


def kernels(runtime) -> dict:
    """The optim family: op name -> kernel."""
    return {"sgd_update_": sgd_update_, "adam_update_": adam_update_}
