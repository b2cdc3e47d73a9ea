"""Block reductions with warp shuffles (the row-reduction schedule's combine step).

Each thread holds a partial; ``__shfl_xor_sync`` butterflies (``cuda.shfl``, 5 steps)
give every lane of a warp the warp's total; with more than one warp, lane 0 of each
writes it to a small shared array (one slot per warp), and after one barrier every
warp reads the slots back and butterflies again, so every thread ends with the
block's total. That is 2 barriers per reduction instead of the log2(threads) + 1 of
a shared-memory tree, and no shared traffic inside a warp. The xor form (rather
than ``shfl_down``, which leaves the total in lane 0 only) is used because the
total is then available to all lanes without another broadcast.
"""

from __future__ import annotations

from xdsl.dialects import gpu, memref, scf
from xdsl.ir import Block, Operation, SSAValue

from dlc.backends.cuda.loop_utils import Inserter
from dlc.dialects import cuda

WARP = 32


def _combine_like(ins: Inserter, combine: Operation, a: SSAValue, b: SSAValue) -> SSAValue:
    op = combine.clone()
    op.operands = (a, b)
    return ins.val(op)


def warp_allreduce(ins: Inserter, combine: Operation, value: SSAValue) -> SSAValue:
    """``combine`` over the 32 lanes' ``value``; every lane gets the result."""
    offset = WARP // 2
    while offset >= 1:
        value = _combine_like(ins, combine, value, ins.val(cuda.ShuffleOp(value, offset, "xor")))
        offset //= 2
    return value


def block_allreduce(ins: Inserter, combine: Operation, value: SSAValue, lane: SSAValue, lanes: int,
                    identity: SSAValue) -> SSAValue:
    """``combine`` over the block's ``lanes`` threads (a multiple of 32); all get the result."""
    if lanes % WARP:
        raise ValueError(f"block_allreduce: {lanes} threads is not a whole number of warps")
    total = warp_allreduce(ins, combine, value)
    warps = lanes // WARP
    if warps == 1:
        return total
    partials = ins.alloca(value.type, [warps], shared=True, name="warp_partials")
    in_warp = ins.rem_i(lane, WARP)
    warp = ins.div_i(lane, WARP)
    first = Block()
    first.add_op(scf.YieldOp())
    ins.add(scf.IfOp(ins.equal(in_warp, 0), [], [first]))
    Inserter(first, first.last_op).store(total, partials, [warp])
    ins.add(gpu.BarrierOp())
    then_block, else_block = Block(), Block()
    loaded = memref.LoadOp.get(partials, [in_warp])
    then_block.add_ops([loaded, scf.YieldOp(loaded)])
    else_block.add_op(scf.YieldOp(identity))
    slot = ins.val(scf.IfOp(ins.less(in_warp, warps), [value.type], [then_block], [else_block]))
    return warp_allreduce(ins, combine, slot)

