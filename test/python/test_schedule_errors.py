"""Every schedule primitive refuses what it cannot prove safe, with one clear message
naming kernel and loop, and leaves the IR unchanged when it refuses."""

from __future__ import annotations

import pytest
from xdsl.parser import Parser

from dlc.context import make_context
from dlc.lowering.schedule import Schedule, ScheduleError, inline
from schedule_kernels import (
    CONV2D,
    HOST_CHAIN,
    MATMUL,
    MATMUL_ACC,
    REDUCE_SUM,
    SIBLINGS,
    SIBLINGS_SHIFTED,
    STENCIL,
)

SCATTER = """
func.func @scatter(%idx: memref<4xi32>, %x: memref<4xf32>, %out: memref<9xf32>) attributes {tloop.kernel} {
  tloop.for %i = 0 to 4 {
    %p = memref.load %idx[%i] : memref<4xi32>
    %q = arith.index_cast %p : i32 to index
    %v = memref.load %x[%i] : memref<4xf32>
    memref.store %v, %out[%q] : memref<9xf32>
  }
  func.return
}
"""

SCALAR_OUT = """
func.func @total(%x: memref<3xf32>, %out: memref<f32>) attributes {tloop.kernel} {
  tloop.for %i = 0 to 3 {
    %v = memref.load %x[%i] : memref<3xf32>
    %a = memref.load %out[] : memref<f32>
    %s = arith.addf %a, %v : f32
    memref.store %s, %out[] : memref<f32>
  }
  func.return
}
"""

NOT_A_KERNEL = """
func.func @plain(%x: memref<3xf32>) {
  func.return
}
"""

CASES = [
    (MATMUL, "mm", lambda s: s.split("q", 4), "@mm: no loop named 'q' (loops: 'i', 'j', 'k')"),
    (MATMUL, "mm", lambda s: s.split("i", 0), "@mm, loop 'i': split factor must be a positive integer, got 0"),
    (MATMUL, "mm", lambda s: s.split("i", 2, outer_name="j"), "@mm: loop name 'j' is already used"),
    (MATMUL, "mm", lambda s: s.reorder("k", "j"),
     "@mm, loop 'j': not a perfect nest: 'memref.store' sits between loops 'j' and 'k'"),
    (MATMUL, "mm", lambda s: s.reorder("i"), "reorder needs at least two loops"),
    (MATMUL, "mm", lambda s: s.reorder("i", "i"), "reorder got the same loop twice"),
    (CONV2D, "conv", lambda s: s.reorder("kw", "kh"),
     "cannot reorder 'kw', 'kh': it would change the order of the reduction loops 'kh', 'kw' updating %out"),
    (CONV2D, "conv", lambda s: s.reorder("kh", "c"), "reduction loops 'c', 'kh'"),
    (SIBLINGS, "sib", lambda s: s.reorder("i", "j"), "is not on the same loop nest path as loop"),
    (CONV2D, "conv", lambda s: s.tile("kh", "kw", 2, 2),
     "cannot tile: loops 'kh' and 'kw' are both reduction loops of %out"),
    (MATMUL, "mm", lambda s: s.fuse("j", "i"), "@mm, loop 'i': is not nested inside loop 'j'"),
    (MATMUL, "mm", lambda s: s.fuse("j", "k"), "not a perfect nest: 'memref.store' sits between loops 'j' and 'k'"),
    (SIBLINGS_SHIFTED, "sib", lambda s: s.fuse_siblings("i", "j"),
     "cannot fuse with 'j': %t is written by one loop and used by the other at elements of other iterations"),
    (SIBLINGS, "sib", lambda s: s.fuse_siblings("j", "i"), "@sib, loop 'i': does not come after loop 'j'"),
    (MATMUL, "mm", lambda s: s.fuse_siblings("i", "j"), "@mm, loop 'j': is not a sibling of loop 'i'"),
    (SIBLINGS, "sib", lambda s: s.split("j", 2) and s.fuse_siblings("i", "j_outer"),
     "bounds 0 to 13 step 2 differ from loop 'i' (0 to 13 step 1)"),
    (MATMUL, "mm", lambda s: s.vectorize("k"), "@mm, loop 'k': cannot be vectorized: the access to %b is not stride-1"),
    (MATMUL, "mm", lambda s: s.vectorize("j"), "only an innermost loop can be vectorized (it contains loop 'k')"),
    (REDUCE_SUM, "rsum", lambda s: s.vectorize("r"),
     "cannot be vectorized: it is a reduction loop of %out (vectorizing would reorder the accumulation)"),
    (SCATTER, "scatter", lambda s: s.vectorize("i"), "an index of %out is not affine in the loops"),
    (MATMUL, "mm", lambda s: s.parallel("j"), "only an outermost loop can be parallel (it is inside loop 'i')"),
    (MATMUL_ACC, "mma", lambda s: s.reorder("k", "i") and s.parallel("k"),
     "@mma, loop 'k': cannot be parallel: its iterations update the same elements of %c"),
    (SCATTER, "scatter", lambda s: s.parallel("i"),
     "cannot be parallel: cannot prove its iterations write disjoint elements: an index of %out is not affine"),
    (SCALAR_OUT, "total", lambda s: s.parallel("i"), "update the same elements of %out"),
    (MATMUL, "mm", lambda s: s.cache_read("a", "j") and s.parallel("i"),
     "scratch buffer %a_j_cache is shared by all its iterations"),
    (MATMUL, "mm", lambda s: s.unroll("i", expand=True), "cannot expand: its body contains loop 'j'"),
    (MATMUL, "mm", lambda s: s.cache_read("c", "j"), "cache_read: %c is written inside the loop (use cache_write)"),
    (MATMUL, "mm", lambda s: s.cache_write("a", "j"), "cache_write: %a is not written inside the loop"),
    (MATMUL, "mm", lambda s: s.cache_read("nope", "j"), "no buffer named '%nope' (arguments: %a, %b, %c)"),
    (SIBLINGS, "sib", lambda s: s.cache_read("x", "j"), "cache_read: %x is not accessed inside the loop"),
    (SCALAR_OUT, "total", lambda s: s.cache_write("out", "i"), "%out is a scalar buffer (rank 0)"),
    (SCATTER, "scatter", lambda s: s.cache_write("out", "i"), "cache_write: an index of %out is not affine"),
    (STENCIL, "stencil", lambda s: s.compute_at("q", "i"),
     "compute_at: the producer must be a top-level loop nest of the kernel"),
    (STENCIL, "stencil", lambda s: s.compute_at("i", "p"), "@stencil, loop 'p': compute_at: it does not come after the producer nest 'i'"),
    (MATMUL, "mm", lambda s: s.compute_at("i", "k"), "@mm, loop 'i': compute_at: the producer must end"),
    (SIBLINGS, "sib", lambda s: s.compute_at("j", "i"), "@sib, loop 'i': compute_at: it does not come after"),
    (STENCIL.replace("memref.store %s, %out[%i, %j] : memref<6x5xf32>",
                     "memref.store %s, %out[%i, %j] : memref<6x5xf32>\n      memref.store %s, %x[%i, %j] : memref<7x5xf32>"),
     "stencil", lambda s: s.compute_at("p", "j"), "compute_at: %x is written after the producer"),
    (STENCIL, "stencil", lambda s: s.split("i", 2) and s.compute_at("p", "i_inner") and s.parallel("i_outer"),
     "scratch buffer %t is shared by all its iterations"),
    (STENCIL, "stencil", lambda s: s.parallel("i") and s.compute_at("p", "j"),
     "compute_at: %t would be written by all iterations of parallel loop 'i' (apply compute_at before parallel)"),
    (STENCIL.replace("%a = memref.load %t[%i, %j]", "%a = memref.load %t[%j, %j]"), "stencil",
     lambda s: s.compute_at("p", "j"), "the reads of %t have different origins in dimension 0"),
]


@pytest.mark.parametrize("text,kernel,step,message", CASES, ids=[c[3][:40] for c in CASES])
def test_refusal(text, kernel, step, message):
    module = Parser(make_context(), text).parse_module()
    s = Schedule.of(module, kernel)
    with pytest.raises(ScheduleError) as info:
        step(s)
    assert message in str(info.value)
    assert "\n" not in str(info.value)
    assert str(info.value).startswith(f"@{kernel}")


PRIMITIVES = ("split", "tile", "reorder", "fuse", "fuse_siblings", "vectorize", "parallel",
              "unroll", "cache_read", "cache_write", "compute_at")


@pytest.mark.parametrize("text,kernel,step,message", CASES, ids=[c[3][:40] for c in CASES])
def test_refusal_leaves_ir_unchanged(text, kernel, step, message):
    """A refused primitive changes nothing: compare with the IR just before the call that failed."""
    module = Parser(make_context(), text).parse_module()
    s = Schedule.of(module, kernel)
    before: list[str] = []

    def snapshot(primitive):
        def run(*args, **kwargs):
            before.append(str(module))
            return primitive(*args, **kwargs)
        return run

    for name in PRIMITIVES:
        setattr(s, name, snapshot(getattr(s, name)))
    with pytest.raises(ScheduleError):
        step(s)
    assert str(module) == before[-1]
    module.verify()


def test_kernel_lookup_errors():
    module = Parser(make_context(), MATMUL + NOT_A_KERNEL).parse_module()
    with pytest.raises(ScheduleError, match=r"no kernel named @nope \(kernels: @mm\)"):
        Schedule.of(module, "nope")
    with pytest.raises(ScheduleError, match="@plain is not a kernel"):
        Schedule.of(module, "plain")


def test_loop_of_another_kernel_is_refused():
    module = Parser(make_context(), MATMUL + REDUCE_SUM).parse_module()
    other = Schedule.of(module, "rsum").loop("r")
    with pytest.raises(ScheduleError, match="@mm, loop 'r': is not in this kernel"):
        Schedule.of(module, "mm").split(other, 2)


def test_inline_refusals():
    module = Parser(make_context(), HOST_CHAIN).parse_module()
    with pytest.raises(ScheduleError, match="not an intermediate buffer"):
        inline(module, "main_1_add")
    with pytest.raises(ScheduleError, match="@main is not a kernel"):
        inline(module, "main")
    module = Parser(make_context(), HOST_CHAIN.replace("%t[%i, %j] : memref<5x7xf32>\n    }\n  }\n  func.return\n}\nfunc.func @main_1_add",
                                                       "%t[%j, %i] : memref<5x7xf32>\n    }\n  }\n  func.return\n}\nfunc.func @main_1_add")).parse_module()
    with pytest.raises(ScheduleError, match="must end its innermost body with one store to its output at the loop indices"):
        inline(module, "main_0_exp")
