"""``core.distributed.nn``: collectives that autograd differentiates through (``torch.distributed.nn``)."""

from . import functional  # noqa: F401
