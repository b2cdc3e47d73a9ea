"""Every schedule primitive preserves results: kernels run before and after scheduling.

The executor is dlc.lowering.interp (through test/python/tloop_exec.py). Scheduling
never reorders a floating-point accumulation, so results must be bit-identical.
The scheduled IR is also printed and re-parsed (loop names stay unique).
"""

from __future__ import annotations

import numpy as np
import pytest
from xdsl.dialects import func
from xdsl.parser import Parser

from dlc.context import make_context
from dlc.dialects.tloop import ForOp
from dlc.lowering.schedule import Schedule, apply_default_schedules, inline
from schedule_kernels import (
    BROADCAST_ADD,
    CONV2D,
    HOST_CHAIN,
    MATMUL,
    MATMUL_ACC,
    REDUCE_SUM,
    SCALE_1,
    SIBLINGS,
    STENCIL,
    STRIDED,
    random_args,
)
from tloop_exec import run_kernel

KERNELS = {"mm": MATMUL, "mma": MATMUL_ACC, "badd": BROADCAST_ADD, "conv": CONV2D,
           "rsum": REDUCE_SUM, "sib": SIBLINGS, "one": SCALE_1, "stencil": STENCIL,
           "strided": STRIDED}


def parse(text: str):
    module = Parser(make_context(), text).parse_module()
    module.verify()
    return module


def assert_same(before: list[np.ndarray], after: list[np.ndarray]) -> None:
    for b, a in zip(before, after):
        np.testing.assert_array_equal(a, b)


def check(name: str, *steps, seed: int = 0):
    """Schedule kernel @name with `steps` (functions of a Schedule) and compare runs."""
    module = parse(KERNELS[name])
    args = random_args(module, name, seed)
    expected = run_kernel(module, name, args)
    s = Schedule.of(module, name)
    for step in steps:
        step(s)
    module.verify()
    assert_same(expected, run_kernel(module, name, args))
    reparsed = parse(str(module))
    assert_same(expected, run_kernel(reparsed, name, args))
    return module


def kinds(module) -> dict[str, str]:
    return {op.induction_var.name_hint: op.loop_kind for op in module.walk() if isinstance(op, ForOp)}


def test_executor_matches_numpy():
    module = parse(MATMUL)
    a, b, c = random_args(module, "mm")
    out = run_kernel(module, "mm", [a, b, c])[2]
    np.testing.assert_allclose(out, a @ b, rtol=1e-5, atol=1e-6)
    module = parse(CONV2D)
    x, w, o = random_args(module, "conv")
    got = run_kernel(module, "conv", [x, w, o])[2]
    xp = np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1)))
    ref = np.zeros_like(got)
    for h in range(7):
        for q in range(5):
            ref[0, :, h, q] = np.tensordot(w, xp[0, :, h:h + 3, q:q + 3], axes=3)
    np.testing.assert_allclose(got, ref, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("factor", [1, 2, 3, 4, 7, 8, 16])
@pytest.mark.parametrize("loop", ["i", "j", "k"])
def test_split_matmul(loop, factor):
    module = check("mm", lambda s: s.split(loop, factor))
    assert f"{loop}_outer" in kinds(module) and f"{loop}_inner" in kinds(module)
    guarded = any(op.name == "scf.if" for op in module.walk())
    assert guarded == ({"i": 7, "j": 3, "k": 5}[loop] % factor != 0)


@pytest.mark.parametrize("loop,factor", [("h", 3), ("ww", 2), ("kw", 2), ("c", 1), ("f", 2)])
def test_split_conv(loop, factor):
    check("conv", lambda s: s.split(loop, factor))


def test_split_twice_and_split_of_split():
    check("badd", lambda s: s.split("j", 4), lambda s: s.split("j_inner", 2), lambda s: s.split("i", 3))


@pytest.mark.parametrize("fa,fb", [(2, 4), (3, 5), (8, 1), (1, 11), (4, 4)])
def test_tile_broadcast_add(fa, fb):
    module = check("badd", lambda s: s.tile("i", "j", fa, fb))
    order = [op.induction_var.name_hint for op in module.walk() if isinstance(op, ForOp)]
    assert order == ["i_outer", "j_outer", "i_inner", "j_inner"]


def test_tile_matmul_acc_and_conv():
    check("mma", lambda s: s.tile("i", "j", 4, 3))
    check("mma", lambda s: s.tile("j", "k", 4, 2))
    check("conv", lambda s: s.tile("h", "ww", 3, 2))


@pytest.mark.parametrize("order", [("i", "j", "k"), ("k", "i", "j"), ("j", "k", "i"), ("k", "j", "i")])
def test_reorder_matmul_acc_all_orders(order):
    module = check("mma", lambda s: s.reorder(*order))
    assert [op.induction_var.name_hint for op in module.walk() if isinstance(op, ForOp)] == list(order)


def test_reorder_after_split_sinks_guards():
    module = check("badd", lambda s: s.split("i", 3), lambda s: s.reorder("j", "i_inner"))
    assert [op.induction_var.name_hint for op in module.walk() if isinstance(op, ForOp)] == \
        ["i_outer", "j", "i_inner"]


def test_reorder_spatial_conv_loops():
    check("conv", lambda s: s.reorder("h", "f"))
    check("conv", lambda s: s.reorder("ww", "h"))


def test_fuse():
    module = check("badd", lambda s: s.fuse("i", "j"))
    assert kinds(module) == {"i_j_fused": "serial"}
    check("conv", lambda s: s.fuse("n", "f"), lambda s: s.fuse("n_f_fused", "h"))
    check("badd", lambda s: s.split("j", 4), lambda s: s.fuse("i", "j_outer"))
    check("mma", lambda s: s.fuse("i", "j"), lambda s: s.split("i_j_fused", 5))


def test_fuse_then_parallel():
    module = check("badd", lambda s: s.fuse("i", "j"), lambda s: s.parallel("i_j_fused"))
    assert kinds(module)["i_j_fused"] == "parallel"


def test_fuse_siblings():
    module = check("sib", lambda s: s.fuse_siblings("i", "j"))
    assert list(kinds(module)) == ["i"]


@pytest.mark.parametrize("expand", [False, True])
def test_unroll(expand):
    module = check("mm", lambda s: s.unroll("k", expand=expand))
    assert ("k" in kinds(module)) != expand
    if not expand:
        assert kinds(module)["k"] == "unrolled"
    check("one", lambda s: s.unroll("i", expand=True))


def test_vectorize_and_parallel():
    module = check("badd", lambda s: s.parallel("i"), lambda s: s.vectorize("j"))
    assert kinds(module) == {"i": "parallel", "j": "vectorized"}
    module = check("rsum", lambda s: s.parallel("i"))
    assert kinds(module)["i"] == "parallel"
    check("badd", lambda s: s.split("j", 4), lambda s: s.vectorize("j_inner"), lambda s: s.parallel("i"))


def test_parallel_after_split_keeps_disjointness():
    module = check("mm", lambda s: s.split("i", 2), lambda s: s.parallel("i_outer"))
    assert kinds(module)["i_outer"] == "parallel"


def test_parallel_over_blocks_two_nests_write_differently():
    """A GEMM's main rows and its row tail, split inside each column block: the two nests
    index C through different loops (no common index), yet each j_outer iteration writes
    its own 4 columns (affine.block_partitioned)."""
    module = check("mma", lambda s: s.split("j", 4), lambda s: s.reorder("j_outer", "i", "j_inner", "k"),
                   lambda s: s.split_range("i", 4, "_t"), lambda s: s.parallel("j_outer"))
    assert kinds(module)["j_outer"] == "parallel" and "i_t" in kinds(module)


def test_parallel_refuses_blocks_that_overlap():
    """Blocks of 4 columns that a nest reads one column past (c[i, j + 1]) are not disjoint."""
    text = KERNELS["mma"].replace("%acc = memref.load %c[%i, %j]", "%j1 = arith.addi %j, %one : index\n"
                                  "        %acc = memref.load %c[%i, %j1]").replace(
        "tloop.for %i = 0 to 6 {", "%one = arith.constant 1 : index\n  tloop.for %i = 0 to 6 {").replace(
        "0 to 11", "0 to 10")
    module = parse(text)
    s = Schedule.of(module, "mma")
    s.split("j", 5)
    s.reorder("j_outer", "i", "j_inner", "k")
    with pytest.raises(Exception, match="cannot be parallel"):
        s.parallel("j_outer")


@pytest.mark.parametrize("buffer,loop", [("a", "j"), ("b", "i"), ("a", "i"), ("b", "k"), ("a", "k")])
def test_cache_read_matmul(buffer, loop):
    module = check("mm", lambda s: s.cache_read(buffer, loop))
    assert any(op.name == "memref.alloca" for op in module.walk())


def test_cache_read_conv_padding_and_split_guards():
    check("conv", lambda s: s.cache_read("x", "h"))
    check("conv", lambda s: s.cache_read("x", "f"), lambda s: s.cache_read("w", "ww"))
    check("conv", lambda s: s.split("h", 3), lambda s: s.cache_read("x", "h_inner"))


@pytest.mark.parametrize("loop", ["i", "j"])
def test_cache_write(loop):
    check("mm", lambda s: s.cache_write("c", loop))
    check("mma", lambda s: s.cache_write("c", loop))


def test_cache_write_conv():
    check("conv", lambda s: s.cache_write("out", "h"))


def test_cache_inside_parallel_loop_is_per_iteration():
    module = check("mm", lambda s: s.parallel("i"), lambda s: s.cache_write("c", "j"))
    loop_i = next(op for op in module.walk() if isinstance(op, ForOp))
    assert any(op.name == "memref.alloca" for op in loop_i.body.block.ops)


def test_register_blocking_recipe():
    """tile + cache_write + parallel + vectorize together (a GEMM micro-kernel shape)."""
    module = check(
        "mma",
        lambda s: s.tile("i", "j", 2, 4),
        lambda s: s.reorder("k", "i_inner", "j_inner"),
        lambda s: s.parallel("i_outer"),
        lambda s: s.cache_write("c", "j_outer"),
        lambda s: s.vectorize("j_inner"),
    )
    k = kinds(module)
    assert k["i_outer"] == "parallel" and k["j_inner"] == "vectorized"


@pytest.mark.parametrize("consumer", ["i", "j"])
def test_compute_at_stencil(consumer):
    module = check("stencil", lambda s: s.compute_at("p", consumer))
    top_level = [op for op in module.body.block.first_op.body.block.ops if isinstance(op, ForOp)]
    assert [op.induction_var.name_hint for op in top_level] == ["i"]
    check("stencil", lambda s: s.split("i", 4), lambda s: s.compute_at("p", "i_inner"))
    check("sib", lambda s: s.compute_at("i", "j"))


def test_compute_at_then_cache_read():
    check("stencil", lambda s: s.compute_at("p", "i"), lambda s: s.cache_read("t", "j"))


@pytest.mark.parametrize("steps", [
    [lambda s: s.split("i", 4)],
    [lambda s: s.split("j", 2), lambda s: s.reorder("j_outer", "i")],
    [lambda s: s.fuse("i", "j"), lambda s: s.parallel("i_j_fused")],
    [lambda s: s.tile("i", "j", 2, 2), lambda s: s.parallel("i_outer")],
    [lambda s: s.cache_read("x", "i"), lambda s: s.cache_write("out", "i")],
    [lambda s: s.unroll("j", expand=True), lambda s: s.parallel("i")],
])
def test_loops_with_start_and_step(steps):
    check("strided", *steps)


def test_inline_producer_into_consumer():
    module = parse(HOST_CHAIN)
    args = random_args(module, "main", 3)
    expected = run_kernel(module, "main", args)
    consumer = inline(module, "main_0_exp")
    module.verify()
    assert consumer == "main_1_add"
    names = [op.sym_name.data for op in module.ops if isinstance(op, func.FuncOp)]
    assert names == ["main_1_add", "main"]
    assert not any(op.name in ("memref.alloc", "memref.dealloc") for op in module.walk())
    assert_same(expected, run_kernel(module, "main", args))
    assert_same(expected, run_kernel(parse(str(module)), "main", args))


@pytest.mark.parametrize("name", sorted(KERNELS))
def test_default_schedules_preserve_results(name):
    module = parse(KERNELS[name])
    args = random_args(module, name, 5)
    expected = run_kernel(module, name, args)
    apply_default_schedules(module)
    module.verify()
    assert_same(expected, run_kernel(module, name, args))


def test_default_schedules_choices():
    # tiny kernels: allow parallel loops of any size to test the choices themselves
    module = parse(BROADCAST_ADD)
    apply_default_schedules(module, min_parallel_iterations=1)
    assert kinds(module) == {"i": "parallel", "j": "vectorized"}
    module = parse(MATMUL)
    apply_default_schedules(module, min_parallel_iterations=1)
    assert kinds(module) == {"i": "parallel", "j": "serial", "k": "serial"}
    module = parse(REDUCE_SUM)
    apply_default_schedules(module, min_parallel_iterations=1)
    assert kinds(module) == {"i": "parallel", "r": "serial"}
    module = parse(SCALE_1)  # trip count 1: not parallel
    apply_default_schedules(module, min_parallel_iterations=1)
    assert kinds(module) == {"i": "serial", "j": "vectorized"}
    module = parse(SIBLINGS)  # both loops write disjoint elements
    apply_default_schedules(module, min_parallel_iterations=1)
    assert kinds(module) == {"i": "parallel", "j": "parallel"}
    assert apply_default_schedules(parse(MATMUL), target="cuda") is not None


def test_default_schedules_keep_tiny_nests_serial():
    module = parse(BROADCAST_ADD)  # 7x11: far below the work that pays for waking threads
    apply_default_schedules(module)
    assert kinds(module) == {"i": "serial", "j": "vectorized"}
