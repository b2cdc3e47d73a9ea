"""rfactor (lowering/schedule/rfactor.py) in the CPU default schedule, and the skinny
(matrix-vector) matmul schedule: loop structure and results against numpy on odd shapes."""

from __future__ import annotations

import numpy as np
import pytest
from xdsl.parser import Parser

import dlc
from dlc.context import make_context
from dlc.dialects.tloop import ForOp
from dlc.lowering.lower_to_loops import lower_module
from dlc.lowering.schedule.core import loop_name
from dlc.lowering.schedule.defaults import apply_default_schedules

RNG = np.random.default_rng(5)


def _t(shape) -> str:
    return "tensor<" + "x".join(map(str, shape)) + "xf32>"


def _reduce(op: str, shape, axis: int) -> str:
    out = list(shape)
    out[axis] = 1
    return (f"func.func @main(%x: {_t(shape)}) -> {_t(out)} {{\n"
            f"  %y = graph.{op} %x {{axes = array<i64: {axis}>, keepdims = true}} : ({_t(shape)}) -> {_t(out)}\n"
            f"  func.return %y : {_t(out)}\n}}")


def _scheduled_loops(text: str) -> list[tuple[str, str]]:
    module = Parser(make_context(), text).parse_module()
    lower_module(module)
    apply_default_schedules(module)
    return [(loop_name(op), op.loop_kind) for op in module.walk() if isinstance(op, ForOp)]


@pytest.mark.parametrize("op", ["reduce_sum", "reduce_max", "reduce_min", "reduce_mean"])
@pytest.mark.parametrize("shape", [(1, 1), (3, 31), (5, 32), (2, 33), (7, 1031), (1, 3, 97)])
def test_last_axis_reductions_match_numpy(op, shape):
    x = RNG.normal(size=shape).astype(np.float32) * 3
    got = dlc.compile(_reduce(op, shape, len(shape) - 1))(x)[0]
    ref = {"reduce_sum": np.sum, "reduce_max": np.max, "reduce_min": np.min, "reduce_mean": np.mean}[op]
    want = ref(x.astype(np.float64), axis=-1, keepdims=True)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5 * np.sqrt(shape[-1]))


def test_sum_is_split_into_lanes_and_a_tail():
    loops = _scheduled_loops(_reduce("reduce_sum", (3, 1031), 1))
    assert ("r0_l", "vectorized") in loops and ("r0_lf", "serial") in loops and ("r0", "serial") in loops


def test_short_and_strided_reductions_keep_their_order():
    # 31 < 2 * 16 elements: not worth it; axis 0: the lane loop would not be stride-1
    assert not any(name.endswith("_l") for name, _ in _scheduled_loops(_reduce("reduce_sum", (3, 31), 1)))
    assert not any(name.endswith("_l") for name, _ in _scheduled_loops(_reduce("reduce_sum", (1031, 3), 0)))


def test_max_propagates_nan_and_handles_infinities():
    x = RNG.normal(size=(4, 100)).astype(np.float32)
    x[0, 57] = np.nan  # in the lane part
    x[1, 99] = np.nan  # in the tail
    x[2, :] = -np.inf
    x[3, 5] = np.inf
    got = dlc.compile(_reduce("reduce_max", (4, 100), 1))(x)[0][:, 0]
    assert np.isnan(got[0]) and np.isnan(got[1]) and got[2] == -np.inf and got[3] == np.inf


@pytest.mark.parametrize("shape", [(2, 1031), (3, 16), (1, 77), (4, 5, 33)])
def test_softmax_and_log_softmax_one_kernel_match_numpy(shape):
    x = (RNG.normal(size=shape) * 10).astype(np.float32)
    d = x.astype(np.float64) - x.max(-1, keepdims=True)
    log = d - np.log(np.exp(d).sum(-1, keepdims=True))
    for op, want in (("softmax", np.exp(log)), ("log_softmax", log)):
        text = (f"func.func @main(%x: {_t(shape)}) -> {_t(shape)} {{\n"
                f"  %y = graph.{op} %x {{axis = -1 : i64}} : ({_t(shape)}) -> {_t(shape)}\n"
                f"  func.return %y : {_t(shape)}\n}}")
        compiled = dlc.compile(text)
        kernels = [line for line in compiled.llvm_ir.splitlines()
                   if line.startswith("define") and "_par" not in line and "softmax" in line]
        assert len(kernels) == 1, kernels  # fuse-ops re-formed the op legalize expanded
        np.testing.assert_allclose(compiled(x)[0], want, rtol=1e-5, atol=1e-6)


# -- the skinny (matrix-vector) matmul schedule ----------------------------------------------

@pytest.mark.parametrize("batch,m,n,k", [((), 1, 1000, 203), ((), 3, 257, 64), ((), 1, 131, 7),
                                         ((), 2, 1024, 33), ((3,), 1, 384, 17)])
def test_skinny_matmul_matches_numpy(batch, m, n, k):
    a_shape, out = tuple(batch) + (m, k), tuple(batch) + (m, n)
    text = (f"func.func @main(%a: {_t(a_shape)}, %b: {_t((k, n))}) -> {_t(out)} {{\n"
            f"  %c = graph.matmul %a, %b : ({_t(a_shape)}, {_t((k, n))}) -> {_t(out)}\n"
            f"  func.return %c : {_t(out)}\n}}")
    a = RNG.normal(size=a_shape).astype(np.float32)
    b = RNG.normal(size=(k, n)).astype(np.float32)
    np.testing.assert_allclose(dlc.compile(text)(a, b)[0], a @ b, rtol=1e-4, atol=1e-4 * np.sqrt(k))


def test_skinny_matmul_streams_b_rows_in_parallel_column_blocks():
    text = (f"func.func @main(%a: {_t((1, 2048))}, %b: {_t((2048, 1000))}) -> {_t((1, 1000))} {{\n"
            f"  %c = graph.matmul %a, %b : ({_t((1, 2048))}, {_t((2048, 1000))}) -> {_t((1, 1000))}\n"
            f"  func.return %c : {_t((1, 1000))}\n}}")
    loops = _scheduled_loops(text)
    # no packing copies, no register tile: column blocks in parallel, k outside the columns
    # (k in steps of SKINNY_ROWS_PER_PASS rows, expanded inside the column loop); the block's
    # C chunk is accumulated in a local copy (acc: copied in, and out after the k loop)
    assert loops[2:] == [("no", "parallel"), ("m_s1", "serial"), ("acc_d0", "serial"),
                         ("acc_d1", "vectorized"), ("ko", "serial"), ("nn", "vectorized"),
                         ("acc_out_d0", "serial"), ("acc_out_d1", "vectorized")]
