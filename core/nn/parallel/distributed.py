"""``DistributedDataParallel``: one model replica per process, gradients averaged across processes while backward
is still running.

At construction the parameters and buffers are broadcast from rank 0 and the parameters are grouped into
buckets of about ``bucket_cap_mb`` (reverse registration order, the order backward tends to produce gradients).
A post-accumulate-grad hook on each parameter counts the bucket's ready gradients; a full bucket is flattened
and all-reduced asynchronously, buckets always in index order so every rank issues the same collectives. When
backward ends (an engine callback) the remaining work is waited for and each gradient is replaced by the average.
"""

from __future__ import annotations

import contextlib
import weakref

from ... import distributed as dist
from ...distributed.algorithms.ddp_comm_hooks.default_hooks import allreduce_hook
from ...autograd.engine import queue_callback
from ..modules.module import Module

__all__ = ["DistributedDataParallel"]


class _Reduction:
    """One backward's bookkeeping: which parameters are ready, which buckets are launched, their futures."""

    def __init__(self, buckets: list):
        self.ready: list = [set() for _ in buckets]
        self.launched: list = []  # one future of the averaged flat gradients per launched bucket, in index order
        self.callback_queued = False


class DistributedDataParallel(Module):
    """Data parallelism across processes (``torch.nn.parallel.DistributedDataParallel``): wraps ``module``; its
    gradients after ``backward()`` are the average over every rank of the group, as if one process had run the
    concatenated batch (with a mean-reduced loss). ``no_sync()`` accumulates locally instead. ``device_ids``,
    ``output_device``, ``dim``, ``check_reduction`` and ``static_graph`` are accepted for PyTorch compatibility
    and change nothing (one device per process; every graph takes the same path)."""

    def __init__(self, module: Module, device_ids=None, output_device=None, dim: int = 0,
                 broadcast_buffers: bool = True, init_sync: bool = True, process_group=None, bucket_cap_mb=None,
                 find_unused_parameters: bool = False, check_reduction: bool = False,
                 gradient_as_bucket_view: bool = False, static_graph: bool = False):
        super().__init__()
        if not isinstance(module, Module):
            raise TypeError(f"DistributedDataParallel: module must be a core.nn.Module, got {type(module).__name__}")
        self.module = module
        self.process_group = process_group if process_group is not None else dist.distributed_c10d._group(None)
        self.device_ids, self.output_device, self.dim = device_ids, output_device, dim
        self.broadcast_buffers, self.find_unused_parameters = broadcast_buffers, find_unused_parameters
        self.gradient_as_bucket_view, self.static_graph = gradient_as_bucket_view, static_graph
        self.bucket_bytes_cap = int((25 if bucket_cap_mb is None else bucket_cap_mb) * 1024 * 1024)
        self.require_backward_grad_sync = True
        if init_sync:
            for tensor in [*module.parameters(), *module.buffers()]:
                dist.broadcast(tensor, group=self.process_group, group_src=0)
        self._names = {id(p): name for name, p in module.named_parameters()}
        self._buckets = self._make_buckets([p for p in module.parameters() if p.requires_grad])
        self._bucket_of = {id(p): i for i, bucket in enumerate(self._buckets) for p in bucket}
        self._reduction: _Reduction | None = None
        self._comm_state, self._comm_hook, self._custom_hook = self.process_group, allreduce_hook, False
        # hooks hold the wrapper weakly: a dropped DistributedDataParallel leaves the parameters as they were
        me = weakref.ref(self)
        self._hooks = [p.register_post_accumulate_grad_hook(lambda param: me() and me()._grad_ready(param))
                       for bucket in self._buckets for p in bucket]

    def _make_buckets(self, params: list) -> list:
        """Parameters in reverse order, cut into buckets of one dtype and device up to ``bucket_bytes_cap``."""
        buckets, size = [], 0
        for p in reversed(params):
            nbytes = p.numel() * p.dtype.itemsize
            last = buckets[-1] if buckets else None
            if last is None or size + nbytes > self.bucket_bytes_cap and size or \
                    (last[0].dtype, last[0].device) != (p.dtype, p.device):
                buckets.append([])
                size = 0
            buckets[-1].append(p)
            size += nbytes
        return buckets

    def forward(self, *inputs, **kwargs):
        """Run the wrapped module, after broadcasting rank 0's buffers; arm the gradient reduction."""
        if self._reduction is not None and any(self._reduction.ready):
            raise RuntimeError("Expected to have finished reduction in the prior iteration before starting a new "
                               "one: the previous backward did not finish reducing gradients")
        if self.broadcast_buffers:
            for buffer in self.module.buffers():
                dist.broadcast(buffer, group=self.process_group, group_src=0)
        import core

        sync = core.is_grad_enabled() and self.require_backward_grad_sync
        self._reduction = _Reduction(self._buckets) if sync else None
        return self.module(*inputs, **kwargs)

    @contextlib.contextmanager
    def no_sync(self):
        """Within this context backward accumulates gradients locally, without communication; the first backward
        after it averages the accumulated gradients (``DistributedDataParallel.no_sync``)."""
        previous, self.require_backward_grad_sync = self.require_backward_grad_sync, False
        try:
            yield
        finally:
            self.require_backward_grad_sync = previous

    def register_comm_hook(self, state, hook) -> None:
        """Reduce each gradient bucket with ``hook(state, bucket) -> Future`` (its value: the averaged flat
        gradients) instead of the default all_reduce average (``DistributedDataParallel.register_comm_hook``);
        see ``core.distributed.algorithms.ddp_comm_hooks``. Only one hook may be registered."""
        if not callable(hook):
            raise TypeError(f"register_comm_hook(): hook must be callable, got {type(hook).__name__}")
        if self._custom_hook:
            raise RuntimeError("register_comm_hook or register_builtin_comm_hook can only be called once.")
        self._comm_state, self._comm_hook, self._custom_hook = state, hook, True

    # -- the reducer -----------------------------------------------------------------------------------------
    def _grad_ready(self, param) -> None:
        state = self._reduction
        if state is None:
            return
        if not state.callback_queued:
            state.callback_queued = True
            queue_callback(self._finish)
        index = self._bucket_of[id(param)]
        state.ready[index].add(id(param))
        while len(state.launched) < len(self._buckets) and \
                len(state.ready[len(state.launched)]) == len(self._buckets[len(state.launched)]):
            self._launch(state, len(state.launched))

    def _launch(self, state: _Reduction, index: int) -> None:
        """Flatten bucket ``index``'s gradients (zeros for those not ready) and start their reduction."""
        import core

        bucket = self._buckets[index]
        pieces = [p.grad.detach().reshape(-1) if id(p) in state.ready[index] else
                  core.zeros(p.numel(), dtype=p.dtype, device=p.device) for p in bucket]
        grad_bucket = dist.GradBucket(index, core.cat(pieces), bucket, index == len(self._buckets) - 1)
        state.launched.append(self._comm_hook(self._comm_state, grad_bucket))

    def _finish(self) -> None:
        """Once backward is over: start the buckets left (unused parameters), wait, and write the averages back."""
        import core

        state, self._reduction = self._reduction, None
        unused = [p for bucket, ready in zip(self._buckets, state.ready) for p in bucket if id(p) not in ready]
        if unused and not self.find_unused_parameters:
            names = ", ".join(self._names.get(id(p), "?") for p in unused)
            raise RuntimeError("Expected to have finished reduction in the prior iteration before starting a new "
                               "one. This error indicates that your module has parameters that were not used in "
                               "producing loss. You can enable unused parameter detection by passing the keyword "
                               "argument `find_unused_parameters=True` to DistributedDataParallel. Parameters "
                               f"that did not receive a gradient: {names}")
        for index in range(len(state.launched), len(self._buckets)):
            self._launch(state, index)
        used = None
        if self.find_unused_parameters:  # a parameter no rank used keeps its gradient (None), as in PyTorch
            params = [p for bucket in self._buckets for p in bucket]
            used = core.tensor([int(any(id(p) in r for r in state.ready)) for p in params], dtype=core.int64,
                               device=params[0].device)  # the parameters' device: nccl communicates cuda only
            dist.all_reduce(used, group=self.process_group)
            used = dict(zip(map(id, params), used.tolist()))
        with core.no_grad():
            for bucket, future in zip(self._buckets, state.launched):
                flat = future.wait()
                offset = 0
                for p in bucket:
                    piece = flat[offset:offset + p.numel()].view(p.shape)
                    offset += p.numel()
                    if used is not None and not used[id(p)]:
                        continue
                    if self.gradient_as_bucket_view or p.grad is None:
                        p.grad = piece if self.gradient_as_bucket_view else piece.clone()
                    else:
                        p.grad.copy_(piece)
