"""Utilities: ``checkpoint`` (activation checkpointing), ``data`` (datasets, DataLoader), ``safetensors``."""
