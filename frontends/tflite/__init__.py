"""TFLite frontend: ``import_tflite(path_or_bytes) -> ModuleOp``.

The module holds ``func.func @main`` (NHWC interface kept; arguments and
results named by ``{dlc.name = "<tensor name>"}``) with the weights store
attached. Problems raise :class:`TfliteImportError` (one line). Needs the
``tflite`` package (the flatbuffers schema readers; ``pip install tflite``).
"""

from dlc.frontends.tflite.importer import TfliteImportError, import_tflite, read_model


def supported_operators() -> list[str]:
    from dlc.frontends.tflite.ops import CONVERTERS

    return sorted(CONVERTERS)


__all__ = ["import_tflite", "TfliteImportError", "read_model", "supported_operators"]
