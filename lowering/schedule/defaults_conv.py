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

Each tile covers its whole reduction, so it starts at zero instead of loading
the zero-filled accumulator (the zero-fill nest is dropped: bit-identical,
``fma(x, w, +0)`` rounds like the product). When the accumulator is the
output's ``[n, o, OH * OW]`` view (kernels/conv.py, "output in place"), the
fused epilogue moves into the tiles' write-back (schedule/epilogue.py), and
``P = OH * OW`` that is not a multiple of 16 ends with a tail nest of one
whole 16-column tile per channel block over columns ``[P - 16, P)`` that
writes back only its last ``P % 16`` columns (a narrow tile would keep a
masked vector in memory: ~10x slower per column); every output element is
still written once. The tail nest is parallel only when it is big
(:data:`PARALLEL_TAIL_WORK`). The tile's vector loops carry
``dlc.whole_vector`` (lower-to-llvm: no full unroll before vectorizing);
otherwise a write-back with relu's ``llvm.maximum`` stays scalar and the
tile in memory (measured 10x slower).

Weight-major, the copy-out (padded forms) runs inside the parallel loop after
each channel block's tiles (:func:`copy_out_per_block`): those rows of outp
are final and in cache, and every thread copies its own channels.

The padding copy's column loop is split so that its middle part has no
clamp and vectorizes. The padding copy and the input-major copy-out stay
serial (vectorized): each parallel nest wakes the thread team once, and on a
loaded machine (2 cores shared by many processes) every wake-up can cost a
scheduler time slice. ResNet-50 at 2 threads under load, alternating runs:
parallel copies 1510-1716 ms, serial copies 101-533 ms; the copies are
~1-2% of a conv's time on an idle machine.
"""

from __future__ import annotations

import math

from xdsl.dialects import arith, memref
from xdsl.dialects.builtin import FloatAttr, UnitAttr

from dlc.dialects.tloop import ForOp
from dlc.lowering.schedule.affine import Digit, analyse
from dlc.lowering.schedule.core import (
    LoopHeader,
    Schedule,
    ScheduleError,
    append_to_body,
    body_ops,
    enclosing_loops,
    inner_loops,
    loop_name,
)
from dlc.lowering.schedule.defaults_dense import (
    _allow_contract,
    _fuse_all,
    _split_padding_columns,
    _vectorizable,
    _vectorize_copies,
    with_fused_epilogue,
)
from dlc.lowering.schedule.defaults_forms import form_error, form_schedule
from dlc.lowering.schedule.space import Knob, Space, int_choices
from dlc.lowering.schedule.epilogue import _fuse_into, fuse_epilogue
from dlc.lowering.kernels.forms import CONV2D_FLAT
from dlc.target import Target

VECTOR = 16  # f32 lanes of the column loop (one zmm, two ymm)
PARALLEL_TAIL_WORK = 1 << 20  # FMAs of the tail tiles worth a second thread-team wake-up


def _accumulator(s: Schedule):
    """The buffer the accumulation nest sums into: ``outpad`` or the output's flat view."""
    acc = s.loop("p")
    stores = [op for op in acc.walk() if isinstance(op, memref.StoreOp)]
    names = {st.memref.name_hint for st in stores}
    return stores[0].memref if len(names) == 1 and names <= {"outpad", "outflat"} else None


def _channel_block(oc: int, most: int) -> int:
    """Output channels per register tile: the largest of most, 8, 4, 2 dividing `oc`."""
    for block in (8, 4, 2):
        if block <= most and oc % block == 0:
            return block
    return 1


def conv_register_problem(ocb: int, cols: int, target: Target, allowed: int = 0) -> str | None:
    """Why an `ocb` x `cols` f32 register tile does not fit the target's vector registers
    (two stay for the input vector and the weight broadcast; `allowed`: at least this many
    accumulators are accepted, the default tile's)."""
    lanes = target.f32_lanes
    need = ocb * -(-cols // lanes)
    if need > max(target.vector_registers - 2, allowed):
        return (f"register tile of {ocb} channels x {cols} columns needs {need} vector accumulators; "
                f"'{target}' has {target.vector_registers} vector registers")
    return None


def conv2d_flat_space(s: Schedule, target: Target) -> Space | None:
    """The knobs of :func:`schedule_conv2d_flat`: register tile (ocb channels x cols
    columns), tile loop order (weight- or input-major), the copy-out inside the parallel
    loop, the unrolled channel loop; the default is the heuristics above."""
    oc, p = s.loop("oc").trip_count, s.loop("p").trip_count
    ic, kh, kw = (s.loop(x).trip_count for x in ("ic", "kh", "kw"))
    cols = min(VECTOR, p)
    ocb = _channel_block(oc, target.conv_channel_block)
    x_bytes = s.kernel.body.block.args[0].type.get_shape()[1] * p * 4
    weight_major = x_bytes <= oc * ic * kh * kw * 4
    default_need = ocb * -(-cols // target.f32_lanes)

    def constraint(c: dict) -> str | None:
        return conv_register_problem(c["ocb"], c["cols"], target, default_need)

    return Space(CONV2D_FLAT, (
        Knob("ocb", int_choices(ocb, (1, 2, 4, 8, 16), lambda v: oc % v == 0), default=ocb),
        Knob("cols", int_choices(cols, (8, 16, 32), lambda v: v <= p), default=cols),
        Knob("order", ("weight", "input"), default="weight" if weight_major else "input"),
        Knob("copy_out_in_block", (True, False)),  # (weight-major, padded output only)
        Knob("unroll", (True, False)),  # the ocb channels of the tile unrolled
    ), constraint)


@form_schedule(CONV2D_FLAT, space=conv2d_flat_space)
@with_fused_epilogue
def schedule_conv2d_flat(s: Schedule, machine: Target, config: dict | None = None) -> bool:
    """The register-blocked schedule above on the flattened form (kernels/conv.py);
    ``config``: a point of :func:`conv2d_flat_space` (None: its default)."""
    target = _accumulator(s)
    if target is None:
        raise form_error(s.kernel, CONV2D_FLAT, "the accumulation nest (loop 'p') does not store "
                                                "into one buffer %outpad or %outflat")
    if config is None:
        config = conv2d_flat_space(s, machine).default()
    oc, p = s.loop("oc").trip_count, s.loop("p").trip_count
    ic, kh, kw = (s.loop(x).trip_count for x in ("ic", "kh", "kw"))
    # whole 16-column tiles, then one narrower tail tile (outflat's P = OH * OW, any size)
    cols = config["cols"]  # (P < 16: one narrow tile)
    p0, tail = p - p % cols, p % cols
    ocb = config["ocb"]
    weight_major = config["order"] == "weight"
    # output in place: the fused epilogue is applied in place at the end of the p loop
    epilogue = target.name_hint == "outflat" and "tloop.fused" in s.kernel.attributes
    with s.atomic():
        s.distribute("p")  # the zero-fill, the accumulation (p_s1), the epilogue (p_s2)
        s.distribute("oc")
        s.distribute("n")
        if weight_major:  # parallel over (n, oco) before the tail splits off inside it
            s.split("oc_s1", ocb, "oco", "oci")
            s.reorder("n_s1", "oco", "p_s1", "ic", "kh", "kw", "oci")
            par = _fuse_all(s, ["n_s1", "oco"])
            if par.trip_count >= 2:
                s.parallel(par)
            if tail:  # p_s1_t, ic_t, kh_t, kw_t, oci_t: the tail columns of the same block
                s.split_range("p_s1", p0, "_t")
            for suffix, width in [("", cols), ("_t", tail)][:2 if tail else 1]:
                s.split("p_s1" + suffix, width, "po" + suffix, "pi" + suffix)
                s.reorder(*(name + suffix for name in ("po", "ic", "kh", "kw", "oci", "pi")))
        else:
            if tail:  # the tail columns get a nest of their own after the main one (parallel
                # only when big: each parallel nest wakes the thread team)
                s.split_range("p_s1", p0, "_t")  # p_s1_t, ic_t, kh_t, kw_t
                s.distribute("oc_s1", ["oc_s1", "oc_s1_t"])
                s.distribute("n_s1", ["n_s1", "n_s1_t"])
            for suffix, width in [("", cols), ("_t", tail)][:2 if tail else 1]:
                s.split("oc_s1" + suffix, ocb, "oco" + suffix, "oci" + suffix)
                s.split("p_s1" + suffix, width, "po" + suffix, "pi" + suffix)
                order = ["po", "oco"] if not suffix else ["oco", "po"]
                s.reorder("n_s1" + suffix, *(t + suffix for t in order),
                          *(name + suffix for name in ("ic", "kh", "kw", "oci", "pi")))
            par = _fuse_all(s, ["n_s1", "po"])
            if par.trip_count >= 2:
                s.parallel(par)
            if tail and oc * ic * kh * kw * cols >= PARALLEL_TAIL_WORK:
                tail_top = _fuse_all(s, ["n_s1_t", "oco_t"])
                if tail_top.trip_count >= 2:
                    s.parallel(tail_top)
        for suffix in ("", "_t")[:2 if tail else 1]:
            s.cache_write(target, ("po" if weight_major or suffix else "oco") + suffix, "acc" + suffix)
        start_tiles_at_zero(s, "n", target.name_hint, ["acc_d0", "acc_t_d0"][:2 if tail else 1])
        if tail:
            _widen_tail_tile(s, p, cols)
        for suffix in ("", "_t")[:2 if tail else 1]:
            if ocb > 1 and config["unroll"]:
                s.unroll("oci" + suffix)
            if s.loop("pi" + suffix).trip_count >= 2:
                s.vectorize("pi" + suffix)
        _vectorize_copies(s, ("acc_d", "acc_out_d", "acc_t_d", "acc_t_out_d"))
    if (weight_major and par.loop_kind == "parallel" and target.name_hint == "outpad"
            and config["copy_out_in_block"]):
        copy_out_per_block(s, par, ocb)  # each thread copies out the channels it computed
    if epilogue and fuse_epilogue(s.kernel, target) and tail:  # into the main tiles' write-back
        _fuse_tail_epilogue(s, target)  # and what it left (the tail columns) into the tail's
    # the tile's vector loops are one vector each: LLVM must not fully unroll them first
    # (a write-back with relu's llvm.maximum then stays scalar and the tile in memory)
    for name in ("pi", "acc_d2", "acc_out_d2", "pi_t", "acc_t_d2", "acc_t_out_d2")[:6 if tail else 3]:
        if s.loop(name).loop_kind == "vectorized":
            s.loop(name).attributes["dlc.whole_vector"] = UnitAttr()
    try:  # the padding copy: its middle columns need no clamp and vectorize (stride 1)
        with s.atomic():
            _split_padding_columns(s, "pad_q")
    except ScheduleError:
        pass  # the generic default still schedules the unsplit copy
    # the copies stay serial (vectorized only): one thread-team wake-up per conv, not three
    for loop in s.loops():
        if (loop_name(loop).startswith(("pad_q", "out_w", "p_s2")) and loop.trip_count >= 2
                and not inner_loops(loop) and _vectorizable(s, loop_name(loop))):
            s.vectorize(loop)
    _allow_contract(s.kernel)
    return True


def start_tiles_at_zero(s: Schedule, fill_name: str, target: str, copy_ins: list[str]) -> None:
    """Start the register tiles at 0 and drop the zero-fill nest `fill_name` (storing 0
    into buffer %`target`; the flat, grouped and depthwise forms).

    Each register tile covers its whole reduction (the reduction loops are inside the tile
    loop) and the tiles partition `target`, so every tile's copy-in (the innermost loop of
    `copy_ins`) would read the zero-fill's zeros: the tiles start from the same bits
    (``fma(x, w, +0)`` rounds like the product)."""
    fill = s.loop(fill_name)
    stores = [op for op in fill.walk() if isinstance(op, memref.StoreOp)]
    if len(stores) != 1 or stores[0].memref.name_hint != target or not _is_positive_zero(stores[0].value):
        raise s.fail(fill, f"the zero-fill nest is not the expected `%{target}[...] = 0`")
    for copy_in in copy_ins:
        loads = [op for op in s.loop(copy_in).walk() if isinstance(op, memref.LoadOp)]
        if len(loads) != 1 or loads[0].memref is not stores[0].memref:
            raise s.fail(copy_in, f"the tile copy-in is not a copy of %{target}")
        loads[0].res.replace_all_uses_with(stores[0].value)
        loads[0].detach()
        loads[0].erase()
    fill.detach()
    fill.erase()


def _is_positive_zero(value) -> bool:
    """A float constant +0.0 (what the zero-fill stores: the tiles start from the same bits)."""
    op = value.owner
    if not isinstance(op, arith.ConstantOp) or not isinstance(op.value, FloatAttr):
        return False
    v = op.value.value.data
    return v == 0.0 and math.copysign(1.0, v) > 0


def _fuse_tail_epilogue(s: Schedule, target) -> None:
    """Move the rest of the epilogue nest (the tail columns ``[P0, P)``, which
    :func:`fuse_epilogue` leaves: it fuses write-backs whose box starts at 0) into the
    write-back of the tail tiles, when that write-back covers exactly those elements once;
    otherwise leave it a nest of its own."""
    nests = [op for op in s.kernel.body.block.ops if isinstance(op, ForOp)]
    loops = [nests[-1]]
    while len(loops) < 3:
        inner = body_ops(loops[-1])
        if len(inner) != 1 or not isinstance(inner[0], ForOp):
            return
        loops.append(inner[0])
    body = body_ops(loops[-1])
    ivs = [l.induction_var for l in loops]
    loads = [op for op in body if isinstance(op, memref.LoadOp) and op.memref is target]
    stores = [op for op in body if isinstance(op, memref.StoreOp)]
    if (len(loads) != 1 or len(stores) != 1 or stores[0] is not body[-1] or stores[0].memref is not target
            or list(loads[0].indices) != ivs or list(stores[0].indices) != ivs
            or any(op.regions for op in body) or any(l.stride != 1 for l in loops)):
        return
    box = [(l.lower, l.upper - 1) for l in loops]
    writebacks = [op for op in s.kernel.walk() if isinstance(op, memref.StoreOp) and op.memref is target
                  and enclosing_loops(op)[0] is not loops[0]]
    for store in writebacks:
        around = enclosing_loops(store)
        copy_top = next((l for l in around if loop_name(l) == "acc_t_out_d0"), None)
        forms = [analyse(i) for i in store.indices]
        if copy_top is None or any(f is None or any(not isinstance(k, Digit) for k in f.terms) for f in forms):
            continue
        indexed = {id(k.loop) for f in forms for k in f.terms}
        if any(id(l) not in indexed and l.trip_count > 1 for l in around):
            continue  # a loop revisiting the same elements
        if [f.range_over({id(l) for l in around}) for f in forms] != box:
            continue
        _fuse_into(store, [], copy_top, loops, body, loads[0], stores[0])
        loops[0].detach()
        loops[0].erase()
        return


def _widen_tail_tile(s: Schedule, p: int, cols: int) -> None:
    """Compute the tail tile (columns ``[P0, P)``, fewer than `cols`) as a whole `cols`-wide
    tile over ``[P - cols, P)`` that writes back only its last ``P - P0`` columns.

    A narrow tile keeps a non-power-of-two vector, masked, in memory (measured ~10x slower
    per column than a full tile). The widened tile reads only columns the main tiles read
    too, starts at zero (:func:`start_tiles_at_zero`), and every output element is still
    written once, so an epilogue reading a buffer that aliases the output stays right."""
    po, pi = s.loop("po_t"), s.loop("pi_t")
    tail = pi.trip_count
    copy_in, write_back = s.loop("acc_t_d2"), s.loop("acc_t_out_d2")
    if (po.trip_count != 1 or po.lower != p - tail or p < cols or copy_in.trip_count != tail
            or write_back.trip_count != tail or write_back.lower != 0):
        raise s.fail(po, "the tail tile is not the expected one-tile nest")
    acc = next(op for op in s.kernel.walk() if isinstance(op, memref.AllocaOp)
               and op.memref.name_hint == "acc_t")
    shape = list(acc.memref.type.get_shape())
    wide = memref.AllocaOp.get(acc.memref.type.element_type, shape=shape[:-1] + [cols])
    wide.memref.name_hint = "acc_t"
    acc.parent.insert_op_before(wide, acc)
    acc.memref.replace_all_uses_with(wide.memref)
    acc.detach()
    acc.erase()
    _set_bounds(po, p - cols, p - cols + 1)
    _set_bounds(pi, 0, cols)
    _set_bounds(copy_in, 0, cols)
    _set_bounds(write_back, cols - tail, cols)


def _set_bounds(loop: ForOp, lower: int, upper: int) -> None:
    loop.lb = type(loop.lb)(lower, loop.lb.type)
    loop.ub = type(loop.ub)(upper, loop.ub.type)


def copy_out_per_block(s: Schedule, par: ForOp, ocb: int, depth: int = 4, per_group=None) -> None:
    """Move the copy-out nest (``out[n, c, h, w] = f(outpad[n, c, h * WQ + w])``, loops
    ``out_n out_c ...``) into the parallel loop `par` over output-channel blocks, after the
    block's tiles: the block's rows of outpad are final there (its tiles cover every column)
    and still in cache, and the copy runs on all threads with no thread-team wake-up of its
    own. Left as is unless the nest is exactly that copy.

    The flat form: `par` runs over (n, block); each iteration copies channels
    ``oco + ci``, ``ci < ocb``. ``per_group(s, loops, ivs, store, pad_load, values)``: the
    grouped form's hook (defaults_conv_grouped.py), which checks the per-group copy and
    returns ``build(lane, channel) -> (ops of the lane loop, the op to insert)``, or None."""
    copy = next((op for op in s.kernel.body.block.ops if isinstance(op, ForOp) and loop_name(op) == "out_n"), None)
    if copy is None:
        return
    loops = [copy]
    while len(loops) < depth:
        inner = body_ops(loops[-1])
        if len(inner) != 1 or not isinstance(inner[0], ForOp):
            return
        loops.append(inner[0])
    out = s.kernel.body.block.args[-1]
    ivs = [l.induction_var for l in loops]
    stores = [op for op in copy.walk() if isinstance(op, memref.StoreOp)]
    pad_loads = [op for op in copy.walk() if isinstance(op, memref.LoadOp) and op.memref.name_hint == "outpad"]
    if (len(stores) != 1 or stores[0].memref is not out or any(l.lower != 0 or l.stride != 1 for l in loops)
            or len(pad_loads) != 1):
        return
    values = {v.name_hint: v for op in body_ops(par) for v in op.results}
    block_start = values.get("oco")
    if block_start is None:
        return
    if per_group is not None:
        build = per_group(s, loops, ivs, stores[0], pad_loads[0], values)
    else:  # out[n, c, ...] = f(outpad[n, c, ...]), the batch from the parallel loop
        n_value = values.get("n_s1")
        if (list(stores[0].indices) != ivs or list(pad_loads[0].indices[:2]) != ivs[:2]
                or loops[1].upper % ocb or n_value is None):
            return

        def build(lane, channel):
            return [channel, loops[2].clone({ivs[0]: n_value, ivs[1]: channel.result})], lane
    if build is None:
        return
    lane = LoopHeader(0, ocb, 1, "serial", s.fresh_name("out_ci")).make()
    channel = arith.AddiOp(block_start, lane.induction_var)
    ops, outer = build(lane, channel)
    append_to_body(lane, ops)
    par.body.block.insert_op_before(outer, par.body.block.last_op)
    copy.detach()
    copy.erase()
