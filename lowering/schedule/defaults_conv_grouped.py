"""Default CPU schedules of the grouped and depthwise conv2d forms
(lowering/kernels/conv_grouped.py).

Grouped: the accumulation nest ``n g oc p ic kh kw`` gets defaults_conv.py's
register tile, within one group. With enough (group, channel block) pairs
(``BLOCK_MAJOR_MIN_ITERATIONS``) every nest of the kernel runs in one parallel loop::

    parallel for (g, oco) fused                  groups x 8-channel blocks
      wp[g, oco:oco+8, ...] = padded w           compute_at: the block's weights
      for n
        for po                                   16-column tiles
          acc = 0 [8 x 16]                       cache_write: registers (starts at 0:
          for ic  for kh  for kw                 the zero-fill nest is dropped)
            for oci (unrolled)  for pi (vectorized, one zmm)
              acc[oci, pi] += wp[g, oc, ic, kh, kw] * xp[n, g * CPG + ic, p + ...]
          outp tile = acc
        tail tile: the same, P % 16 columns wide
      out[n, g * OPG + oco + ci, ...] = f(outp[n, g, oco + ci, ...])   ci < 8, oco + ci < OPG

so nothing but the input padding copy runs serially while the other threads wait
(ShuffleNet's 136-channel 28 x 28 group conv at 2 threads on a busy machine: 345 -> 246
us, most of it the copy-out; on one thread the same time). With fewer blocks the parallel
loop runs over (g, column tile) instead, and the tail columns, copy-out and weight padding
stay serial nests around it.

``g * CPG + ic`` is the same for the 8 unrolled channels, so one input vector
load feeds 8 FMAs (the flat form's tile over the global channel index loads
one vector per channel unless LLVM proves ``oc // OPG`` uniform, as for a
power-of-two OPG). ShuffleNet's group-4 layers give 4 x 4 to 4 x 17 blocks,
so 2 threads split them evenly. The input padding copy (and, column-major, the
other copies) is left to the generic schedule's policy.

Depthwise: per channel, a tile of DW_VECTORS x 16 columns with the taps
outside it (one weight broadcast feeds 4 FMAs); the channel loop is parallel
when the layer is big enough (DEPTHWISE_PARALLEL_FACTOR).

Both: short copy rows (7 to 56 columns) become whole 8-lane vectors and a
scalar tail (:func:`_vector_rows`): LLVM otherwise fully unrolls them and
vectorizes the loop around them with scatter stores.
"""

from __future__ import annotations

from xdsl.dialects import arith, memref
from xdsl.dialects.builtin import StringAttr, UnitAttr

from dlc.dialects.tloop import ForOp
from dlc.lowering.schedule.annotate import vectorize_problem
from dlc.lowering.schedule.core import (
    LoopHeader,
    Schedule,
    ScheduleError,
    append_to_body,
    body_ops,
    index_constant,
    inner_loops,
    loop_name,
    make_if,
)
from dlc.lowering.schedule.defaults_conv import (
    VECTOR,
    _channel_block,
    conv_register_problem,
    copy_out_per_block,
    start_tiles_at_zero,
)
from dlc.lowering.schedule.defaults_dense import (
    _allow_contract,
    _names,
    _split_padding_columns,
    _vectorizable,
    _vectorize_copies,
)
from dlc.lowering.schedule.defaults_forms import form_schedule
from dlc.lowering.schedule.space import Knob, Space, int_choices
from dlc.lowering.kernels.forms import CONV2D_DEPTHWISE, CONV2D_GROUPED
from dlc.target import Target

def _whole_vectors(s: Schedule, names: list[str]) -> None:
    """Mark the register tile's vectorized loops of one f32 vector (16 lanes) as such: LLVM
    then vectorizes them at that width (zmm) instead of the default 8 lanes, and does not
    unroll them first (lower_to_llvm.py, as defaults_conv.py / defaults_nchwc.py do)."""
    names_now = set(_names(s))
    for name in names:
        if name in names_now:
            loop = s.loop(name)
            if loop.loop_kind == "vectorized" and loop.trip_count == VECTOR:
                loop.attributes["dlc.whole_vector"] = UnitAttr()


# the parallel loop runs over (group, output-channel block), with the block's weight
# padding, tail columns and copy-out inside, when it has at least this many iterations, an
# even count or twice as many (2 threads: at most 1/32 idle at the end); otherwise over
# (group, column tile), with those three nests serial around it. ShuffleNet's layers have
# 16 to 68 blocks; on one thread both orders run at the same speed (within 1%)
BLOCK_MAJOR_MIN_ITERATIONS = 8
BLOCK_MAJOR_ALWAYS = True  # also without tail columns (False: only with them)


def conv2d_grouped_space(s: Schedule, target: Target) -> Space | None:
    """The knobs of :func:`schedule_conv2d_grouped`: register tile (ocb x cols), the
    parallel loop over (group, channel block) or (group, column tile) (``block_major``),
    the tile order of the latter, the unrolled channel loop; default: the heuristics."""
    groups, ocp, p = (s.loop(x).trip_count for x in ("g", "oc", "p"))
    ic, kh, kw = (s.loop(x).trip_count for x in ("ic", "kh", "kw"))
    cols = min(VECTOR, p)
    ocb = _channel_block(ocp, target.conv_channel_block)
    tail = p % cols
    blocks = groups * (ocp // ocb)
    block_major = (blocks >= BLOCK_MAJOR_MIN_ITERATIONS and (tail or BLOCK_MAJOR_ALWAYS)
                   and (blocks % 2 == 0 or blocks >= 2 * BLOCK_MAJOR_MIN_ITERATIONS))
    input_major = ic * p * 4 > ocp * ic * kh * kw * 4  # the input window vs the group's weights
    default_need = ocb * -(-cols // target.f32_lanes)

    def constraint(c: dict) -> str | None:
        return conv_register_problem(c["ocb"], c["cols"], target, default_need)

    return Space(CONV2D_GROUPED, (
        Knob("ocb", int_choices(ocb, (1, 2, 4, 8, 16), lambda v: ocp % v == 0), default=ocb),
        Knob("cols", int_choices(cols, (8, 16, 32), lambda v: v <= p), default=cols),
        Knob("block_major", (True, False), default=block_major),
        Knob("order", ("input", "weight"), default="input" if input_major else "weight"),  # column-major only
        Knob("unroll", (True, False)),
    ), constraint)


@form_schedule(CONV2D_GROUPED, space=conv2d_grouped_space)
def schedule_conv2d_grouped(s: Schedule, target: Target, config: dict | None = None) -> bool:
    """The register-blocked schedule above on the grouped form (kernels/conv_grouped.py);
    ``config``: a point of :func:`conv2d_grouped_space` (None: its default)."""
    if config is None:
        config = conv2d_grouped_space(s, target).default()
    groups, ocp, p = (s.loop(x).trip_count for x in ("g", "oc", "p"))
    # whole 16-column tiles, then one narrower tail tile (P = OH * OW when x is read in place)
    cols = config["cols"]
    p0, tail = p - p % cols, p % cols
    ocb = config["ocb"]
    suffixes = ["", "_t"] if tail else [""]
    block_major = config["block_major"]
    with s.atomic():
        s.distribute("p")  # the zero-fill of outp, then the accumulation (p_s1)
        s.distribute("oc")
        s.distribute("g")
        s.distribute("n")
        if block_major:  # parallel over (g, oco); the block's tail columns inside it
            s.split("oc_s1", ocb, "oco", "oci")
            s.reorder("g_s1", "oco", "n_s1", "p_s1", "oci")
            # parallel before the tail splits off: the dependence check then sees one store
            s.parallel(s.fuse("g_s1", "oco", name="g_oco"))
            if "wpad_g" in _names(s):
                _pad_weights_per_block(s, "g_oco", ocb)
            par = s.loop("g_oco")
            if tail:  # p_s1_t, oci_t, ic_t, kh_t, kw_t: the tail columns of the same block
                s.split_range("p_s1", p0, "_t")
            for suffix in suffixes:
                s.split("p_s1" + suffix, cols if not suffix else tail, "po" + suffix, "pi" + suffix)
                s.reorder(*(name + suffix for name in ("po", "ic", "kh", "kw", "oci", "pi")))
            tiles = ["oco", "po"]
        else:
            if tail:  # the tail columns: a nest of their own after the main one (serial)
                s.split_range("p_s1", p0, "_t")
                for loop in ("oc_s1", "g_s1", "n_s1"):
                    s.distribute(loop, [loop, loop + "_t"])
            tiles = ["po", "oco"] if config["order"] == "input" else ["oco", "po"]
            for suffix in suffixes:
                s.split("oc_s1" + suffix, ocb, "oco" + suffix, "oci" + suffix)
                s.split("p_s1" + suffix, cols if not suffix else tail, "po" + suffix, "pi" + suffix)
            # only an outermost loop can be parallel, and fusing more than two loops would nest
            # div/mod indices (defaults_dense.schedule_matmul, step 4): the batch goes inside
            s.reorder("g_s1", tiles[0], "n_s1", tiles[1], "ic", "kh", "kw", "oci", "pi")
            if tail:
                s.reorder("g_s1_t", "n_s1_t", "oco_t", "po_t", "ic_t", "kh_t", "kw_t", "oci_t", "pi_t")
            par = s.fuse("g_s1", tiles[0], name=f"g_{tiles[0]}")
            if par.trip_count >= 2:
                s.parallel(par)
        for suffix in suffixes:
            s.cache_write("outpad", (tiles[1] if not suffix else "po") + suffix, "acc" + suffix)
            if ocb > 1 and config["unroll"]:
                s.unroll("oci" + suffix)
            if s.loop("pi" + suffix).trip_count >= 2:
                s.vectorize("pi" + suffix)
        _vectorize_copies(s, ("acc_d", "acc_out_d", "acc_t_d", "acc_t_out_d"))
        start_tiles_at_zero(s, "n", "outpad", ["acc_d0", "acc_t_d0"][:len(suffixes)])
    if block_major and par.loop_kind == "parallel":
        _copy_out_per_group_block(s, par, ocb)  # each thread copies out the channels it computed
    _whole_vectors(s, ["pi", "acc_out_d3", "pi_t", "acc_t_out_d3"])
    try:  # the padding copy: its middle columns need no clamp and vectorize (stride 1)
        with s.atomic():
            _split_padding_columns(s, "pad_q")
    except ScheduleError:
        pass  # no padding copy (a view of x), or an unsplittable one: left as is
    _copy_rows(s)
    for loop in s.loops():
        if (loop_name(loop).startswith(("pad_q", "out_w", "out_p", "wpad_w")) and loop.trip_count >= 2
                and loop.loop_kind == "serial" and not inner_loops(loop) and _vectorizable(s, loop_name(loop))):
            s.vectorize(loop)
    _allow_contract(s.kernel)
    return True


def _pad_weights_per_block(s: Schedule, par_name: str, ocb: int) -> None:
    """Move the weight padding copy (``wgroup[g, o, ...] = o < OPG ? w[g * OPG + o, ...] : 0``)
    into the parallel loop over (group, channel block): each iteration pads the block's own
    ``1 x ocb`` slice of weights right before its tiles read it, on its own thread, instead of
    the whole copy running serially before the thread team starts.

    compute_at refuses a parallel consumer in general (its recomputed tiles may overlap);
    here the moved nest covers exactly ``wgroup[g, oco:oco + ocb, ...]``, whose origins differ
    between iterations by a group or by whole blocks, so the iterations write disjoint
    elements: checked on the moved nest's extents, else everything is undone."""
    try:
        with s.atomic():
            par = s.loop(par_name)
            par.kind = StringAttr("serial")
            moved = s.compute_at("wpad_g", par)
            nest = [moved] + inner_loops(moved)
            wanted = [1, ocb] + [s.loop(n).trip_count for n in ("ic", "kh", "kw")]
            if [l.trip_count for l in nest] != wanted or len(nest) != 5:
                raise s.fail(moved, f"the moved weight copy covers {[l.trip_count for l in nest]}, not one block")
    except ScheduleError:
        pass  # not the expected padding copy: it stays a serial nest before the parallel loop
    s.loop(par_name).kind = StringAttr("parallel")


def _copy_out_per_group_block(s: Schedule, par: ForOp, ocb: int) -> None:
    """Move the copy-out nest (``out[n, g * OPG + o, ...] = f(outpad[n, g, o, ...])``) into
    the parallel loop over (group, output-channel block), after the block's tiles (main and
    tail columns, every batch): the block's rows of outpad are final there and still in
    cache, and the copy runs on all threads instead of serially after the join. Channels of
    the block past OPG (the zero padding of the group) are skipped. Left as is unless the
    nest is exactly that copy (defaults_conv.copy_out_per_block, with the per-group hook)."""
    copy_out_per_block(s, par, ocb, depth=3, per_group=lambda *args: _group_copy(*args, ocb))


def _group_copy(s: Schedule, loops, ivs, store, pad_load, values, ocb: int):
    """copy_out_per_block's per-group hook: checks ``outpad[n, c // OPG, c % OPG, ...]``;
    builds ``for n: for ci < ocb: out[n, g * OPG + oco + ci, ...] = ...`` (guarded where the
    block's channels pass OPG, the row vectorized)."""
    if list(store.indices[:2]) != ivs[:2] or pad_load.indices[0] is not ivs[0]:
        return None
    group_of, index_in_group = (pad_load.indices[i].owner for i in (1, 2))
    if not (isinstance(group_of, arith.DivUIOp) and isinstance(index_in_group, arith.RemUIOp)
            and group_of.lhs is ivs[1] and index_in_group.lhs is ivs[1]):
        return None  # not outpad[n, c // OPG, c % OPG, ...]
    groups, ocp = (pad_load.memref.type.get_shape()[i] for i in (1, 2))
    opg = loops[1].upper // groups
    group = values.get("g_s1")
    if group is None or loops[1].upper % groups or ocp % ocb or ocp < opg:
        return None
    batch = LoopHeader(0, loops[0].upper, 1, "serial", s.fresh_name("out_bn")).make()

    def build(lane, channel):
        opg_value = index_constant(opg)
        first = arith.MuliOp(group, opg_value.result)
        global_channel = arith.AddiOp(first.result, channel.result)
        rows = loops[2].clone({ivs[0]: batch.induction_var, ivs[1]: global_channel.result})
        ops = [opg_value, channel, first, global_channel]
        if ocp == opg:
            ops.append(rows)
        else:  # the block's channels past OPG are padding: nothing to copy
            valid = arith.CmpiOp(channel.result, opg_value.result, "ult")
            ops += [valid, make_if(valid.result, [rows])]
        for loop in [rows] + inner_loops(rows):  # the stride-1 row of the copy, as the generic default does
            if not inner_loops(loop) and loop.trip_count >= 2 and vectorize_problem(loop) is None:
                loop.kind = StringAttr("vectorized")
        append_to_body(batch, [lane])
        return ops, batch

    return build


# a depthwise layer goes parallel from this many multiply-adds (x MIN_PARALLEL_ITERATIONS of
# defaults.py: about 1M scalar ops, ~3 per multiply-add); below, a thread-team wake-up costs
# more than the layer (ShuffleNet's 7x7 ones take ~20 us)
DEPTHWISE_PARALLEL_FACTOR = 16


def conv2d_depthwise_space(s: Schedule, target: Target) -> Space | None:
    """The knobs of :func:`schedule_conv2d_depthwise`: vectors of 16 columns per tile
    (P is a multiple of VECTOR x DW_VECTORS: any divisor count fits), the parallel channel
    loop, the unrolled vectors; default: the heuristics."""
    from dlc.lowering.kernels.conv_grouped import DW_VECTORS
    from dlc.lowering.schedule.defaults_elementwise import MIN_PARALLEL_ITERATIONS

    n, oc, p = (s.loop(x).trip_count for x in ("dw_n", "dw_c", "p"))
    kh, kw = s.loop("kh").trip_count, s.loop("kw").trip_count
    vectors = min(DW_VECTORS, p // VECTOR)
    parallel = n * oc * p * kh * kw >= DEPTHWISE_PARALLEL_FACTOR * MIN_PARALLEL_ITERATIONS
    default_need = vectors * -(-VECTOR // target.f32_lanes)

    def constraint(c: dict) -> str | None:
        return conv_register_problem(1, VECTOR * c["vectors"], target, default_need)

    return Space(CONV2D_DEPTHWISE, (
        Knob("vectors", int_choices(vectors, range(1, 9), lambda v: p % (VECTOR * v) == 0), default=vectors),
        Knob("parallel", (True, False), default=parallel),
        Knob("unroll", (True, False)),
    ), constraint)


@form_schedule(CONV2D_DEPTHWISE, space=conv2d_depthwise_space)
def schedule_conv2d_depthwise(s: Schedule, target: Target, config: dict | None = None) -> bool:
    """Per channel: a register tile of DW_VECTORS x 16 columns with the taps outside it,
    the copies vectorized; the channel loop parallel when the layer is big enough.
    ``config``: a point of :func:`conv2d_depthwise_space` (None: its default)."""
    if config is None:
        config = conv2d_depthwise_space(s, target).default()
    vectors = config["vectors"]
    with s.atomic():
        s.distribute("p")  # the zero-fill of the row, then the accumulation (p_s1)
        s.split("p_s1", VECTOR * vectors, "po", "pr")
        s.split("pr", VECTOR, "pu", "pv")
        s.reorder("po", "kh", "kw", "pu", "pv")
        par = s.fuse("dw_n", "dw_c", name="dw_nc")
        if par.trip_count >= 2 and config["parallel"]:
            s.parallel(par)  # before cache_write: its scratch then goes inside the parallel loop
        s.cache_write("row", "po", "acc")
        if config["unroll"]:
            s.unroll("pu")
        s.vectorize("pv")
        _vectorize_copies(s, ("acc_d", "acc_out_d"))
        start_tiles_at_zero(s, "p", "row", ["acc_d0"])
    _whole_vectors(s, ["pv"])
    try:  # the padding copy: its middle columns need no clamp and vectorize (stride 1)
        with s.atomic():
            _split_padding_columns(s, "pad_q")
    except ScheduleError:
        pass
    _copy_rows(s)
    for loop in s.loops():
        if (loop_name(loop).startswith(("pad_q", "out_w")) and loop.trip_count >= 2
                and loop.loop_kind == "serial" and not inner_loops(loop) and _vectorizable(s, loop_name(loop))):
            s.vectorize(loop)
    _allow_contract(s.kernel)
    return True


ROW_VECTOR = 8  # lanes of a copy row's vectors (one ymm)


def _copy_rows(s: Schedule) -> None:
    """The output copy's rows and the padding copy's middle columns as whole vectors."""
    for name in ("out_w", "pad_q_pm"):
        if name in _names(s):
            try:
                with s.atomic():
                    _vector_rows(s, name)
            except ScheduleError:
                pass  # left to the plain vectorize hint below


def _vector_rows(s: Schedule, name: str) -> None:
    """A short copy row (the output row of a channel, 7 to 56 columns) as whole 8-lane
    vectors plus a scalar tail. Left to itself LLVM fully unrolls such a row and vectorizes
    the loop around it instead, with scatter stores (~1/3 of a depthwise layer's time)."""
    loop = s.loop(name)
    lower, t = loop.lower, loop.trip_count
    if t < ROW_VECTOR or not _vectorizable(s, name):
        return
    if t % ROW_VECTOR:
        s.split_range(name, lower + t - t % ROW_VECTOR, "_r")
    s.split(name, ROW_VECTOR, name + "_o", name + "_v")
    s.vectorize(name + "_v")
    s.loop(name + "_v").attributes["dlc.whole_vector"] = UnitAttr()
