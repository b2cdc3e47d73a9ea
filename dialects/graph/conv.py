"""Convolutions: conv2d, conv_transpose2d, deform_conv2d, and the window
attribute rules (strides, dilations, padding, layouts) the pools share.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from xdsl.dialects.builtin import TensorType
from xdsl.irdl import irdl_op_definition, operand_def, result_def, traits_def, var_operand_def
from xdsl.traits import Pure

from dlc.dialects.graph_base import (
    Attrs,
    EnumAttribute,
    GraphOp,
    IntAttribute,
    IntsAttribute,
    or_default,
    ShapeError,
    tensor_type,
)
from dlc.dialects.graph.common import (
    _check_element,
    _contiguous,
    _expect_count,
    _same_element,
    Types,
)
from dlc.dialects.traits import FusionAnchor, WidenF16


_DATA_LAYOUTS = ("NCHW", "NHWC")
_KERNEL_LAYOUTS = ("OIHW", "HWIO")


def _conv_out(size: int, k: int, stride: int, pad: int, dilation: int, dim: str) -> int:
    span = dilation * (k - 1) + 1
    num = size + pad - span
    if num < 0:
        raise ShapeError(
            f"{dim}: window of extent {span} is larger than the padded input extent {size + pad}"
        )
    return num // stride + 1


def _window_attrs(attrs: Attrs, spatial: int = 2):
    strides = or_default(attrs.strides, (1,) * spatial)
    dil = or_default(attrs.dilations, (1,) * spatial)
    pads = or_default(attrs.padding, (0,) * (2 * spatial))
    for name, v, n in (("strides", strides, spatial), ("dilations", dil, spatial), ("padding", pads, 2 * spatial)):
        if len(v) != n:
            raise ShapeError(f"attribute '{name}' must have {n} values, got {len(v)}")
    if min(strides) < 1 or min(dil) < 1:
        raise ShapeError("strides and dilations must be >= 1")
    if min(pads) < 0:
        raise ShapeError("padding must be >= 0")
    return strides, dil, pads


def _nchw(shape: Sequence[int], layout: str) -> list[int]:
    if layout == "NHWC":
        return [shape[0], shape[3], shape[1], shape[2]]
    return list(shape)


def _from_nchw(shape: Sequence[int], layout: str) -> list[int]:
    if layout == "NHWC":
        return [shape[0], shape[2], shape[3], shape[1]]
    return list(shape)


def _conv_operands(operand_types: Types, kind: str, ranks: tuple[int, int] = (4, 4),
                   ranks_wanted: str = "input and weight must be 4-D"):
    """(element type, input shape, weight shape) of a convolution's two operands, which
    share an element type of ``kind`` and have ``ranks``; raises ShapeError."""
    _expect_count(operand_types, 2)
    element = _same_element(operand_types)
    _check_element(operand_types[0], kind)
    x, w = (list(t.get_shape()) for t in operand_types)
    if (len(x), len(w)) != ranks:
        raise ShapeError(f"{ranks_wanted}, got ranks {len(x)} and {len(w)}")
    return element, x, w


class _ConvWindow(GraphOp):
    """The window attributes every 2-D convolution declares (read by ``_window_attrs``):
    ``strides`` [2], ``padding`` [top, left, bottom, right], ``dilations`` [2]."""

    strides = IntsAttribute(default=(1, 1))
    padding = IntsAttribute(default=(0, 0, 0, 0))
    dilations = IntsAttribute(default=(1, 1))


class _GroupedConvWindow(_ConvWindow):
    """The window attributes and ``groups`` (conv2d, conv_transpose2d, deform_conv2d)."""

    groups = IntAttribute(default=1)


@irdl_op_definition
class Conv2DOp(_GroupedConvWindow):
    """2-D convolution (cross-correlation). Attributes: ``strides`` [2],
    ``padding`` [top, left, bottom, right], ``dilations`` [2], ``groups``,
    ``data_layout`` (NCHW | NHWC), ``kernel_layout`` (OIHW | HWIO).

    ```mlir
    %y = graph.conv2d %x, %w {strides = array<i64: 2, 2>, padding = array<i64: 1, 1, 1, 1>} : (tensor<1x3x9x9xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x5x5xf32>
    ```
    """

    name = "graph.conv2d"
    data_layout = EnumAttribute(*_DATA_LAYOUTS)
    kernel_layout = EnumAttribute(*_KERNEL_LAYOUTS)
    x = operand_def(TensorType)
    weight = operand_def(TensorType)
    out = result_def(TensorType)
    traits = traits_def(Pure(), FusionAnchor(dense=True), WidenF16())

    @classmethod
    def infer(cls, operand_types: Types, attrs: Attrs) -> list[TensorType]:
        element, x, w = _conv_operands(operand_types, "numeric")
        dl, kl = attrs.data_layout, attrs.kernel_layout
        n, c, h, wd = _nchw(x, dl)
        o, i, kh, kw = w if kl == "OIHW" else [w[3], w[2], w[0], w[1]]
        groups = attrs.groups
        if groups < 1 or c % groups or o % groups:
            raise ShapeError(f"groups={groups} must divide input channels {c} and output channels {o}")
        if i * groups != c:
            raise ShapeError(
                f"weight has {i} input channels per group but input has {c} channels "
                f"with groups={groups}"
            )
        (sh, sw), (dh, dw), (pt, pl, pb, pr) = _window_attrs(attrs)
        oh = _conv_out(h, kh, sh, pt + pb, dh, "height")
        ow = _conv_out(wd, kw, sw, pl + pr, dw, "width")
        return [tensor_type(_from_nchw([n, o, oh, ow], dl), element)]

    def reference(self, x: np.ndarray, w: np.ndarray) -> list[np.ndarray]:
        a = self.attrs
        dl, kl = a.data_layout, a.kernel_layout
        if dl == "NHWC":
            x = x.transpose(0, 3, 1, 2)
        if kl == "HWIO":
            w = w.transpose(3, 2, 0, 1)
        (sh, sw), (dh, dw), (pt, pl, pb, pr) = _window_attrs(a)
        out = _conv2d_nchw(x, w, (sh, sw), (pt, pl, pb, pr), (dh, dw), a.groups)
        if dl == "NHWC":
            out = out.transpose(0, 2, 3, 1)
        return [_contiguous(out)]


def _conv2d_nchw(x, w, strides, pads, dilations, groups) -> np.ndarray:
    n, c, h, wd = x.shape
    o, cpg, kh, kw = w.shape
    sh, sw = strides
    dh, dw = dilations
    acc = np.float64 if x.dtype.kind == "f" else np.int64
    xp = np.pad(x.astype(acc), ((0, 0), (0, 0), (pads[0], pads[2]), (pads[1], pads[3])))
    oh = (xp.shape[2] - dh * (kh - 1) - 1) // sh + 1
    ow = (xp.shape[3] - dw * (kw - 1) - 1) // sw + 1
    out = np.zeros((n, o, oh, ow), dtype=acc)
    opg = o // groups
    for g in range(groups):
        xs = xp[:, g * cpg:(g + 1) * cpg]
        ws = w[g * opg:(g + 1) * opg].astype(acc)
        for i in range(kh):
            for j in range(kw):
                patch = xs[:, :, i * dh: i * dh + sh * (oh - 1) + 1: sh,
                           j * dw: j * dw + sw * (ow - 1) + 1: sw]
                out[:, g * opg:(g + 1) * opg] += np.einsum("nchw,oc->nohw", patch, ws[:, :, i, j])
    return out.astype(x.dtype)


@irdl_op_definition
class ConvTranspose2DOp(_GroupedConvWindow):
    """2-D transposed convolution, NCHW data, weight ``[C_in, C_out/groups, KH, KW]``.
    Output extent: ``(H-1)*stride - pad_begin - pad_end + dilation*(K-1) + output_padding + 1``.

    ```mlir
    %y = graph.conv_transpose2d %x, %w {strides = array<i64: 2, 2>} : (tensor<1x4x3x3xf32>, tensor<4x2x3x3xf32>) -> tensor<1x2x7x7xf32>
    ```
    """

    name = "graph.conv_transpose2d"
    output_padding = IntsAttribute(default=(0, 0))
    x = operand_def(TensorType)
    weight = operand_def(TensorType)
    out = result_def(TensorType)
    traits = traits_def(Pure(), WidenF16())

    @classmethod
    def infer(cls, operand_types: Types, attrs: Attrs) -> list[TensorType]:
        element, x, w = _conv_operands(operand_types, "float")
        groups = attrs.groups
        if w[0] != x[1]:
            raise ShapeError(f"weight has {w[0]} input channels but input has {x[1]}")
        if groups < 1 or x[1] % groups:
            raise ShapeError(f"groups={groups} must divide input channels {x[1]}")
        (sh, sw), (dh, dw), (pt, pl, pb, pr) = _window_attrs(attrs)
        output_padding = attrs.output_padding
        if len(output_padding) != 2:
            raise ShapeError(f"attribute 'output_padding' must have 2 values, got {len(output_padding)}")
        oph, opw = output_padding
        for op_, s, d in ((oph, sh, dh), (opw, sw, dw)):
            if not 0 <= op_ < max(s, d):
                raise ShapeError(
                    f"output_padding {list(output_padding)} must be >= 0 and smaller than "
                    "the stride or the dilation"
                )
        oh = (x[2] - 1) * sh - pt - pb + dh * (w[2] - 1) + oph + 1
        ow = (x[3] - 1) * sw - pl - pr + dw * (w[3] - 1) + opw + 1
        if oh < 1 or ow < 1:
            raise ShapeError(f"output extent {oh}x{ow} is empty")
        return [tensor_type([x[0], w[1] * groups, oh, ow], element)]

    def reference(self, x: np.ndarray, w: np.ndarray) -> list[np.ndarray]:
        (sh, sw), (dh, dw), (pt, pl, pb, pr) = _window_attrs(self.attrs)
        groups = self.groups
        n, c, h, wd = x.shape
        _, opg, kh, kw = w.shape
        out_t = self.out.type.get_shape()
        full_h = (h - 1) * sh + dh * (kh - 1) + 1 + max(out_t[2] + pt + pb - ((h - 1) * sh + dh * (kh - 1) + 1), 0)
        full_w = (wd - 1) * sw + dw * (kw - 1) + 1 + max(out_t[3] + pl + pr - ((wd - 1) * sw + dw * (kw - 1) + 1), 0)
        full = np.zeros((n, opg * groups, full_h, full_w), dtype=np.float64)
        cpg = c // groups
        for g in range(groups):
            xs = x[:, g * cpg:(g + 1) * cpg].astype(np.float64)
            ws = w[g * cpg:(g + 1) * cpg].astype(np.float64)
            for i in range(kh):
                for j in range(kw):
                    contrib = np.einsum("nchw,co->nohw", xs, ws[:, :, i, j])
                    full[:, g * opg:(g + 1) * opg,
                         i * dh: i * dh + sh * (h - 1) + 1: sh,
                         j * dw: j * dw + sw * (wd - 1) + 1: sw] += contrib
        out = full[:, :, pt:pt + out_t[2], pl:pl + out_t[3]]
        return [_contiguous(out).astype(x.dtype)]


@irdl_op_definition
class DeformConv2DOp(_GroupedConvWindow):
    """Deformable 2-D convolution (ONNX DeformConv): each kernel tap (i, j) of
    output (oh, ow) reads x bilinearly (zero outside) at
    ``(oh*sh - pad_top + i*dh + dy, ow*sw - pad_left + j*dw + dx)``, where
    (dy, dx) come from ``offset`` (N x offset_groups*KH*KW*2 x OH x OW), and
    is scaled by the optional ``mask`` (N x offset_groups*KH*KW x OH x OW).
    Operands: x (N x C x H x W), w (OC x C/groups x KH x KW), offset, then
    optionally mask (rank 4) and bias (OC, rank 1). ``padding`` is [top, left,
    bottom, right]. Result: N x OC x OH x OW.

    ```mlir
    %y = graph.deform_conv2d %x, %w, %off, %b {padding = array<i64: 1, 1, 1, 1>} : (tensor<1x2x4x5xf32>, tensor<3x2x2x2xf32>, tensor<1x8x5x6xf32>, tensor<3xf32>) -> tensor<1x3x5x6xf32>
    ```
    """

    name = "graph.deform_conv2d"
    offset_groups = IntAttribute(default=1)
    args = var_operand_def(TensorType)
    out = result_def(TensorType)
    traits = traits_def(Pure())

    @classmethod
    def infer(cls, operand_types: Types, attrs: Attrs) -> list[TensorType]:
        _expect_count(operand_types, (3, 5))
        x_t, w_t, off_t = operand_types[:3]
        for t, what in ((x_t, "x"), (w_t, "w"), (off_t, "offset")):
            _check_element(t, "float", what)
        _same_element(operand_types)
        mask_t, bias_t = deform_conv_extras(operand_types)
        xs, ws, offs = x_t.get_shape(), w_t.get_shape(), off_t.get_shape()
        if len(xs) != 4 or len(ws) != 4 or len(offs) != 4:
            raise ShapeError("x, w and offset must have rank 4 (N x C x H x W, OC x C/groups x KH x KW, N x 2*offset_groups*KH*KW x OH x OW)")
        (sh, sw), (dh, dw), (pt, pl, pb, pr) = deform_conv_window(attrs)
        groups, ogroups = attrs.groups, attrs.offset_groups
        if groups < 1 or ogroups < 1 or xs[1] % groups or ws[0] % groups or xs[1] % ogroups:
            raise ShapeError(f"groups {groups} and offset_groups {ogroups} must divide the {xs[1]} input channels (and groups the {ws[0]} output channels)")
        if ws[1] * groups != xs[1]:
            raise ShapeError(f"w dim 1 ({ws[1]}) times groups ({groups}) must equal the {xs[1]} input channels")
        kh, kw = ws[2], ws[3]
        oh = (xs[2] + pt + pb - ((kh - 1) * dh + 1)) // sh + 1
        ow = (xs[3] + pl + pr - ((kw - 1) * dw + 1)) // sw + 1
        if oh < 1 or ow < 1:
            raise ShapeError(f"the kernel {kh}x{kw} does not fit the padded input {xs[2]}x{xs[3]}")
        want = [xs[0], 2 * ogroups * kh * kw, oh, ow]
        if list(offs) != want:
            raise ShapeError(f"offset must have shape {want}, got {list(offs)}")
        if mask_t is not None and list(mask_t.get_shape()) != [xs[0], ogroups * kh * kw, oh, ow]:
            raise ShapeError(f"mask must have shape {[xs[0], ogroups * kh * kw, oh, ow]}, got {list(mask_t.get_shape())}")
        if bias_t is not None and list(bias_t.get_shape()) != [ws[0]]:
            raise ShapeError(f"bias must have shape [{ws[0]}], got {list(bias_t.get_shape())}")
        return [tensor_type([xs[0], ws[0], oh, ow], x_t.element_type)]

    def reference(self, x, w, offset, *extras):
        (sh, sw), (dh, dw), (pt, pl, _, _) = deform_conv_window(self.attrs)
        groups, ogroups = self.groups, self.offset_groups
        mask_t, bias_t = deform_conv_extras([o.type for o in self.operands])
        mask = extras[0] if mask_t is not None else None
        bias = extras[-1] if bias_t is not None else None
        n, c, h, wd = x.shape
        oc, cpg, kh, kw = w.shape
        _, _, oh, ow = offset.shape
        off = offset.reshape(n, ogroups, kh, kw, 2, oh, ow).astype(np.float64)
        m = np.ones((n, ogroups, kh, kw, oh, ow)) if mask is None else mask.reshape(n, ogroups, kh, kw, oh, ow)
        ys = (np.arange(oh) * sh - pt)[None, None, None, None, :, None] + (np.arange(kh) * dh)[None, None, :, None, None, None]
        xs = (np.arange(ow) * sw - pl)[None, None, None, None, None, :] + (np.arange(kw) * dw)[None, None, None, :, None, None]
        y = ys + off[:, :, :, :, 0]  # n, og, kh, kw, oh, ow
        xx = xs + off[:, :, :, :, 1]
        # bilinear samples of every input channel: cols[n, c, kh, kw, oh, ow]
        xg = x.astype(np.float64).reshape(n, ogroups, c // ogroups, h, wd)
        cols = np.zeros((n, ogroups, c // ogroups, kh, kw, oh, ow))
        y0, x0 = np.floor(y), np.floor(xx)
        for dy, dx in ((0, 0), (0, 1), (1, 0), (1, 1)):
            yi, xi = y0 + dy, x0 + dx
            weight = (1 - np.abs(y - yi)) * (1 - np.abs(xx - xi)) * m
            valid = (yi >= 0) & (yi < h) & (xi >= 0) & (xi < wd)
            yc = np.clip(yi, 0, h - 1).astype(np.int64)
            xc = np.clip(xi, 0, wd - 1).astype(np.int64)
            b = np.arange(n)[:, None, None, None, None, None]
            gi = np.arange(ogroups)[None, :, None, None, None, None]
            vals = xg[b, gi, :, yc, xc]  # n, og, kh, kw, oh, ow, c/og
            vals = np.moveaxis(vals, -1, 2)
            cols += np.where(valid[:, :, None], vals, 0.0) * weight[:, :, None]
        cols = cols.reshape(n, groups, cpg * kh * kw, oh * ow)
        wg = w.astype(np.float64).reshape(groups, oc // groups, cpg * kh * kw)
        out = np.einsum("gok,ngkp->ngop", wg, cols).reshape(n, oc, oh, ow)
        if bias is not None:
            out = out + bias.reshape(1, oc, 1, 1)
        return [out.astype(x.dtype)]


def deform_conv_extras(types: Types):
    """(mask type or None, bias type or None) of deform_conv2d's operands 4 and 5."""
    mask = bias = None
    for t in types[3:]:
        if len(t.get_shape()) == 4 and mask is None and bias is None:
            mask = t
        elif len(t.get_shape()) == 1 and bias is None:
            bias = t
        else:
            raise ShapeError("operands after offset must be an optional mask (rank 4) then an optional bias (rank 1)")
    return mask, bias


def deform_conv_window(attrs: Attrs):
    strides, dilations, padding = attrs.strides, attrs.dilations, attrs.padding
    if len(strides) != 2 or len(dilations) != 2 or len(padding) != 4:
        raise ShapeError("strides and dilations need 2 values, padding 4 ([top, left, bottom, right])")
    if min(strides) < 1 or min(dilations) < 1 or min(padding) < 0:
        raise ShapeError("strides and dilations must be >= 1 and padding >= 0")
    return strides, dilations, padding
