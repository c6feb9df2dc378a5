"""A toy backend for core: the device type ``toy``, memory in host RAM, a few kernels (hooks in ``plugin.py``)."""

__version__ = "0.1.0"
