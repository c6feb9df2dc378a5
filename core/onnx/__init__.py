"""core.onnx: export traced programs to ONNX (needs the ``onnx`` package, imported on first export)."""

from __future__ import annotations

from .export import (CONVERTERS, OnnxExporterError, TrainingMode, UnsupportedOperatorError, export, is_in_onnx_export,
                     producer_name, producer_version)

__all__ = ["export", "CONVERTERS", "OnnxExporterError", "UnsupportedOperatorError", "TrainingMode", "is_in_onnx_export",
           "producer_name", "producer_version"]
