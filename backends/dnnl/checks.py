"""What the dnnl codegen takes: one check per graph op, True or the reason it does not.

The support predicates (annotate-target), the pattern checks (merge-composite) and the
codegen itself (backends/dnnl/plan.py) ask the same functions, so an op that one accepts
the others can compile. A reason is a short phrase; `-v` shows it next to the op.
"""

from __future__ import annotations

import math

from xdsl.dialects.builtin import Float32Type, TensorType
from xdsl.ir import Operation

from dlc.dialects.graph.conv import _window_attrs

def _f32(op: Operation) -> bool | str:
    for v in [*op.operands, *op.results]:
        if not isinstance(v.type, TensorType):
            return f"{v.type} is not a tensor"
        if not isinstance(v.type.element_type, Float32Type):
            return f"element type {v.type.element_type} (the dnnl codegen takes f32 only)"
        if any(d < 0 for d in v.type.get_shape()):
            return "dynamic shape"
    return True


def _rank(v) -> int:
    return len(v.type.get_shape())


def conv2d(op: Operation) -> bool | str:
    ok = _f32(op)
    if ok is not True:
        return ok
    a = op.attrs
    if a.groups != 1 and a.kernel_layout != "OIHW":
        return f"groups={a.groups} with kernel layout {a.kernel_layout} (grouped convs take OIHW)"
    return True


def matmul(op: Operation) -> bool | str:
    ok = _f32(op)
    if ok is not True:
        return ok
    a, b = (list(v.type.get_shape()) for v in op.operands[:2])
    if len(a) < 2 or len(b) < 2:
        return "a 1-D operand (dnnl matmul takes matrices)"
    if len(b) > 2 and a[:-2] != b[:-2]:
        return f"batch dims {a[:-2]} and {b[:-2]} differ (no broadcast batch matmul)"
    if len(a) > 5:
        return "more than 3 batch dims"
    return True


def dense(op: Operation) -> bool | str:
    ok = _f32(op)
    if ok is not True:
        return ok
    if _rank(op.operands[0]) < 2:
        return "a 1-D input"
    if len(op.operands) == 3:
        n = op.operands[1].type.get_shape()[0]
        if list(op.operands[2].type.get_shape()) not in ([n], [1, n]):
            return "a bias that is not one value per output feature"
    return True


def pool2d(op: Operation) -> bool | str:
    ok = _f32(op)
    if ok is not True:
        return ok
    if op.name == "graph.avg_pool2d" and op.attrs.count_include_pad and op.attrs.ceil_mode:
        h, w = (op.operands[0].type.get_shape()[i] for i in ((2, 3) if op.attrs.layout == "NCHW" else (1, 2)))
        if pool_pad_end(op, (h, w)) != tuple(_window_attrs(op.attrs)[2][2:]):
            return "ceil_mode with count_include_pad (oneDNN would count the overhang)"
    return True


def pool_pad_end(op: Operation, hw) -> tuple[int, int]:
    """The end padding that gives the pool's output extent with floor rounding (what
    oneDNN computes): ceil_mode's overhang becomes padding, which max and
    exclude-padding average ignore."""
    (sh, sw), (dh, dw), (pt, pl, pb, pr) = _window_attrs(op.attrs)
    kh, kw = op.attrs.kernel
    out = op.results[0].type.get_shape()
    oh, ow = (out[2], out[3]) if op.attrs.layout == "NCHW" else (out[1], out[2])
    need_h = (oh - 1) * sh + dh * (kh - 1) + 1 - hw[0] - pt
    need_w = (ow - 1) * sw + dw * (kw - 1) + 1 - hw[1] - pl
    return max(pb, need_h), max(pr, need_w)


def relu(op: Operation) -> bool | str:
    return _f32(op)


def clip(op: Operation) -> bool | str:
    ok = _f32(op)
    if ok is not True:
        return ok
    if not (math.isfinite(op.min) and math.isfinite(op.max)):
        return "a clip with an open bound"
    return True


def add(op: Operation) -> bool | str:
    return _f32(op)


def post_add(op: Operation, chain, channel_axis: int) -> bool | str:
    """An add folded into a conv's or matmul's post-ops: ``chain`` is the operand the
    primitive computes; the other one must be full-size, one value per channel (at
    ``channel_axis`` of the output) or a scalar: the broadcasts oneDNN's binary post-op
    takes."""
    out = list(op.results[0].type.get_shape())
    if list(chain.type.get_shape()) != out:
        return "an add that broadcasts the primitive's result"
    other = op.operands[1] if op.operands[0] is chain else op.operands[0]
    shape = list(other.type.get_shape())
    shape = [1] * (len(out) - len(shape)) + shape
    if len(shape) != len(out):
        return f"an add of rank {len(shape)} on a result of rank {len(out)}"
    if shape == out or all(d == 1 for d in shape):
        return True
    if all(d == 1 for i, d in enumerate(shape) if i != channel_axis % len(out)) \
            and shape[channel_axis % len(out)] == out[channel_axis % len(out)]:
        return True
    return f"an add of shape {shape} on a result of shape {out} (neither full, per channel nor scalar)"


def concat(op: Operation) -> bool | str:
    ok = _f32(op)
    if ok is not True:
        return ok
    if len(op.operands) > 16:  # plan.MAX_SRC
        return f"a concat of {len(op.operands)} inputs (at most 16)"
    return True


# graph op name -> check; the ops the codegen knows
CHECKS = {
    "graph.conv2d": conv2d,
    "graph.matmul": matmul,
    "graph.dense": dense,
    "graph.max_pool2d": pool2d,
    "graph.avg_pool2d": pool2d,
    "graph.relu": relu,
    "graph.clip": clip,
    "graph.add": add,
    "graph.concat": concat,
}


def check(op: Operation) -> bool | str:
    fn = CHECKS.get(op.name)
    if fn is None:
        return f"{op.name} has no dnnl mapping"
    return fn(op)
