"""cache_read / cache_write: stage a tile of a buffer in a kernel-local `memref.alloca`.

At each iteration of the chosen loop, the elements of the buffer that the loop
body touches (its footprint, computed from the affine indices over the loops
inside) are copied into a scratch buffer, the body's accesses are redirected
to it, and (cache_write) the tile is copied back at the end. This is the base
for packing and register blocking.

The scratch buffer is allocated once: at the kernel's entry, or at the top of
the enclosing parallel loop's body so that each thread has its own.
Tile elements outside the buffer (partial tiles after a non-dividing split,
padding) are skipped by guards on the copies.
"""

from __future__ import annotations

from xdsl.dialects import arith, memref
from xdsl.dialects.builtin import MemRefType
from xdsl.ir import Operation, SSAValue
from xdsl.rewriter import InsertPoint, Rewriter

from dlc.dialects.tloop import ForOp
from dlc.lowering.schedule.affine import Affine, Digit, accesses
from dlc.lowering.schedule.loop_nest import (
    KernelLoops,
    LoopHeader,
    append_to_body,
    enclosing_loops,
    index_constant,
    inner_loops,
    loop_name,
    make_if,
    value_name,
)


def find_buffer(s: KernelLoops, buffer) -> SSAValue:
    """A kernel argument by name hint or position, or an SSA value of the kernel."""
    if isinstance(buffer, SSAValue):
        return buffer
    args = s.kernel.body.block.args
    if isinstance(buffer, int):
        if not 0 <= buffer < len(args):
            raise s.fail(None, f"no argument #{buffer} (the kernel has {len(args)})")
        return args[buffer]
    for op in s.kernel.walk():
        for v in op.results:
            if v.name_hint == buffer and isinstance(v.type, MemRefType):
                return v
    for a in args:
        if a.name_hint == buffer:
            return a
    names = ", ".join(f"%{a.name_hint}" for a in args if a.name_hint)
    raise s.fail(None, f"no buffer named '%{buffer}' (arguments: {names or 'unnamed'})")


def emit_affine(form: Affine) -> tuple[list[Operation], SSAValue]:
    """IR computing an affine form from loop induction variables and symbols."""
    ops: list[Operation] = []
    total: SSAValue | None = None
    for key, coef in form.terms.items():
        if isinstance(key, Digit):
            value = key.loop.induction_var
            if key.part != "iv":
                d = index_constant(key.divisor)
                op = (arith.DivUIOp if key.part == "div" else arith.RemUIOp)(value, d.result)
                ops += [d, op]
                value = op.result
        else:
            value = key
        if coef != 1:
            c = index_constant(coef)
            mul = arith.MuliOp(value, c.result)
            ops += [c, mul]
            value = mul.result
        if total is None:
            total = value
        else:
            add = arith.AddiOp(total, value)
            ops.append(add)
            total = add.result
    if total is not None and form.const == 0:
        return ops, total
    c = index_constant(form.const)
    ops.append(c)
    if total is None:
        return ops, c.result
    add = arith.AddiOp(total, c.result)
    ops.append(add)
    return ops, add.result


def split_form(form: Affine, inner_ids: set) -> tuple[Affine, Affine]:
    outer, inner = Affine(), Affine()
    for key, coef in form.terms.items():
        (inner if isinstance(key, Digit) and id(key.loop) in inner_ids else outer).terms[key] = coef
    # the constant goes with the inner part: accesses at i and i + 1 share one tile origin
    inner.const = form.const
    return outer, inner


def tile_box(indices: list[list[Affine]], dim: int, inner_ids: set) -> tuple[Affine, int] | None:
    """Origin (outside `inner_ids` loops) and extent of the tile that accesses with
    ``indices`` touch in dimension ``dim`` per iteration of the loop around them;
    None when their origins differ (no single tile)."""
    parts = [split_form(index[dim], inner_ids) for index in indices]
    if len({p[0].key() for p in parts}) != 1:
        return None
    ranges = [p[1].range_over(inner_ids) for p in parts]
    lo, hi = min(r[0] for r in ranges), max(r[1] for r in ranges)
    origin = parts[0][0]
    return Affine(dict(origin.terms), origin.const + lo), hi - lo + 1


def in_bounds_always(origin: Affine, extent: int, size: int) -> bool:
    if any(not isinstance(k, Digit) for k in origin.terms):
        return False
    all_loops = {id(k.loop) for k in origin.terms}
    lo, hi = origin.range_over(all_loops)
    return lo >= 0 and hi + extent <= size


def tile_nest(names: list[str], extents: list[int], origins: list[SSAValue], sizes: list[int],
              guarded: list[bool]) -> tuple[list[ForOp], list[Operation], list[SSAValue], SSAValue | None]:
    """A perfect nest of serial loops ``0..extents[d]`` named ``names`` over one tile,
    with what its innermost body needs: the ops computing each element's index in the
    whole buffer (``origins[d] + iv``), those indices, and the condition that they lie
    inside ``sizes`` in the ``guarded`` dimensions (None when no dimension is guarded)."""
    loops = [LoopHeader(0, e, 1, "serial", n).make() for n, e in zip(names, extents)]
    for outer, inner in zip(loops, loops[1:]):
        append_to_body(outer, [inner])
    ops: list[Operation] = []
    conds: list[SSAValue] = []
    indices = []
    for d, loop in enumerate(loops):
        add = arith.AddiOp(origins[d], loop.induction_var)
        ops.append(add)
        indices.append(add.result)
        if guarded[d]:
            zero, size = index_constant(0), index_constant(sizes[d])
            lo = arith.CmpiOp(add.result, zero.result, "sge")
            hi = arith.CmpiOp(add.result, size.result, "slt")
            ops += [zero, size, lo, hi]
            conds += [lo.result, hi.result]
    cond = conds[0] if conds else None
    for c in conds[1:]:
        both = arith.AndIOp(cond, c)
        ops.append(both)
        cond = both.result
    return loops, ops, indices, cond


def _copy_nest(name: str, extents: list[int], origins: list[SSAValue], sizes: list[int],
               guarded: list[bool], src: SSAValue, dst: SSAValue, into_cache: bool) -> ForOp:
    names = [f"{name}_d{d}" for d in range(len(extents))]
    loops, ops, global_idx, cond = tile_nest(names, extents, origins, sizes, guarded)
    tile_idx = [l.induction_var for l in loops]
    if into_cache:
        load = memref.LoadOp.get(src, global_idx)
        copy = [load, memref.StoreOp.get(load.res, dst, tile_idx)]
    else:
        load = memref.LoadOp.get(src, tile_idx)
        copy = [load, memref.StoreOp.get(load.res, dst, global_idx)]
    if cond is not None:
        copy = [make_if(cond, copy)]
    append_to_body(loops[-1], ops + copy)
    return loops[0]


def mtype_rank(buf: SSAValue) -> int:
    return len(buf.type.get_shape())


def _cache(s: KernelLoops, buffer, loop, name: str | None, write: bool) -> SSAValue:
    loop = s.loop(loop)
    buf = find_buffer(s, buffer)
    what = "cache_write" if write else "cache_read"
    mine = [a for a in accesses(loop) if a.buffer is buf]
    bname = value_name(buf)
    if not mine:
        raise s.fail(loop, f"{what}: {bname} is not accessed inside the loop")
    if not write and any(a.is_store for a in mine):
        raise s.fail(loop, f"cache_read: {bname} is written inside the loop (use cache_write)")
    if write and not any(a.is_store for a in mine):
        raise s.fail(loop, f"cache_write: {bname} is not written inside the loop (use cache_read)")
    if any(a.index is None for a in mine):
        raise s.fail(loop, f"{what}: an index of {bname} is not affine in the loops")
    if not mtype_rank(buf):
        raise s.fail(loop, f"{what}: {bname} is a scalar buffer (rank 0), there is no tile to cache")
    cache_name = name or f"{(buf.name_hint or 'buf')}_{loop_name(loop)}_cache"
    s.fresh_name(f"{cache_name}_d0")
    inner_ids = {id(l) for l in inner_loops(loop)}
    mtype: MemRefType = buf.type
    sizes = list(mtype.get_shape())
    origins_f, extents = [], []
    for d in range(len(sizes)):
        box = tile_box([a.index for a in mine], d, inner_ids)
        if box is None:
            raise s.fail(loop, f"{what}: the accesses to {bname} have different tile origins in dimension {d}")
        origins_f.append(box[0])
        extents.append(box[1])
    # scratch at the kernel entry, or per thread inside the enclosing parallel loop
    par = [l for l in enclosing_loops(loop) + [loop] if l.loop_kind == "parallel"]
    scratch = memref.AllocaOp.get(mtype.element_type, shape=extents)
    scratch.memref.name_hint = cache_name
    prologue: list[Operation] = []
    origins = []
    for form in origins_f:
        ops, value = emit_affine(form)
        prologue += ops
        origins.append(value)
    guarded = [not in_bounds_always(f, e, n) for f, e, n in zip(origins_f, extents, sizes)]
    prologue.append(_copy_nest(cache_name, extents, origins, sizes, guarded, buf, scratch.memref, True))
    block = loop.body.block
    Rewriter.insert_op(prologue, InsertPoint.at_start(block))
    # after the prologue, so that the scratch comes first even when `loop` is the parallel one
    if par:
        par[0].body.block.insert_op_before(scratch, par[0].body.block.first_op)
    else:
        Rewriter.insert_op(scratch, InsertPoint.at_start(s.kernel.body.block))
    if write:
        append_to_body(loop, [_copy_nest(f"{cache_name}_out", extents, origins, sizes, guarded,
                                         scratch.memref, buf, False)])
    for acc in mine:
        local = []
        for d, idx in enumerate(acc.op.indices):
            sub = arith.SubiOp(idx, origins[d])
            Rewriter.insert_op(sub, InsertPoint.before(acc.op))
            local.append(sub.result)
        if acc.is_store:
            new = memref.StoreOp.get(acc.op.value, scratch.memref, local)
        else:
            new = memref.LoadOp.get(scratch.memref, local)
        Rewriter.replace_op(acc.op, new)
    return scratch.memref


def cache_read(s: KernelLoops, buffer, loop, name: str | None = None) -> SSAValue:
    """Copy the tile of `buffer` read inside `loop` into scratch at each iteration; read from it."""
    return _cache(s, buffer, loop, name, write=False)


def cache_write(s: KernelLoops, buffer, loop, name: str | None = None) -> SSAValue:
    """Accumulate the tile of `buffer` touched inside `loop` in scratch; copy it back after."""
    return _cache(s, buffer, loop, name, write=True)
