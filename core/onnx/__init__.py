"""core.onnx: export traced programs to ONNX (needs the ``onnx`` package, imported on first export)."""

from __future__ import annotations

from ._custom import register_custom_op_symbolic, unregister_custom_op_symbolic
from .export import (CONVERTERS, OnnxExporterError, TrainingMode, UnsupportedOperatorError, export, is_in_onnx_export,
                     producer_name, producer_version, select_model_mode_for_export)

__all__ = ["export", "CONVERTERS", "OnnxExporterError", "UnsupportedOperatorError", "TrainingMode", "is_in_onnx_export",
           "producer_name", "producer_version", "select_model_mode_for_export", "register_custom_op_symbolic",
           "unregister_custom_op_symbolic"]
