"""Reference kernels of the shape family: cat and flip (copies into fresh arrays)."""

from __future__ import annotations


def kernels(ctx) -> dict:
    """cat and flip over ``ctx``."""
    xp, array, wrap = ctx.xp, ctx.array, ctx.wrap

    def cat(spec, tensors, dim=0):
        out = xp.empty(spec.shape, spec.dtype.numpy)
        if out.size:
            dim %= out.ndim
            start = 0
            for t in tensors:
                if t.numel() == 0:  # includes the legacy 1-d empties of another rank
                    continue
                a = array(t)
                n = a.shape[dim]
                xp.copyto(out[(slice(None),) * dim + (slice(start, start + n),)], a, casting="unsafe")
                start += n
        return wrap(out, spec)

    def flip(spec, input, dims):
        return wrap(xp.flip(array(input), dims).copy(), spec)

    return {"cat": cat, "flip": flip}
