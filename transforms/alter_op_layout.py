"""`alter-op-layout`: run conv2d chains in the channel-blocked NCHW{b}c layout.

``alter-op-layout{block=16}``

TVM's x86 conv2d_NCHWc strategy. In every graph function:

* each depthwise ``conv2d`` (groups = channels) of a blocked value becomes
  ``depthwise_conv2d_nchwc`` (weights OIHW1i{b}o; stride 1: explicit padding as
  below, larger strides keep the padding in the op, whose kernel clamps its taps).
  A depthwise conv of a plain value stays plain (``conv2d.depthwise``, which pads
  in its own scratch): blocking it would cost a transform in, an explicit pad and,
  when its readers are plain, a transform out (ShuffleNet's depthwise convs sit
  between a plain channel shuffle and a plain grouped conv: the three copies
  cost more than the depthwise itself);
* each ``conv2d`` (NCHW / OIHW, groups 1, float) becomes ``conv2d_nchwc`` on
  NCHW{b}c activations and OIHW{i}i{b}o weights (output blocks of ``block``
  channels: one vector; the input block is the producer's block, or for a
  plain input with fewer than ``block`` channels that channel count, so a
  3-channel image is not padded to 16); spatial padding becomes an explicit
  ``graph.pad`` of the blocked input (TVM's data_pad), so the conv kernel's
  register tile has no bounds checks;
* each int8 ``qconv2d`` with u8 activations (groups 1, a constant weight whose zero
  point is 0, or 128 for ui8 weights) becomes ``qconv2d_nchwc`` on u8 NCHW{ib}c (ib:
  the producer's block, which must be a multiple of 4, else the conv stays plain; a
  plain input's channels rounded up to 4 below ``block``), its padding an explicit
  ``graph.pad`` of x's zero point (real 0); the OIHW weight stays (its kernel packs
  it); s8 activations keep graph.qconv2d. graph.qadd is ``LayoutFree``, so residual
  chains stay blocked; padded channels of a qconv2d_nchwc hold the output zero point
  (finite, and the next conv's weights there are zero);
* each int8 depthwise ``qconv2d`` (groups = channels, constant weight) of a blocked
  value becomes ``qdepthwise_conv2d_nchwc`` in the input's block (u8 or s8, any weight
  zero point), its padding kept in the op (x's zero point): a MobileNet int8 chain
  conv1x1 -> depthwise -> conv1x1 stays blocked; of a plain value it stays plain;
* the blocked layout propagates through the ops that do not care about it (those
  declaring ``LayoutFree``, ``dialects/traits.py``): elementwise unary ops that map 0
  to a finite value (relu, clip, sigmoid, ...), and add/sub/mul/max/min whose
  operands are blocked values of the same shape, scalars, or per-channel constants
  (``[C,1,1]``/``[1,C,1,1]``: re-laid out to ``[1,C/b,1,1,b]`` with zero padding);
* pools carry it: ``max_pool2d``/``avg_pool2d`` (NCHW) of a blocked value become
  ``max_pool2d_nchwc``/``avg_pool2d_nchwc``; legalize's global pools (reduce_mean /
  reduce_max over H and W, keepdims) become those pools with an H x W window, and
  other reductions over exactly H and W reduce axes 2, 3 of the blocked tensor;
* a channel ``concat`` whose operands' channel counts are all multiples of the block
  and of which at least one is blocked joins the blocks (a concat along axis 1 of
  NCHW{b}c; plain operands are blocked first). With any other count a padded
  block would land in the middle of the result: the concat stays plain;
* a ``layout_transform`` back to NCHW is inserted once per blocked value that
  some other op (or the function's return) reads, and one to NCHW{b}c once
  per plain value a converted op reads.

Constant weights (``graph.constant``/``graph.weight``) are re-laid out here,
at compile time, with fold-constant's folding (no size limit: a re-laid-out
weight is barely larger than the original), so no weight transform runs at
run time. Padded channels hold zeros after a conv; the propagated ops keep
them finite (pools and spatial reductions of zeros are zero: every pooling
window sees the input), and the next conv multiplies them by zero weights.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import PatternRewriter
from xdsl.rewriter import InsertPoint, Rewriter

from dlc.dialects import graph as g
from dlc.dialects.graph import _reduce_axes
from dlc.dialects.graph_base import GraphOp, is_float, normalize_axis
from dlc.dialects.traits import LayoutFree
from dlc.transforms.fold_constant import FoldConstantOps, weight_names
from dlc.weights import store_of

_OP_CLASSES = {op.name: op for op in g.GRAPH_OPS}


def _blocked_class(trait: LayoutFree) -> type[GraphOp]:
    """The op class named by ``LayoutFree(blocked=...)``."""
    return _OP_CLASSES[trait.blocked]


def _shape(value: SSAValue) -> tuple[int, ...]:
    return tuple(value.type.get_shape())


def _convertible_conv(op: Operation) -> bool:
    if not isinstance(op, g.Conv2DOp):
        return False
    a = op.attrs
    return (a.data_layout == "NCHW" and a.kernel_layout == "OIHW"
            and a.groups == 1 and is_float(op.results[0].type.element_type))


def _depthwise_conv(op: Operation) -> bool:
    """A depthwise conv2d (NCHW / OIHW, groups = in = out channels, float): it runs as
    ``depthwise_conv2d_nchwc`` so a MobileNet's chain stays blocked."""
    if not isinstance(op, g.Conv2DOp):
        return False
    a = op.attrs
    channels = _shape(op.operands[0])[1]
    return (a.data_layout == "NCHW" and a.kernel_layout == "OIHW" and a.groups == channels > 1
            and tuple(_shape(op.operands[1])[:2]) == (channels, 1)
            and is_float(op.results[0].type.element_type))


def _blocked_qconv(op: Operation) -> bool:
    """An int8 qconv2d that runs as ``qconv2d_nchwc`` (kernels/quantized_nchwc.py): groups
    1, u8 activations, a constant weight whose zero point is 0 (128 for ui8 weights)."""
    from dlc.dialects.graph.quantized import quant_range

    if not isinstance(op, g.QConv2DOp) or op.attrs.groups != 1:
        return False
    if quant_range(op.operands[0].type.element_type)[0] != 0:
        return False  # s8 activations: the qgemm kernel
    if not isinstance(op.operands[1].owner, (g.ConstantOp, g.WeightOp)):
        return False
    unsigned_w = quant_range(op.operands[1].type.element_type)[0] == 0
    return all(z == (128 if unsigned_w else 0) for z in op.w_zero_point)


def _blocked_qdepthwise(op: Operation) -> bool:
    """An int8 depthwise qconv2d (groups = in = out channels, a constant [C, 1, KH, KW]
    weight) that runs as ``qdepthwise_conv2d_nchwc`` (kernels/quantized_depthwise_nchwc.py)
    when its input is blocked: any weight zero point, u8 or s8 activations."""
    if not isinstance(op, g.QConv2DOp):
        return False
    channels = _shape(op.operands[0])[1]
    return (op.attrs.groups == channels > 1 and tuple(_shape(op.operands[1])[:2]) == (channels, 1)
            and _shape(op.results[0])[1] == channels
            and isinstance(op.operands[1].owner, (g.ConstantOp, g.WeightOp)))


def _qconv_block(channels: int, block: int) -> int:
    """The input block of a plain qconv input: ``block`` channels, or fewer channels
    rounded up to vpdpbusd's 4-byte groups (a 3-channel image: NCHW4c, one zero channel)."""
    from dlc.dialects.graph.quantized import VNNI_GROUP

    return block if channels >= block else -(-channels // VNNI_GROUP) * VNNI_GROUP


class _FunctionRewrite:
    """One forward walk over a function's block (see module docstring)."""

    def __init__(self, fn: func.FuncOp, block: int):
        self.fn = fn
        self.block = block
        self.blocked: dict[SSAValue, SSAValue] = {}  # NCHW value -> its NCHW{b}c twin
        self.to_blocked_cache: dict[SSAValue, SSAValue] = {}
        self.pad_cache: dict[tuple[SSAValue, tuple[int, ...]], SSAValue] = {}
        self.converted: list[Operation] = []
        self.constant_ops: list[Operation] = []  # relayouts of constants, folded afterwards

    def run(self) -> None:
        for op in list(self.fn.body.block.ops):
            free = op.get_trait(LayoutFree)
            if _convertible_conv(op):
                self._convert_conv(op)
            elif _blocked_qconv(op):
                self._convert_qconv(op)
            elif _depthwise_conv(op) and op.operands[0] in self.blocked:
                self._convert_depthwise(op)
            elif _blocked_qdepthwise(op) and op.operands[0] in self.blocked:
                self._convert_qdepthwise(op)
            elif free is None:
                if isinstance(op, g.ConcatOp):
                    self._convert_concat(op)
            elif isinstance(op, g.ReduceOp):
                self._convert_spatial_reduction(op, free)
            elif free.blocked is not None:
                self._convert_pool(op, free)
            else:
                self._convert_elementwise(op)
        self._restore_plain_uses()
        for op in reversed(self.converted):
            Rewriter.erase_op(op)

    # -- helpers ------------------------------------------------------------------
    def _insert(self, new: Operation, before: Operation) -> SSAValue:
        Rewriter.insert_op(new, InsertPoint.before(before))
        if all(isinstance(v.owner, (g.ConstantOp, g.WeightOp)) or v.owner in self.constant_ops
               for v in new.operands):
            self.constant_ops.append(new)
        return new.results[0]

    def _to_blocked(self, value: SSAValue, before: Operation) -> SSAValue:
        if value in self.blocked:
            return self.blocked[value]
        if value not in self.to_blocked_cache:
            c = _shape(value)[1]
            b = self.block if c >= self.block else c
            t = g.LayoutTransformOp.make(value, src="NCHW", dst=f"NCHW{b}c")
            self.to_blocked_cache[value] = self._insert(t, before)
        return self.to_blocked_cache[value]

    # -- conversions ----------------------------------------------------------------
    def _convert_conv(self, op: g.Conv2DOp) -> None:
        x = self._to_blocked(op.operands[0], op)
        ib = _shape(x)[4]
        w = self._insert(g.LayoutTransformOp.make(
            op.operands[1], src="OIHW", dst=f"OIHW{ib}i{self.block}o"), op)
        attrs = {k: op.attributes[k] for k in ("strides", "dilations") if k in op.attributes}
        pt, pl, pb, pr = op.padding
        if (pt, pl, pb, pr) != (0, 0, 0, 0):
            x = self._padded(x, (pt, pl, pb, pr), op)
        conv = g.Conv2DNCHWcOp.make(x, w, **attrs)
        self._replace(op, conv)

    def _convert_qconv(self, op: g.QConv2DOp) -> None:
        """int8 conv: ``qconv2d_nchwc`` on u8 NCHW{ib}c (ib a multiple of 4; a producer
        blocked otherwise leaves the conv plain), the padding an explicit graph.pad with
        x's zero point (real 0), the OIHW weight kept (the kernel packs it)."""
        from dlc.dialects.graph.quantized import VNNI_GROUP

        src = op.operands[0]
        if src in self.blocked:
            x = self.blocked[src]
            if _shape(x)[4] % VNNI_GROUP:
                return
        else:
            key = (src, "q")
            if key not in self.to_blocked_cache:
                b = _qconv_block(_shape(src)[1], self.block)
                t = g.LayoutTransformOp.make(src, src="NCHW", dst=f"NCHW{b}c")
                self.to_blocked_cache[key] = self._insert(t, op)
            x = self.to_blocked_cache[key]
        pads = tuple(op.padding)
        if pads != (0, 0, 0, 0):
            x = self._padded(x, pads, op, float(op.x_zero_point[0]))
        skip = {"padding", "groups"}
        attrs = {k: v for k, v in op.attributes.items() if "." not in k and k not in skip}
        conv = g.QConv2DNCHWcOp.make(*([x] + list(op.operands[1:])), block=self.block, **attrs)
        self._replace(op, conv)

    def _convert_depthwise(self, op: g.Conv2DOp) -> None:
        """Blocks of the input's own block (a plain input with fewer channels than the
        block keeps that count, as for conv): the filters are one OIHW1i{b}o weight."""
        x = self._to_blocked(op.operands[0], op)
        b = _shape(x)[4]
        w = self._insert(g.LayoutTransformOp.make(op.operands[1], src="OIHW", dst=f"OIHW1i{b}o"), op)
        attrs = {k: op.attributes[k] for k in ("strides", "padding", "dilations") if k in op.attributes}
        if tuple(op.strides) == (1, 1) and tuple(op.padding) != (0, 0, 0, 0):
            # stride 1: an explicit pad measured ~2x faster than the kernel's clamped taps;
            # stride 2 the other way round (the pad's full copy of the input costs more
            # than the kernel saves: MobileNetV2, 1 thread)
            x = self._padded(x, tuple(op.padding), op)
            del attrs["padding"]
        self._replace(op, g.DepthwiseConv2DNCHWcOp.make(x, w, **attrs))

    def _convert_qdepthwise(self, op: g.QConv2DOp) -> None:
        """int8 depthwise conv of a blocked value: ``qdepthwise_conv2d_nchwc`` in the
        input's block, the padding kept in the op (its kernel selects x's zero point at the
        border taps: a graph.pad per layer measured dearer), the OIHW weight kept (the
        kernel packs it per block)."""
        x = self.blocked[op.operands[0]]
        attrs = {k: v for k, v in op.attributes.items() if "." not in k and k != "groups"}
        self._replace(op, g.QDepthwiseConv2DNCHWcOp.make(*([x] + list(op.operands[1:])), **attrs))

    def _padded(self, x: SSAValue, pads: tuple[int, int, int, int], before: Operation,
                value: float = 0.0) -> SSAValue:
        """``x`` with rows/columns of ``value`` around (zeros; an int8 conv's: x's zero
        point; one graph.pad per value and padding): the conv kernel then has no bounds
        checks in its register tile."""
        key = (x, pads) if value == 0.0 else (x, pads, value)
        if key not in self.pad_cache:
            pt, pl, pb, pr = pads
            extra = {"value": value} if value != 0.0 else {}
            pad = g.PadOp.make(x, pads=[0, 0, pt, pl, 0, 0, 0, pb, pr, 0], **extra)
            pad.location = before.location  # the conv's source node (the profile names it)
            self.pad_cache[key] = self._insert(pad, before)
        return self.pad_cache[key]

    def _convert_elementwise(self, op: GraphOp) -> None:
        out_shape = _shape(op.results[0])
        if len(out_shape) != 4 or not any(v in self.blocked for v in op.operands):
            return
        # the blocked operands' block (a depthwise chain from a plain input with fewer
        # channels than the block keeps that count): per-channel constants take it too
        blocks = {_shape(self.blocked[v])[4] for v in op.operands if v in self.blocked}
        if len(blocks) != 1:
            return  # operands blocked differently: leave the op plain
        (block,) = blocks
        operands = []
        for v in op.operands:
            if v in self.blocked:
                if _shape(v) != out_shape:
                    return  # the blocked operand itself broadcasts: leave the op plain
                operands.append(self.blocked[v])
                continue
            per_channel = self._per_channel(v, out_shape[1], op, block)
            if per_channel is None:
                return
            operands.append(per_channel)
        attrs = {k: v for k, v in op.attributes.items() if "." not in k}
        self._replace(op, type(op).make(*operands, **attrs))

    def _convert_pool(self, op: GraphOp, free: LayoutFree) -> None:
        """A pool of a blocked value pools each channel of its block: its ``_nchwc`` twin."""
        x = op.operands[0]
        if x not in self.blocked or op.layout != "NCHW":
            return
        if not is_float(op.results[0].type.element_type):
            return
        attrs = {k: v for k, v in op.attributes.items() if "." not in k and k != "layout"}
        self._replace(op, _blocked_class(free).make(self.blocked[x], **attrs))

    def _convert_spatial_reduction(self, op: GraphOp, free: LayoutFree) -> None:
        """A reduction over H and W (keepdims) of a blocked value, [N, C/b, 1, 1, b]: for
        mean and max (``LayoutFree(blocked=pool)``) a blocked pool with an H x W window
        (same sums, same order), else the same reduction over axes 2, 3 of the blocked
        tensor. A padded channel's sum/mean/max/min is 0."""
        x = op.operands[0]
        if x not in self.blocked or not op.keepdims:
            return
        if len(_shape(x)) != 4 or _reduce_axes(op.attrs, 4) != (2, 3):
            return
        if free.blocked is not None:  # a window over all of H x W: the pool kernel's vectors
            pool = _blocked_class(free).make(self.blocked[x], kernel=list(_shape(x)[2:]))
            self._replace(op, pool)
            return
        attrs = {k: v for k, v in op.attributes.items() if "." not in k and k != "axes"}
        self._replace(op, type(op).make(self.blocked[x], axes=[2, 3], **attrs))

    def _convert_concat(self, op: g.ConcatOp) -> None:
        """A channel concat of blocked values whose channel counts are all multiples of the
        block: a concat of the blocks (axis 1 of NCHW{b}c). Any other count would put
        padded channels in the middle of the result: the concat then stays plain."""
        out_shape = _shape(op.results[0])
        if len(out_shape) != 4 or normalize_axis(op.axis, 4) != 1:
            return
        if not any(v in self.blocked for v in op.operands):
            return
        b = self.block
        if any(_shape(v)[1] % b for v in op.operands):
            return
        if any(_shape(self.blocked[v])[4] != b for v in op.operands if v in self.blocked):
            return
        operands = [self._to_blocked(v, op) for v in op.operands]
        self._replace(op, g.ConcatOp.make(*operands, axis=1))

    def _per_channel(self, value: SSAValue, channels: int, before: Operation, block: int) -> SSAValue | None:
        """``value`` (a scalar or per-channel tensor) as an NCHW{block}c broadcast operand, or None."""
        shape = _shape(value)
        if len(shape) > 4:
            return None
        if math.prod(shape) == 1:
            return value  # broadcasts against any layout
        padded = (1,) * (4 - len(shape)) + shape
        if padded != (1, channels, 1, 1):
            return None
        if not isinstance(value.owner, (g.ConstantOp, g.WeightOp)):
            return None  # a run-time per-channel tensor: not worth a transform
        if padded != shape:
            value = self._insert(g.ReshapeOp.make(value, shape=list(padded)), before)
        return self._insert(g.LayoutTransformOp.make(value, src="NCHW", dst=f"NCHW{block}c"), before)

    def _replace(self, op: Operation, new: Operation) -> None:
        Rewriter.insert_op(new, InsertPoint.before(op))
        new.location = op.location  # the source node's name (the profile names it)
        for key in ("dlc.origin",):
            if key in op.attributes:
                new.attributes[key] = op.attributes[key]
        self.blocked[op.results[0]] = new.results[0]
        self.converted.append(op)

    def _restore_plain_uses(self) -> None:
        """Readers of a converted op's NCHW result that were not converted read it
        through one transform back, placed right after the blocked producer."""
        converted = set(self.converted)
        for plain, blocked in self.blocked.items():
            outside = [use for use in list(plain.uses) if use.operation not in converted]
            if not outside:
                continue
            back = g.LayoutTransformOp.make(blocked, src=f"NCHW{_shape(blocked)[4]}c", dst="NCHW",
                                            channels=_shape(plain)[1])
            Rewriter.insert_op(back, InsertPoint.after(blocked.owner))
            for use in outside:
                use.operation.operands[use.index] = back.results[0]


@dataclass(frozen=True)
class AlterOpLayoutPass(ModulePass):
    """Blocked NCHW{b}c layout for conv2d chains (see module docstring)."""

    name = "alter-op-layout"

    block: int = 16
    """Output channels per block (16 floats: one AVX-512 vector)."""

    def __post_init__(self) -> None:
        if self.block < 1:
            raise ValueError(f"block must be >= 1, got {self.block}")

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        constant_ops: list[Operation] = []
        for fn in op.ops:
            if isinstance(fn, func.FuncOp) and len(fn.body.blocks) == 1:
                rewrite = _FunctionRewrite(fn, self.block)
                rewrite.run()
                constant_ops += rewrite.constant_ops
        self._fold(op, constant_ops)

    @staticmethod
    def _fold(module: ModuleOp, ops: list[Operation]) -> None:
        """Pre-pack constant weights and per-channel constants now (compile time)."""
        if not ops:
            return
        store = store_of(module)
        names_before = weight_names(module)
        folder = FoldConstantOps(store, size_limit=1 << 62, inline_limit=64)
        for new in ops:
            if new.parent is not None:
                folder.match_and_rewrite(new, PatternRewriter(new))
        if folder.failure is not None:
            raise folder.failure
        for name in (names_before | folder.created_weights) - weight_names(module):
            store.remove(name)
