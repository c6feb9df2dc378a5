"""Utilities: ``checkpoint`` (activation checkpointing), ``data`` (datasets, DataLoader), ``safetensors``."""

from . import data  # noqa: E402,F401 - `core.utils.data` after a plain `import core`, as in PyTorch
