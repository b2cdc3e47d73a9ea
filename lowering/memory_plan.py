"""Memory planner: reuse intermediate buffers whose lifetimes do not overlap.

Strategy (kept simple so every backend supports it): *same-type reuse*. Each
intermediate value needs a buffer from its defining step to its last use; a
buffer whose value is dead is returned to a free pool and handed to the next
value of exactly the same memref type. The host then emits one
``memref.alloc`` per buffer (before its first definition) and one
``memref.dealloc`` (after its last use) - no arena, no ``memref.view``.

A buffer is released only *after* the step of its value's last use, so a
kernel never writes a buffer it also reads.

Control flow: a graph.if/loop/scan is one step of the enclosing plan (its
result buffers never share a buffer with its operands), and each body gets a
plan of its own (an if branch allocates inside the branch; a loop body's
buffers are allocated before the loop and freed after it). Every iteration
defines a body buffer before reading it, so no value flows between iterations
except the loop state, which bufferize.py keeps in the loop's result buffers.

Views (reshapes, see bufferize.py) get no interval of their own: the caller
counts a read of a view as a read of the value whose buffer it reinterprets,
so that buffer's interval spans every view's last read and is neither freed
nor handed to another value before it.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from dataclasses import dataclass, field


@dataclass
class Interval:
    """A value defined at step ``start`` and last read at step ``end``."""

    value: Hashable
    type: Hashable
    start: int
    end: int


@dataclass
class Buffer:
    type: Hashable
    first: int  # step of the first definition into it
    last: int  # step of the last read from it
    values: list[Hashable] = field(default_factory=list)


@dataclass
class MemoryPlan:
    buffers: list[Buffer]
    buffer_of: dict[Hashable, int]

    def allocs_before(self, step: int) -> list[int]:
        return [i for i, b in enumerate(self.buffers) if b.first == step]

    def deallocs_after(self, step: int) -> list[int]:
        return [i for i, b in enumerate(self.buffers) if b.last == step]


def plan(intervals: Sequence[Interval], reuse: bool = True) -> MemoryPlan:
    """Assign buffers to ``intervals`` (sorted by start in the caller's order)."""
    buffers: list[Buffer] = []
    buffer_of: dict[Hashable, int] = {}
    free: dict[Hashable, list[int]] = {}
    busy: list[tuple[int, int]] = []  # (end, buffer)
    for iv in sorted(intervals, key=lambda iv: iv.start):
        # release buffers whose last read happened strictly before this step
        still = []
        for end, b in busy:
            if end < iv.start:
                free.setdefault(buffers[b].type, []).append(b)
            else:
                still.append((end, b))
        busy = still
        pool = free.get(iv.type) if reuse else None
        if pool:
            b = pool.pop()
            buffers[b].last = max(buffers[b].last, iv.end)
        else:
            b = len(buffers)
            buffers.append(Buffer(iv.type, iv.start, iv.end))
        buffers[b].values.append(iv.value)
        buffer_of[iv.value] = b
        busy.append((iv.end, b))
    return MemoryPlan(buffers, buffer_of)
