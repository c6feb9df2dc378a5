"""Backends: the public plugin API (``core.backends.api``) and the built-in ones."""
