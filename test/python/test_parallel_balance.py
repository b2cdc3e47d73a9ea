"""Load balance and serial work of the grouped conv schedule (schedule/defaults_conv_grouped.py).

With enough (group, output-channel block) pairs (BLOCK_MAJOR_MIN_ITERATIONS) the parallel
loop runs over them and each iteration also pads its block's weights, computes the tail
columns and copies its channels out: no serial nest is left around the parallel loop.
Results must be bit-identical to the column-tile-major schedule (same accumulation order
per element), identical at 1 and 2 threads, and match the evaluator on odd shapes
(primes, 1-wide maps, padded groups, batch 2, strides).
"""

from __future__ import annotations

import numpy as np
import pytest

import dlc.lowering.schedule.defaults_conv_grouped as grouped
from dlc.driver import compile, load_module
from dlc.evaluator import evaluate
from dlc.lowering.schedule.core import loop_name
from dlc.dialects.tloop import ForOp

from test_conv_grouped import conv_src, scheduled_kernel

RNG = np.random.default_rng(11)

# (x shape, w shape, stride, pad, groups): tails of 1..15 columns, OPG 8 / 12 (padded to 16)
# / 17 (padded to 24), batch 2, 1-wide maps
CASES = [
    ((1, 136, 14, 14), (136, 34, 1, 1), (1, 1), (0, 0, 0, 0), 4),   # P = 196: a 4-column tail
    ((2, 24, 13, 11), (36, 8, 1, 1), (1, 1), (0, 0, 0, 0), 3),      # batch 2, OPG 12, P = 143
    ((1, 51, 7, 7), (51, 17, 3, 3), (1, 1), (1, 1, 1, 1), 3),       # OPG 17 -> 24, padded 3x3
    ((1, 32, 9, 5), (64, 8, 3, 3), (2, 2), (1, 1, 1, 1), 4),        # stride 2: phase planes
    ((1, 48, 1, 1), (48, 6, 1, 1), (1, 1), (0, 0, 0, 0), 8),        # 1x1 map, 8 groups of 6 in
    ((2, 96, 5, 3), (96, 48, 1, 1), (1, 1), (0, 0, 0, 0), 2),       # 2 x 6 blocks, P = 15
]


def _inputs(x_shape, w_shape):
    return [RNG.standard_normal(s).astype(np.float32) for s in (x_shape, w_shape, (1, w_shape[0], 1, 1))]


def _src(x_shape, w_shape, stride, pad, groups):
    return conv_src(x_shape, w_shape, stride=stride, pad=pad, groups=groups, epilogue=True)


@pytest.mark.parametrize("x_shape,w_shape,stride,pad,groups", CASES)
def test_block_major_matches_evaluator_and_threads(x_shape, w_shape, stride, pad, groups):
    src = _src(x_shape, w_shape, stride, pad, groups)
    inputs = _inputs(x_shape, w_shape)
    expected = evaluate(load_module(src), inputs)[0]
    one = compile(src, num_threads=1)(*inputs)[0]
    two = compile(src, num_threads=2)(*inputs)[0]
    assert np.array_equal(one, two)
    scale = max(1.0, float(np.abs(expected).max()))
    np.testing.assert_allclose(two, expected, rtol=1e-5, atol=1e-5 * scale)


@pytest.mark.parametrize("x_shape,w_shape,stride,pad,groups", CASES[:3])
def test_block_major_bit_identical_to_column_major(x_shape, w_shape, stride, pad, groups, monkeypatch):
    src = _src(x_shape, w_shape, stride, pad, groups)
    inputs = _inputs(x_shape, w_shape)
    block_major = compile(src, num_threads=2)(*inputs)[0]
    monkeypatch.setattr(grouped, "BLOCK_MAJOR_MIN_ITERATIONS", 1 << 30)
    column_major = compile(src, num_threads=2)(*inputs)[0]
    assert np.array_equal(block_major, column_major)


def _top_loops(kernel):
    return [op for op in kernel.body.block.ops if isinstance(op, ForOp)]


def test_block_major_leaves_no_serial_nest():
    """ShuffleNet's 272-channel group-4 layer (OPG 68 -> 72: 9 blocks a group, P = 196 = 12 x
    16 + 4): one parallel loop of 4 x 9 iterations holds the weight padding, the main and
    tail column tiles and the copy-out of the block's 8 (or, last block, 4) channels."""
    kernel = scheduled_kernel(conv_src((1, 272, 14, 14), (272, 68, 1, 1), pad=(0, 0, 0, 0), groups=4, epilogue=True))
    tops = _top_loops(kernel)
    assert [(loop_name(l), l.loop_kind, l.trip_count) for l in tops] == [("g_oco", "parallel", 36)]
    inside = {loop_name(l): l for l in tops[0].walk() if isinstance(l, ForOp)}
    assert inside["wpad_o"].trip_count == 8 and inside["out_ci"].trip_count == 8
    assert inside["po"].trip_count == 12 and inside["pi_t"].trip_count == 4
    assert "scf.if" in str(tops[0])  # the padded channels 68..71 of the last block are not copied


def test_few_blocks_keep_column_tiles():
    """2 groups of 8 channels (2 blocks < BLOCK_MAJOR_MIN_ITERATIONS): parallel over column tiles."""
    kernel = scheduled_kernel(conv_src((1, 16, 12, 12), (16, 8, 1, 1), pad=(0, 0, 0, 0), groups=2))
    par = [l for l in kernel.walk() if isinstance(l, ForOp) and l.loop_kind == "parallel"]
    assert [loop_name(l) for l in par] == ["g_po"] and par[0].trip_count == 2 * 9
