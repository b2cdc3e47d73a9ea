"""Errors of the ONNX importer.

Every problem the importer finds in a model (unsupported ops, a truncated
file, a dangling edge, a bad initializer, a shape it cannot make static) is
raised as :class:`OnnxImportError` with a one-line message naming the node or
tensor; tools print ``str(err)`` and exit, never a traceback.
"""

from __future__ import annotations


class OnnxImportError(Exception):
    """The model cannot be imported; the message says where and why."""


class NeedsConstantError(OnnxImportError):
    """A node needs a compile-time value (a shape, axes, pads...) that comes
    from a graph input. ``input_name`` names that graph input when the value
    is exactly one graph input, so a caller may retry with
    ``import_model(..., constant_inputs={input_name: array})``."""

    def __init__(self, message: str, input_name: str | None = None):
        super().__init__(message)
        self.input_name = input_name
