"""Kernel forms: the contract between a kernel generator and its default schedule.

A generator whose kernel has a schedule of its own stamps the kernel with its form
(``tloop.form = "conv2d.flat"``), chosen from a typed plan of the op, never from
loop names; ``lowering/schedule/defaults.py`` looks the form up in
``FORM_SCHEDULES`` and runs that schedule, which fails loudly (ScheduleError
naming kernel, form and what is missing) when the kernel does not hold what the
form promises. Kernels without a form get the generic schedule only.

Each form names the loops and buffers its schedule addresses (``FORM_LOOPS``,
``FORM_BUFFERS``): the generator must emit them, and the dispatcher checks them
before the schedule runs.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.dialects import func
from xdsl.dialects.builtin import DenseArrayBase, StringAttr, i64

from dlc.dialects.tloop import FORM_ATTR

# one constant per form (the attribute's value)
CONV2D_DIRECT = "conv2d.direct"  # kernels/conv.py: n oc oh ow / ic kh kw, clamped padding
CONV2D_FLAT = "conv2d.flat"  # kernels/conv.py: flattened padded planes, n oc p / ic kh kw
CONV2D_GROUPED = "conv2d.grouped"  # kernels/conv_grouped.py: n g oc p / ic kh kw, per-group tile
CONV2D_DEPTHWISE = "conv2d.depthwise"  # kernels/conv_grouped.py: per-channel dw_n dw_c / p / kh kw
CONV2D_NCHWC = "conv2d_nchwc"  # kernels/conv_nchwc.py: n ocb oh ow oc / icb kh kw ic
POOL2D_NCHWC = "pool2d_nchwc"  # kernels/nchwc_ops.py: n cb oh ow / ... c
MATMUL = "matmul"  # kernels/matmul.py with two matrix operands: b.. m n / k
MATMUL_PACKED = "matmul_packed"  # kernels/matmul.py, B in column panels: m n nr / k, into c[M, N/R, R]
QGEMM = "qgemm"  # kernels/quantized_fast.py: integer GEMM, m nb nl / k4 j (+ panel, write-back)
QGEMM_TILE_ATTR = "tloop.qgemm_tile"  # a qgemm kernel's register tile: array<i64: rows, 16-lane vectors>
# the int8 dot kernels' s8 weight values (as packed, padding aside), array<i64: min, max>:
# whether a byte-pair dot can saturate (int8_dot.dot_form) is a fact of the constants,
# stated by the generator
INT8_WEIGHT_RANGE_ATTR = "tloop.int8_weight_range"
ATTENTION = "attention"  # kernels/attention.py: b h / i / key blocks (sd sj, pj pd), online softmax
QCONV2D_NCHWC = "qconv2d_nchwc"  # kernels/quantized_nchwc.py: n ocbo oh owt / icb kh kw ic4 tb t nl j
QDEPTHWISE_NCHWC = "qdepthwise_nchwc"  # kernels/quantized_depthwise_nchwc.py: n cb oh owt / c (T pixels)

def stamp_weight_range(kernel: func.FuncOp, packed) -> None:
    """State the s8 weight values' range on an int8 dot kernel (INT8_WEIGHT_RANGE_ATTR)."""
    kernel.attributes[INT8_WEIGHT_RANGE_ATTR] = DenseArrayBase.from_list(
        i64, [int(packed.min()), int(packed.max())] if packed.size else [0, 0])


# the loops each form's schedule addresses by name (the generator's side of the contract)
FORM_LOOPS: dict[str, tuple[str, ...]] = {
    CONV2D_DIRECT: ("n", "oc", "oh", "ow", "ic", "kh", "kw"),
    CONV2D_FLAT: ("n", "oc", "p", "ic", "kh", "kw"),
    CONV2D_GROUPED: ("n", "g", "oc", "p", "ic", "kh", "kw", "out_n"),
    CONV2D_DEPTHWISE: ("dw_n", "dw_c", "p", "kh", "kw", "out_h"),
    CONV2D_NCHWC: ("n", "ocb", "oh", "ow", "oc", "icb", "kh", "kw", "ic"),
    POOL2D_NCHWC: ("n", "cb", "oh", "ow"),
    MATMUL: ("m", "n", "k"),
    MATMUL_PACKED: ("m", "n", "nr", "k"),
    QGEMM: ("m", "nb", "nl", "k4", "j", "z_m", "z_n"),
    ATTENTION: ("b", "h", "i", "sd", "sr", "sj", "sm", "se", "pj", "pr", "pd"),
    QCONV2D_NCHWC: ("n", "ocbo", "oh", "icb", "kh", "kw", "ic4", "tb", "t", "nl", "j"),
    QDEPTHWISE_NCHWC: ("n", "cb", "oh", "owt", "c"),
}
# the buffers (arguments or scratch, by name) each form's schedule addresses; the flat
# form's accumulator is %outpad or %outflat (its schedule checks which)
FORM_BUFFERS: dict[str, tuple[str, ...]] = {
    CONV2D_DIRECT: ("out",),
    CONV2D_FLAT: (),
    CONV2D_GROUPED: ("outpad",),
    CONV2D_DEPTHWISE: ("row",),
    CONV2D_NCHWC: ("out",),
    POOL2D_NCHWC: (),
    MATMUL: ("a", "b", "out"),
    MATMUL_PACKED: ("a", "b", "c"),
    QGEMM: ("acc", "ap", "wp"),
    ATTENTION: ("kt", "vp", "s", "acc", "stat"),
    QCONV2D_NCHWC: ("acc", "wp"),
    QDEPTHWISE_NCHWC: ("wq",),
}
FORMS = tuple(FORM_LOOPS)


def stamp_form(kernel: func.FuncOp, form: str) -> func.FuncOp:
    """Record `kernel`'s form (one of FORMS)."""
    if form not in FORM_LOOPS:
        raise ValueError(f"unknown kernel form '{form}' (known: {', '.join(FORMS)})")
    kernel.attributes[FORM_ATTR] = StringAttr(form)
    return kernel


def form_of(kernel: func.FuncOp) -> str | None:
    attr = kernel.attributes.get(FORM_ATTR)
    return attr.data if isinstance(attr, StringAttr) else None


@dataclass(frozen=True)
class KernelOptions:
    """What lower-to-loops tells the generators (its pass options).

    ``flat_conv``: the CPU kernel forms: f32 NCHW conv2d in the flattened padded form
    (or its grouped / depthwise variants) and the row-vectorized pools. Off for the GPU
    lowering, which maps output loops to threads. ``int8_accumulators``: the 16-lane i32
    accumulators the int8 convs' register tiles may hold (``Target.int8_accumulators``:
    16 with AVX-512's 32 zmm, 4 with AVX2's 16 ymm)."""

    flat_conv: bool = False
    int8_accumulators: int = 16
