"""torch.export ExportedProgram -> graph-dialect ``func.func @main``.

Why our own: xDSL has no PyTorch frontend (torch-mlir is a separate C++
project). We reuse torch's own export (``torch.export.export``) and its
functionalization (``ep.run_decompositions({})``: in-place ops, ``detach``,
``lift_fresh_copy`` disappear, high-level ops like ``linear``/``conv2d``/
``layer_norm``/``scaled_dot_product_attention`` stay, which map onto graph ops
one to one). Graphs already decomposed to the core ATen opset
(``convolution``, ``addmm``, ``native_layer_norm``, ``_softmax``...) are
accepted too.

Every FX ``call_function`` node is converted by a function registered in
:mod:`.registry` (modules ``ops_*``); ops are built with ``Op.make`` so shapes
come from the dialect's inference rules. After each node the result is checked
against torch's own ``meta["val"]``: a dtype that differs (torch's type
promotion) becomes a ``graph.cast``, a shape that differs is an internal error.

Signature: user inputs become the arguments of ``@main`` in order (arg_attrs
``{dlc.name = "<placeholder>"}``), user outputs its results. Parameters,
buffers and lifted constants go to the weights store under their state-dict
names (``conv.weight``); small lifted constants are inlined. Mutations of
buffers or inputs (BUFFER_MUTATION / USER_INPUT_MUTATION outputs) are not
returned: the compiled function is pure.
"""

from __future__ import annotations

import contextlib
import logging
import operator
import os
import re
import warnings
import zipfile
from collections import Counter
from typing import Any

import numpy as np
import torch
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Block, SSAValue

from dlc.dialects import graph as g
from dlc.dialects.graph_base import ShapeError, element_type_of, numpy_dtype, tensor_type
from dlc.frontends.importer_base import INLINE_CONSTANT_LIMIT, ImporterBase
from dlc.frontends.torch.registry import lookup
from dlc.weights import WeightStore

_TORCH_DIR = os.path.dirname(os.path.abspath(torch.__file__)) + os.sep


class TorchImportError(Exception):
    """The program cannot be imported; the message says where and why (one line)."""


class Unavailable:
    """A tuple member the importer does not compute (native_layer_norm's mean,
    max_pool2d's indices...); using it is an error naming the node."""

    def __init__(self, what: str):
        self.what = what


def torch_to_numpy_dtype(dtype: torch.dtype) -> np.dtype:
    try:
        return torch.empty(0, dtype=dtype).numpy().dtype
    except TypeError:
        raise TorchImportError(f"dtype {dtype} is not supported (no numpy equivalent)") from None


def numpy_to_torch_dtype(dtype: np.dtype) -> torch.dtype:
    return torch.from_numpy(np.empty(0, dtype=dtype)).dtype


def source_location(node: torch.fx.Node) -> str:
    """``file:line`` of the user code that produced ``node``: the innermost
    frame of its stack trace outside torch itself (an nn.BatchNorm2d points at
    the model line that calls it), or the node name when there is no trace."""
    trace = node.meta.get("stack_trace") or ""
    frames = re.findall(r'File "([^"]+)", line (\d+)', trace)
    user = [f for f in frames if not os.path.abspath(f[0]).startswith(_TORCH_DIR)]
    if user or frames:
        file, line = (user or frames)[-1]
        return f"{file}:{line}"
    return f"node '{node.name}'"


def op_name(target: Any) -> str:
    """``aten.add.Tensor`` for an OpOverload; the function name otherwise."""
    if isinstance(target, torch._ops.OpOverload):
        return str(target)
    return getattr(target, "__qualname__", None) or str(target)


def _packet(target: Any) -> str:
    """``aten.add`` for ``aten.add.Tensor`` (converters are keyed by packet)."""
    if isinstance(target, torch._ops.OpOverload):
        ns, name = target._schema.name.split("::")
        return f"{ns}.{name}"
    if target is operator.getitem:
        return "getitem"
    return op_name(target)


class ImportContext(ImporterBase):
    """Builds the body of ``@main`` (emit, errors: ImporterBase); the converters' toolbox."""

    error_class = TorchImportError

    def __init__(self, block: Block, store: WeightStore):
        super().__init__(block, store)
        self.node: torch.fx.Node | None = None

    def where(self) -> str:
        return f"{source_location(self.node)}: {op_name(self.node.target)}" if self.node is not None else ""

    def node_name(self) -> str | None:
        return self.node.name if self.node is not None else None

    def constant(self, array, name: str = "const") -> SSAValue:
        """A compile-time tensor: inline when small, else in the weights store."""
        return self.materialize(array, name)

    def scalar(self, value, dtype) -> SSAValue:
        """A 0-d constant of numpy ``dtype``."""
        return self.constant(np.asarray(value).astype(dtype))

    # -- inspecting ------------------------------------------------------------------
    @staticmethod
    def shape(value: SSAValue) -> list[int]:
        return [int(d) for d in value.type.get_shape()]

    @staticmethod
    def dtype(value: SSAValue) -> np.dtype:
        return numpy_dtype(value.type.element_type)

    def cast(self, value: SSAValue, dtype) -> SSAValue:
        dtype = np.dtype(dtype)
        if self.dtype(value) == dtype:
            return value
        return self.emit(g.CastOp, value, to=element_type_of(dtype))

    def tensor(self, value, like: SSAValue | None = None, dtype=None) -> SSAValue:
        """``value`` as an SSA tensor: Python numbers become 0-d constants of
        ``dtype`` (or of ``like``'s dtype, or torch's default for the number)."""
        if isinstance(value, SSAValue):
            return value
        if isinstance(value, Unavailable):
            raise self.error(f"uses {value.what}, which dlc does not compute")
        if isinstance(value, (bool, int, float)):
            if dtype is None:
                dtype = self.result_dtype(like, value) if like is not None else \
                    torch_to_numpy_dtype(torch.tensor(value).dtype)
            return self.scalar(value, dtype)
        raise self.error(f"expected a tensor, got {type(value).__name__} {value!r}")

    def result_dtype(self, *values) -> np.dtype:
        """torch's type promotion over tensors and Python scalars."""
        probes = []
        for v in values:
            if isinstance(v, SSAValue):
                shape = (0,) if self.shape(v) else ()
                probes.append(torch.empty(shape, dtype=numpy_to_torch_dtype(self.dtype(v))))
            elif isinstance(v, (bool, int, float)):
                probes.append(v)
        out = probes[0]
        if len(probes) == 1:
            return self.dtype(values[0]) if isinstance(out, torch.Tensor) else \
                torch_to_numpy_dtype(torch.tensor(out).dtype)
        dt = torch.result_type(probes[0], probes[1])
        for p in probes[2:]:
            dt = torch.promote_types(dt, torch.result_type(torch.empty((), dtype=dt), p))
        return torch_to_numpy_dtype(dt)

    def promoted(self, *values) -> list[SSAValue]:
        """Operands as tensors of their common (promoted) dtype."""
        dtype = self.result_dtype(*values)
        return [self.cast(self.tensor(v, dtype=dtype), dtype) for v in values]

    def expected(self) -> tuple[list[int], np.dtype] | None:
        """Shape and dtype torch recorded for the current node (single tensor)."""
        val = self.node.meta.get("val") if self.node is not None else None
        if isinstance(val, torch.Tensor):
            return [int(d) for d in val.shape], torch_to_numpy_dtype(val.dtype)
        return None


# ---------------------------------------------------------------------------
# the import
# ---------------------------------------------------------------------------


def _bind(node: torch.fx.Node, env: dict) -> dict[str, Any]:
    """Node arguments by schema name (defaults filled in); FX nodes -> values."""

    def resolve(a):
        return torch.fx.node.map_arg(a, lambda n: env[n])

    args = [resolve(a) for a in node.args]
    kwargs = {k: resolve(v) for k, v in node.kwargs.items()}
    target = node.target
    if not isinstance(target, torch._ops.OpOverload):
        return {"args": args, **kwargs}
    bound: dict[str, Any] = {}
    positional = iter(args)
    for arg in target._schema.arguments:
        if not arg.kwarg_only:
            try:
                bound[arg.name] = next(positional)
                continue
            except StopIteration:
                pass
        if arg.name in kwargs:
            bound[arg.name] = kwargs[arg.name]
        elif arg.has_default_value():
            bound[arg.name] = arg.default_value
        else:
            bound[arg.name] = None
    return bound


def _check_supported(graph: torch.fx.Graph) -> None:
    """One error listing every unsupported op with its count and first source line."""
    counts: Counter[str] = Counter()
    first: dict[str, str] = {}
    for node in graph.nodes:
        if node.op != "call_function" or lookup(_packet(node.target)) is not None:
            continue
        name = op_name(node.target)
        counts[name] += 1
        first.setdefault(name, source_location(node))
    if counts:
        parts = [f"{name} x{n} (at {first[name]})" for name, n in sorted(counts.items())]
        raise TorchImportError(
            f"unsupported PyTorch op{'s' if len(counts) > 1 else ''}: " + ", ".join(parts))


def _to_numpy(tensor: torch.Tensor, what: str) -> np.ndarray:
    tensor = tensor.detach().cpu()
    torch_to_numpy_dtype(tensor.dtype)  # supported?
    array = tensor.contiguous().numpy().copy()
    try:
        element_type_of(array.dtype)
    except ShapeError as err:
        raise TorchImportError(f"{what}: {err}") from None
    return array


def from_exported_program(ep, functionalize: bool = True) -> ModuleOp:
    """Import a ``torch.export.ExportedProgram`` as a graph-dialect module.

    ``functionalize``: run ``ep.run_decompositions({})`` first (removes in-place
    ops and aliasing; keeps high-level ops). Raises :class:`TorchImportError`.
    """
    from torch.export.graph_signature import InputKind, OutputKind

    if functionalize:
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", FutureWarning)
                ep = ep.run_decompositions({})
        except Exception as err:  # torch's own failure: one line, not a traceback
            raise TorchImportError(f"torch could not functionalize the program: "
                                   f"{str(err).strip().splitlines()[0]}") from None
    graph = ep.graph_module.graph
    _check_supported(graph)

    store = WeightStore()
    block = Block()
    cx = ImportContext(block, store)
    env: dict[torch.fx.Node, Any] = {}
    specs = {s.arg.name: s for s in ep.graph_signature.input_specs}
    arg_names: list[str] = []
    lazy: dict[torch.fx.Node, tuple[str, torch.Tensor]] = {}

    for node in graph.nodes:
        if node.op != "placeholder":
            continue
        spec = specs.get(node.name)
        kind = spec.kind if spec is not None else InputKind.USER_INPUT
        if kind == InputKind.USER_INPUT:
            val = node.meta.get("val")
            if not isinstance(val, torch.Tensor):
                raise TorchImportError(
                    f"input '{node.name}': only tensor inputs are supported, got {type(val).__name__}"
                    " (pass scalars as tensors or bind them before export)")
            if any(not isinstance(d, int) for d in val.shape):
                raise TorchImportError(f"input '{node.name}' has a dynamic shape {list(val.shape)}; "
                                       "export with static shapes")
            element = element_type_of(torch_to_numpy_dtype(val.dtype))
            env[node] = block.insert_arg(tensor_type(list(val.shape), element), len(block.args))
            arg_names.append(node.name)
        elif kind in (InputKind.PARAMETER, InputKind.BUFFER, InputKind.CONSTANT_TENSOR):
            target = spec.target
            tensor = ep.state_dict.get(target) if target in ep.state_dict else ep.constants.get(target)
            if not isinstance(tensor, torch.Tensor):
                raise TorchImportError(f"{kind.name.lower()} '{target}' holds no tensor")
            lazy[node] = (target, tensor)
        else:
            raise TorchImportError(f"input '{node.name}' of kind {kind.name} is not supported")

    def materialize(node: torch.fx.Node) -> SSAValue:
        target, tensor = lazy.pop(node)
        array = _to_numpy(tensor, f"weight '{target}'")
        if specs[node.name].kind == InputKind.CONSTANT_TENSOR and array.size <= INLINE_CONSTANT_LIMIT:
            value = cx.constant(array)
        else:
            name = store.add(target, array)
            op = g.WeightOp.make_named(name, tensor_type(array.shape, element_type_of(array.dtype)))
            block.add_op(op)
            value = op.results[0]
        env[node] = value
        return value

    outputs: list[Any] = []
    for node in graph.nodes:
        if node.op == "call_function":
            for used in node.all_input_nodes:
                if used in lazy:
                    materialize(used)
            _convert(node, cx, env)
        elif node.op == "output":
            outputs = list(node.args[0]) if isinstance(node.args[0], (list, tuple)) else [node.args[0]]
        elif node.op not in ("placeholder",):
            raise TorchImportError(f"node '{node.name}': FX op kind '{node.op}' is not supported")

    user_outputs = [s for s in ep.graph_signature.output_specs if s.kind == OutputKind.USER_OUTPUT]
    kept = {s.arg.name for s in user_outputs}
    results, result_names = [], []
    for out in outputs:
        if isinstance(out, torch.fx.Node):
            if out.name not in kept:
                continue  # a buffer or input mutation
            if out in lazy:
                materialize(out)
            value = env[out]
        else:
            value = out
        cx.node = None
        results.append(cx.tensor(value))
        result_names.append(out.name if isinstance(out, torch.fx.Node) else f"output{len(results) - 1}")
    return cx.finish(results, arg_names, result_names)


def _convert(node: torch.fx.Node, cx: ImportContext, env: dict) -> None:
    cx.node = node
    converter = lookup(_packet(node.target))
    args = _bind(node, env)
    try:
        result = converter(cx, args)
    except TorchImportError:
        raise
    except (ShapeError, TypeError, ValueError, IndexError, KeyError) as err:
        raise cx.error(f"cannot convert ({type(err).__name__}: {err})") from None
    env[node] = _check_result(cx, result)
    cx.node = None


def _check_result(cx: ImportContext, result):
    """Match torch's recorded dtype (a cast) and shape (else an internal error)."""
    if not isinstance(result, SSAValue):
        return result
    expected = cx.expected()
    if expected is None:
        return result
    shape, dtype = expected
    if cx.shape(result) != shape:
        raise cx.error(f"converter produced shape {cx.shape(result)} but torch says {shape} "
                       "(a dlc bug; please report)")
    return cx.cast(result, dtype)


def from_module(model, example_args: tuple, example_kwargs: dict | None = None) -> ModuleOp:
    """``torch.export.export(model, example_args)`` then import (model in eval mode)."""
    if not isinstance(example_args, tuple):
        example_args = tuple(example_args) if isinstance(example_args, list) else (example_args,)
    example_args = tuple(torch.from_numpy(np.ascontiguousarray(a)) if isinstance(a, np.ndarray) else a
                         for a in example_args)
    try:
        with warnings.catch_warnings():  # torch's own deprecation noise
            warnings.simplefilter("ignore", FutureWarning)
            ep = torch.export.export(model, example_args, kwargs=example_kwargs)
    except Exception as err:  # torch's export failure: one line
        raise TorchImportError(f"torch.export failed: {str(err).strip().splitlines()[0]}") from None
    return from_exported_program(ep)


@contextlib.contextmanager
def _torch_quiet():
    """No warnings (deprecation noise while unpickling) and no log records
    (torch.export.load logs a full traceback at WARNING before its fallback)."""
    previous = logging.root.manager.disable
    logging.disable(logging.WARNING)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            yield
    finally:
        logging.disable(previous)


def load_exported_program(path: str) -> ModuleOp:
    """Import a ``torch.export.save``d ``.pt2`` file; a file torch cannot load is
    one TorchImportError ``cannot load 'x.pt2': ...`` (torch prints nothing)."""
    if os.path.isdir(path):
        raise TorchImportError(f"cannot load '{path}': is a directory")
    if not os.path.isfile(path):
        raise TorchImportError(f"{path}: no such file")
    if not zipfile.is_zipfile(path):  # torch would log a traceback, then fail on its own fallback
        raise TorchImportError(f"cannot load '{path}': not a .pt2 archive (truncated, or not "
                               "written by torch.export.save)")
    try:
        with _torch_quiet():
            ep = torch.export.load(path)
    except Exception as err:  # torch raises several types on a damaged archive
        raise TorchImportError(f"cannot load '{path}': not a torch.export program "
                               f"({(str(err).strip().splitlines() or [type(err).__name__])[0]})") from None
    return from_exported_program(ep)
