"""Builds the C extensions at install time (cffi API mode); metadata lives in pyproject.toml.

core_cpu_c._ext always; core_cpu_c._onednn (oneDNN convolution) only where oneDNN's headers are found
(see core_cpu_c/_build_onednn.py).
"""

import runpy

from setuptools import setup

modules = ["core_cpu_c/_build.py:ffibuilder"]
if runpy.run_path("core_cpu_c/_build_onednn.py")["onednn_prefix"]() is not None:
    modules.append("core_cpu_c/_build_onednn.py:ffibuilder")
setup(cffi_modules=modules)
