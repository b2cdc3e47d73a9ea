"""The `tloop-*` schedule passes: one dlc-opt pass per schedule primitive, made from one table.

Each pass runs one primitive of `dlc.lowering.schedule.Schedule` on the kernel
named by its ``kernel`` option; the primitive checks its own legality, and a
`ScheduleError` becomes a pass failure located at the loop at fault::

    dlc-opt -p 'tloop-split{kernel="mm" loop="k" factor=8},tloop-parallel{kernel="mm" loop="i"}'

A row of `SCHEDULE_PASSES` gives the pass name, its class name, what it does,
the primitive it calls and its options (in the order the primitive takes them;
the option ``foo_bar`` is spelled ``foo-bar`` on the command line). The classes
are ordinary frozen-dataclass `ModulePass`es, generated below and registered in
`dlc.passes`. `tloop-default-schedule` is not a single primitive: it has its own
file.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass
from xdsl.utils.exceptions import PassFailedException

from dlc.diagnostics import op_error
from dlc.lowering.schedule import Schedule, ScheduleError, inline

_REQUIRED = object()  # an option without default (dataclasses.MISSING would mean "no default" to dataclass too)


@dataclass(frozen=True)
class Option:
    """One pass option: a dataclass field of the generated pass."""

    name: str
    type: type
    doc: str
    default: object = _REQUIRED
    spread: bool = False  # a tuple passed as separate arguments (`reorder(*order)`)


@dataclass(frozen=True)
class SchedulePass:
    """One row of the table: ``primitive(module, kernel, *options)`` is what the pass does."""

    name: str
    class_name: str
    doc: str
    primitive: Callable[..., object]
    options: tuple[Option, ...]


def _method(name: str) -> Callable[..., object]:
    """``Schedule.of(module, kernel).<name>(*args)``: a primitive method of `Schedule`."""
    method = getattr(Schedule, name)

    def run(module: ModuleOp, kernel: str, *args: object) -> object:
        return method(Schedule.of(module, kernel), *args)

    run.__name__ = name
    return run


KERNEL = Option("kernel", str, "the kernel function (symbol name, without @)")


def _loop(doc: str = "the loop (induction-variable name)", name: str = "loop") -> Option:
    return Option(name, str, doc)


SCHEDULE_PASSES: tuple[SchedulePass, ...] = (
    SchedulePass("tloop-split", "TLoopSplitPass",
                 "Split loop `loop` of kernel `kernel` by `factor` into `<loop>_outer` / `<loop>_inner`.",
                 _method("split"), (KERNEL, _loop(), Option("factor", int, "iterations of the inner loop"))),
    SchedulePass("tloop-tile", "TLoopTilePass",
                 "Tile the nested loops `outer`/`inner` of `kernel` by `outer-factor` x `inner-factor`.",
                 _method("tile"), (KERNEL, _loop("the outer loop of the pair", "outer"),
                                   _loop("the loop nested in it", "inner"),
                                   Option("outer_factor", int, "tile size of `outer`"),
                                   Option("inner_factor", int, "tile size of `inner`"))),
    SchedulePass("tloop-reorder", "TLoopReorderPass",
                 "Permute loops of one perfect nest of `kernel` into the order `order` (e.g. order=i,k,j).",
                 _method("reorder"), (KERNEL, Option("order", tuple[str, ...], "the loops, in their new order",
                                                     spread=True),)),
    SchedulePass("tloop-fuse", "TLoopFusePass",
                 "Fuse loop `inner`, perfectly nested in `outer`, into one loop `<outer>_<inner>_fused`.",
                 _method("fuse"), (KERNEL, _loop("the outer loop", "outer"), _loop("the loop nested in it", "inner"))),
    SchedulePass("tloop-fuse-siblings", "TLoopFuseSiblingsPass",
                 "Merge loop `second` into the adjacent loop `first` (same bounds) when no dependence prevents it.",
                 _method("fuse_siblings"), (KERNEL, _loop("the first loop", "first"),
                                            _loop("the loop right after it", "second"))),
    SchedulePass("tloop-distribute", "TLoopDistributePass",
                 "Split loop `loop` of kernel `kernel` into one loop per statement (loop fission).",
                 _method("distribute"), (KERNEL, _loop())),
    SchedulePass("tloop-split-range", "TLoopSplitRangePass",
                 "Split the iteration range of loop `loop` at `at`: [lb, at) then [at, ub) "
                 "(loops inside renamed `<name>_t`).",
                 _method("split_range"), (KERNEL, _loop(), Option("at", int, "first iteration of the second loop"))),
    SchedulePass("tloop-unroll", "TLoopUnrollPass",
                 "Mark loop `loop` of `kernel` unrolled; with expand=true replace it by copies of its body.",
                 _method("unroll"), (KERNEL, _loop(), Option("expand", bool, "copy the body now", False))),
    SchedulePass("tloop-vectorize", "TLoopVectorizePass",
                 "Mark innermost loop `loop` of `kernel` vectorized (stride-1 accesses, no reduction).",
                 _method("vectorize"), (KERNEL, _loop())),
    SchedulePass("tloop-parallel", "TLoopParallelPass",
                 "Mark outermost loop `loop` of `kernel` parallel (its iterations write disjoint elements).",
                 _method("parallel"), (KERNEL, _loop())),
    SchedulePass("tloop-cache-read", "TLoopCacheReadPass",
                 "Stage the tile of `buffer` read inside `loop` of `kernel` in a local memref.alloca.",
                 _method("cache_read"), (KERNEL, Option("buffer", str, "the buffer (SSA or argument name)"),
                                         _loop("the loop whose iterations each read one tile"))),
    SchedulePass("tloop-cache-write", "TLoopCacheWritePass",
                 "Accumulate the tile of `buffer` written inside `loop` of `kernel` in a local memref.alloca.",
                 _method("cache_write"), (KERNEL, Option("buffer", str, "the buffer (SSA or argument name)"),
                                          _loop("the loop whose iterations each write one tile"))),
    SchedulePass("tloop-inline", "TLoopInlinePass",
                 "Inline elementwise kernel `kernel` into its only consumer kernel (drops its buffer).",
                 inline, (Option("kernel", str, "the elementwise producer kernel"),)),
    SchedulePass("tloop-compute-at", "TLoopComputeAtPass",
                 "Compute producer nest `producer` inside loop `consumer` of `kernel`, for the tile it reads.",
                 _method("compute_at"), (KERNEL, _loop("the producer's outermost loop", "producer"),
                                         _loop("the consumer loop to compute it in", "consumer"))),
)


def as_pass_error(err: ScheduleError) -> Exception:
    """A ScheduleError as a pass failure, located at its op when it has one."""
    if err.op is not None and err.op.parent is not None:
        return op_error(err.op, str(err))
    return PassFailedException(str(err))


def _make_pass(row: SchedulePass) -> type[ModulePass]:
    options = row.options

    def apply(self: ModulePass, ctx: Context, op: ModuleOp) -> None:
        args: list[object] = []
        for option in options:
            value = getattr(self, option.name)
            args += list(value) if option.spread else [value]
        try:
            row.primitive(op, *args)  # the first option is always the kernel
        except ScheduleError as err:
            raise as_pass_error(err) from None

    fields = [(o.name, o.type) if o.default is _REQUIRED else (o.name, o.type, dataclasses.field(default=o.default))
              for o in options]
    option_docs = "\n".join(f"      {o.name.replace('_', '-')}: {o.doc}" for o in options)
    cls = dataclasses.make_dataclass(
        row.class_name, fields, bases=(ModulePass,), frozen=True,
        namespace={"name": row.name, "apply": apply, "__module__": __name__,
                   "__doc__": f"{row.doc}\n\n    Options:\n{option_docs}\n    "},
    )
    return cls


for _row in SCHEDULE_PASSES:
    globals()[_row.class_name] = _make_pass(_row)
del _row

__all__ = ["SCHEDULE_PASSES", "Option", "SchedulePass", "as_pass_error", *(r.class_name for r in SCHEDULE_PASSES)]
