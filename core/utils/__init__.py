"""Utilities: ``checkpoint`` (activation checkpointing), ``data`` (datasets, DataLoader), ``dlpack``,
``safetensors``, ``tensorboard`` (SummaryWriter)."""

from . import data  # noqa: E402,F401 - `core.utils.data` after a plain `import core`, as in PyTorch

_SUBMODULES = frozenset({"checkpoint", "dlpack", "hooks", "safetensors", "tensorboard"})


def __getattr__(name: str):
    """``core.utils.checkpoint`` and the rest: loaded on first use, so ``import core`` stays cheap."""
    if name in _SUBMODULES:
        import importlib

        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module 'core.utils' has no attribute '{name}'")
