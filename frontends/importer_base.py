"""What the ONNX, torch and TFLite import contexts share.

Each frontend's ``ImportContext`` derives from `ImporterBase`: it builds the body
of ``func.func @main`` in one block, puts large compile-time tensors in the
module's weights store, and reports every problem as its own one-line error
class, prefixed with where the frontend is (``node 'conv1' (Conv, #3)``, ``operator
#3 (CONV_2D)``, ``model.py:12: aten.conv2d.default``). A frontend says how it
names that place (`where`), which error class it raises (`error_class`), and
keeps what is its own: ONNX's known-value folding, torch's type promotion,
TFLite's (de)quantization.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

import numpy as np
from xdsl.dialects import func
from xdsl.dialects.builtin import ArrayAttr, DictionaryAttr, ModuleOp, NameLoc, NoneAttr, StringAttr
from xdsl.ir import Attribute, Block, Region, SSAValue
from xdsl.utils.exceptions import VerifyException

from dlc.dialects.graph import ConstantOp, WeightOp
from dlc.dialects.graph_base import GraphOp, element_type_of, tensor_type
from dlc.weights import WeightStore, attach

# ``dlc.name`` of @main's arguments and results: the source model's input/output names
NAME_ATTR = "dlc.name"
# compile-time tensors up to this many elements are printed inline as graph.constant;
# larger ones go to the weights store as graph.weight
INLINE_CONSTANT_LIMIT = 64


class ImporterBase:
    """The block being built, the weights store, and errors located at the current node."""

    error_class: ClassVar[type[Exception]]  # the frontend's one-line import error

    def __init__(self, block: Block, store: WeightStore):
        self.block = block
        self.store = store

    # -- errors ----------------------------------------------------------------------
    def where(self) -> str:
        """Where the import is (the node being converted), or "" outside any node."""
        return ""

    def error(self, message: str) -> Exception:
        """``error_class("<where>: <message>")``, or just the message outside any node."""
        where = self.where()
        return self.error_class(f"{where}: {message}" if where else message)

    # -- building ops ----------------------------------------------------------------
    def node_name(self) -> str | None:
        """The name of the source-model node being converted (None outside any node)."""
        return None

    def make(self, op_class: type[GraphOp], *operands: SSAValue, **attrs: Any) -> GraphOp:
        """``op_class.make`` (types inferred); a verifier error is located at the node. The
        op's location is the node's name (``NameLoc``): it travels to the op's kernel call,
        where the profile (lowering/to_llvm/profile.py) names it."""
        try:
            op = op_class.make(*operands, **attrs)
        except VerifyException as err:
            raise self.error(str(err)) from None
        name = self.node_name()
        if name:
            op.location = NameLoc(StringAttr(name), NoneAttr())
        return op

    def emit_multi(self, op_class: type[GraphOp], *operands: SSAValue, **attrs: Any) -> list[SSAValue]:
        op = self.make(op_class, *operands, **attrs)
        self.block.add_op(op)
        return list(op.results)

    def emit(self, op_class: type[GraphOp], *operands: Any, **attrs: Any) -> Any:
        """The first (usually only) result of ``emit_multi``."""
        return self.emit_multi(op_class, *operands, **attrs)[0]

    def materialize(self, array: Any, name: str = "const", element_type: Attribute | None = None) -> SSAValue:
        """A compile-time tensor as IR: inline when small, else in the weights store as ``name``."""
        array = np.asarray(array)
        if not array.flags.c_contiguous:  # (np.ascontiguousarray would turn 0-d into 1-d)
            array = array.copy(order="C")
        if array.size <= INLINE_CONSTANT_LIMIT:
            op = ConstantOp.from_numpy(array)
        else:
            stored = self.store.add(name, array)
            op = WeightOp.make_named(stored, tensor_type(array.shape, element_type or element_type_of(array.dtype)))
        self.block.add_op(op)
        return op.results[0]

    # -- the module ------------------------------------------------------------------
    def finish(self, results: Sequence[SSAValue], arg_names: Sequence[str],
               result_names: Sequence[str],
               result_attrs: Sequence[dict[str, Attribute]] | None = None) -> ModuleOp:
        """Return ``results`` from ``@main`` (arguments: the block's), attach the weights, verify.
        ``result_attrs``: more attributes per result, next to its ``dlc.name``."""
        self.block.add_op(func.ReturnOp(*results))

        def names(ns: Sequence[str], more: Sequence[dict] | None = None) -> ArrayAttr:
            more = more or [{} for _ in ns]
            return ArrayAttr([DictionaryAttr({NAME_ATTR: StringAttr(n), **extra}) for n, extra in zip(ns, more)])

        fn = func.FuncOp("main", ([a.type for a in self.block.args], [r.type for r in results]),
                         Region(self.block), arg_attrs=names(arg_names),
                         res_attrs=names(result_names, result_attrs))
        module = ModuleOp([fn])
        attach(module, self.store)
        try:
            module.verify()
        except VerifyException as err:
            raise self.error_class(f"imported IR does not verify: {err}") from None
        return module
