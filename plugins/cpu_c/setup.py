"""Builds the C extension at install time (cffi API mode); metadata lives in pyproject.toml."""

from setuptools import setup

setup(cffi_modules=["core_cpu_c/_build.py:ffibuilder"])
