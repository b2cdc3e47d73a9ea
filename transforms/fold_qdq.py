"""`fold-qdq`: DequantizeLinear -> op -> QuantizeLinear patterns become quantized ops.

A QDQ model (onnxruntime's ``quantize_static``, QuantFormat.QDQ) computes each op in
float between graph.dequantize and graph.quantize (the ONNX importer keeps them
recognizable when their parameters are compile-time constants). This pass starts at
each graph.quantize and looks back through its float operand:

* ``[relu | clip]`` directly below the quantize (the value used once) becomes the
  output clamp ``out_min``/``out_max`` (quantization is monotonic, so
  ``Q(clip(v, a, b)) = clamp(Q(v), Q(a), Q(b))``);
* ``conv2d(DQ(x), DQ(w const)) [+ bias]`` -> graph.qconv2d (NCHW/OIHW; w per tensor or
  per output channel; a bias constant, usually ``DQ(int32)`` reshaped, is requantized to
  i32 at scale ``x_scale * w_scale``); the products (conv, dense, matmul) rescale with
  ``requant = "float"`` below an ONNX QuantizeLinear (round half to even of the float
  product, onnxruntime's arithmetic) and the fixed point below TFLite's QUANTIZE;
* ``matmul(DQ(x), [transpose](DQ(w const)) [+ bias])`` with a 2-D weight -> graph.qdense;
  ``matmul(DQ(a), DQ(b))`` of two activations -> graph.qmatmul;
* ``add`` / ``mul`` of two DQ activations -> graph.qadd / graph.qmul;
* ``concat`` of DQ activations -> graph.qconcat;
* ``avg_pool2d`` (NCHW) and the spatial ``reduce_mean`` of a global average pool ->
  graph.qavg_pool2d; ``max_pool2d`` and the movement ops (reshape, transpose, squeeze,
  unsqueeze) run on the quantized values, with a graph.requantize when the output
  parameters differ;
* ``Q(DQ(x))`` -> x or graph.requantize;
* ``softmax(DQ(x))`` -> Q stays a float softmax (onnxruntime's QLinearSoftmax is float
  inside too), but the quantize takes onnxruntime's output scale: QLinearSoftmax
  multiplies the probabilities by ``floor(1 / y_scale)``, not ``1 / y_scale`` (a
  calibrated ``y_scale = 1/255`` is 254.99998 in f32: every probability is quantized
  1/255 too low, which moved 3 % of a BERT-style model's attention weights by a step),
  so the quantize gets ``y_scale' = 1 / floor(1 / y_scale)`` (the note says so; the
  DequantizeLinear after it keeps ``y_scale``, as onnxruntime's consumers do).

All parameters must be per tensor except a weight's. A float op whose value has
another use, or whose operands are not dequantized, stays float; the module's
``dlc.qdq_report`` (``dlc compile -v``, ``CompiledModule.qdq_report``, ``driver.qdq_report``) lists what was
folded and why the other convs/matmuls/adds stayed float, e.g.
``fold-qdq: graph.conv2d 'conv1' stays float: its output has no graph.quantize``.

It runs before fold-constant (CPU pipeline): constants reached through reshape,
transpose and dequantize are evaluated here, so a dequantized weight is still a
graph.dequantize of its integers; what no pattern takes, fold-constant folds next. The
dead float ops and weights go.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import ArrayAttr, ModuleOp, NameLoc, StringAttr
from xdsl.ir import Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.traits import Pure

from dlc.dialects import graph as g
from dlc.dialects.graph.quantized import quant_range
from dlc.dialects.graph_base import GraphOp, numpy_dtype, tensor_type
from dlc.diagnostics import describe_op
from dlc.weights import WeightStore, store_of

REPORT_ATTR = "dlc.qdq_report"
INLINE_LIMIT = 64  # constants up to this many elements are inline graph.constants


class NoMatch(Exception):
    """Why a pattern does not apply (the -v note's reason)."""


def _label(op: Operation) -> str:
    loc = getattr(op, "location", None)
    if isinstance(loc, NameLoc):
        return f"{op.name} '{loc.desc.data}'"
    return describe_op(op)


def _only_use(value: SSAValue, what: str) -> None:
    uses = len(list(value.uses))
    if uses != 1:
        raise NoMatch(f"{what} has {uses} uses (a folded value must have one)")


def _dq(value: SSAValue, what: str) -> g.DequantizeOp:
    op = value.owner
    if not isinstance(op, g.DequantizeOp):
        raise NoMatch(f"{what} is not dequantized (it comes from {getattr(op, 'name', 'an argument')})")
    return op


def _per_tensor(dq: g.DequantizeOp, what: str) -> tuple[float, int]:
    if len(dq.scale) != 1 or len(dq.zero_point) != 1:
        raise NoMatch(f"{what} is quantized per channel (per tensor needed)")
    if quant_range(dq.x.type.element_type) is None:
        raise NoMatch(f"{what} is dequantized from {dq.x.type.element_type} (i8 or ui8 needed)")
    return dq.scale[0], dq.zero_point[0]


def _constant(value: SSAValue) -> np.ndarray | None:
    """The compile-time value of ``value`` (constants through graph ops), or None."""
    op = value.owner
    if isinstance(op, (g.ConstantOp, g.WeightOp)):
        return op.array()
    if not isinstance(op, GraphOp) or op.regions or len(op.results) != 1:
        return None
    inputs = [_constant(v) for v in op.operands]
    if any(i is None for i in inputs):
        return None
    try:
        out = np.asarray(op.reference(*inputs)[0])
    except NotImplementedError:
        return None
    return out.astype(numpy_dtype(op.results[0].type.element_type), copy=False)


def _weight(value: SSAValue, transposed: bool) -> tuple[np.ndarray, list[float], list[int], Operation]:
    """A quantized constant weight: (int array, scales, zero points, its DQ op); ``transposed``:
    ``value`` is ``[K, N]`` (a matmul's rhs, possibly ``transpose(DQ([N, K]))``): the
    result is ``[N, K]`` with per-N parameters. Conv weights: OIHW, per O."""
    op = value.owner
    flip = transposed
    if transposed and isinstance(op, g.TransposeOp) and tuple(op.perm) == (1, 0):
        op, flip = op.x.owner, False
    if not isinstance(op, g.DequantizeOp):
        raise NoMatch("the weight is not a dequantized constant")
    w = _constant(op.x)
    if w is None:
        raise NoMatch("the weight is not a compile-time constant")
    if quant_range(op.x.type.element_type) is None:
        raise NoMatch(f"the weight is dequantized from {op.x.type.element_type} (i8 or ui8 needed)")
    n = max(len(op.scale), len(op.zero_point))
    want_axis = (w.ndim - 1) if flip else 0
    if n > 1 and op.axis % w.ndim != want_axis:
        raise NoMatch("the weight's scales are not per output channel")
    if flip:
        w = w.T
    return np.ascontiguousarray(w), list(op.scale), list(op.zero_point), op


def _conv_weight(value: SSAValue, layout: str):
    """A conv's quantized constant weight as OIHW: (int array, scales, zero points, its DQ
    op, whether the DQ's operand is that array unchanged). Transposes between the DQ and
    the conv (TFLite's OHWI -> HWIO) are applied to the integers and the channel axis."""
    perms = []
    op = value.owner
    while isinstance(op, g.TransposeOp):
        perms.append(tuple(op.perm))
        op = op.x.owner
    if not isinstance(op, g.DequantizeOp):
        raise NoMatch("the weight is not a dequantized constant")
    w = _constant(op.x)
    if w is None:
        raise NoMatch("the weight is not a compile-time constant")
    if quant_range(op.x.type.element_type) is None:
        raise NoMatch(f"the weight is dequantized from {op.x.type.element_type} (i8 or ui8 needed)")
    axis = op.axis % w.ndim
    if layout == "HWIO":
        perms.insert(0, (3, 2, 0, 1))
    for perm in reversed(perms):  # innermost first
        w, axis = w.transpose(perm), list(perm).index(axis)
    if max(len(op.scale), len(op.zero_point)) > 1 and axis != 0:
        raise NoMatch("the weight's scales are not per output channel")
    return np.ascontiguousarray(w), list(op.scale), list(op.zero_point), op, not perms and isinstance(
        op.x.owner, (g.WeightOp, g.ConstantOp))


def _bias(value: SSAValue | None, channels: int, scales: np.ndarray, what: str) -> np.ndarray | None:
    """An added constant [C] (or [C,1,1]) as i32 at scale ``scales`` (x_scale * w_scale)."""
    if value is None:
        return None
    b = _constant(value)
    if b is None:
        raise NoMatch(f"{what} is not a compile-time constant")
    if b.size != channels or len([d for d in b.shape if d != 1]) > 1:
        raise NoMatch(f"{what} of shape {list(b.shape)} is not one value per output channel")
    q = np.rint(b.reshape(-1).astype(np.float64) / scales)
    if np.any(np.abs(q) >= 2 ** 31):
        raise NoMatch(f"{what} does not fit in i32 at scale x_scale * w_scale")
    return q.astype(np.int32)


@dataclass
class _Output:
    """The quantize op at the end of a pattern: its parameters and the clamp."""

    q: g.QuantizeOp
    scale: float
    zero_point: int
    dtype: object
    out_min: int | None = None
    out_max: int | None = None

    def attrs(self) -> dict:
        out = {"y_scale": [self.scale], "y_zero_point": [self.zero_point], "dtype": self.dtype}
        if self.out_min is not None:
            out["out_min"] = self.out_min
        if self.out_max is not None:
            out["out_max"] = self.out_max
        return out

    def rescale_attrs(self) -> dict:
        """:meth:`attrs` of an accumulating op (qconv2d, qdense, qmatmul), with the
        rounding of its rescale from the quantize's: ONNX's QuantizeLinear (half to even)
        quantizes the float product, which ``requant = "float"`` computes exactly as
        onnxruntime does; TFLite's QUANTIZE (half away) marks a TFLite int8 op, defined by
        the fixed point (the op's default)."""
        out = self.attrs()
        if self.q.rounding == "half_even":
            out["requant"] = "float"
        return out

    def quantized(self, real: float) -> int:
        lo, hi = quant_range(self.dtype)
        return int(np.clip(np.rint(np.float32(real) / np.float32(self.scale)) + self.zero_point, lo, hi))


class _Folder:
    def __init__(self, store: WeightStore):
        self.store = store
        self.notes: list[str] = []
        self.reasons: dict[Operation, str] = {}
        self.folded: set[Operation] = set()
        self.created: set[str] = set()

    # -- building --------------------------------------------------------------
    def constant(self, array: np.ndarray, name: str, before: Operation) -> SSAValue:
        array = np.ascontiguousarray(array)
        if array.size <= INLINE_LIMIT:
            op = g.ConstantOp.from_numpy(array)
        else:
            stored = self.store.add(name, array)
            self.created.add(stored)
            op = g.WeightOp.make_named(stored, tensor_type(array.shape, _et(array)))
        before.parent.insert_op_before(op, before)
        return op.results[0]

    def insert(self, op: Operation, before: Operation, like: Operation) -> SSAValue:
        op.location = like.location
        before.parent.insert_op_before(op, before)
        return op.results[0]

    # -- the patterns ----------------------------------------------------------
    def fold(self, q: g.QuantizeOp) -> None:
        if len(q.scale) != 1 or len(q.zero_point) != 1:
            self.notes.append(f"fold-qdq: {_label(q)} stays: quantized per channel")
            return
        out = _Output(q, q.scale[0], q.zero_point[0], q.dtype)
        value = q.x
        self.core = value.owner
        self.made: str | None = None  # the note's name of the new op, when not the last one built
        try:
            value = self._clamp(value, out)
            self.core = value.owner
            new = self._anchor(value, out)
        except NoMatch as why:
            if isinstance(self.core, Operation):
                self.reasons.setdefault(self.core, str(why))
            return
        anchor = self.core
        q.results[0].replace_all_uses_with(new)
        q.detach()
        q.erase()
        self.folded.add(anchor)
        made = self.made or (new.owner.name if isinstance(new.owner, Operation) else "its quantized input")
        self.notes.append(f"fold-qdq: {_label(anchor)} -> {made}")

    def _clamp(self, value: SSAValue, out: _Output) -> SSAValue:
        op = value.owner
        if isinstance(op, (g.ReluOp, g.ClipOp)):
            _only_use(value, f"the output of {op.name}")
            lo = 0.0 if isinstance(op, g.ReluOp) else op.min
            hi = float("inf") if isinstance(op, g.ReluOp) else op.max
            qlo, qhi = quant_range(out.dtype)
            if np.isfinite(lo):
                out.out_min = max(out.quantized(lo), qlo)
            if np.isfinite(hi):
                out.out_max = min(out.quantized(hi), qhi)
            if out.out_min is not None and out.out_max is not None and out.out_min > out.out_max:
                raise NoMatch(f"the clamp of {op.name} is empty in the output's quantized domain")
            return op.x
        return value

    def _anchor(self, value: SSAValue, out: _Output) -> SSAValue:
        op = value.owner
        if not isinstance(op, GraphOp):
            raise NoMatch("the quantized value is a function argument")
        _only_use(value, f"the output of {op.name}")
        bias = None
        if isinstance(op, g.AddOp):
            for mine, other in ((op.lhs, op.rhs), (op.rhs, op.lhs)):
                if isinstance(mine.owner, (g.Conv2DOp, g.MatmulOp)) and _constant(other) is not None:
                    _only_use(mine, f"the output of {mine.owner.name}")
                    bias, op = other, mine.owner
                    break
        self.core = op
        if isinstance(op, g.Conv2DOp):
            return self._conv(op, bias, out)
        if isinstance(op, g.MatmulOp):
            return self._matmul(op, bias, out)
        if isinstance(op, (g.AddOp, g.MulOp)):
            return self._binary(op, out)
        if isinstance(op, g.ConcatOp):
            return self._concat(op, out)
        if isinstance(op, (g.AvgPool2DOp, g.ReduceMeanOp)):
            return self._avg_pool(op, out)
        if isinstance(op, (g.MaxPool2DOp, g.ReshapeOp, g.TransposeOp, g.SqueezeOp, g.UnsqueezeOp)):
            return self._passthrough(op, out)
        if isinstance(op, g.DequantizeOp):
            return self._requantize(op.results[0], out, out.q)
        if _softmax_input(op) is not None:
            return self._softmax(op, out)
        raise NoMatch(f"{op.name} has no quantized form")

    def _conv(self, op: g.Conv2DOp, bias, out: _Output) -> SSAValue:
        """graph.qconv2d (NCHW/OIHW); NHWC data (TFLite) between two int8 transposes."""
        nhwc = op.data_layout == "NHWC"
        xs, xz = _per_tensor(_dq(op.x, "the input"), "the input")
        w, ws, wz, wdq, reused = _conv_weight(op.weight, op.kernel_layout)
        o = w.shape[0]
        b = _bias(bias, o, np.float64(np.float32(xs)) * np.asarray(np.broadcast_to(ws, (o,)), np.float64), "the bias")
        xq = op.x.owner.x
        if nhwc:
            xq = self.insert(g.TransposeOp.make(xq, perm=[0, 3, 1, 2]), out.q, op)
        operands = [xq, wdq.x if reused else self.constant(w, _name(wdq, "q"), out.q)]
        if b is not None:
            operands.append(self.constant(b, _name(wdq, "qbias"), out.q))
        a = op.attrs
        new = g.QConv2DOp.make(*operands, strides=list(a.strides), padding=list(a.padding),
                               dilations=list(a.dilations), groups=a.groups, x_scale=[xs], x_zero_point=[xz],
                               w_scale=ws, w_zero_point=wz, **out.rescale_attrs())
        y = self.insert(new, out.q, op)
        self.made = new.name
        if nhwc:
            y = self.insert(g.TransposeOp.make(y, perm=[0, 2, 3, 1]), out.q, op)
        return y

    def _matmul(self, op: g.MatmulOp, bias, out: _Output) -> SSAValue:
        a_dq = _dq(op.lhs, "the lhs")
        xs, xz = _per_tensor(a_dq, "the lhs")
        if isinstance(op.rhs.owner, g.DequantizeOp) and _constant(op.rhs.owner.x) is None:
            if bias is not None:
                raise NoMatch("a bias after a matmul of two activations")
            b_dq = op.rhs.owner
            bs, bz = _per_tensor(b_dq, "the rhs")
            if op.lhs.type.get_num_dims() < 2 or op.rhs.type.get_num_dims() < 2:
                raise NoMatch("a matmul of a 1-D operand")
            new = g.QMatmulOp.make(a_dq.x, b_dq.x, a_scale=[xs], a_zero_point=[xz], b_scale=[bs],
                                   b_zero_point=[bz], **out.rescale_attrs())
            return self.insert(new, out.q, op)
        if op.rhs.type.get_num_dims() != 2 or op.lhs.type.get_num_dims() < 1:
            raise NoMatch("the weight is not 2-D")
        w, ws, wz, wdq = _weight(op.rhs, transposed=True)
        n = w.shape[0]
        b = _bias(bias, n, np.float64(np.float32(xs)) * np.asarray(np.broadcast_to(ws, (n,)), np.float64), "the bias")
        operands = [a_dq.x, self.constant(w, _name(wdq, "qT"), out.q)]
        if b is not None:
            operands.append(self.constant(b, _name(wdq, "qbias"), out.q))
        new = g.QDenseOp.make(*operands, x_scale=[xs], x_zero_point=[xz], w_scale=ws, w_zero_point=wz,
                              **out.rescale_attrs())
        return self.insert(new, out.q, op)

    def _binary(self, op, out: _Output) -> SSAValue:
        a, b = _dq(op.lhs, "the lhs"), _dq(op.rhs, "the rhs")
        (as_, az), (bs, bz) = _per_tensor(a, "the lhs"), _per_tensor(b, "the rhs")
        cls = g.QAddOp if isinstance(op, g.AddOp) else g.QMulOp
        new = cls.make(a.x, b.x, a_scale=[as_], a_zero_point=[az], b_scale=[bs], b_zero_point=[bz], **out.attrs())
        return self.insert(new, out.q, op)

    def _concat(self, op: g.ConcatOp, out: _Output) -> SSAValue:
        dqs = [_dq(v, f"input #{i}") for i, v in enumerate(op.inputs)]
        params = [_per_tensor(d, f"input #{i}") for i, d in enumerate(dqs)]
        new = g.QConcatOp.make(*[d.x for d in dqs], axis=op.axis, in_scale=[p[0] for p in params],
                               in_zero_point=[p[1] for p in params], **out.attrs())
        return self.insert(new, out.q, op)

    def _avg_pool(self, op, out: _Output) -> SSAValue:
        dq = _dq(op.operands[0], "the input")
        xs, xz = _per_tensor(dq, "the input")
        shape = list(op.operands[0].type.get_shape())
        if isinstance(op, g.ReduceMeanOp):
            axes = sorted(a % len(shape) for a in (op.axes or range(len(shape))))
            if len(shape) != 4 or axes != [2, 3] or not op.keepdims:
                raise NoMatch("a reduce_mean that is not a global average pool (NCHW, axes 2 and 3, keepdims)")
            window = dict(kernel=shape[2:])
        else:
            if op.layout != "NCHW":
                raise NoMatch("layout is not NCHW")
            a = op.attrs
            window = dict(kernel=list(a.kernel), strides=list(a.strides), padding=list(a.padding),
                          dilations=list(a.dilations), ceil_mode=a.ceil_mode, count_include_pad=a.count_include_pad)
        new = g.QAvgPool2DOp.make(dq.x, x_scale=[xs], x_zero_point=[xz], **window, **out.attrs())
        return self.insert(new, out.q, op)

    def _softmax(self, op: GraphOp, out: _Output) -> SSAValue:
        """The float softmax kept, its quantize at onnxruntime's QLinearSoftmax scale."""
        _per_tensor(_dq(_softmax_input(op), "the input"), "the input")
        if out.out_min is not None or out.out_max is not None:
            raise NoMatch("a clamp after the softmax")
        inverse = np.floor(np.float32(1.0) / np.float32(out.scale))
        if inverse < 1:
            raise NoMatch(f"the output scale {out.scale} is above 1 (QLinearSoftmax's floor(1 / scale) is 0)")
        q = out.q
        new = g.QuantizeOp.make(op.results[0], scale=[float(np.float32(1.0) / np.float32(inverse))],
                                zero_point=[out.zero_point], dtype=out.dtype,
                                **({} if q.rounding == "half_even" else {"rounding": q.rounding}))
        self.made = f"a softmax, its graph.quantize at QLinearSoftmax's scale 1/{int(inverse)}"
        return self.insert(new, q, q)

    def _passthrough(self, op: GraphOp, out: _Output) -> SSAValue:
        """An op that commutes with per-tensor quantization, on the quantized values."""
        dq = _dq(op.operands[0], "the input")
        _per_tensor(dq, "the input")
        xq = dq.x
        shape = op.results[0].type.get_shape()
        moved = type(op).create(operands=[xq], result_types=[tensor_type(shape, xq.type.element_type)],
                                attributes=dict(op.attributes))
        self.insert(moved, out.q, op)
        y = self._requantize_from(moved.results[0], dq, out, op)
        self.made = op.name if y is moved.results[0] else f"{op.name} on i8 + graph.requantize"
        return y

    def _requantize(self, value: SSAValue, out: _Output, where: Operation) -> SSAValue:
        dq = value.owner
        _per_tensor(dq, "the input")
        return self._requantize_from(dq.x, dq, out, dq)

    def _requantize_from(self, xq: SSAValue, dq: g.DequantizeOp, out: _Output, like: Operation) -> SSAValue:
        """``xq`` (quantized with dq's parameters) in the output's parameters and clamp."""
        same = (dq.scale[0] == out.scale and dq.zero_point[0] == out.zero_point
                and xq.type.element_type == out.dtype and out.out_min is None and out.out_max is None)
        if same:
            self.made = "its quantized input (same parameters)"
            return xq
        new = g.RequantizeOp.make(xq, x_scale=[dq.scale[0]], x_zero_point=[dq.zero_point[0]], **out.attrs())
        return self.insert(new, out.q, like)


def _softmax_input(op: Operation) -> SSAValue | None:
    """The input of a softmax: graph.softmax, or legalize's decomposition of it
    (``e = exp(x - reduce_max(x)); e / reduce_sum(e)``, the same axes); else None."""
    if isinstance(op, g.SoftmaxOp):
        return op.x
    if not (isinstance(op, g.DivOp) and isinstance(op.lhs.owner, g.ExpOp)
            and isinstance(op.rhs.owner, g.ReduceSumOp) and op.rhs.owner.x is op.lhs):
        return None
    sub = op.lhs.owner.x.owner
    if not (isinstance(sub, g.SubOp) and isinstance(sub.rhs.owner, g.ReduceMaxOp) and sub.rhs.owner.x is sub.lhs):
        return None
    total, peak = op.rhs.owner, sub.rhs.owner
    if list(total.axes or []) != list(peak.axes or []) or not total.keepdims or not peak.keepdims:
        return None
    return sub.lhs


def _et(array: np.ndarray):
    from dlc.dialects.graph_base import element_type_of

    return element_type_of(array.dtype)


def _name(dq: Operation, suffix: str) -> str:
    src = dq.operands[0].owner
    base = src.weight_name.data if isinstance(src, g.WeightOp) else (dq.results[0].name_hint or "w")
    return f"{base}.{suffix}"


_REPORTED = (g.Conv2DOp, g.MatmulOp, g.AddOp, g.MulOp, g.ConcatOp, g.AvgPool2DOp, g.MaxPool2DOp)


def _remove_dead(block) -> None:
    changed = True
    while changed:
        changed = False
        for op in reversed(list(block.ops)):
            if isinstance(op, GraphOp) and not op.regions and op.has_trait(Pure) \
                    and all(not r.uses for r in op.results):
                op.detach()
                op.erase()
                changed = True


@dataclass(frozen=True)
class FoldQdqPass(ModulePass):
    """DQ -> op -> Q patterns to quantized ops (see module docstring)."""

    name = "fold-qdq"

    def apply(self, ctx: Context, module: ModuleOp) -> None:
        from dlc.transforms.fold_constant import weight_names

        store = store_of(module)
        names_before = weight_names(module)
        folder = _Folder(store)
        for fn in module.ops:
            if not isinstance(fn, func.FuncOp) or not fn.body.blocks:
                continue
            block = fn.body.block
            for op in list(block.ops):
                if isinstance(op, g.QuantizeOp) and op.parent is block:
                    folder.fold(op)
            _remove_dead(block)
            for op in block.ops:
                dq_in = any(isinstance(v.owner, g.DequantizeOp) for v in op.operands) or isinstance(
                    getattr(_softmax_input(op), "owner", None), g.DequantizeOp)
                if (isinstance(op, _REPORTED) or op in folder.reasons) and dq_in:
                    why = folder.reasons.get(op, "its output has no graph.quantize (QuantizeLinear)")
                    folder.notes.append(f"fold-qdq: {_label(op)} stays float: {why}")
        for name in (names_before | folder.created) - weight_names(module):
            if name in store:
                store.remove(name)
        if folder.notes:
            module.attributes[REPORT_ATTR] = ArrayAttr([StringAttr(n) for n in folder.notes])

