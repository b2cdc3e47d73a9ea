"""Reduction kernels: reduce_{sum,mean,max,min,prod}, argmax, argmin.

Loops over the kept dims (``%d0..``) outside, reduced dims (``%r0..``) inside;
the output element is the accumulator (initialised before the reduction loops,
divided by the count after them for reduce_mean).

argmax/argmin keep the best index in the output and reload the best value
from the input; like numpy, the first NaN wins (the last one with
``select_last_index``), otherwise the first (last) extreme.
"""

from __future__ import annotations

import math

from xdsl.dialects import arith, func
from xdsl.dialects.builtin import f64

from dlc.dialects.graph import ArgMaxOp, ReduceMeanOp, _reduce_axes
from dlc.dialects.graph_base import GraphOp, is_float, normalize_axis
from dlc.lowering.kernels import kernel
from dlc.lowering.kernels.builder import KernelBuilder, highest, lowest

_INIT = {
    "graph.reduce_sum": lambda et: 0,
    "graph.reduce_mean": lambda et: 0,
    "graph.reduce_prod": lambda et: 1,
    "graph.reduce_max": lowest,
    "graph.reduce_min": highest,
}


@kernel(*_INIT)
def lower_reduce(op: GraphOp, name: str) -> func.FuncOp:
    x_t, out_t = op.operands[0].type, op.results[0].type
    et = out_t.element_type
    shape = x_t.get_shape()
    axes = _reduce_axes(op.attrs, len(shape))
    keep = op.keepdims
    kept = [d for d in range(len(shape)) if d not in axes]
    kb = KernelBuilder(name, [x_t], [out_t], op.name, ["x", "out"])
    combine = {
        "graph.reduce_sum": kb.add,
        "graph.reduce_mean": kb.add,
        "graph.reduce_prod": kb.mul,
        "graph.reduce_max": kb.max,
        "graph.reduce_min": kb.min,
    }[op.name]
    with kb.loops([f"d{k}" for k in range(len(kept))], [shape[d] for d in kept]) as outer:
        by_dim = dict(zip(kept, outer))
        out_idx = [by_dim.get(d, 0) for d in range(len(shape))] if keep else list(outer)
        kb.store(kb.const(_INIT[op.name](et), et), kb.outputs[0], out_idx)
        with kb.loops([f"r{k}" for k in range(len(axes))], [shape[d] for d in axes]) as inner:
            by_dim.update(zip(axes, inner))
            xv = kb.load(kb.inputs[0], [by_dim[d] for d in range(len(shape))])
            acc = kb.load(kb.outputs[0], out_idx)
            kb.store(combine(acc, xv, et), kb.outputs[0], out_idx)
        if isinstance(op, ReduceMeanOp):
            count = math.prod(shape[d] for d in axes)
            ft = et if is_float(et) else f64
            total = kb.convert(kb.load(kb.outputs[0], out_idx), et, ft)
            mean = kb.div(total, kb.const(float(count), ft), ft)
            kb.store(kb.convert(mean, ft, et), kb.outputs[0], out_idx)
        kb.apply_epilogue(out_idx)  # fused elementwise ops (fuse-ops)
    return kb.finish()


@kernel("graph.argmax", "graph.argmin")
def lower_arg_reduce(op: GraphOp, name: str) -> func.FuncOp:
    x_t, out_t = op.operands[0].type, op.results[0].type
    et, it = x_t.element_type, out_t.element_type
    shape = x_t.get_shape()
    axis = normalize_axis(op.axis, len(shape))
    keep = op.keepdims
    last = op.select_last_index
    better = "gt" if isinstance(op, ArgMaxOp) else "lt"
    if last:
        better = better[0] + "e"
    kept = [d for d in range(len(shape)) if d != axis]
    kb = KernelBuilder(name, [x_t], [out_t], op.name, ["x", "out"])
    with kb.loops([f"d{k}" for k in range(len(kept))], [shape[d] for d in kept]) as outer:
        by_dim = dict(zip(kept, outer))
        out_idx = [by_dim.get(d, 0) for d in range(len(shape))] if keep else list(outer)
        kb.store(kb.index_to(0, it), kb.outputs[0], out_idx)
        with kb.loop("r", shape[axis], lower=1) as iv:
            best_i = kb.to_index(kb.load(kb.outputs[0], out_idx), it)
            best = kb.load(kb.inputs[0], [best_i if d == axis else by_dim[d] for d in range(len(shape))])
            cur = kb.load(kb.inputs[0], [iv if d == axis else by_dim[d] for d in range(len(shape))])
            take = kb.cmp(better, cur, best, et)
            if is_float(et):
                cur_nan = kb.is_nan(cur)
                if last:
                    # a later NaN always wins
                    take = kb.emit(arith.OrIOp(take, cur_nan))
                else:
                    best_nan = kb.is_nan(best)
                    first_nan = kb.emit(arith.AndIOp(cur_nan, kb.emit(arith.XOrIOp(best_nan, kb.const(True, _i1())))))
                    take = kb.emit(arith.OrIOp(take, first_nan))
            chosen = kb.iselect(take, iv, best_i)
            kb.store(kb.index_to(chosen, it), kb.outputs[0], out_idx)
    return kb.finish()


def _i1():
    from xdsl.dialects.builtin import i1

    return i1
