"""core.onnx: export traced programs to ONNX (needs the ``onnx`` package, imported on first export)."""

from __future__ import annotations

from .export import CONVERTERS, OnnxExporterError, UnsupportedOperatorError, export

__all__ = ["export", "CONVERTERS", "OnnxExporterError", "UnsupportedOperatorError"]
