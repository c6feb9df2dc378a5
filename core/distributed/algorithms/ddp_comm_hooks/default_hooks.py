"""The standard DDP communication hooks: plain averaging, and averaging in 16-bit floats to halve the traffic
(``torch.distributed.algorithms.ddp_comm_hooks.default_hooks``). A hook is ``hook(state, bucket) -> Future``
whose value is the bucket's averaged flat gradient; register it with ``DistributedDataParallel.register_comm_hook``.
"""

from __future__ import annotations

from ... import distributed_c10d as c10d

__all__ = ["allreduce_hook", "fp16_compress_hook", "bf16_compress_hook"]


def allreduce_hook(process_group, bucket):
    """Average ``bucket``'s gradients over ``process_group`` (the default group when None): divide by the group
    size, then all_reduce; DDP's own behaviour (``default_hooks.allreduce_hook``)."""
    group = c10d._group(process_group)
    tensor = bucket.buffer().div_(group.size)
    return c10d.all_reduce(tensor, group=group, async_op=True).get_future().then(lambda fut: fut.value()[0])


def _compress_hook(dtype, process_group, bucket):
    group = c10d._group(process_group)
    buffer = bucket.buffer()
    compressed = buffer.to(dtype).div_(group.size)

    def decompress(fut):
        buffer.copy_(fut.value()[0])
        return buffer

    return c10d.all_reduce(compressed, group=group, async_op=True).get_future().then(decompress)


def fp16_compress_hook(process_group, bucket):
    """Average ``bucket``'s gradients sent as float16 (half the bytes), the result cast back into the bucket
    (``default_hooks.fp16_compress_hook``)."""
    import core

    return _compress_hook(core.float16, process_group, bucket)


def bf16_compress_hook(process_group, bucket):
    """Average ``bucket``'s gradients sent as bfloat16, the result cast back into the bucket
    (``default_hooks.bf16_compress_hook``)."""
    import core

    return _compress_hook(core.bfloat16, process_group, bucket)
