"""Default CPU schedule of the integer GEMM form (``qgemm``, kernels/quantized_fast.py).

Written with the schedule primitives only::

    parallel for (mo, nbo) fused            MR x (NV*16) blocks of the i32 accumulators
                                            (a wide N: parallel (nbp, mo), for nbq: column
                                            panels of PANEL_BYTES of packed weights, in L2)
      acc_r = acc tile                      cache_write: MR x NV*16 i32 in registers
      for k4                                4 k at a time
        for mi (unrolled)  for nbi (unrolled)
          for nl  for j                     marked dlc.int8_dot = "vpdpbusd" (VNNI target):
                                            one vpdpbusd (lowering/to_llvm/int8_dot.py)
      acc tile = acc_r
    conv panel (im2col)                     pa_n pa_oh pa_c pa_kh pa_kw pa_ow: x read along
                                            its rows (the ap2 rows it writes, Kp bytes apart,
                                            are one output row's: L1-resident)
    conv write-back                         o_n o_pb o_c o_pi: the i32 tile of PB rows x N
                                            channels read from L1, out rows written 1..PB
                                            bytes contiguous (acc is [p][channel], out NCHW)
    the other nests: the generic default (parallel outer loop, vectorized inner loop)

The register tile (8 x 2 vectors = 16 zmm accumulators, or 12 x 1) is the kernel's
(``QGemmPlan.tile``): the kernel pads M and N to it, so no tail nests exist. The k
order of the sums does not matter (integers), but it is kept anyway.

Target facts come from the Target: ``avx512vnni`` + ``avx512bw`` get the vpdpbusd loop;
any other target keeps the loop unmarked (the portable form: j unrolled, LLVM
vectorizes the 16 lanes with ``vpmaddwd`` where it can). The parallel loop takes the
kernel's whole block grid (``Target.num_cores`` threads share it at run time).
"""

from __future__ import annotations

from xdsl.dialects.builtin import DenseArrayBase, StringAttr, UnitAttr

from dlc.lowering.kernels.forms import QCONV2D_NCHWC, QDEPTHWISE_NCHWC, QGEMM, INT8_WEIGHT_RANGE_ATTR, QGEMM_TILE_ATTR
from dlc.lowering.schedule.core import Schedule, ScheduleError, loop_name
from dlc.lowering.schedule.defaults_forms import form_schedule
from dlc.lowering.to_llvm.control_flow import ROLLED_ATTR
from dlc.lowering.to_llvm.int8_dot import DOT_ATTR, dot_form
from dlc.target import Target


def qgemm_tile(s: Schedule) -> tuple[int, int]:
    """(MR, NV) of the kernel's register tile, as the kernel states it (QGEMM_TILE_ATTR:
    the generator padded M and N to it from the target's accumulator budget)."""
    attr = s.kernel.attributes.get(QGEMM_TILE_ATTR)
    if not isinstance(attr, DenseArrayBase) or len(attr.get_values()) != 2:
        raise ScheduleError(f"@{s.kernel.sym_name.data}: form qgemm needs {QGEMM_TILE_ATTR} = "
                            f"array<i64: rows, vectors> (the kernel's register tile)")
    mr, nv = (int(v) for v in attr.get_values())
    if mr < 1 or nv < 1 or s.loop("m").trip_count % mr or s.loop("nb").trip_count % nv:
        raise ScheduleError(f"@{s.kernel.sym_name.data}: {QGEMM_TILE_ATTR} = {mr} x {nv} does not divide "
                            f"m ({s.loop('m').trip_count}) and nb ({s.loop('nb').trip_count})")
    return mr, nv


@form_schedule(QGEMM)
def schedule_qgemm(s: Schedule, target: Target) -> bool:
    mr, nv = qgemm_tile(s)
    with s.atomic():
        s.split("m", mr, "mo", "mi")
        s.split("nb", nv, "nbo", "nbi")
        k4 = s.loop("k4").trip_count
        blocks = s.loop("nbo").trip_count
        panel = max(1, PANEL_BYTES // (k4 * 4 * 16 * nv))  # register-tile columns per L2 panel
        if blocks > panel and blocks % panel == 0:
            # column panels of the packed weights that stay in L2 while every row block
            # passes over them (the whole weight streamed per row block otherwise)
            s.split("nbo", panel, "nbp", "nbq")
            s.reorder("nbp", "mo", "nbq", "k4", "mi", "nbi", "nl", "j")
            par = s.fuse("nbp", "mo", name="mo_nbo")
            tile = "nbq"
        else:
            s.reorder("mo", "nbo", "k4", "mi", "nbi", "nl", "j")
            par = s.fuse("mo", "nbo", name="mo_nbo")
            tile = "mo_nbo"
        if par.trip_count >= 2:
            s.parallel(par)
        s.cache_write("acc", tile, "acc_r")
        s.unroll("mi")
        s.unroll("nbi")
        _mark_dot(s, target, "", "k4")
    names = {loop_name(loop) for loop in s.loops()}
    if "pa_ow" in names:
        _conv_panel(s)
    if "o_p" in names:
        _conv_write_back(s)
    return True


PANEL_BYTES = 256 * 1024  # packed-weight panel per row-block pass: a quarter of a 1 MiB L2
WRITE_BACK_ROWS = 64  # output positions per write-back block: 64 x N i32 of acc in L1


def _conv_panel(s: Schedule) -> None:
    """im2col along the input rows; a shape the steps refuse keeps the generic default."""
    try:
        with s.atomic():
            s.reorder("pa_n", "pa_oh", "pa_c", "pa_kh", "pa_kw", "pa_ow")
            par = s.fuse("pa_n", "pa_oh", name="pa_noh")
            if par.trip_count >= 2:
                s.parallel(par)
    except ScheduleError:
        pass  # (the panel is then the generic default's)


def _conv_write_back(s: Schedule) -> None:
    """The transposing write-back in blocks of output positions (a divisor of the plane,
    so no guard sits in the vector loop)."""
    plane = s.loop("o_p").trip_count
    block = next((d for d in range(WRITE_BACK_ROWS, 7, -1) if plane % d == 0), None)
    if block is None or block == plane and s.loop("o_n").trip_count < 2:
        return
    try:
        with s.atomic():
            if block < plane:
                s.split("o_p", block, "o_pb", "o_pi")
                s.reorder("o_n", "o_pb", "o_c", "o_pi")
                par = s.fuse("o_n", "o_pb", name="o_npb")
            else:
                par = s.loop("o_n")
            if par.trip_count >= 2:
                s.parallel(par)
            # (not vectorized: its acc reads are N apart, which the vectorize check refuses)
    except ScheduleError:
        pass  # (the generic default's)


def _parallel_rows(s: Schedule, outer: list[str]) -> None:
    """The blocked convs' outer loops (batch, channel block, output row) fused into one
    parallel loop. Batch 1: the batch loop is expanded away first, so the fused loop's
    indices are one div/rem deep (a third fused loop's nested div/rem defeats the
    dependence analysis, as for f32)."""
    if s.loop(outer[0]).trip_count == 1:
        s.unroll(outer[0], expand=True)
        outer = outer[1:]
    par = s.loop(outer[0])
    for name in outer[1:]:
        par = s.fuse(par, name, name=f"{loop_name(par)}_{name}")
    if par.trip_count >= 2:
        s.parallel(par)


@form_schedule(QCONV2D_NCHWC)
def schedule_qconv2d_nchwc(s: Schedule, target: Target) -> bool:
    """The blocked int8 conv (kernels/quantized_nchwc.py)::

        parallel for (n, ocbo, oh) fused        rows of output x tiles of output blocks
          for owt                               T pixels of the row
            acc = 0                             B x T x 16 i32, all loops unrolled
            for icb, kh, kw, ic4                the reduction
              for tb, t (unrolled)              B x T accumulators (zmm once promoted)
                for nl, j                       one dot step (int8_dot.py)
            accm = acc                          unrolled: one vector store per accumulator
            out = requant(accm)                 unrolled B x T, 16 lanes vectorized

    Every index of ``acc`` is a constant once the unrolled loops are, so LLVM keeps it in
    registers (SROA); the write-back reads the copy ``accm`` in a vectorized loop (a
    vectorized loop over ``acc`` itself would keep the tile in memory: a store after every
    vpdpbusd, measured 4-5x slower on ResNet's 3x3 layers; an unrolled write-back is
    scalar requantization, 3x slower on a 1x1 of 64 channels). Without VNNI the dot loop
    gets an AVX2 form (``_mark_dot``) or, without AVX2 (the Target's features), is left
    as written with j expanded for LLVM's vectorizer. The tail nest (``_u``: the
    last pixels of rows not a multiple of T) gets the same steps."""
    names = {loop_name(loop) for loop in s.loops()}
    with s.atomic():
        for suffix in ("", "_u"):
            if f"nl{suffix}" not in names:
                continue
            _parallel_rows(s, [f"{name}{suffix}" for name in ("n", "ocbo", "oh")])
        for suffix in ("", "_u"):
            if f"nl{suffix}" not in names:
                continue
            for name in ("tb", "t", "z_b", "z_t", "z_l", "c_b", "c_t", "c_l", "o_b", "o_t"):
                s.unroll(f"{name}{suffix}")
            s.vectorize(f"o_l{suffix}")
            _mark_dot(s, target, suffix, "ic4")
    return True


def weight_range(s: Schedule) -> tuple[int, int] | None:
    """The packed weights' (min, max) as the kernel states them (INT8_WEIGHT_RANGE_ATTR),
    or None (not stated: any s8 value)."""
    attr = s.kernel.attributes.get(INT8_WEIGHT_RANGE_ATTR)
    if not isinstance(attr, DenseArrayBase) or len(attr.get_values()) != 2:
        return None
    low, high = (int(v) for v in attr.get_values())
    return low, high


def _mark_dot(s: Schedule, target: Target, suffix: str, reduction: str) -> None:
    """Mark the nl / j dot loop with the target's form (int8_dot.dot_form: vpdpbusd with
    VNNI; with AVX2 pmaddubsw for weights that cannot saturate it, else pmaddwd), else
    expand j: LLVM vectorizes the 16 lanes as written.
    The AVX2 forms' sums are plain i32 adds: the innermost reduction loop stays rolled
    (ROLLED_ATTR), else LLVM unrolls a short one (a 3x3's kw x ic4: 12 steps) and
    reassociates every step's sums into live partial sums (280 ymm spills in a 3x3 of 64
    channels; vpdpbusd accumulates inside the instruction, so it has none)."""
    form = dot_form(target, weight_range(s))
    if form is not None:
        s.loop(f"nl{suffix}").attributes[DOT_ATTR] = StringAttr(form)
        if form != "vpdpbusd":
            s.loop(f"{reduction}{suffix}").attributes[ROLLED_ATTR] = UnitAttr()
    else:
        s.unroll(f"j{suffix}", expand=True)


@form_schedule(QDEPTHWISE_NCHWC)
def schedule_qdepthwise_nchwc(s: Schedule, target: Target) -> bool:
    """The blocked int8 depthwise conv (kernels/quantized_depthwise_nchwc.py)::

        parallel for (n, cb, oh) fused          rows of output of one channel block
          for owt                               T pixels of the row
            for c  vectorized, whole vector     the block's lanes: T accumulators and the
                                                KH x KW weight vectors in registers

    Batch 1: ``n`` expanded away first (the fused loop's indices stay one div/rem deep).
    ``c`` is kept one whole vector (``dlc.whole_vector``, a power-of-two block): LLVM
    would otherwise unroll it and vectorize the pixels with gathers. The tail nest
    (``_u``) gets the same steps."""
    names = {loop_name(loop) for loop in s.loops()}
    with s.atomic():
        for suffix in ("", "_u"):
            if f"c{suffix}" not in names:
                continue
            _parallel_rows(s, [f"{name}{suffix}" for name in ("n", "cb", "oh")])
            c = s.vectorize(f"c{suffix}")
            if c.trip_count > 1 and c.trip_count & (c.trip_count - 1) == 0:
                c.attributes["dlc.whole_vector"] = UnitAttr()
    return True
