"""ONNX frontend: ``import_model(path_or_model_proto) -> ModuleOp``.

The module holds ``func.func @main`` in the graph dialect with the weights
store attached (:func:`dlc.weights.attach`). Arguments carry
``{dlc.name = "<onnx input>"}`` arg_attrs, results ``{dlc.name = "<onnx output>"}``
res_attrs. Problems raise :class:`OnnxImportError` (one line, names the place).
onnx's backend API (``Backend.prepare(model).run(inputs)``) is ``dlc.onnx_backend``.
"""

from dlc.frontends.onnx.errors import NeedsConstantError, OnnxImportError
from dlc.frontends.onnx.importer import import_model
from dlc.frontends.onnx.registry import supported_op_types

__all__ = ["import_model", "OnnxImportError", "NeedsConstantError", "supported_op_types"]
