"""Default CPU schedules of the blocked layout (alter-op-layout): conv2d_nchwc (below),
the blocked pools (:func:`schedule_pool_nchwc`), and one whole vector per channel block
in any kernel over NCHW{b}c buffers (:func:`mark_block_vectors`).

TVM's x86 conv2d_NCHWc micro-kernel, written with the schedule primitives
(distribute, split_range, split, reorder, fuse, parallel, cache_write,
unroll, vectorize)::

    parallel for (n, ocb) fused                     output-channel blocks
      for oh [/ rows], owo                          a tile of rows x cols outputs
        acc = 0 [rows, cols, ob]                    cache_write: registers (the kernel's
                                                    out = 0 nest dropped: zero_initialized_tiles)
        for icb, kh, kw, ic                         the reduction, in source order
          for row, col (unrolled)  for oc (vector)  one input scalar broadcast per output,
            acc[row, col, oc] += x[.., ic] * w[ocb, .., ic, oc]   one FMA with the weight vector

``oc`` is the block of output channels (16 floats: one AVX-512 vector, two AVX2 ones), so
the tile is rows x cols block accumulators, as many as the target's registers hold
(:func:`register_tile`, ``Target.nchwc_tile_outputs``: 10-16 with 32 zmm, 4-6 with 16 ymm); the
last oh % rows rows and ow % cols columns get tiles of their own. With one vector
per block (AVX-512) a tile takes two output-channel blocks (:func:`register_tile_blocks`:
8 columns x 2 blocks on a 56-wide row), so each input broadcast feeds two FMAs; narrow rows
(ResNet's 7 x 7) take several blocks per tile on any target (7 columns x 2 blocks), so no
row is left over for a short tile of few FMA chains; the parallel loop then also takes ``oh``
when the output-channel blocks alone are few. The
summation order over (icb, kh, kw, ic) is the source's; only mul + add
contract into FMAs. The input is pre-padded by alter-op-layout (graph.pad),
so the tile has no bounds checks.

The ``oc`` loops (and the tile copies' innermost loops) carry
``dlc.whole_vector``: lower-to-llvm then asks LLVM not to unroll them, so its
loop vectorizer sees each as one 16-lane vector; otherwise LLVM's full unroll
scalarizes them first and the SLP vectorizer rebuilds the tile from 4- and
8-lane pieces and shuffles (measured: 3-5x slower). It also forces the vectorization
(``llvm.loop.vectorize.enable``): LLVM leaves a loop of under 16 iterations that needs
runtime alias checks scalar otherwise (an int8 depthwise block of 4 or 8 lanes).
"""

from __future__ import annotations

from xdsl.dialects import arith, func, memref
from xdsl.dialects.builtin import UnitAttr

from dlc.dialects.tloop import ForOp

from dlc.lowering.schedule.core import Schedule, inner_loops, loop_name
from dlc.lowering.schedule.defaults_dense import (
    _allow_contract,
    _fuse_all,
    _names,
    _schedule_init,
    _vectorizable,
    f32_output,
)
from dlc.lowering.schedule.defaults_forms import form_schedule
from dlc.lowering.schedule.space import Knob, Space, int_choices
from dlc.lowering.schedule.zero_fill import constant_fill, has_tile, tile_copy_ins
from dlc.lowering.kernels.forms import CONV2D_NCHWC, POOL2D_NCHWC
from dlc.target import Target


MIN_TILE, MAX_TILE = 10, 16  # accumulator vectors of the register tile with 32 zmm (Target.nchwc_tile_outputs)


def register_tile(oh: int, ow: int, bounds: tuple[int, int] = (MIN_TILE, MAX_TILE)) -> tuple[int, int]:
    """(rows, columns) of the output tile held in registers, rows x columns in ``bounds``
    (outputs: ``Target.nchwc_tile_outputs``; [10, 16] with 32 zmm, [4, 6] with 16 ymm).

    Enough independent FMA chains hide the FMA latency (2 pipes x 4-5 cycles); few enough
    accumulators leave registers for the weight vector and broadcasts. Columns: a divisor
    of the row when there is one (no tail tile); narrow rows (ResNet's 7x7 with 32 zmm)
    take two or more rows per tile."""
    fewest, most = bounds
    for d in range(most, fewest - 1, -1):
        if ow % d == 0:
            return 1, d
    if ow >= fewest:
        return 1, most if ow > most else ow
    rows = min(-(-fewest // ow), oh)
    return rows, ow


PARALLEL_CHUNKS = 8  # fewer (n, output-block) chunks than this: oh joins the parallel loop


def register_tile_blocks(oh: int, ow: int, blocks: int,
                         bounds: tuple[int, int] = (MIN_TILE, MAX_TILE),
                         pair_blocks: bool = False) -> tuple[int, int, int]:
    """(rows, columns, output-channel blocks) of the register tile.

    ``pair_blocks`` (a block is one vector register: AVX-512): two blocks times 5-9
    columns (8 x 2 on a 56-wide row, 9 x 2 on 27, 7 + 6 columns on 13); an odd block
    count divisible by 3 takes three blocks times 4-6 columns (4 x 3 on 56: 200 -> 249
    GFLOP/s for MobileNet's 144-channel 1 x 1 conv; 5 x 3 on 13: 216 -> 256 for
    SqueezeNet's 1000-channel one). Each input broadcast then feeds two FMAs: 10 loads per 16 FMAs instead of 17
    per 16 with 16 x 1, which left the FMA pipes waiting on loads (measured on 1 thread:
    ResNet-50's and VGG's 3 x 3 and 1 x 1 convs 220-245 -> 270-280 GFLOP/s, 95-97% of the
    FMA peak).
    Otherwise, rows of at least ``bounds[0]`` columns: :func:`register_tile` (one block).
    Narrower rows: one whole row times k output-channel blocks, k the largest divisor of
    ``blocks`` with columns x k in ``bounds`` (7 x 2 of [10, 16]: 14 accumulators, one
    input broadcast per column feeding k FMAs); without such a divisor, the rows of
    :func:`register_tile`."""
    fewest, most = bounds
    group = 2 if blocks % 2 == 0 else 3 if blocks % 3 == 0 else 0
    if pair_blocks and group:
        # columns: 5-9 with 2 blocks, 4-6 with 3 (an odd block count: 63 for 1000 channels,
        # 9 for 144): at most 18 accumulators (11 x 2 measured 25% slower, 8 x 3 5x, 13 x 2
        # and 14 x 2 3-4x: LLVM spills); a divisor of the row if there is one (8 first with
        # 2 blocks), else the width that leaves the widest column tail
        widest = (most // 2 + 1) * 2 // group
        widths = range(widest, -(-fewest // group) - 1, -1)
        exact = sorted((c for c in widths if ow % c == 0), key=lambda c: (c != most // 2, -c))
        if exact:
            return 1, exact[0], group
        if ow > widest:
            return 1, max(widths, key=lambda c: (ow % c, c)), group
    rows, cols = register_tile(oh, ow, bounds)
    if rows == 1 and cols >= fewest:
        return 1, cols, 1
    for k in range(most // ow, 1, -1):
        if blocks % k == 0 and ow * k >= fewest:
            return 1, ow, k
    return rows, cols, 1


def _nchwc_shape(s: Schedule):
    if not f32_output(s.kernel):
        return None
    names = _names(s)
    if names[:5] != ["n", "ocb", "oh", "ow", "oc"] or not {"icb", "kh", "kw", "ic"} <= set(names):
        return None
    return tuple(s.loop(x).trip_count for x in ("n", "ocb", "oh", "ow", "oc"))


def conv2d_nchwc_space(s: Schedule, target: Target) -> Space | None:
    """The knobs of :func:`schedule_conv2d_nchwc`: the register tile (rows x cols outputs x
    ocbs channel blocks), whether oh joins the parallel loop (batch 1, one-row tiles), the
    unrolled tile; default: :func:`register_tile_blocks` within the target's
    ``nchwc_tile_outputs`` and the rule below. Tiles with more accumulator vectors than the
    target's registers (less two) are refused, unless they are no larger than the default's."""
    shape = _nchwc_shape(s)
    if shape is None:
        return None
    n, blocks, oh, ow, ocw = shape
    per_output = -(-ocw // target.f32_lanes)
    rows, cols, ocbs = register_tile_blocks(oh, ow, blocks, target.nchwc_tile_outputs(ocw),
                                            pair_blocks=per_output == 1)
    rows_parallel = n == 1 and rows == 1 and blocks // ocbs < PARALLEL_CHUNKS
    default_need = rows * cols * ocbs * per_output

    def constraint(c: dict) -> str | None:
        need = c["rows"] * c["cols"] * c["ocbs"] * per_output
        if need > max(target.vector_registers - 2, default_need):
            return (f"register tile {c['rows']} x {c['cols']} x {c['ocbs']} blocks needs {need} vector "
                    f"accumulators; '{target}' has {target.vector_registers} vector registers")
        if c["rows"] > 1 and c["cols"] != ow:
            return f"a tile of {c['rows']} rows takes whole rows (cols = {ow})"
        if c["ocbs"] > 1 and (c["rows"] != 1 or blocks % c["ocbs"]):
            return f"ocbs = {c['ocbs']} blocks per tile needs one-row tiles (rows = 1) and divides {blocks}"
        if c["rows_parallel"] and not (n == 1 and c["rows"] == 1):
            return "rows_parallel needs batch 1 and one-row tiles"
        return None

    return Space(CONV2D_NCHWC, (
        Knob("rows", int_choices(rows, range(1, 9), lambda v: v <= oh), default=rows),
        Knob("cols", int_choices(cols, range(1, 2 * MAX_TILE + 1), lambda v: v <= ow), default=cols),
        Knob("ocbs", int_choices(ocbs, (1, 2, 3, 4), lambda v: blocks % v == 0), default=ocbs),
        Knob("rows_parallel", (True, False), default=rows_parallel),
    ), constraint)


@form_schedule(CONV2D_NCHWC, space=conv2d_nchwc_space)
def schedule_conv2d_nchwc(s: Schedule, target: Target, config: dict | None = None) -> bool:
    """The register-tiled schedule above; False (kernel untouched) when it does not apply.
    ``config``: a point of :func:`conv2d_nchwc_space` (None: its default)."""
    kernel = s.kernel
    shape = _nchwc_shape(s)
    if shape is None:
        return False
    if config is None:
        config = conv2d_nchwc_space(s, target).default()
    n, blocks, oh, ow, _ = shape
    rows, cols, ocbs = config["rows"], config["cols"], config["ocbs"]
    with s.atomic():
        for name in ("oc", "ow", "oh", "ocb", "n"):
            s.distribute(name)
        _schedule_init(s, ["n", "ocb", "oh", "ow", "oc"])
        tiles = []  # (row loop or None, column loop, suffix of the nest's loop names, block loop)
        # partial tiles: the last oh % rows rows (all columns), the last ow % cols columns
        if oh % rows:
            s.split_range("oh_s1", oh - oh % rows, "_t")
            tiles.append(("oh_s1_t", "ow_s1_t", "_t", None))
        if ow % cols and ocbs == 1:  # (only with rows == 1: narrow rows are never split)
            s.split_range("ow_s1", ow - ow % cols, "_u")
            tiles.append((None, "ow_s1_u", "_u", None))
        outer = ["n_s1", "ocb_s1"]
        if ocbs > 1:  # the tile's blocks (ocbi) move inside the reduction below
            s.split("ocb_s1", ocbs, "ocbo", "ocbi")
            s.reorder("oh_s1", "ocbi")
            outer = ["n_s1", "ocbo"]
            if ow % cols:  # the column tail under the same blocks: a block loop of its own
                s.split_range("ow_s1", ow - ow % cols, "_u")
                s.distribute("ocbi", ["ocbi", "ocbi_u"])
                tiles.append((None, "ow_s1_u", "_u", "ocbi_u"))
        if config["rows_parallel"]:
            # few channel blocks: rows too, so no thread idles (batch 1 only: a third
            # fused loop's nested div/rem indices defeat the dependence analysis)
            s.unroll("n_s1", expand=True)  # one iteration: gone, so the fused loop is outermost
            outer = outer[1:] + ["oh_s1"]
        par = _fuse_all(s, outer)
        if par.trip_count >= 2:
            s.parallel(par)
        if rows > 1:
            s.split("oh_s1", rows, "oho", "ohi")
        _register_tile(s, "ohi" if rows > 1 else None, "ow_s1", cols, "", "ocbi" if ocbs > 1 else None)
        for row, col, suffix, tile_blocks in tiles:
            _register_tile(s, row, col, s.loop(col).trip_count, suffix, tile_blocks)
    _allow_contract(kernel)
    # (epilogue.fuse_epilogue is not applied: with bias/relu in the write-back, LLVM keeps
    # some tiles in memory behind run-time alias checks: ResNet's stem measured 4x slower)
    zero_initialized_tiles(kernel)
    return True


def zero_initialized_tiles(kernel: func.FuncOp) -> bool:
    """Drop the zero-fill nest: each register tile starts from zeros instead of copying
    in the zeros the nest stored (cache_write's copy-in ``acc[j] = out[i]``). True if done.

    Every output element belongs to exactly one tile (main, row-tail and column-tail
    nests partition the output) and its copy-in runs before any accumulation into it,
    so the copy-ins were the fill's only readers. Checked, else nothing changes: the
    first top-level nest only stores one constant into ``out``; every other load of
    ``out`` is a copy-in whose only use is a store into a kernel-local tile, except in
    a last nest without tiles (the fused epilogue's nest: it runs after the tiles)."""
    found = constant_fill(kernel)
    if found is None:
        return False
    fill, nests, zero = found
    last = nests[-1]  # the fused epilogue's nest, if any: no tile of its own
    remainder = last if "tloop.fused" in kernel.attributes and not has_tile(last) else None
    copy_ins = tile_copy_ins(nests, kernel.body.block.args[-1], remainder)
    if not copy_ins:
        return False
    for load, store in copy_ins:
        store.operands[0] = zero
        index_ops = [i.owner for i in load.indices if isinstance(i.owner, arith.AddiOp)]
        load.detach()
        load.erase()
        for op in index_ops:  # the copy-in's own index arithmetic, now unused
            if not op.result.uses and op.parent is not None:
                op.detach()
                op.erase()
    fill.detach()
    fill.erase()
    return True


def _register_tile(s: Schedule, row: str | None, col: str, cols: int, suffix: str,
                   blocks: str | None = None) -> None:
    """[blocks x] [rows x] cols output vectors accumulated in registers over the whole
    reduction: ``for owo: acc = out tile; for icb, kh, kw, ic: for block, row, col
    (unrolled): for oc (vector)``."""
    owo, owi = f"owo{suffix}", f"owi{suffix}"
    s.split(col, cols, owo, owi)
    reduction = [f"icb{suffix}", f"kh{suffix}", f"kw{suffix}", f"ic{suffix}"]
    vector = f"oc_s1{suffix}"
    unrolled = ([blocks] if blocks else []) + ([row] if row else []) + [owi]
    s.reorder(owo, *reduction, *unrolled, vector)
    acc = f"acc{suffix}"
    s.cache_write("out", owo, acc)
    for name in unrolled:
        s.unroll(name)
    _whole_vector(s, vector)
    # the tile copies unrolled too: constant indices let LLVM keep the tile in registers (SROA)
    for loop in s.loops():
        name = loop_name(loop)
        for prefix in (f"{acc}_d", f"{acc}_out_d"):
            if name.startswith(prefix) and name[len(prefix):].isdigit() and loop.loop_kind == "serial":
                if name == _innermost_copy_loop(s, prefix):
                    _whole_vector(s, name)
                elif loop.trip_count > 1:
                    s.unroll(loop)


def _innermost_copy_loop(s: Schedule, prefix: str) -> str:
    names = [loop_name(l) for l in s.loops() if loop_name(l).startswith(prefix)
             and loop_name(l)[len(prefix):].isdigit()]
    return max(names, key=lambda n: int(n[len(prefix):]))


def _whole_vector(s: Schedule, name: str) -> None:
    """Vectorize `name` as one vector per iteration of its enclosing loops: LLVM must not
    unroll it first (see lower_to_llvm: ``dlc.whole_vector``)."""
    if not _vectorizable(s, name):
        return
    s.vectorize(name)
    s.loop(name).attributes["dlc.whole_vector"] = UnitAttr()


def pool_nchwc_space(s: Schedule, target: Target) -> Space | None:
    """The knobs of :func:`schedule_pool_nchwc`: fusing (cb, oh) into one loop (more,
    smaller parallel chunks) and the whole-vector channel loops."""
    if _names(s)[:4] != ["n", "cb", "oh", "ow"]:
        return None
    return Space(POOL2D_NCHWC, (Knob("fuse_cb_oh", (True, False)), Knob("whole_vector", (True, False))))


@form_schedule(POOL2D_NCHWC, space=pool_nchwc_space)
def schedule_pool_nchwc(s: Schedule, target: Target, config: dict | None = None) -> bool:
    """Blocked pools (lowering/kernels/nchwc_ops.py): the generic choice of parallel
    loop (after fusing cb, oh: more, smaller chunks; fusing n too would hide the
    affine indices from the analyses) and vectorized ``c`` loops, each
    kept one whole vector: unrolled first, LLVM would vectorize the ``ow`` loop instead,
    with gathers (measured: 4-6x slower). ``config``: a point of :func:`pool_nchwc_space`."""
    from dlc.lowering.schedule.defaults_elementwise import MIN_PARALLEL_ITERATIONS, schedule_nest

    if _names(s)[:4] != ["n", "cb", "oh", "ow"]:
        return False
    if config is None:
        config = pool_nchwc_space(s, target).default()
    if config["fuse_cb_oh"]:
        with s.atomic():
            _fuse_all(s, ["cb", "oh"])
    schedule_nest(s.loop("n"), MIN_PARALLEL_ITERATIONS)
    for loop in s.loops():
        if (config["whole_vector"] and loop_name(loop).startswith("c") and loop.loop_kind == "vectorized"
                and _power_of_two(loop.trip_count)):
            loop.attributes["dlc.whole_vector"] = UnitAttr()
    return True


def _power_of_two(n: int) -> bool:
    """A vector width LLVM's loop vectorizer takes (a 3-channel image block is not one)."""
    return n > 1 and n & (n - 1) == 0


def mark_block_vectors(kernel: func.FuncOp) -> None:
    """Any kernel over NCHW{b}c buffers (elementwise ops, concat, the pools' epilogues):
    a vectorized innermost loop that walks the channel block (the last index of every
    5-D access, extent = trip count) is kept one whole vector (``dlc.whole_vector``).
    Otherwise LLVM fully unrolls it first and vectorizes the next loop out with
    stride-b gathers (measured: a per-channel mul + relu 3x slower)."""
    for loop in kernel.walk():
        if (not isinstance(loop, ForOp) or loop.loop_kind != "vectorized" or inner_loops(loop)
                or not _power_of_two(loop.trip_count)):
            continue
        accesses = [op for op in loop.walk() if isinstance(op, (memref.LoadOp, memref.StoreOp))]
        blocked = [op for op in accesses if len(op.memref.type.get_shape()) == 5]
        if blocked and all(op.indices[-1] is loop.induction_var
                           and op.memref.type.get_shape()[-1] == loop.trip_count for op in blocked):
            loop.attributes["dlc.whole_vector"] = UnitAttr()
