"""The zero-fill nest of a kernel's output and its register tiles' copy-ins: what the
schedules that drop the fill (``defaults_nchwc.zero_initialized_tiles``,
``defaults_dense.zero_first_k_block``) check before they start the tiles from zeros.

A kernel that accumulates into ``out`` starts with a nest storing one constant into it
(lower-to-loops' init, distributed off by the schedule); cache_write's copy-in of a tile
is a load of ``out`` whose one use is a store into a kernel-local buffer.
"""

from __future__ import annotations

from xdsl.dialects import arith, func, memref
from xdsl.ir import SSAValue

from dlc.dialects.tloop import ForOp


def constant_fill(kernel: func.FuncOp, out: SSAValue | None = None) -> tuple[ForOp, list[ForOp], SSAValue] | None:
    """(the fill nest, the other top-level nests, the stored constant) when the kernel's
    first top-level nest only stores one kernel-level constant into ``out`` (default: the
    kernel's last argument; or a view of it the kernel writes through) and other nests
    follow it; else None."""
    out = kernel.body.block.args[-1] if out is None else out
    nests = [op for op in kernel.body.block.ops if isinstance(op, ForOp)]
    if len(nests) < 2:
        return None
    fill = nests[0]
    stores = [op for op in fill.walk() if isinstance(op, memref.StoreOp)]
    if (len(stores) != 1 or stores[0].memref is not out or not isinstance(stores[0].value.owner, arith.ConstantOp)
            or stores[0].value.owner.parent is not kernel.body.block
            or any(isinstance(op, memref.LoadOp) for op in fill.walk())):
        return None
    return fill, nests[1:], stores[0].value


def tile_copy_ins(nests: list[ForOp], out: SSAValue, skip: ForOp | None = None) -> list[tuple[memref.LoadOp, memref.StoreOp]] | None:
    """Every load of ``out`` in `nests` (but `skip`, a fused epilogue's nest) as (load,
    store into a kernel-local tile); None if one of them is anything else."""
    found = []
    for nest in nests:
        if nest is skip:
            continue
        for op in nest.walk():
            if not (isinstance(op, memref.LoadOp) and op.memref is out):
                continue
            uses = list(op.res.uses)
            if (len(uses) != 1 or not isinstance(uses[0].operation, memref.StoreOp) or uses[0].index != 0
                    or not isinstance(uses[0].operation.memref.owner, memref.AllocaOp)):
                return None
            found.append((op, uses[0].operation))
    return found


def has_tile(nest: ForOp) -> bool:
    """Whether `nest` allocates a tile (a fused epilogue's last nest does not)."""
    return any(isinstance(op, memref.AllocaOp) for op in nest.walk())
