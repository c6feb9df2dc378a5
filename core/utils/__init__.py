"""Utilities: ``core.utils.checkpoint`` (and, later, ``core.utils.data``)."""
