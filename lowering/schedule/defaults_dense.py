"""Default CPU schedules for dense kernels: matmul (BLIS/TVM style) and conv2d.

Written only with the schedule primitives (distribute, split, reorder, fuse,
parallel, cache_read, cache_write, unroll, vectorize): no hand-written loops.

matmul (``C[b, m, n] = sum_k A[b, m, k] * B[b, k, n]``, batch dims optional)::

    C = 0                                       (distributed off: its own nest; dropped
                                                when no tail nest reads it: zero_first_k_block)
    parallel for b / for (mo, no) fused         MC x NC blocks of C
      for ko                                    KC slice of the reduction
        Bp = pack B[ko:ko+KC, no:no+NC]         cache_read: L2-resident panel, laid out as
                                                NC/NR contiguous KC x NR strips (streams)
        for mi                                  MR rows
          Ap = pack A[mi:mi+MR, ko:ko+KC]       cache_read (no 4 KiB L1 aliasing)
          for ni                                MR x NR register tile
            acc = C tile                        cache_write: SROA -> registers (zeros at ko = 0)
            for ki                              k stays in order (sum order kept)
              for mr (unrolled)  for nr (vectorized)
                acc[mr, nr] += Ap[mr, ki] * Bp[ni/NR, ki, nr]   (contract -> FMA)
            C tile = epilogue(acc) at the last ko, else acc   (fused elementwise tail)

The order of the k summation is the source's (k ascending), so only the
mul + add fusion (``contract``: one rounding instead of two) changes results.

Odd sizes: the last M % MR rows and N % NR columns are split off (split_range)
into tail nests with simpler schedules, so the main part tiles exactly; cache
blocks are divisors of the main part where possible (a split guard inside the
micro-kernel on n stops its vectorization; on k it costs a branch per k step).

At most SKINNY_ROWS rows (dense layers at batch 1: matrix-vector, memory-bound) the
product takes ``_schedule_skinny`` instead: no packing, SKINNY_BLOCKS parallel column
blocks (one long contiguous piece of each B row per thread), k outside the vectorized
columns, SKINNY_ROWS_PER_PASS rows of B per pass over the C chunk (each B element read
once, the C chunk in L1).

A fused kernel's elementwise tail (fuse-ops) is applied in the register tile's write-back
(``lowering/schedule/epilogue.py``), at the last K block; partial tiles keep a small
epilogue nest.

conv2d (NCHW / OIHW, groups 1): the same idea with output-channel blocking
(OCB accumulators) and a vector over output columns (TVM's NCHWc-style
register tile): reduction loops ic, kh, kw move outside the (oc, ow) tile.
With padding, the column loop is split so that its middle part provably
never touches the padding; its clamped loads become plain stride-1 loads
there and it vectorizes (the border columns stay scalar). The CPU driver's
conv kernels mostly come in the flattened padded form instead (groups 1,
NCHW f32: kernels/conv.py); their schedule is in defaults_conv.py.
"""

from __future__ import annotations

from xdsl.dialects import arith, func
from xdsl.dialects.builtin import IndexType, IntegerAttr, MemRefType, i64
from xdsl.dialects.utils.fast_math import FastMathFlag
from xdsl.ir import SSAValue

from dlc.dialects.tloop import VECTOR_LANES_ATTR, ForOp
from dlc.lowering.kernels.forms import CONV2D_DIRECT, MATMUL, MATMUL_PACKED
from dlc.lowering.schedule import annotate
from dlc.lowering.schedule.defaults_forms import form_schedule
from dlc.lowering.schedule.cache import find_buffer
from dlc.lowering.schedule.epilogue import fuse_epilogue
from dlc.lowering.schedule.core import Schedule, enclosing_loops, loop_name
from dlc.lowering.schedule.space import Knob, Space, int_choices
from dlc.lowering.schedule.zero_fill import constant_fill, has_tile, tile_copy_ins
from dlc.target import Target

PANEL_FLOATS = 131072  # packed B panel: 512 KiB, half of a Zen 4 / recent Intel L2
MC_CAP = 512  # rows of A per block (8 x 16 and 6 x 16 tiles: 8 KiB of A per register row)
MIN_COLUMNS = 8  # fewer columns of C: the generic default (half a 16-column tile row)
SKINNY_ROWS = 3  # at most this many rows of C: the matrix-vector schedule (_schedule_skinny)
SKINNY_ROWS_PER_PASS = 8  # B rows per pass over the C chunk (_skinny_rows_per_pass)
SKINNY_BLOCKS = 2  # column blocks of a skinny product (parallel work units)
CONTRACT = arith.FastMathFlagsAttr([FastMathFlag.ALLOW_CONTRACT])


def f32_output(kernel: func.FuncOp) -> bool:
    """The kernel writes an f32 memref (what the register-tiled schedules are for)."""
    out_t = kernel.function_type.inputs.data[-1]
    return isinstance(out_t, MemRefType) and str(out_t.element_type) == "f32"


def _allow_contract(kernel: func.FuncOp, only_in_k_loops: bool = False) -> None:
    """Let LLVM fuse the accumulation's mul + add into an FMA (one rounding). With
    `only_in_k_loops`, only the ops inside loops named k... (the matmul's reduction), not a
    fused epilogue's (a mul then an add there keeps its two roundings, like numpy)."""
    for op in kernel.walk():
        if isinstance(op, (arith.MulfOp, arith.AddfOp)) and (not only_in_k_loops or any(
                loop_name(loop).startswith("k") for loop in enclosing_loops(op))):
            op.properties["fastmath"] = CONTRACT


def _names(s: Schedule) -> list[str]:
    return [loop_name(l) for l in s.loops()]


def _schedule_init(s: Schedule, loops: list[str]) -> None:
    """The zero-fill nest: parallel outer loop when big, vectorized inner loop."""
    top = s.loop(loops[0])
    total = 1
    for name in loops:
        total *= s.loop(name).trip_count
    if top.trip_count >= 2 and total >= 16384:
        s.parallel(top)
    inner = s.loop(loops[-1])
    if inner.trip_count >= 2:
        s.vectorize(inner)


def _parallel_blocks(s: Schedule, choice: str, blocks: list[str], batch: list[str] = ()) -> None:
    """The GEMM schedules' ``parallel`` knob: the batch loop, the block loops fused into one
    (fusing more than two would nest div/mod indices the analysis cannot read), the outer
    block loop, or none; parallel when it has two iterations or more."""
    if choice == "batch":
        par = s.loop(batch[0])
    elif choice == "fused":
        par = _fuse_all(s, blocks)
    elif choice == "outer":
        par = s.loop(blocks[0])
    else:
        par = None
    if par is not None and par.trip_count >= 2:
        s.parallel(par)


def _fuse_all(s: Schedule, names: list[str]) -> ForOp:
    loop = s.loop(names[0])
    for name in names[1:]:
        loop = s.fuse(loop, name, name=f"{loop_name(loop)}_{name}")
    return loop


def _divisor_tile(total: int, unit: int, cap: int) -> int | None:
    """The largest multiple of `unit` dividing `total` and at most `cap` (None if only tiny ones)."""
    best = None
    for d in range(1, total // unit + 1):
        if (total // unit) % d == 0 and unit * d <= cap:
            best = unit * d
    return best if best is not None and best >= min(total, 4 * unit) else None


def _matmul_blocks(m0: int, n0: int, k: int, mr: int, nr: int, batched: bool,
                   m: int | None = None) -> tuple[int, int, int]:
    """(MC, NC, KC) cache blocks for an m0 x n0 x k main part (m0, n0 multiples of the register
    tile). Divisors where possible: a split guard on n inside the micro-kernel stops its
    vectorization, one on m costs a branch per row, one on k only a branch per k step.
    ``m``: all the rows, when M % MR rows are left over; up to MC_CAP rows they form one
    block, MC = m, whose last rows are an inner tail (see schedule_matmul)."""
    nc = _divisor_tile(n0, nr, 512) or (n0 if n0 <= 1024 else 256)
    budget = max(64, PANEL_FLOATS // nc)  # the packed B panel (kc x nc) stays in L2
    kc = k if k <= budget else (_divisor_tile(k, 1, budget) or budget // 16 * 16)
    if kc < 64 <= k:
        kc = budget // 16 * 16  # a tiny divisor would repack B too often: take the k guard
    if m is not None and m0 < m <= MC_CAP and m0 > 0:
        if not batched and -(-n0 // nc) < 2 and (n0 // nr) % 2 == 0 and n0 >= 2 * nr:
            nc = n0 // 2  # two threads need two blocks: the rows are one
        return m, nc, kc
    mc = _divisor_tile(m0, mr, MC_CAP) or (m0 if m0 <= 2048 else 512 // mr * mr)
    if not batched and -(-m0 // mc) * -(-n0 // nc) < 2:  # two threads need two blocks
        # each thread packs the operand the split does not divide: halving the rows packs
        # all of B (k x n) twice, halving the columns all of A (m x k): split the longer
        # side (a transformer's 128 x 512 x 512: 5-9% faster split by columns)
        can_m = (m0 // mr) % 2 == 0 and m0 >= 2 * mr
        can_n = (n0 // nr) % 2 == 0 and n0 >= 2 * nr
        if can_n and (n0 > m0 or not can_m):
            nc = n0 // 2
        elif can_m:
            mc = m0 // 2
        elif m0 >= 2 * mr:  # odd tile counts both ways (1016 x 992 = 127 x 8 by 31 x 32 rows /
            # columns): two row blocks that do not divide (a guard per row; one on the columns
            # would stop the micro-kernel's vectorization), not one thread idle
            mc = -(-(m0 // mr) // 2) * mr
    return mc, nc, kc


def _schedule_matmul_tail(s: Schedule, nest: list[str], mr: int, nr: int) -> None:
    """A partial tile. < NR columns (rows a multiple of MR): an MR x (N % NR) register tile
    with k outside it. < MR rows: k outside n, n vectorized (the C row stays in L1)."""
    *outer, m, n, k = nest
    rows, cols = s.loop(m).trip_count, s.loop(n).trip_count
    narrow = cols < nr and rows % mr == 0 and rows >= mr
    if narrow:
        mo, mi = s.split(m, mr, f"{m}_o", f"{m}_i")
        s.reorder(k, mi, n)
        top = s.loop(outer[0]) if outer else s.loop(mo)
    else:
        s.reorder(m, k, n)
        top = s.loop(outer[0] if outer else m)
    if top.trip_count >= 2 and not enclosing_loops(top) and annotate.parallel_problem(top) is None:
        s.parallel(top)
    if narrow:
        s.cache_write("out", f"{m}_o", f"acc_{n}")
        s.unroll(f"{m}_i")
        _vectorize_copies(s, (f"acc_{n}_d", f"acc_{n}_out_d"))
    if _vectorizable(s, n) and s.loop(n).trip_count >= 2:
        s.vectorize(n)


def with_fused_epilogue(schedule=None, *, revisits: bool = True):
    """`schedule`, then a fused kernel's elementwise tail moved into the register tile's
    write-back (epilogue.py) when the schedule applied; ``revisits``: see fuse_epilogue.
    Used bare (``@with_fused_epilogue``) or with options."""
    if schedule is None:
        return lambda fn: with_fused_epilogue(fn, revisits=revisits)

    def apply(s: Schedule, target: Target, *config) -> bool:
        done = schedule(s, target, *config)
        if done and "tloop.fused" in s.kernel.attributes:
            fuse_epilogue(s.kernel, revisits=revisits)
        return done

    apply.__name__ = apply.__qualname__ = schedule.__name__
    apply.__doc__ = schedule.__doc__
    apply.__wrapped__ = schedule  # the schedule alone (functools convention)
    return apply


def _matmul_shape(s: Schedule, target: Target):
    """(batch loops, m, n, k) of a matmul the blocked schedules apply to, else None."""
    if not f32_output(s.kernel):
        return None
    names = _names(s)
    if not {"m", "n", "k"} <= set(names):
        return None  # a 1-D operand: matrix-vector, left to the generic default
    batch = [n for n in names if n.startswith("b") and n[1:].isdigit()]
    m, n, k = (s.loop(x).trip_count for x in ("m", "n", "k"))
    if n < MIN_COLUMNS or k < 2:
        return None
    return batch, m, n, k


def _tile_problem(mr: int, nr: int, target: Target, allowed: int = 0) -> str | None:
    """Why an MR x NR f32 register tile does not fit the target's vector registers (two
    stay for the B vector and the A broadcast; `allowed`: at least this many accumulators
    are accepted, the default tile's: target.matmul_register_tile plans 6 x 16 for every
    16-register x86, also with 4-lane SSE)."""
    per_row = -(-nr // target.f32_lanes)
    if mr * per_row > max(target.vector_registers - 2, allowed):
        return (f"register tile mr x nr = {mr} x {nr} needs {mr * per_row} vector accumulators; "
                f"'{target}' has {target.vector_registers} vector registers (at most "
                f"{target.vector_registers - 2} for accumulators)")
    return None


def matmul_space(s: Schedule, target: Target) -> Space | None:
    """The knobs of schedule_matmul (blocked GEMM) or, at most SKINNY_ROWS rows, of
    _schedule_skinny; the default is the heuristics' choice."""
    shape = _matmul_shape(s, target)
    if shape is None:
        return None
    batch, m, n, k = shape
    if m <= SKINNY_ROWS:
        rows = _skinny_rows_per_pass(k)
        block = _skinny_block(n)
        blocks = [d for d in range(64, n) if n % d == 0]
        return Space(MATMUL, (
            Knob("skinny_block", int_choices(block, blocks[:24] + [n]), default=block),
            Knob("skinny_rows", int_choices(rows, [d for d in range(1, 17) if k % d == 0]), default=rows),
            Knob("parallel", (True, False)),
        ))
    mr0, nr0 = target.matmul_register_tile
    mr = min(mr0, m)
    nr = nr0
    # narrow products: 16 or 8 columns; half tiles also where they fit a small n exactly and
    # the wide ones would leave a tail of a third or more (48 = 3 x 16, not 32 + 16)
    while nr > MIN_COLUMNS and (nr > n or (n % nr and n < 4 * nr and n % (nr // 2) == 0)):
        nr //= 2
    if (nr > 16 and n - n % nr > 512 and _divisor_tile(n - n % nr, nr, 512) is None
            and _divisor_tile(n - n % (nr // 2), nr // 2, 512) is not None):
        # no column block of whole wide tiles fits the B panel (992 = 31 x 32): half-width
        # tiles that do (496), rather than a panel of all the columns and short K blocks
        nr //= 2
    m0, n0 = m - m % mr, n - n % nr
    mc, nc, kc = _matmul_blocks(m0, n0, k, mr, nr, bool(batch), m)
    lanes = target.f32_lanes
    mrs = int_choices(mr, range(1, 17), lambda v: v <= m)
    nrs = int_choices(nr, (4, 8, 16, 24, 32, 48, 64), lambda v: v <= n and v % lanes == 0)

    def blocks_of(total: int, units, default: int) -> tuple[int, ...]:
        """Cache blocks: multiples of a register tile dividing the main part it leaves."""
        found = {default}
        for unit in units:
            main = total - total % unit
            found |= {unit * t for t in (1, 2, 4, 8, 16, 32, 64) if main and main % (unit * t) == 0}
            found.add(main)
        found.add(total)  # all of them: rows in one block with an inner tail
        return tuple(sorted(v for v in found if v > 0))

    default_need = mr * -(-nr // lanes)

    def constraint(c: dict) -> str | None:
        problem = _tile_problem(c["mr"], c["nr"], target, default_need)
        if problem is not None:
            return problem
        # a block that does not divide the main part would write back rows / columns the
        # tail nests then accumulate into (the fused epilogue would see them done): refused,
        # except the heuristics' own choice (the default)
        main_m, main_n = m - m % c["mr"], n - n % c["nr"]
        if (c["mc"] % c["mr"] or main_m % c["mc"]) and (c["mc"], c["mr"]) != (mc, mr) and c["mc"] != m:
            return f"mc = {c['mc']} is not a multiple of mr = {c['mr']} dividing the {main_m} main rows"
        if (c["nc"] % c["nr"] or main_n % c["nc"]) and (c["nc"], c["nr"]) != (nc, nr):
            return f"nc = {c['nc']} is not a multiple of nr = {c['nr']} dividing the {main_n} main columns"
        if c["b_panels"] and not c["pack_b"]:
            return "b_panels needs pack_b (it lays out the packed B panel)"
        return None

    return Space(MATMUL, (
        Knob("mr", mrs, default=mr),
        Knob("nr", nrs, default=nr),
        Knob("mc", blocks_of(m, mrs, mc), default=mc),
        Knob("nc", blocks_of(n, nrs, nc), default=nc),
        Knob("kc", int_choices(kc, [1 << i for i in range(4, 12)] + [k], lambda v: v <= k), default=kc),
        Knob("order", ("mn", "nm")),  # which of the two block loops is outer
        # the parallel loop: the batch loop, or the fused (mo, no) / the outer block loop
        Knob("parallel", ("batch", "none") if batch else ("fused", "outer", "none")),
        Knob("pack_a", (True, False)),
        Knob("pack_b", (True, False)),
        Knob("b_panels", (True, False)),  # packed B as contiguous KC x NR strips
        Knob("unroll", (True, False)),  # the MR rows of the register tile unrolled
    ), constraint)


@form_schedule(MATMUL, space=matmul_space)
@with_fused_epilogue(revisits=False)
def schedule_matmul(s: Schedule, target: Target, config: dict | None = None) -> bool:
    """The blocked GEMM schedule above; False (kernel untouched) when it does not apply.
    ``config``: a point of :func:`matmul_space` (None: its default)."""
    kernel = s.kernel
    shape = _matmul_shape(s, target)
    if shape is None:
        return False
    batch, m, n, k = shape
    if config is None:
        config = matmul_space(s, target).default()
    if m <= SKINNY_ROWS:
        return _schedule_skinny(s, batch, n, config, target)
    mr, nr = config["mr"], config["nr"]  # (a config is checked against the space before)
    m0, n0 = m - m % mr, n - n % nr
    with s.atomic():
        # 1. the zero-fill gets its own nest; the accumulation nest becomes perfect
        for name in ["n", "m"] + batch[::-1]:
            s.distribute(name)
        _schedule_init(s, batch + ["m", "n"])
        acc_batch = [f"{b}_s1" for b in batch]
        # 2. partial tiles (M % MR rows, N % NR columns) split off into their own nests
        # M % MR rows in a block of all the rows (mc = m): an inner tail, split off inside
        # the K block loop so that it reads the packed B panel while it is in L2 (its own
        # nest re-read all of B from memory for a few rows: 10% of a 197 x 3072 x 768 GEMM)
        inner_tail = 0 < m0 < m and config["mc"] == m
        tails = []
        if 0 < m0 < m and not inner_tail:
            s.split_range("m_s1", m0, "_mt")
            tails.append("k_mt")
        if 0 < n0 < n:
            s.split_range("n_s1", n0, "_nt")
            tails.append("k_nt")
        if tails:  # each tail becomes a nest of its own, from the inside out
            for name in ["m_s1"] + acc_batch[::-1]:
                groups = [op for op in s.loop(name).body.block.ops if isinstance(op, ForOp)]
                if len(groups) > 1:  # name each copy of `name` after the tail it holds
                    s.distribute(name, [name] + [name + "_" + loop_name(g).rsplit("_", 1)[1] for g in groups[1:]])
            tails = [_nest_of(s, t) for t in tails]
        # 3. cache blocks and the register tile on the main part
        mc, nc, kc = config["mc"], config["nc"], config["kc"]
        if inner_tail:
            s.split("n_s1", nc, "no", "nn")
            s.split("nn", nr, "ni", "nr")
            s.split("k", kc, "ko", "ki")
            s.reorder(*acc_batch, "no", "ko", "m_s1", "ni", "ki", "nr")
            s.split_range("m_s1", m0, "_mt")  # rows [m0, m): m_s1_mt { ni_mt { ki_mt { nr_mt } } }
            s.split("m_s1", mr, "mi", "mr")
            s.reorder("mi", "ni", "ki", "mr", "nr")
            s.reorder("ni_mt", "ki_mt", "m_s1_mt", "nr_mt")
            blocks = ["no"]
        else:
            s.split("m_s1", mc, "mo", "mm")
            s.split("mm", mr, "mi", "mr")
            s.split("n_s1", nc, "no", "nn")
            s.split("nn", nr, "ni", "nr")
            s.split("k", kc, "ko", "ki")
            blocks = ["mo", "no"] if config["order"] == "mn" else ["no", "mo"]
            s.reorder(*acc_batch, *blocks, "ko", "mi", "ni", "ki", "mr", "nr")
        # 4. one parallel loop over independent C blocks (each thread packs its own panel)
        _parallel_blocks(s, config["parallel"], blocks, acc_batch)
        # 5. packing, register accumulators, FMA, unroll/vectorize the tile
        if config["pack_b"]:
            s.cache_read("b", "ko", "b_pack")
        if config["pack_a"]:
            s.cache_read("a", "mi", "a_pack")  # rows K floats apart would alias in L1 (4 KiB)
        s.cache_write("out", "ni", "acc")
        if config["unroll"]:
            s.unroll("mr")
        s.vectorize("nr")
        vector_loops = ["nr"]
        if inner_tail:  # an (m - m0) x NR register tile on the same packed panel
            s.cache_write("out", "ni_mt", "acc_mt")
            s.unroll("m_s1_mt")
            s.vectorize("nr_mt")
            vector_loops.append("nr_mt")
        _vectorize_copies(s, ("b_pack_d", "a_pack_d", "acc_d", "acc_out_d", "acc_mt_d", "acc_mt_out_d"))
        if config["b_panels"]:
            _column_panels(s, "b_pack", nr)
        mark_whole_vectors(s, vector_loops + _tile_copy_columns(s, ("acc", "acc_mt")), target)
        for tail in tails:
            _schedule_matmul_tail(s, tail, mr, nr)
    if not tails:
        zero_first_k_block(kernel)
    _allow_contract(kernel, only_in_k_loops=True)
    return True


def _packed_shape(s: Schedule) -> tuple[int, int, int, int] | None:
    """(m, panels, panel width, k) of a matmul_packed kernel the blocked schedule applies to."""
    if not f32_output(s.kernel):
        return None
    m, panels, width, k = (s.loop(x).trip_count for x in ("m", "n", "nr", "k"))
    if m <= SKINNY_ROWS or k < 2:
        return None
    return m, panels, width, k


def matmul_packed_space(s: Schedule, target: Target) -> Space | None:
    """The knobs of schedule_matmul_packed: matmul_space's without the B packing ones and
    with NR fixed by the panels (the kernel's ``%nr`` loop)."""
    shape = _packed_shape(s)
    if shape is None:
        return None
    m, panels, width, k = shape
    n = panels * width
    mr = min(target.matmul_register_tile[0], m)
    mc, nc, kc = _matmul_blocks(m - m % mr, n, k, mr, width, False, m)
    mrs = int_choices(mr, range(1, 17), lambda v: v <= m)
    mcs = sorted({mc, m} | {r * t for r in mrs for t in (1, 2, 4, 8, 16, 32, 64) if r * t < m})
    ncs = sorted({nc} | {width * d for d in range(1, panels + 1) if panels % d == 0})
    default_need = mr * -(-width // target.f32_lanes)

    def constraint(c: dict) -> str | None:
        problem = _tile_problem(c["mr"], width, target, default_need)
        if problem is not None:
            return problem
        main_m = m - m % c["mr"]
        if (c["mc"] % c["mr"] or main_m % c["mc"]) and (c["mc"], c["mr"]) != (mc, mr) and c["mc"] != m:
            return f"mc = {c['mc']} is not a multiple of mr = {c['mr']} dividing the {main_m} main rows"
        return None

    return Space(MATMUL_PACKED, (
        Knob("mr", mrs, default=mr),
        Knob("mc", tuple(mcs), default=mc),
        Knob("nc", tuple(ncs), default=nc),
        Knob("kc", int_choices(kc, [1 << i for i in range(4, 12)] + [k], lambda v: v <= k), default=kc),
        Knob("order", ("mn", "nm")),
        Knob("parallel", ("fused", "outer", "none")),
        Knob("pack_a", (True, False)),
        Knob("unroll", (True, False)),
    ), constraint)


@form_schedule(MATMUL_PACKED, space=matmul_packed_space)
def schedule_matmul_packed(s: Schedule, target: Target, config: dict | None = None) -> bool:
    """schedule_matmul on B already in panels (graph.matmul_packed): the kernel's ``%n``
    loop counts NR-column panels and ``%nr`` is the register tile's columns, so the tile
    reads its K x NR strip of the packed weight directly (no B copy; N % NR is 0 by
    construction). The rows block, tail and parallelize as there. ``config``: a point of
    :func:`matmul_packed_space` (None: its default)."""
    kernel = s.kernel
    shape = _packed_shape(s)
    if shape is None:
        return False
    m, panels, width, k = shape
    if config is None:
        config = matmul_packed_space(s, target).default()
    mr, mc, nc, kc = config["mr"], config["mc"], config["nc"], config["kc"]
    m0 = m - m % mr
    with s.atomic():
        for name in ("nr", "n", "m"):
            s.distribute(name)
        _schedule_init(s, ["m", "n", "nr"])
        inner_tail = 0 < m0 < m and mc == m
        tail = None
        if 0 < m0 < m and not inner_tail:
            s.split_range("m_s1", m0, "_mt")  # rows [m0, m): m_s1_mt { n_s1_mt { nr_s1_mt { k_mt } } }
            tail = ("m_s1_mt", "n_s1_mt", "nr_s1_mt", "k_mt")
        s.split("n_s1", nc // width, "no", "ni")
        s.split("k", kc, "ko", "ki")
        if inner_tail:
            s.reorder("no", "ko", "m_s1", "ni", "ki", "nr_s1")
            s.split_range("m_s1", m0, "_mt")  # m_s1_mt { ni_mt { ki_mt { nr_s1_mt } } }
            s.split("m_s1", mr, "mi", "mr")
            s.reorder("mi", "ni", "ki", "mr", "nr_s1")
            s.reorder("ni_mt", "ki_mt", "m_s1_mt", "nr_s1_mt")
            blocks = ["no"]
        else:
            s.split("m_s1", mc, "mo", "mm")
            s.split("mm", mr, "mi", "mr")
            blocks = ["mo", "no"] if config["order"] == "mn" else ["no", "mo"]
            s.reorder(*blocks, "ko", "mi", "ni", "ki", "mr", "nr_s1")
        _parallel_blocks(s, config["parallel"], blocks)
        if config["pack_a"]:
            s.cache_read("a", "mi", "a_pack")
        s.cache_write("c", "ni", "acc")
        if config["unroll"]:
            s.unroll("mr")
        s.vectorize("nr_s1")
        vector_loops = ["nr_s1"]
        if inner_tail:
            s.cache_write("c", "ni_mt", "acc_mt")
            s.unroll("m_s1_mt")
            s.vectorize("nr_s1_mt")
            vector_loops.append("nr_s1_mt")
        _vectorize_copies(s, ("a_pack_d", "acc_d", "acc_out_d", "acc_mt_d", "acc_mt_out_d"))
        mark_whole_vectors(s, vector_loops + _tile_copy_columns(s, ("acc", "acc_mt")), target)
        if tail is not None:  # < MR rows: k outside the vectorized columns (the C row in L1)
            rows, panel, cols, red = tail
            s.reorder(rows, panel, red, cols)
            top = s.loop(rows)
            if top.trip_count >= 2 and annotate.parallel_problem(top) is None:
                s.parallel(top)
            s.vectorize(cols)
    c = find_buffer(s, "c")
    if "tloop.fused" in kernel.attributes:
        fuse_epilogue(kernel, c)
    if tail is None:
        zero_first_k_block(kernel, c)
    _allow_contract(kernel, only_in_k_loops=True)
    return True


def zero_first_k_block(kernel: func.FuncOp, out: SSAValue | None = None) -> bool:
    """Drop the zero-fill nest of C: each register tile starts from zeros in the first K
    block (``ko`` at its lower bound) and copies C in only in the later ones. The fill was a
    parallel region of its own and a write of all of C before the product read it back
    (2-3% of a 1024^3 GEMM; more of a transformer's 128-row products). True if done.

    Checked, else nothing changes: the first top-level nest only stores one constant into
    ``out``; every other load of ``out`` is a tile's copy-in (its one use a store into a
    kernel-local buffer, inside a ``ko`` loop) except in a last nest without tiles (a fused
    epilogue's, which runs after the tiles). Every element of C belongs to one tile (no
    tail nests of their own: the caller's condition). ``out``: C (default: the kernel's last
    argument) or the view of it the kernel writes through."""
    from xdsl.dialects import memref, scf
    from xdsl.ir import Block, Region

    out = kernel.body.block.args[-1] if out is None else out
    found = constant_fill(kernel, out)
    if found is None:
        return False
    fill, nests, zero = found
    epilogue = nests[-1] if not has_tile(nests[-1]) else None
    copy_ins = tile_copy_ins(nests, out, epilogue)
    if copy_ins is None:
        return False
    roots = []  # (outermost loop of a copy-in nest, its ko loop)
    for load, _ in copy_ins:
        around = enclosing_loops(load)
        ko = next((loop for loop in reversed(around) if loop_name(loop) == "ko"), None)
        if ko is None:
            return False
        inside = around[around.index(ko) + 1:]
        copy = [loop for loop in inside if loop_name(loop).startswith("acc")]
        if not copy or copy[-1] is not around[-1]:
            return False
        if all(copy[0] is not r for r, _ in roots):
            roots.append((copy[0], ko))
    if not roots:
        return False
    for root, ko in roots:
        zeros = root.clone()
        for loop in zeros.walk():
            if isinstance(loop, ForOp) and ko.trip_count > 1:  # loop names stay unique
                loop.induction_var.name_hint = loop_name(loop) + "_z"
        for op in list(zeros.walk()):
            if isinstance(op, memref.LoadOp) and op.memref is out:
                (use,) = list(op.res.uses)
                use.operation.operands[0] = zero
                op.detach()
                op.erase()
        if ko.trip_count == 1:
            root.parent.insert_op_before(zeros, root)
            root.detach()
            root.erase()
            continue
        lower = arith.ConstantOp.from_int_and_width(ko.lower, IndexType())
        first = arith.CmpiOp(ko.induction_var, lower.result, "eq")
        parent = root.parent
        parent.insert_op_before(lower, root)
        parent.insert_op_before(first, root)
        branch = scf.IfOp(first.result, [], Region(Block([scf.YieldOp()])), Region(Block([scf.YieldOp()])))
        parent.insert_op_before(branch, root)
        root.detach()
        branch.true_region.block.insert_op_before(zeros, branch.true_region.block.last_op)
        branch.false_region.block.insert_op_before(root, branch.false_region.block.last_op)
    fill.detach()
    fill.erase()
    return True


def _column_panels(s: Schedule, name: str, width: int) -> None:
    """Lay the packed ``[..., rows, cols]`` buffer `name` out as ``[..., cols / width, rows, width]``.

    The micro-kernel reads a ``rows x width`` column strip of the packed B panel; stored
    row-major, those rows are a whole panel row apart (2 KiB: they fall into two L1 sets
    and a new page every other row); as contiguous strips they stream. The copy nest is
    split so that its stores follow the new layout. Every access's column index must split
    into a part that is a multiple of `width` (loop digits with such steps) and a rest
    within ``[0, width)``; otherwise the buffer keeps its layout."""
    from xdsl.dialects import memref

    from dlc.lowering.schedule.affine import Affine, Digit, analyse
    from dlc.lowering.schedule.cache import emit_affine

    alloca = next((op for op in s.kernel.walk()
                   if isinstance(op, memref.AllocaOp) and op.memref.name_hint == name), None)
    if alloca is None:
        return
    *lead, rows, cols = alloca.memref.type.get_shape()
    if cols % width or cols == width:
        return
    d_rows, d_cols = f"{name}_d{len(lead)}", f"{name}_d{len(lead) + 1}"
    s.split(d_cols, width, f"{d_cols}o", f"{d_cols}i")
    s.reorder(f"{d_cols}o", d_rows, f"{d_cols}i")
    plans = []
    for use in list(alloca.memref.uses):
        op = use.operation
        if not isinstance(op, (memref.LoadOp, memref.StoreOp)):
            return
        form = analyse(op.indices[-1])
        if form is None:
            return
        high, low = Affine(), Affine({}, form.const)
        for key, coef in form.terms.items():
            if isinstance(key, Digit) and (coef * key.scale) % width == 0 and (coef * key.minimum) % width == 0:
                high.terms[key] = coef
            elif isinstance(key, Digit):
                low.terms[key] = coef
            else:
                return
        lo, hi = low.range_over({id(k.loop) for k in low.terms})
        if lo < 0 or hi >= width:
            return
        plans.append((op, high, low))
    panels = memref.AllocaOp.get(alloca.memref.type.element_type, shape=[*lead, cols // width, rows, width])
    panels.memref.name_hint = name
    alloca.parent.insert_op_before(panels, alloca)
    for op, high, low in plans:
        high_ops, high_value = emit_affine(high)
        w = arith.ConstantOp.from_int_and_width(width, IndexType())
        panel = arith.DivUIOp(high_value, w.result)
        low_ops, low_value = emit_affine(low)
        for new_op in high_ops + [w, panel] + low_ops:
            op.parent.insert_op_before(new_op, op)
        index = [*op.indices[:-2], panel.result, op.indices[-2], low_value]
        if isinstance(op, memref.LoadOp):
            new = memref.LoadOp.get(panels.memref, index)
        else:
            new = memref.StoreOp.get(op.value, panels.memref, index)
        op.parent.insert_op_before(new, op)
        if isinstance(op, memref.LoadOp):
            op.res.replace_all_uses_with(new.res)
        op.detach()
        op.erase()
    alloca.detach()
    alloca.erase()


def _tile_copy_columns(s: Schedule, caches: tuple[str, ...]) -> list[str]:
    """The column loops of the copy nests between C and the register-tile buffers
    `caches` (``acc_d<last dim>``, ``acc_out_d<last dim>``): the buffer keeps C's unit
    leading dims (a [1, 128, 768] output's tile is [1, MR, NR]), so its rank says which."""
    from xdsl.dialects import memref

    names = []
    for op in s.kernel.walk():
        if isinstance(op, memref.AllocaOp) and op.memref.name_hint in caches:
            last = len(op.memref.type.get_shape()) - 1
            names += [f"{op.memref.name_hint}_d{last}", f"{op.memref.name_hint}_out_d{last}"]
    return names


def is_whole_vector(trip_count: int, target: Target) -> bool:
    """A loop of 1, 2 or 4 whole vectors of the target (a register tile's columns)."""
    lanes = target.f32_lanes
    return trip_count in (lanes, 2 * lanes, 4 * lanes)


def mark_whole_vectors(s: Schedule, names: list[str], target: Target) -> None:
    """Mark the register tile's vectorized column loops (a few whole vectors: nr = 32 is
    two zmm) ``dlc.whole_vector``: one vector of nr lanes for LLVM, never fully unrolled
    first. Without it LLVM fully unrolls a 32-trip copy between C and the accumulators
    before vectorizing and leaves it scalar: 512 vmovss per 8 x 32 tile and K block, 20%
    of a 1024^3 GEMM (measured: 445 -> see bench_gemm)."""
    from xdsl.dialects.builtin import UnitAttr

    for name in names:
        loop = s.loop(name)
        if loop.loop_kind == "vectorized" and is_whole_vector(loop.trip_count, target):
            loop.attributes["dlc.whole_vector"] = UnitAttr()


def _schedule_skinny(s: Schedule, batch: list[str], n: int, config: dict, target: Target) -> bool:
    """A few rows of C (dense layers at batch 1): memory-bound, B is read once.

    No packing (it would only add traffic) and no register tile: each parallel block of
    columns streams its rows of B once (k outside the columns), accumulating into its C
    row chunk, which stays in L1; the column loop is vectorized. The k loop steps over
    SKINNY_ROWS_PER_PASS rows expanded inside the column loop: that many B rows stream at
    once (one row at a time left the memory system idle: 4-10 GB/s on AlexNet's FC layers),
    and each C element is loaded and stored once per pass (in ``acc``, a per-thread copy of
    the C chunk: a store after every FMA otherwise, 1.6x slower on the LSTM's
    [1, 512] x [512, 2048] with its bias add); its sum keeps the k order.
    Few large blocks: a block's piece of a B row is contiguous (2 KiB pieces 16 KiB apart
    halved the bandwidth: the hardware prefetcher restarts at each). The column loop takes
    the target's full vector width (``dlc.vector_lanes``; the generic loops' default is
    32 bytes): on AVX-512, zmm loads stream B from L3 at 118 GB/s per core against 91 with
    ymm ones (a C loop of this form, 512 x 2048). ``config``: the skinny knobs of
    :func:`matmul_space`."""
    nc = config["skinny_block"]
    with s.atomic():
        for name in ["n", "m"] + batch[::-1]:
            s.distribute(name)
        _schedule_init(s, batch + ["m", "n"])
        acc_batch = [f"{b}_s1" for b in batch]
        if nc < n:
            s.split("n_s1", nc, "no", "nn")
            s.reorder(*acc_batch, "no", "m_s1", "k", "nn")
            par = s.loop(acc_batch[0]) if acc_batch else s.loop("no")
            inner = "nn"
        else:
            s.reorder(*acc_batch, "m_s1", "k", "n_s1")
            par = s.loop(acc_batch[0]) if acc_batch else None
            inner = "n_s1"
        rows = config["skinny_rows"]
        if rows > 1:
            # B rows k..k+rows-1 in one pass over the C chunk: rows streams in flight and
            # one C load/store per `rows` FMAs (each C element still sums k in order)
            s.split("k", rows, "ko", "ki")
            s.reorder("ko", inner, "ki")
            s.unroll("ki", expand=True)
        if config["parallel"] and par is not None and par.trip_count >= 2:
            s.parallel(par)
        # the C chunk accumulates in a local buffer: provably not B, so the `rows` FMAs of
        # a pass keep it in a register (C itself may alias B for LLVM once the parallel
        # loop's outlining loses `noalias`: a store after every FMA, and a scalar copy of
        # the loop behind a runtime alias check); one copy back at the end
        s.cache_write("out", "m_s1", "acc")
        _vectorize_copies(s, ("acc_d", "acc_out_d"))
        if _vectorizable(s, inner):
            s.vectorize(inner)
            s.loop(inner).attributes[VECTOR_LANES_ATTR] = IntegerAttr(target.f32_lanes, i64)
    _allow_contract(s.kernel, only_in_k_loops=True)
    return True


def _skinny_rows_per_pass(k: int) -> int:
    """B rows streamed per pass over the C chunk: a divisor of k (a split guard would
    sit in the vector loop), SKINNY_ROWS_PER_PASS when possible."""
    return next((d for d in range(SKINNY_ROWS_PER_PASS, 0, -1) if k % d == 0), 1)


def _skinny_block(n: int) -> int:
    """Columns per parallel block: a divisor of n near n / SKINNY_BLOCKS, at least 128
    (a split guard inside the vector loop would stop its vectorization); n if none."""
    target = max(128, n // SKINNY_BLOCKS)
    divisors = [d for d in range(128, n) if n % d == 0]
    return min(divisors, key=lambda d: (abs(d - target), d)) if divisors else n


def _nest_of(s: Schedule, innermost: str) -> list[str]:
    """Names of the loops around `innermost` (and its own), outermost first."""
    inner = s.loop(innermost)
    return [loop_name(l) for l in enclosing_loops(inner) + [inner]]


@form_schedule(CONV2D_DIRECT)
@with_fused_epilogue
def schedule_conv2d(s: Schedule, target: Target) -> bool:
    """Output-channel blocked, column-vectorized direct conv; False when it does not apply."""
    kernel = s.kernel
    if not f32_output(kernel):
        return False
    names = _names(s)
    if names[:4] != ["n", "oc", "oh", "ow"] or not {"ic", "kh", "kw"} <= set(names):
        return False
    oc, ow = s.loop("oc").trip_count, s.loop("ow").trip_count
    if ow < 4:
        return False
    ocb = 8 if oc % 8 == 0 else (4 if oc % 4 == 0 else 1)
    # a divisor of the row when there is a good one: a split guard in the vector loop stops it
    # (whole vectors first: 16 or 8 lanes)
    owb = next((d for d in (16, 8, 15, 14, 13, 12, 11, 10, 9) if ow % d == 0), ow if ow <= 16 else 16)
    with s.atomic():
        s.distribute("ow")
        s.distribute("oh")
        s.distribute("oc")
        s.distribute("n")
        _schedule_init(s, ["n", "oc", "oh", "ow"])
        s.split("oc_s1", ocb, "oco", "oci")
        s.split("ow_s1", owb, "owo", "owi")
        s.reorder("n_s1", "oco", "oh_s1", "owo", "ic", "kh", "kw", "oci", "owi")
        par = _fuse_all(s, ["n_s1", "oco"])  # (two loops at most: see schedule_matmul, step 4)
        if par.trip_count >= 2:
            s.parallel(par)
        s.cache_write("out", "owo", "acc")
        if ocb > 1:
            s.unroll("oci")
        for vector_loop in _split_padding_columns(s, "owi"):
            if _vectorizable(s, vector_loop):
                s.vectorize(vector_loop)
        _vectorize_copies(s, ("acc_d", "acc_out_d"))
    _allow_contract(kernel)
    return True


def _split_padding_columns(s: Schedule, name: str) -> list[str]:
    """Split the column loop so that its middle part never touches the padding.

    The kernel loads padded inputs at a clamped column (``maxsi``/``minsi``),
    which is not stride-1; in the middle columns the clamps are provably
    no-ops and are dropped, so that part vectorizes. Returns the loop names
    worth vectorizing (the middle one, or `name` itself when nothing splits).
    """
    loop = s.loop(name)
    clamps = [op for op in loop.walk() if isinstance(op, (arith.MaxSIOp, arith.MinSIOp))
              and _column_clamp_bound(op, loop) is not None]
    if not clamps:
        return [name]
    first, last = loop.lower, loop.upper - 1  # the middle part: [first, last]
    for op in clamps:
        coef, bound = _column_clamp_bound(op, loop)
        if coef <= 0:
            return [name]
        if isinstance(op, arith.MaxSIOp):  # index >= bound needed: low columns
            first = max(first, loop.lower + -(-(bound - _range_without(op.lhs, loop)[0]) // coef))
        else:
            last = min(last, loop.lower + (bound - _range_without(op.lhs, loop)[1]) // coef)
    if last - first + 1 < 4:
        return [name]
    middle = name
    if first > loop.lower:
        _, second = s.split_range(name, first, "_pm")
        middle = loop_name(second)
    if last + 1 < s.loop(middle).upper:
        s.split_range(middle, last + 1, "_pr")
    _drop_redundant_clamps(s.loop(middle))
    return [middle]


def _column_clamp_bound(op, loop):
    """(coefficient of `loop` in the clamped index, the constant bound) or None."""
    from dlc.lowering.schedule.affine import Digit, analyse, constant_value

    index, bound = analyse(_unclamped(op.lhs)), constant_value(op.rhs)
    if index is None or bound is None or any(not isinstance(k, Digit) for k in index.terms):
        return None
    coef = sum(c for k, c in index.terms.items() if k.loop is loop and k.part == "iv")
    return (coef, bound) if coef else None


def _range_without(value, loop) -> tuple[int, int]:
    """Range of an affine index over its loops, `loop`'s own digit fixed at its lower bound."""
    from dlc.lowering.schedule.affine import analyse

    index = analyse(_unclamped(value))
    others = {id(k.loop) for k in index.terms if k.loop is not loop}
    lo, hi = index.range_over(others)
    own = sum(c for k, c in index.terms.items() if k.loop is loop)
    return lo + own * loop.lower, hi + own * loop.lower


def _unclamped(value):
    """The index inside ``minsi(maxsi(i, lo), hi)`` (clamps by constants)."""
    from dlc.lowering.schedule.affine import constant_value

    while isinstance(value.owner, (arith.MaxSIOp, arith.MinSIOp)) and constant_value(value.owner.rhs) is not None:
        value = value.owner.lhs
    return value


def _drop_redundant_clamps(root) -> None:
    """Replace ``maxsi(i, c)`` / ``minsi(i, c)`` by ``i`` where the loop bounds prove it."""
    from dlc.lowering.schedule.affine import Digit, analyse, constant_value

    for op in list(root.walk()):
        if not isinstance(op, (arith.MaxSIOp, arith.MinSIOp)):
            continue
        index, bound = analyse(op.lhs), constant_value(op.rhs)
        if index is None or bound is None or any(not isinstance(k, Digit) for k in index.terms):
            continue
        lo, hi = index.range_over({id(k.loop) for k in index.terms})
        if (lo >= bound) if isinstance(op, arith.MaxSIOp) else (hi <= bound):
            op.results[0].replace_all_uses_with(op.lhs)
            op.detach()
            op.erase()


def _vectorize_copies(s: Schedule, prefixes: tuple[str, ...]) -> None:
    """Vectorize the innermost loop of each cache copy nest (its names: <cache>_d<dim>)."""
    for loop in s.loops():
        name = loop_name(loop)
        if (any(name.startswith(p) and name[len(p):].isdigit() for p in prefixes)
                and loop.trip_count >= 2 and _vectorizable(s, name)):
            s.vectorize(loop)


def _vectorizable(s: Schedule, name: str) -> bool:
    from dlc.lowering.schedule.annotate import vectorize_problem

    return vectorize_problem(s.loop(name)) is None
