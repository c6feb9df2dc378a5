"""``GradBucket``: what a DDP communication hook receives, one bucket's flattened gradients."""

from __future__ import annotations

__all__ = ["GradBucket"]


class GradBucket:
    """One bucket of DistributedDataParallel's gradients, flattened into one tensor (``torch.distributed
    .GradBucket``); a communication hook reduces ``buffer()`` and returns a future of the averaged tensor."""

    def __init__(self, index: int, buffer, parameters: list, is_last: bool):
        self._index, self._buffer, self._parameters, self._is_last = index, buffer, list(parameters), is_last

    def index(self) -> int:
        """The bucket's position; bucket 0 holds the last parameters, whose gradients come first."""
        return self._index

    def buffer(self):
        """The flat tensor of the bucket's gradients (a hook may change it in place)."""
        return self._buffer

    def set_buffer(self, buffer) -> None:
        """Replace the flat tensor (e.g. by a decompressed one)."""
        self._buffer = buffer

    def gradients(self) -> list:
        """The gradients as views of the buffer, one per parameter, shaped like it."""
        views, offset = [], 0
        for p in self._parameters:
            views.append(self._buffer[offset:offset + p.numel()].view(p.shape))
            offset += p.numel()
        return views

    def parameters(self) -> list:
        """The bucket's parameters, in buffer order."""
        return list(self._parameters)

    def is_last(self) -> bool:
        """Whether this is the last bucket of the iteration to be reduced."""
        return self._is_last
