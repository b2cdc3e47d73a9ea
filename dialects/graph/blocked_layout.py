"""Channel-blocked (NCHW{b}c) layout ops built by alter-op-layout: the
layout transform and the blocked conv2d and 2-D pools.
"""

from __future__ import annotations

import re as _re
from typing import ClassVar

import numpy as np
from xdsl.dialects.builtin import TensorType
from xdsl.irdl import irdl_op_definition, operand_def, result_def, traits_def
from xdsl.traits import Pure

from dlc.dialects.graph_base import (
    Attrs,
    BoolAttribute,
    GraphOp,
    IntAttribute,
    or_default,
    ShapeError,
    StringAttribute,
    tensor_type,
)
from dlc.dialects.graph.common import (
    _check_element,
    _contiguous,
    _expect_count,
    Types,
)
from dlc.dialects.graph.conv import _ConvWindow, _conv2d_nchw, _conv_operands, _conv_out, _window_attrs
from dlc.dialects.graph.pool import _Pool2DWindow, AvgPool2DOp, MaxPool2DOp
from dlc.dialects.traits import FusionAnchor


# Activations in NCHW{b}c ([N, C/b, H, W, b]: b channels contiguous, one
# vector) and weights in OIHW{i}i{o}o ([O/o, I/i, KH, KW, i, o]). Channel
# counts that are not a multiple of the block are padded with zero channels
# (not a smaller block): every conv output keeps one full vector of output
# channels, and zero weights make the padded channels contribute nothing.


_BLOCKED_DATA = _re.compile(r"NCHW(\d+)c$")
_BLOCKED_KERNEL = _re.compile(r"OIHW(\d+)i(\d+)o$")


def _block_of(layout: str, pattern) -> tuple[int, ...] | None:
    m = pattern.match(layout)
    if m is None:
        return None
    blocks = tuple(int(g) for g in m.groups())
    if min(blocks) < 1:
        raise ShapeError(f"layout {layout}: blocks must be >= 1")
    return blocks


def _ceil_div(a: int, b: int) -> int:
    return -(-a // b)


@irdl_op_definition
class LayoutTransformOp(GraphOp):
    """Re-lay out a 4-D tensor between plain and channel-blocked layouts.

    ``src``/``dst``: NCHW -> NCHW{b}c, NCHW{b}c -> NCHW, or OIHW -> OIHW{i}i{o}o
    (weights). Channels are zero-padded to a multiple of the block; going
    back to NCHW, ``channels`` (default: all, padding included) drops the
    padded ones.

    ```mlir
    %y = graph.layout_transform %x {src = "NCHW", dst = "NCHW16c"} : (tensor<1x20x5x5xf32>) -> tensor<1x2x5x5x16xf32>
    ```
    """

    name = "graph.layout_transform"
    src = StringAttribute()
    dst = StringAttribute()
    channels = IntAttribute(optional=True)  # default: all channels of the blocks
    x = operand_def(TensorType)
    out = result_def(TensorType)
    traits = traits_def(Pure())

    @classmethod
    def infer(cls, operand_types: Types, attrs: Attrs) -> list[TensorType]:
        _expect_count(operand_types, 1)
        t = operand_types[0]
        shape = list(t.get_shape())
        src, dst = attrs.src, attrs.dst
        if attrs.channels is not None and not (_block_of(src, _BLOCKED_DATA) and dst == "NCHW"):
            raise ShapeError("attribute 'channels' applies only to NCHW{b}c -> NCHW")
        if src in ("NCHW", "OIHW") and len(shape) != 4:
            raise ShapeError(f"{src} input must be 4-D, got rank {len(shape)}")
        if src == "NCHW" and (b := _block_of(dst, _BLOCKED_DATA)):
            n, c, h, w = shape
            return [tensor_type([n, _ceil_div(c, b[0]), h, w, b[0]], t.element_type)]
        if src == "OIHW" and (b := _block_of(dst, _BLOCKED_KERNEL)):
            o, i, kh, kw = shape
            ib, ob = b
            return [tensor_type([_ceil_div(o, ob), _ceil_div(i, ib), kh, kw, ib, ob], t.element_type)]
        if (b := _block_of(src, _BLOCKED_DATA)) and dst == "NCHW":
            if len(shape) != 5 or shape[4] != b[0]:
                raise ShapeError(f"{src} input must be 5-D with a last dim of {b[0]}, got {shape}")
            n, cb, h, w, _ = shape
            c = or_default(attrs.channels, cb * b[0])
            if not (cb - 1) * b[0] < c <= cb * b[0]:
                raise ShapeError(f"channels={c} does not fit {cb} blocks of {b[0]}")
            return [tensor_type([n, c, h, w], t.element_type)]
        raise ShapeError(
            f"unsupported layout change {src} -> {dst} (supported: NCHW <-> NCHW{{b}}c, "
            "OIHW -> OIHW{i}i{o}o)"
        )

    def reference(self, x: np.ndarray) -> list[np.ndarray]:
        src, dst = self.src, self.dst
        out_shape = self.out.type.get_shape()
        if src == "NCHW":
            n, cb, h, w, b = out_shape
            xp = np.zeros((n, cb * b, h, w), x.dtype)
            xp[:, : x.shape[1]] = x
            return [_contiguous(xp.reshape(n, cb, b, h, w).transpose(0, 1, 3, 4, 2))]
        if src == "OIHW":
            obn, ibn, kh, kw, ib, ob = out_shape
            wp = np.zeros((obn * ob, ibn * ib, kh, kw), x.dtype)
            wp[: x.shape[0], : x.shape[1]] = x
            blocked = wp.reshape(obn, ob, ibn, ib, kh, kw).transpose(0, 2, 4, 5, 3, 1)
            return [_contiguous(blocked)]
        n, cb, h, w, b = x.shape
        plain = x.transpose(0, 1, 4, 2, 3).reshape(n, cb * b, h, w)
        return [_contiguous(plain[:, : out_shape[1]])]


@irdl_op_definition
class Conv2DNCHWcOp(_ConvWindow):
    """2-D convolution on channel-blocked tensors (groups 1): input
    ``[N, C/ib, H, W, ib]`` (NCHW{ib}c), weight ``[O/ob, C/ib, KH, KW, ib, ob]``
    (OIHW{ib}i{ob}o), result ``[N, O/ob, OH, OW, ob]`` (NCHW{ob}c).
    Attributes as conv2d: ``strides``, ``padding`` [top, left, bottom, right],
    ``dilations``. Built by ``alter-op-layout``.

    ```mlir
    %y = graph.conv2d_nchwc %x, %w {padding = array<i64: 1, 1, 1, 1>} : (tensor<1x1x5x5x16xf32>, tensor<2x1x3x3x16x16xf32>) -> tensor<1x2x5x5x16xf32>
    ```
    """

    name = "graph.conv2d_nchwc"
    x = operand_def(TensorType)
    weight = operand_def(TensorType)
    out = result_def(TensorType)
    traits = traits_def(Pure(), FusionAnchor(dense=True))

    @classmethod
    def infer(cls, operand_types: Types, attrs: Attrs) -> list[TensorType]:
        element, x, w = _conv_operands(operand_types, "float", (5, 6),
                                       "input must be 5-D (NCHW{b}c) and weight 6-D (OIHW{i}i{o}o)")
        n, cb, h, wd, ib = x
        obn, wcb, kh, kw, wib, ob = w
        if (wcb, wib) != (cb, ib):
            raise ShapeError(
                f"weight input blocks {wcb}x{wib} do not match the input's channel blocks {cb}x{ib}"
            )
        (sh, sw), (dh, dw), (pt, pl, pb, pr) = _window_attrs(attrs)
        oh = _conv_out(h, kh, sh, pt + pb, dh, "height")
        ow = _conv_out(wd, kw, sw, pl + pr, dw, "width")
        return [tensor_type([n, obn, oh, ow, ob], element)]

    def reference(self, x: np.ndarray, w: np.ndarray) -> list[np.ndarray]:
        n, cb, h, wd, ib = x.shape
        obn, _, kh, kw, _, ob = w.shape
        plain_x = x.transpose(0, 1, 4, 2, 3).reshape(n, cb * ib, h, wd)
        plain_w = w.transpose(0, 5, 1, 4, 2, 3).reshape(obn * ob, cb * ib, kh, kw)
        strides, dil, pads = _window_attrs(self.attrs)
        out = _conv2d_nchw(plain_x, plain_w, strides, pads, dil, 1)
        _, _, oh, ow = out.shape
        return [_contiguous(out.reshape(n, obn, ob, oh, ow).transpose(0, 1, 3, 4, 2))]



@irdl_op_definition
class DepthwiseConv2DNCHWcOp(_ConvWindow):
    """Depthwise 2-D convolution (groups = channels, one filter per channel) on a
    channel-blocked tensor: input ``[N, C/b, H, W, b]`` (NCHW{b}c), weight
    ``[C/b, 1, KH, KW, 1, b]`` (the OIHW1i{b}o transform of the ``[C, 1, KH, KW]``
    filters), result ``[N, C/b, OH, OW, b]``. Attributes as conv2d. Built by
    ``alter-op-layout`` so MobileNets' depthwise layers stay blocked.

    ```mlir
    %y = graph.depthwise_conv2d_nchwc %x, %w : (tensor<1x2x5x5x16xf32>, tensor<2x1x3x3x1x16xf32>) -> tensor<1x2x3x3x16xf32>
    ```
    """

    name = "graph.depthwise_conv2d_nchwc"
    x = operand_def(TensorType)
    weight = operand_def(TensorType)
    out = result_def(TensorType)
    traits = traits_def(Pure(), FusionAnchor(dense=True))

    @classmethod
    def infer(cls, operand_types: Types, attrs: Attrs) -> list[TensorType]:
        element, x, w = _conv_operands(operand_types, "float", (5, 6),
                                       "input must be 5-D (NCHW{b}c) and weight 6-D (OIHW1i{b}o)")
        n, cb, h, wd, b = x
        wcb, one, kh, kw, wone, wb = w
        if (wcb, one, wone, wb) != (cb, 1, 1, b):
            raise ShapeError(f"weight {w} does not match the input's {cb} channel blocks of {b} "
                             f"(expected [{cb}, 1, KH, KW, 1, {b}])")
        (sh, sw), (dh, dw), (pt, pl, pb, pr) = _window_attrs(attrs)
        oh = _conv_out(h, kh, sh, pt + pb, dh, "height")
        ow = _conv_out(wd, kw, sw, pl + pr, dw, "width")
        return [tensor_type([n, cb, oh, ow, b], element)]

    def reference(self, x: np.ndarray, w: np.ndarray) -> list[np.ndarray]:
        n, cb, h, wd, b = x.shape
        plain_w = w.transpose(0, 5, 1, 4, 2, 3).reshape(cb * b, 1, w.shape[2], w.shape[3])
        strides, dil, pads = _window_attrs(self.attrs)
        out = _conv2d_nchw(_blocked_to_plain(x), plain_w, strides, pads, dil, cb * b)
        return [_plain_to_blocked(out, b)]

def _blocked_to_plain(x: np.ndarray) -> np.ndarray:
    n, cb, h, w, b = x.shape
    return x.transpose(0, 1, 4, 2, 3).reshape(n, cb * b, h, w)


def _plain_to_blocked(x: np.ndarray, b: int) -> np.ndarray:
    n, c, h, w = x.shape
    return _contiguous(x.reshape(n, c // b, b, h, w).transpose(0, 1, 3, 4, 2))


class _PoolNCHWcOp(_Pool2DWindow):
    """A 2-D pool on NCHW{b}c: the plain pool (``PLAIN``, NCHW) of every channel; the
    plain pools' attributes but ``layout``."""

    PLAIN: ClassVar[type[GraphOp]]
    count_include_pad = BoolAttribute()

    @classmethod
    def infer(cls, operand_types: Types, attrs: Attrs) -> list[TensorType]:
        _expect_count(operand_types, 1)
        _check_element(operand_types[0], "float")
        shape = list(operand_types[0].get_shape())
        if len(shape) != 5:
            raise ShapeError(f"input must be 5-D (NCHW{{b}}c), got rank {len(shape)}")
        n, cb, h, w, b = shape
        et = operand_types[0].element_type
        (plain,) = cls.PLAIN.infer([tensor_type([n, cb * b, h, w], et)], Attrs(attrs.raw, cls.PLAIN))
        _, _, oh, ow = plain.get_shape()
        return [tensor_type([n, cb, oh, ow, b], et)]

    def reference(self, x: np.ndarray) -> list[np.ndarray]:
        n, cb, oh, ow, b = self.out.type.get_shape()
        plain_t = tensor_type([n, cb * b, oh, ow], self.out.type.element_type)
        plain = self.PLAIN.create(result_types=[plain_t], attributes=dict(self.attributes))
        (out,) = plain.reference(_blocked_to_plain(x))
        return [_plain_to_blocked(out, b)]


@irdl_op_definition
class MaxPool2DNCHWcOp(_PoolNCHWcOp):
    """max_pool2d on a channel-blocked tensor ``[N, C/b, H, W, b]`` (NCHW{b}c);
    attributes as max_pool2d (no ``layout``). Built by ``alter-op-layout``.

    ```mlir
    %y = graph.max_pool2d_nchwc %x {kernel = array<i64: 3, 3>, strides = array<i64: 2, 2>} : (tensor<1x2x9x9x16xf32>) -> tensor<1x2x4x4x16xf32>
    ```
    """

    name = "graph.max_pool2d_nchwc"
    PLAIN: ClassVar[type[GraphOp]] = MaxPool2DOp


@irdl_op_definition
class AvgPool2DNCHWcOp(_PoolNCHWcOp):
    """avg_pool2d on a channel-blocked tensor ``[N, C/b, H, W, b]`` (NCHW{b}c);
    attributes as avg_pool2d (no ``layout``). Built by ``alter-op-layout``.

    ```mlir
    %y = graph.avg_pool2d_nchwc %x {kernel = array<i64: 2, 2>, strides = array<i64: 2, 2>, count_include_pad = 1 : i64} : (tensor<1x2x8x8x16xf32>) -> tensor<1x2x4x4x16xf32>
    ```
    """

    name = "graph.avg_pool2d_nchwc"
    PLAIN: ClassVar[type[GraphOp]] = AvgPool2DOp
