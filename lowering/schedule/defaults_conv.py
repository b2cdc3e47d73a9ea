"""Default CPU schedule of the flattened padded conv2d form (lowering/kernels/conv.py).

The accumulation nest ``n oc p ic kh kw`` (``outp[n, oc, p] += w[oc, ic, kh, kw]
* xp[n, g + ic, phase(kh, kw) * PLANE + p + offset(kh, kw)]``, stride 1 in ``p``)
becomes a register-blocked micro-kernel, with the schedule primitives only::

    parallel for (n, outer tile loop) fused
      for inner tile loop                       (oco, po) or (po, oco): see below
        acc = outp tile [OCB x COLS]            cache_write: SROA -> zmm registers
        for ic  for kh  for kw                  the reduction, in the source order
          for oci (unrolled)  for pi (vectorized)
            acc[oci, pi] += w[oc, ic, kh, kw] * xp[ic, p + ...]   (contract -> FMA)

OCB x COLS = 8 output channels x 16 columns: 8 zmm accumulators, one
unaligned vector load of the input and 8 memory-operand weight broadcasts
per 8 FMAs (``vfmadd231ps mem{1to16}``); on one thread this reaches ~90% of
the measured FMA peak on ResNet-50's 3x3 layers. Larger tiles (8 x 32,
16 x 16, 4 x 48) were measured worse: LLVM fully unrolls their column loops
before vectorizing and the tile stays scalar, in memory. Without AVX-512
(16 ymm registers) the tile is 4 x 16 (8 ymm).

The tile loops run input-tile-major (``po`` outside ``oco``) when the padded
input is larger than the weights, so that the input window of one tile stays
in L1/L2 while every output-channel block reads it; otherwise weight-major
(each block's weights stay in L2 across the column tiles). Either way the
fused parallel loop has at least 4 iterations on every ResNet-50 layer.

The padding copy's column loop is split so that its middle part has no
clamp and vectorizes. The zero-fill, the padding copy and the copy-out stay
serial (vectorized): each parallel nest wakes the thread team once, and on a
loaded machine (2 cores shared by many processes) every wake-up can cost a
scheduler time slice. ResNet-50 at 2 threads under load, alternating runs:
parallel copies 1510-1716 ms, serial copies 101-533 ms; the copies are
~1-2% of a conv's time on an idle machine.
"""

from __future__ import annotations

from dlc.lowering.schedule.core import Schedule, ScheduleError, loop_name
from dlc.lowering.schedule.defaults_dense import (
    _allow_contract,
    _fuse_all,
    _names,
    _split_padding_columns,
    _vectorizable,
    _vectorize_copies,
    host_has_avx512,
)

VECTOR = 16  # f32 lanes of the column loop (one zmm, two ymm)
FLAT_NEST = ["n", "oc", "p", "ic", "kh", "kw"]


def is_flat_conv(s: Schedule) -> bool:
    """A kernel of the flattened form (its loop names are kernels/conv.py's)."""
    names = _names(s)
    return "pad_n" in names and "out_n" in names and all(n in names for n in FLAT_NEST)


def _channel_block(oc: int, most: int) -> int:
    """Output channels per register tile: the largest of most, 8, 4, 2 dividing `oc`."""
    for block in (8, 4, 2):
        if block <= most and oc % block == 0:
            return block
    return 1


def schedule_conv2d_flat(s: Schedule) -> bool:
    """The register-blocked schedule above on the flattened form; False if not that form."""
    if not is_flat_conv(s):
        return False
    oc, p = s.loop("oc").trip_count, s.loop("p").trip_count
    ic, kh, kw = (s.loop(x).trip_count for x in ("ic", "kh", "kw"))
    cols = VECTOR if p % VECTOR == 0 else 8  # P is a multiple of 16 (kernels/conv.py FLAT_TILE)
    ocb = _channel_block(oc, 8 if host_has_avx512() else 4)
    x_bytes = s.kernel.body.block.args[0].type.get_shape()[1] * p * 4
    w_bytes = oc * ic * kh * kw * 4
    with s.atomic():
        s.distribute("p")  # the zero-fill of outp, then the accumulation (p_s1)
        s.distribute("oc")
        s.distribute("n")
        s.split("oc_s1", ocb, "oco", "oci")
        s.split("p_s1", cols, "po", "pi")
        tiles = ["po", "oco"] if x_bytes > w_bytes else ["oco", "po"]
        s.reorder("n_s1", *tiles, "ic", "kh", "kw", "oci", "pi")
        par = _fuse_all(s, ["n_s1", tiles[0]])
        if par.trip_count >= 2:
            s.parallel(par)
        s.cache_write("outpad", tiles[1], "acc")
        if ocb > 1:
            s.unroll("oci")
        s.vectorize("pi")
        _vectorize_copies(s, ("acc_d", "acc_out_d"))
        if s.loop("p").trip_count >= 2 and _vectorizable(s, "p"):  # the zero-fill of outp
            s.vectorize("p")
    try:  # the padding copy: its middle columns need no clamp and vectorize (stride 1)
        with s.atomic():
            _split_padding_columns(s, "pad_q")
    except ScheduleError:
        pass  # the generic default still schedules the unsplit copy
    # the copies stay serial (vectorized only): one thread-team wake-up per conv, not three
    for loop in s.loops():
        if (loop_name(loop).startswith(("pad_q", "out_w")) and loop.trip_count >= 2
                and _vectorizable(s, loop_name(loop))):
            s.vectorize(loop)
    _allow_contract(s.kernel)
    return True
