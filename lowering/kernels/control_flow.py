"""Kernels the host code of graph.loop / graph.scan calls (lowering/bufferize.py).

They are not generated for a graph op, so they are not in ``KERNELS``; the
kernel cache of ``lower-to-loops`` asks for them by type:

* ``read_row_kernel``: ``out = take(x, index, axis)``: one row of a scan input
  (``index`` is a ``memref<i64>`` the host stores the iteration's row into);
* ``write_row_kernel``: ``stacked[..., index, ...] = row`` along ``axis``: one
  row of a scan output (the rest of ``stacked`` is left as it is);
* ``zero_kernel``: ``out = 0`` (scan outputs of a loop that may exit early have
  zero rows for the iterations that did not run).

The row index lives in a one-element buffer rather than in a scalar argument
because the loop-IR contract passes kernels memrefs only.
"""

from __future__ import annotations

from xdsl.dialects import arith, func
from xdsl.dialects.builtin import TensorType, i64

from dlc.lowering.kernels.builder import INDEX, KernelBuilder
from dlc.lowering.kernels.movement import _names

INDEX_TENSOR = TensorType(i64, [])


def _row_index(kb: KernelBuilder, index_buffer):
    """The row number as an ``index`` (loaded once, before the loops)."""
    return kb.emit(arith.IndexCastOp(kb.load(index_buffer, []), INDEX))


def row_type(t: TensorType, axis: int) -> TensorType:
    shape = list(t.get_shape())
    return TensorType(t.element_type, shape[:axis] + shape[axis + 1:])


def _row_copy(kb: KernelBuilder, row: TensorType, axis: int, into_stacked: bool) -> func.FuncOp:
    """Copy row ``index`` (the kernel's second input) along ``axis`` of the stacked
    tensor out of it (``into_stacked`` False: the first input is stacked) or into it."""
    at = _row_index(kb, kb.inputs[1])
    shape = row.get_shape()
    with kb.loops(_names(len(shape)), shape) as ivs:
        in_stacked = ivs[:axis] + [at] + ivs[axis:]
        if into_stacked:
            kb.store(kb.load(kb.inputs[0], ivs), kb.outputs[0], in_stacked)
        else:
            kb.store(kb.load(kb.inputs[0], in_stacked), kb.outputs[0], ivs)
    return kb.finish()


def read_row_kernel(x: TensorType, axis: int, name: str) -> func.FuncOp:
    row = row_type(x, axis)
    kb = KernelBuilder(name, [x, INDEX_TENSOR], [row], "scan.read_row", ["x", "index", "out"])
    return _row_copy(kb, row, axis, into_stacked=False)


def write_row_kernel(stacked: TensorType, axis: int, name: str) -> func.FuncOp:
    row = row_type(stacked, axis)
    kb = KernelBuilder(name, [row, INDEX_TENSOR], [stacked], "scan.write_row",
                       ["row", "index", "out"])
    return _row_copy(kb, row, axis, into_stacked=True)


def zero_kernel(t: TensorType, name: str) -> func.FuncOp:
    kb = KernelBuilder(name, [], [t], "fill", ["out"])
    shape = t.get_shape()
    with kb.loops(_names(len(shape)), shape) as ivs:
        kb.store(kb.const(0, t.element_type), kb.outputs[0], ivs)
    return kb.finish()
