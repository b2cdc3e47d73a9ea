"""Loop features of a scheduled kernel, the cost model's input (Ansor-style, kept simple).

A *statement* is one ``memref.store`` (Ansor's BufferStore). Each statement gets the loop nest
around it, outermost first (per level: log2 of the trip count and the loop kind one-hot), the
work of its innermost block (float ops, int ops, loads, stores, times the iterations around
it), the bytes it touches per buffer below each loop level (the footprint of an access below
level l: the trip counts of the loops at l and inside whose induction variables its indices
use, times the element size), its arithmetic intensity, vector width, the unroll product
(register-tile replication) and the parallel extent.

A kernel's vector is its :data:`TOP_STATEMENTS` heaviest statements (by float ops, zero
padded) plus kernel totals, then the config's knob values (:func:`config_features`): the same
length for every kernel and every space, so one model ranks candidates of all tasks.
Counts enter as log2(1 + x): throughput follows ratios, and trees split as well on logs.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from xdsl.dialects import func, memref
from xdsl.dialects.builtin import MemRefType
from xdsl.ir import BlockArgument, Operation, OpResult, SSAValue

from dlc.dialects import tloop

LOOP_KINDS = ("serial", "parallel", "vectorized", "unrolled")
MAX_DEPTH = 8            # loop levels kept per statement (the innermost ones)
TOP_STATEMENTS = 3       # statements kept per kernel, heaviest first
MAX_KNOBS = 12           # knobs kept per config
FLOAT_OPS = {"arith.addf", "arith.subf", "arith.mulf", "arith.divf", "arith.maximumf", "arith.minimumf",
             "arith.negf", "arith.maxnumf", "arith.minnumf", "math.fma", "math.exp", "math.sqrt",
             "math.tanh", "math.log", "math.powf", "math.rsqrt"}
FMA_LIKE = {"math.fma"}  # 2 FLOPs

LEVEL_WIDTH = 1 + len(LOOP_KINDS) + 1  # trip, kind one-hot, bytes below this level
STATEMENT_WIDTH = 2 + MAX_DEPTH * LEVEL_WIDTH + 12
KERNEL_WIDTH = 4
KNOB_WIDTH = 3
LOOP_FEATURES = TOP_STATEMENTS * STATEMENT_WIDTH + KERNEL_WIDTH
CONFIG_FEATURES = MAX_KNOBS * KNOB_WIDTH
N_FEATURES = LOOP_FEATURES + CONFIG_FEATURES


def _log(x: float) -> float:
    return math.log2(1.0 + max(0.0, float(x)))


def _loops_around(op: Operation) -> list[tloop.ForOp]:
    loops = []
    parent = op.parent_op()
    while parent is not None and not isinstance(parent, func.FuncOp):
        if isinstance(parent, tloop.ForOp):
            loops.append(parent)
        parent = parent.parent_op()
    return loops[::-1]


def _element_bytes(t) -> int:
    if isinstance(t, MemRefType):
        width = getattr(t.element_type, "width", None)
        bits = width.data if hasattr(width, "data") else width
        return max(1, int(bits or 64) // 8)
    return 8


class _IndexUse:
    """Which loops' induction variables an SSA value depends on (through arith)."""

    def __init__(self):
        self._cache: dict[SSAValue, frozenset] = {}

    def loops(self, value: SSAValue) -> frozenset:
        if value in self._cache:
            return self._cache[value]
        self._cache[value] = frozenset()  # cycles (none expected in index math) end here
        if isinstance(value, BlockArgument):
            owner = value.block.parent_op()
            found = frozenset({owner}) if isinstance(owner, tloop.ForOp) else frozenset()
        elif isinstance(value, OpResult) and not isinstance(value.op, (memref.LoadOp,)):
            found = frozenset().union(*(self.loops(v) for v in value.op.operands)) \
                if value.op.operands else frozenset()
        else:
            found = frozenset()
        self._cache[value] = found
        return found


def _accesses(block) -> list[tuple[SSAValue, list[SSAValue]]]:
    out = []
    for op in block.ops:
        if isinstance(op, memref.LoadOp):
            out.append((op.memref, list(op.indices)))
        elif isinstance(op, memref.StoreOp):
            out.append((op.memref, list(op.indices)))
    return out


def statement_features(store: memref.StoreOp, uses: _IndexUse) -> tuple[float, np.ndarray]:
    """(float ops executed, the statement's feature vector)."""
    loops = _loops_around(store)
    block = store.parent_block()
    trips = [max(1, lp.trip_count) for lp in loops]
    iterations = math.prod(trips)
    fops = sum(2 if op.name in FMA_LIKE else 1 for op in block.ops if op.name in FLOAT_OPS)
    iops = sum(1 for op in block.ops if op.name.startswith("arith.") and op.name not in FLOAT_OPS
               and op.name != "arith.constant")
    loads = sum(1 for op in block.ops if isinstance(op, memref.LoadOp))
    stores = sum(1 for op in block.ops if isinstance(op, memref.StoreOp))
    flops = fops * iterations

    accesses = _accesses(block)
    # footprint below each level: loops at level >= l used by the access's indices
    footprint = []
    for level in range(len(loops)):
        inner = set(loops[level:])
        total = 0
        seen = set()
        for buf, indices in accesses:
            used = frozenset().union(*(uses.loops(i) for i in indices)) if indices else frozenset()
            key = (buf, used & inner)
            if key in seen:
                continue
            seen.add(key)
            elements = math.prod(max(1, lp.trip_count) for lp in used & inner)
            total += elements * _element_bytes(buf.type)
        footprint.append(total)
    vector = [lp.trip_count for lp in loops if lp.loop_kind == "vectorized"]
    unroll = math.prod(lp.trip_count for lp in loops if lp.loop_kind == "unrolled")
    parallel = math.prod(lp.trip_count for lp in loops if lp.loop_kind == "parallel")
    top_bytes = footprint[0] if footprint else sum(_element_bytes(b.type) for b, _ in accesses)
    # a reduction: the statement's loops include one its store indices do not use
    store_loops = frozenset().union(*(uses.loops(i) for i in store.indices)) if store.indices else frozenset()
    reduction = sum(1 for lp in loops if lp not in store_loops)

    row = np.zeros(STATEMENT_WIDTH, dtype=np.float64)
    row[0] = len(loops)
    row[1] = _log(iterations)
    kept = list(zip(trips, loops, footprint))[-MAX_DEPTH:]
    offset = MAX_DEPTH - len(kept)  # right-aligned: the innermost level is always the last slot
    for i, (trip, loop, fp) in enumerate(kept):
        base = 2 + (offset + i) * LEVEL_WIDTH
        row[base] = _log(trip)
        row[base + 1 + LOOP_KINDS.index(loop.loop_kind)] = 1.0
        row[base + 1 + len(LOOP_KINDS)] = _log(fp)
    tail = 2 + MAX_DEPTH * LEVEL_WIDTH
    row[tail:tail + 12] = [
        _log(fops), _log(iops), _log(loads), _log(stores), _log(flops),
        _log(flops / max(1, top_bytes)) if flops else 0.0,   # arithmetic intensity
        _log(vector[-1] if vector else 0), _log(unroll), _log(parallel),
        _log(reduction), _log(len(accesses)), _log(top_bytes),
    ]
    return float(flops), row


def loop_features(kernel: func.FuncOp) -> np.ndarray:
    """The fixed-length loop features (:data:`LOOP_FEATURES` values) of a scheduled kernel."""
    uses = _IndexUse()
    rows = [statement_features(op, uses) for op in kernel.walk() if isinstance(op, memref.StoreOp)]
    rows.sort(key=lambda r: -r[0])
    out = np.zeros(LOOP_FEATURES, dtype=np.float64)
    for i, (_, row) in enumerate(rows[:TOP_STATEMENTS]):
        out[i * STATEMENT_WIDTH:(i + 1) * STATEMENT_WIDTH] = row
    allocas = [op for op in kernel.walk() if isinstance(op, memref.AllocaOp)]
    local = sum(math.prod(op.memref.type.get_shape()) for op in allocas
                if isinstance(op.memref.type, MemRefType) and all(d >= 0 for d in op.memref.type.get_shape()))
    loops = sum(1 for op in kernel.walk() if isinstance(op, tloop.ForOp))
    out[TOP_STATEMENTS * STATEMENT_WIDTH:] = [_log(len(rows)), _log(sum(r[0] for r in rows)), _log(loops),
                                              _log(local)]  # local elements: accumulators / staged tiles
    return out


def config_features(space, config: dict[str, Any]) -> np.ndarray:
    """Knob values in the space's order (:data:`CONFIG_FEATURES` values): per knob the choice's
    position in [0, 1], log2 of an int value, and a bool's value."""
    out = np.zeros(CONFIG_FEATURES, dtype=np.float64)
    for i, knob in enumerate(space.knobs[:MAX_KNOBS]):
        value = config[knob.name]
        choices = list(knob.choices)
        index = next(j for j, c in enumerate(choices) if type(c) is type(value) and c == value)
        base = i * KNOB_WIDTH
        out[base] = index / max(1, len(choices) - 1)
        if isinstance(value, bool):
            out[base + 2] = float(value)
        elif isinstance(value, int):
            out[base + 1] = math.copysign(_log(abs(value)), value)
    return out


def features(kernel: func.FuncOp, space, config: dict[str, Any]) -> np.ndarray:
    """The whole vector (:data:`N_FEATURES` values): loop features, then the config's."""
    return np.concatenate([loop_features(kernel), config_features(space, config)])
