"""`dlc.onnx_backend.Backend`: onnx's backend API over dlc's full pipeline
(as `onnxruntime.backend`). It sits with the tools, above the ONNX frontend,
because it runs the whole pipeline.

``Backend.prepare(model)`` imports the model and compiles it to machine code
with ``dlc.compile`` (import -> graph passes -> loops -> schedules -> LLVM ->
JIT); ``rep.run(inputs)`` is one native call. The reference evaluator is never
used here.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import onnx
from onnx.backend.base import Backend as _OnnxBackend
from onnx.backend.base import BackendRep as _OnnxBackendRep

from dlc.driver import compile as dlc_compile


class BackendRep(_OnnxBackendRep):
    """A compiled model; ``run`` takes inputs in graph order (list) or by name (dict)."""

    def __init__(self, compiled: Any):
        self.compiled = compiled
        self.input_names = [name for name, _, _ in compiled.input_specs]

    def run(self, inputs: Any, **kwargs: Any) -> tuple[np.ndarray, ...]:
        if isinstance(inputs, Mapping):
            missing = [n for n in self.input_names if n not in inputs]
            if missing:
                raise ValueError(f"missing model inputs: {', '.join(missing)}")
            arrays = [inputs[n] for n in self.input_names]
        elif isinstance(inputs, np.ndarray):
            arrays = [inputs]
        else:
            arrays = list(inputs)
        return tuple(self.compiled(*[np.asarray(a) for a in arrays]))


class Backend(_OnnxBackend):
    """onnx.backend.base.Backend for dlc (CPU, through LLVM)."""

    @classmethod
    def supports_device(cls, device: str) -> bool:
        return device.upper() == "CPU"

    @classmethod
    def prepare(cls, model: onnx.ModelProto, device: str = "CPU", **kwargs: Any) -> BackendRep:
        if not cls.supports_device(device):
            raise ValueError(f"dlc's ONNX backend runs on CPU, not {device}")
        return BackendRep(dlc_compile(model, num_threads=kwargs.get("num_threads")))

    @classmethod
    def run_model(cls, model: onnx.ModelProto, inputs: Any, device: str = "CPU",
                  **kwargs: Any) -> tuple[np.ndarray, ...]:
        return cls.prepare(model, device, **kwargs).run(inputs)

    @classmethod
    def run_node(cls, node: onnx.NodeProto, inputs: Sequence[np.ndarray], device: str = "CPU",
                 outputs_info: Sequence[tuple[np.dtype, tuple[int, ...]]] | None = None,
                 **kwargs: Any) -> tuple[np.ndarray, ...]:
        """Wrap one node in a model (inputs named as the node's) and run it compiled."""
        from onnx import helper

        value_infos = [
            helper.make_tensor_value_info(name, helper.np_dtype_to_tensor_dtype(np.asarray(x).dtype),
                                          np.asarray(x).shape)
            for name, x in zip(node.input, inputs) if name
        ]
        outputs = [helper.make_tensor_value_info(name, onnx.TensorProto.UNDEFINED, None)
                   for name in node.output if name]
        graph = helper.make_graph([node], "run_node", value_infos, outputs)
        opset = kwargs.get("opset_version", onnx.defs.onnx_opset_version())
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
        return cls.run_model(model, list(inputs), device)
