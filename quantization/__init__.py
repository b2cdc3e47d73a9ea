"""The quantizer: float ONNX model + calibration data -> QDQ int8 ONNX model.

* ``calibrate.py``: calibration data loading and the ranges of activations,
  measured by the model compiled with dlc;
* ``qdq_writer.py``: what to quantize (``plan_qdq``) and the QDQ model
  (``write_qdq``) in onnxruntime's ``quantize_static`` form;
* ``api.py``: ``quantize`` (``dlc.quantize``), used by ``dlc quantize``
  (tools/quantize_cli.py).

A tools-layer package: calibration compiles the model with dlc.driver.
"""

from dlc.quantization.api import quantize
from dlc.quantization.calibrate import QuantizationError

__all__ = ["QuantizationError", "quantize"]
