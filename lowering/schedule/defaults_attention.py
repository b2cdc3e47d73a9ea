"""Default CPU schedule of the ``attention`` form (kernels/attention.py).

Written with the schedule primitives only::

    parallel for b_h                  fuse(b, h): one head per work unit (when >= 2)
      pack kt                         serial (strided key rows -> Dh x Sk scratch)
      for i                           query rows
        for jb / key block
          s[:] = 0                    vectorized
          for sd: for sj              sj vectorized: s[j] += q[i, d] * kt[d, j] (FMA)
          sm, se                      rfactor: vector-wide partial max / sum, lanes vectorized
          ar                          vectorized rescale of acc
          for pj: for pd              pd vectorized: acc[d] += p[j] * v[j, d] (FMA)
        o                             vectorized acc / l

Each product accumulates in a register tile of its own (``s_tile_sd`` around ``sd``,
``acc_tile_pj`` around ``pj``: copied in before, out after, the columns one vector), which
LLVM keeps in registers; in ``s`` / ``acc`` themselves every FMA's result went back to the
stack (ViT-Base width, 197 tokens: the kernel 7.4 -> 5.6 ms per run on 1 thread). Vectorized
loops take the target's full vector width (``dlc.vector_lanes``).

Only the mul + add of the two products (loops sd/sj and pj/pd) contract into FMAs;
the scale, mask and exp keep their roundings. Loops a check cannot prove safe to
vectorize (a stride that is not 1 under the op's perms, a tail shorter than two
vectors for the reductions) stay serial.
"""

from __future__ import annotations

from xdsl.dialects import arith

from xdsl.dialects.builtin import IntegerAttr, i64

from dlc.dialects.tloop import VECTOR_LANES_ATTR, ForOp
from dlc.lowering.kernels.forms import ATTENTION
from dlc.lowering.schedule.annotate import vectorize_problem
from dlc.lowering.schedule.core import Schedule, enclosing_loops, loop_name
from dlc.lowering.schedule.defaults_dense import CONTRACT, f32_output, is_whole_vector, mark_whole_vectors
from dlc.lowering.schedule.defaults_forms import form_schedule
from dlc.lowering.schedule.loop_nest import inner_loops
from dlc.lowering.schedule.rfactor import rfactor_reductions
from dlc.lowering.schedule.space import Knob, Space
from dlc.target import Target

PRODUCT_LOOPS = ("sj", "pd")
ROW_LOOPS = ("sr", "pr")  # the query rows of the two products' register tiles  # the accumulations (and their tail-block copies: sj2, pd2)


def attention_space(s: Schedule, target: Target) -> Space | None:
    """The knobs of :func:`schedule_attention`: the parallel head loop and the vectorized
    loops; default: parallel when there are two heads or more, vectorized."""
    if not f32_output(s.kernel):
        return None
    heads = s.loop("b").trip_count * s.loop("h").trip_count
    return Space(ATTENTION, (
        Knob("parallel", (True, False), default=heads >= 2),
        Knob("vectorize", (True, False)),
    ))


@form_schedule(ATTENTION, space=attention_space)
def schedule_attention(s: Schedule, target: Target, config: dict | None = None) -> bool:
    """See the module docstring. ``config``: a point of :func:`attention_space`."""
    if not f32_output(s.kernel):
        return False
    if config is None:
        config = attention_space(s, target).default()
    top = s.fuse("b", "h", name="b_h")
    if config["parallel"] and top.trip_count >= 2:
        top = s.parallel(top)
    if config["vectorize"]:
        rfactor_reductions(s.kernel, [top])  # sm / se: vector-wide partial max and sum
        lanes = IntegerAttr(target.f32_lanes, i64)
        for loop in [op for op in top.walk() if isinstance(op, ForOp)]:
            if (loop.loop_kind == "serial" and not inner_loops(loop) and loop.trip_count >= 2
                    and vectorize_problem(loop) is None):
                s.vectorize(loop)
                loop.attributes[VECTOR_LANES_ATTR] = lanes
    for loop in [op for op in top.walk() if isinstance(op, ForOp)]:
        if loop_name(loop).rstrip("0123456789") in ROW_LOOPS and loop.loop_kind == "serial":
            s.unroll(loop)  # the register tile's rows
    _register_tiles(s, target)
    for op in s.kernel.walk():
        if isinstance(op, (arith.MulfOp, arith.AddfOp)) and any(
                loop_name(loop).rstrip("0123456789") in PRODUCT_LOOPS
                for loop in enclosing_loops(op)[-1:]):
            op.properties["fastmath"] = CONTRACT
    return True


def _register_tiles(s: Schedule, target: Target) -> None:
    """Each product's accumulators (the score block ``s`` around ``sd``, the ``acc`` chunk
    around ``pj``) in a tile buffer of their own, copied in before the reduction loop and
    out after it: its indices are constants once the rows are unrolled and the columns
    are one vector (``dlc.whole_vector``), so LLVM keeps it in registers. Accumulating in
    ``s`` / ``acc`` themselves (also read by the softmax loops) stored every FMA's result
    back to the stack (ViT: half the score loop's time)."""
    for loop in [op for op in s.kernel.walk() if isinstance(op, ForOp)]:
        name = loop_name(loop)
        base = name.rstrip("0123456789")
        if base not in ("sd", "pj") or loop.loop_kind != "serial":
            continue
        columns = [op for op in loop.walk() if isinstance(op, ForOp)
                   and loop_name(op).rstrip("0123456789") in PRODUCT_LOOPS]
        if not columns or any(c.loop_kind != "vectorized" or not is_whole_vector(c.trip_count, target)
                              for c in columns):
            continue
        tile = f"{'s' if base == 'sd' else 'acc'}_tile_{name}"
        # a one-trip loop around the reduction: the tile's copies go around all of it
        s.split(loop, loop.trip_count, f"{name}_t", f"{name}_r")
        s.cache_write("s" if base == "sd" else "acc", f"{name}_t", tile)
        copies = [op for op in s.kernel.walk() if isinstance(op, ForOp) and loop_name(op).startswith(tile)
                  and not inner_loops(op) and vectorize_problem(op) is None]
        for copy in copies:
            s.vectorize(copy)
        mark_whole_vectors(s, [loop_name(c) for c in columns + copies], target)
