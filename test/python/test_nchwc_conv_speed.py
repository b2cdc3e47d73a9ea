"""The blocked conv schedule's speed features (lowering/schedule/defaults_nchwc.py):
register tiles over several output-channel blocks for narrow rows, rows joining the
parallel loop when channel blocks are few, and tiles starting from zeros instead of a
zero-fill nest (a serial memset of the whole output before the parallel region).

Compiled results match the reference evaluator on odd shapes (3-channel stem, 48
channels, spatial 1, 7, 13 x 5, strides 1 and 2, padding 0/1/3, bias / relu / residual
epilogues) and are bit-identical to the schedule without these features (same
summation order); the loop structure really has them.
"""

from __future__ import annotations

import numpy as np
import pytest
from xdsl.dialects import func, memref
from xdsl.parser import Parser

import dlc
from dlc.context import make_context
from dlc.dialects.tloop import ForOp
from dlc.driver import graph_passes, run_pass
from dlc.evaluator import evaluate
from dlc.lowering.schedule import Schedule
from dlc.lowering.schedule import defaults_nchwc
from dlc.lowering.schedule.core import loop_name
from dlc.lowering.schedule.defaults_nchwc import (
    register_tile,
    register_tile_blocks,
    schedule_conv2d_nchwc,
    zero_initialized_tiles,
)
from dlc.target import Target

AVX512 = Target.from_string("llvm -mcpu=skylake-avx512")  # the tiles these tests pin plan for 32 zmm
from dlc.weights import WeightStore, attach

RNG = np.random.default_rng(17)


def _t(shape) -> str:
    return "tensor<" + "x".join(str(d) for d in shape) + "xf32>"


def conv_graph(c, hw, o, k, stride, pad, epilogue):
    """x -> conv [-> + b] [-> + conv(x, w2)] [-> relu]; returns (text, weights, input shapes)."""
    h, w = hw
    oh, ow = (h + 2 * pad - k) // stride + 1, (w + 2 * pad - k) // stride + 1
    x_t, w_t, y_t, b_t = _t((1, c, h, w)), _t((o, c, k, k)), _t((1, o, oh, ow)), _t((1, o, 1, 1))
    args = [f"%x: {x_t}"]
    attrs = f"strides = array<i64: {stride}, {stride}>, padding = array<i64: {pad}, {pad}, {pad}, {pad}>"
    lines = [f'  %w = graph.weight "w" : {w_t}', f"  %y = graph.conv2d %x, %w {{{attrs}}} : ({x_t}, {w_t}) -> {y_t}"]
    if "residual" in epilogue:  # a blocked value from another conv (ResNet's shortcut)
        lines += [f'  %w2 = graph.weight "w2" : {w_t}', f"  %r = graph.conv2d %x, %w2 {{{attrs}}} : ({x_t}, {w_t}) -> {y_t}"]
    last = "%y"
    if "bias" in epilogue:
        lines += [f'  %b = graph.weight "b" : {b_t}', f"  %yb = graph.add {last}, %b : ({y_t}, {b_t}) -> {y_t}"]
        last = "%yb"
    if "residual" in epilogue:
        lines.append(f"  %yr = graph.add {last}, %r : ({y_t}, {y_t}) -> {y_t}")
        last = "%yr"
    if "relu" in epilogue:
        lines.append(f"  %yz = graph.relu {last} : ({y_t}) -> {y_t}")
        last = "%yz"
    text = f"func.func @main({', '.join(args)}) -> {y_t} {{\n" + "\n".join(lines) + f"\n  func.return {last} : {y_t}\n}}"
    weights = {"w": RNG.normal(size=(o, c, k, k)) / np.sqrt(c * k * k), "b": RNG.normal(size=(1, o, 1, 1)),
               "w2": RNG.normal(size=(o, c, k, k)) / np.sqrt(c * k * k)}
    shapes = [(1, c, h, w)]
    return text, weights, shapes


def _module(text, weights):
    module = Parser(make_context(), text).parse_module()
    attach(module, WeightStore({k: v.astype(np.float32) for k, v in weights.items()}))
    return module


CASES = [
    # c, (h, w), o, k, stride, pad, epilogue
    (3, (13, 5), 16, 7, 2, 3, ("bias", "relu")),               # the stem's shape class: 3 channels, pad 3
    (16, (7, 7), 48, 1, 1, 0, ("bias", "residual", "relu")),  # 7-wide rows: 7 columns x 3 blocks
    (48, (7, 7), 32, 3, 1, 1, ("bias", "relu")),               # padded 3x3 at 7x7: 7 x 2 blocks, rows parallel
    (16, (14, 14), 48, 1, 2, 0, ("bias",)),                    # strided 1x1 downsample to 7x7
    (48, (1, 1), 48, 1, 1, 0, ("residual",)),                  # spatial 1: a 1 x 3-block tile
    (16, (13, 5), 16, 3, 1, 1, ("relu",)),                     # 5-wide rows, one block: rows tile
    (48, (13, 5), 32, 3, 2, 1, ()),                            # no epilogue, stride 2
    (16, (23, 23), 32, 3, 1, 1, ("bias", "residual", "relu")), # a column tail (23 = 16 + 7): remainder epilogue
]


@pytest.mark.parametrize("c,hw,o,k,stride,pad,epilogue", CASES)
def test_blocked_conv_matches_reference(c, hw, o, k, stride, pad, epilogue):
    text, weights, shapes = conv_graph(c, hw, o, k, stride, pad, epilogue)
    inputs = [RNG.normal(size=s).astype(np.float32) for s in shapes]
    expected = evaluate(_module(text, weights), inputs)[0]
    got = dlc.compile(_module(text, weights), layout="NCHWc", num_threads=2)(*inputs)[0]
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-5 * max(1.0, float(np.abs(expected).max())))


def _plain_schedule(monkeypatch):
    """The schedule without this module's features: one-block tiles and a fill nest."""
    monkeypatch.setattr(defaults_nchwc, "register_tile_blocks",
                        lambda oh, ow, blocks, bounds, pair_blocks=False: (*register_tile(oh, ow, bounds), 1))
    monkeypatch.setattr(defaults_nchwc, "zero_initialized_tiles", lambda kernel: False)


@pytest.mark.parametrize("case", [CASES[1], CASES[2], CASES[4], CASES[7]])
def test_results_bit_identical_to_plain_schedule(case, monkeypatch):
    text, weights, shapes = conv_graph(*case)
    inputs = [RNG.normal(size=s).astype(np.float32) for s in shapes]
    fast = dlc.compile(_module(text, weights), layout="NCHWc", num_threads=2)(*inputs)[0]
    _plain_schedule(monkeypatch)
    plain = dlc.compile(_module(text, weights), layout="NCHWc", num_threads=2)(*inputs)[0]
    np.testing.assert_array_equal(fast, plain)


@pytest.mark.parametrize("oh,ow,blocks,tile", [
    (7, 7, 32, (1, 7, 2)), (7, 7, 3, (2, 7, 1)), (1, 1, 16, (1, 1, 16)), (1, 1, 3, (1, 1, 1)),
    (3, 3, 4, (1, 3, 4)), (5, 5, 3, (1, 5, 3)), (56, 56, 4, (1, 14, 1)), (13, 5, 1, (2, 5, 1)),
    (112, 112, 4, (1, 16, 1)), (14, 14, 1, (1, 14, 1))])
def test_register_tile_blocks(oh, ow, blocks, tile):
    assert register_tile_blocks(oh, ow, blocks) == tile
    rows, cols, k = tile
    assert blocks % k == 0 and rows * cols * k <= defaults_nchwc.MAX_TILE


@pytest.mark.parametrize("oh,ow,blocks,tile", [
    (56, 56, 4, (1, 8, 2)), (28, 28, 8, (1, 7, 2)), (14, 14, 16, (1, 7, 2)), (7, 7, 32, (1, 7, 2)),
    (112, 112, 4, (1, 8, 2)), (10, 10, 2, (1, 5, 2)),
    (27, 27, 2, (1, 9, 2)), (13, 13, 4, (1, 7, 2)), (23, 23, 2, (1, 8, 2)),  # 9 x 2; tails of 6 and 7
    (56, 56, 9, (1, 4, 3)), (13, 13, 63, (1, 5, 3)),  # odd block counts divisible by 3: 3 blocks
    (56, 56, 5, (1, 14, 1)), (1, 1, 16, (1, 1, 16))])  # neither: one block; a row too narrow
def test_register_tile_pairs_blocks_with_one_vector_per_block(oh, ow, blocks, tile):
    """AVX-512 (a 16-lane block is one zmm): two blocks x 5-9 columns, so each input
    broadcast feeds two FMAs (a divisor of the row, else the widest column tail); an odd
    block count divisible by 3: three blocks x 4-6 columns; otherwise, or with a row under
    the narrowest width, the one-block rules."""
    assert register_tile_blocks(oh, ow, blocks, pair_blocks=True) == tile
    rows, cols, k = tile
    assert blocks % k == 0 and rows * cols * k <= defaults_nchwc.MAX_TILE + 2


@pytest.mark.parametrize("oh,ow,blocks,tile", [
    (7, 7, 32, (1, 6, 1)), (3, 3, 4, (1, 3, 2)), (2, 2, 4, (1, 2, 2)), (1, 1, 16, (1, 1, 4)),
    (56, 56, 4, (1, 4, 1)), (13, 13, 4, (1, 6, 1))])
def test_register_tile_blocks_with_16_ymm(oh, ow, blocks, tile):
    """AVX2's bounds (Target.nchwc_tile_outputs(16) on 16 ymm: 4-6 outputs of 2 ymm each)."""
    bounds = Target.from_string("llvm -mcpu=haswell").nchwc_tile_outputs(16)
    assert bounds == (4, 6) and register_tile_blocks(oh, ow, blocks, bounds) == tile


def _conv_kernel(case):
    text, weights, _ = conv_graph(*case)
    module = _module(text, weights)
    for name in graph_passes("NCHWc"):
        run_pass(name, module)
    run_pass("lower-to-loops{flat-conv=true}", module)
    convs = [op for op in module.walk() if isinstance(op, func.FuncOp) and "conv2d_nchwc" in op.sym_name.data]
    return max(convs, key=lambda op: len(op.sym_name.data))  # the one with the epilogue, not the shortcut


def _top_nests(kernel):
    return [op for op in kernel.body.block.ops if isinstance(op, ForOp)]


def test_narrow_rows_tile_over_channel_blocks_with_rows_parallel():
    kernel = _conv_kernel(CASES[2])  # 7x7 output, 2 blocks: a 7 x 2 tile, (blocks / 2) x 7 rows parallel
    assert schedule_conv2d_nchwc(Schedule(kernel), AVX512)
    names = {loop_name(l): l for l in kernel.walk() if isinstance(l, ForOp)}
    assert names["ocbi"].loop_kind == "unrolled" and names["ocbi"].trip_count == 2
    parallel = [l for l in names.values() if l.loop_kind == "parallel"]
    assert len(parallel) == 1 and parallel[0].trip_count == 7  # 1 block pair x 7 rows


def test_no_fill_nest_tiles_start_from_zeros():
    kernel = _conv_kernel((16, (7, 7), 32, 1, 1, 0, ("bias", "residual", "relu")))  # 7 x 2 tiles, no tail
    assert kernel.attributes["tloop.fused"].data == "graph.conv2d_nchwc+add+add+relu"
    assert schedule_conv2d_nchwc(Schedule(kernel), AVX512)
    nests = _top_nests(kernel)
    # the tiles (parallel), then the epilogue nest; no fill before them
    assert len(nests) == 2 and nests[0].loop_kind == "parallel"
    out = kernel.body.block.args[-1]
    assert not any(isinstance(op, memref.LoadOp) and op.memref is out for op in nests[0].walk())
    zero_stores = [op for op in nests[0].walk() if isinstance(op, memref.StoreOp)
                   and isinstance(op.memref.owner, memref.AllocaOp) and op.value.owner.name == "arith.constant"]
    assert zero_stores and all(float(op.value.owner.value.value.data) == 0.0 for op in zero_stores)


def test_column_tail_tiles_start_from_zeros_too():
    kernel = _conv_kernel(CASES[7])  # 23 columns: 8-column x 2-block tiles and a 7-column tail
    assert schedule_conv2d_nchwc(Schedule(kernel), AVX512)
    out = kernel.body.block.args[-1]
    fills = [n for n in _top_nests(kernel)
             if not any(isinstance(op, memref.LoadOp) for op in n.walk())]
    assert not fills  # the fill nest is gone even with a remainder
    copy_ins = [op for op in kernel.walk() if isinstance(op, memref.LoadOp) and op.memref is out
                and any(isinstance(u.operation, memref.StoreOp)
                        and isinstance(u.operation.memref.owner, memref.AllocaOp) for u in op.res.uses)]
    assert not copy_ins  # every tile (main and tail) starts from zeros
    assert sum(isinstance(op, memref.AllocaOp) for op in kernel.walk()) == 2  # main and tail tiles


@pytest.mark.parametrize("case,blocks,cols,tail", [
    (CASES[7], 2, 8, 7),  # 23 wide, 2 blocks: 8 x 2 tiles and a 7 x 2 tail
    ((16, (13, 13), 48, 3, 1, 1, ("bias", "relu")), 3, 5, 3),  # 13 wide, 3 blocks: 5 x 3 and 3 x 3
])
def test_block_group_tiles_with_a_column_tail_compute_the_same(case, blocks, cols, tail):
    """AVX-512's multi-block tiles with a column tail under a block loop of its own
    (ocbi_u), parallel over (n, block group); the loop interpreter runs the kernel before
    and after scheduling, on any host: the same bits (sums in source order)."""
    from schedule_kernels import random_args
    from tloop_exec import run_kernel

    kernel = _conv_kernel(case)
    module, name = kernel.parent_op(), kernel.sym_name.data
    args = random_args(module, name)
    expected = run_kernel(module, name, args)
    assert schedule_conv2d_nchwc(Schedule(kernel), AVX512)
    loops = {loop_name(l): l for l in kernel.walk() if isinstance(l, ForOp)}
    assert loops["ocbi"].trip_count == loops["ocbi_u"].trip_count == blocks
    assert loops["owi"].trip_count == cols and loops["owi_u"].trip_count == tail
    assert any(l.loop_kind == "parallel" for l in loops.values())
    np.testing.assert_array_equal(run_kernel(module, name, args)[-1], expected[-1])


def test_zero_initialized_tiles_refuses_unscheduled_kernel():
    kernel = _conv_kernel(CASES[1])
    before = str(kernel)
    assert not zero_initialized_tiles(kernel)  # one nest: the fill is inside the accumulation
    assert str(kernel) == before
