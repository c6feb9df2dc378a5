"""The built-in NumPy reference backend for the ``cpu`` device."""
