"""Kernel source generation shared by the compiled backends (C, OpenCL C, CUDA C and WGSL dialects)."""

from .cstyle import BINARY_EXPRESSIONS, UNARY_EXPRESSIONS, CRenderer, CStyleRenderer, ElementwiseKernel, \
    FusedKernel, FusedReduction, FusedStep, expression_for

__all__ = ["CStyleRenderer", "CRenderer", "ElementwiseKernel", "UNARY_EXPRESSIONS", "BINARY_EXPRESSIONS",
           "expression_for", "FusedKernel", "FusedStep", "FusedReduction"]
