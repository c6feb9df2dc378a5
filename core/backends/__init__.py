"""Backends: the public plugin API (``core.backends.api``) and the built-in ones."""


def __getattr__(name: str):
    """``core.backends.api`` after a plain ``import core``: loaded on first use."""
    if name in ("api", "meta", "numpy"):
        import importlib

        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module 'core.backends' has no attribute '{name}'")
