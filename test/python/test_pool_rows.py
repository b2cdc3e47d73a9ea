"""NCHW max/avg_pool2d lowered, on the CPU, one output row at a time (lowering/kernels/pool.py
``_pool_rows``): the output-column loop is innermost, its interior segment has an
affine (unclamped) input index, and results are exact, compiled, on odd shapes:
equal to the reference and bit-identical to the per-element NHWC kernel, which
takes each window's taps in the same (kh, kw) order."""

from __future__ import annotations

import numpy as np
import pytest
from xdsl.dialects import arith
from xdsl.dialects.builtin import i8

import dlc
from dlc.dialects import graph
from dlc.dialects.tloop import ForOp
from dlc.evaluator import evaluate
from dlc.lowering.kernels.pool import _interior_columns
from dlc.lowering.lower_to_loops import lower_module
from test_lower_to_loops import T, make_module

CASES = [  # (input NCHW shape, pool attributes)
    ((1, 3, 13, 11), dict(kernel=[3, 3], strides=[2, 2], padding=[1, 1, 1, 1])),  # ResNet stem pool
    ((2, 2, 7, 5), dict(kernel=[2, 3], padding=[0, 2, 1, 1], strides=[1, 2])),
    ((1, 1, 9, 17), dict(kernel=[3, 2], dilations=[2, 3], padding=[2, 1, 0, 3])),
    ((1, 5, 6, 7), dict(kernel=[3, 3], strides=[2, 2], ceil_mode=True)),
    ((1, 2, 5, 1), dict(kernel=[3, 3], padding=[1, 1, 1, 1])),  # one column: no interior
    ((3, 1, 4, 4), dict(kernel=[1, 1])),
]


def _pool(kind, x, attrs, layout="NCHW"):
    op = graph.MaxPool2DOp if kind == "max" else graph.AvgPool2DOp
    extra = dict(count_include_pad=True) if kind == "avg_incl" else {}
    return op.make(x, layout=layout, **attrs, **extra) if layout != "NCHW" else op.make(x, **attrs, **extra)


def _run(module, inputs):
    return dlc.compile(module, num_threads=2)(*inputs)[0]


@pytest.mark.parametrize("kind", ["max", "avg", "avg_incl"])
@pytest.mark.parametrize("shape, attrs", CASES)
def test_pool_rows_compiled_exact(kind, shape, attrs):
    x = np.random.default_rng(7).standard_normal(shape).astype(np.float32)
    nchw = make_module([T(*shape)], lambda a: _pool(kind, a, attrs))
    want = evaluate(nchw, [x])[0]
    got = _run(nchw, [x])
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)
    # bit-identical to the per-element kernel (NHWC layout keeps that form)
    n, c, h, w = shape
    nhwc = make_module([T(n, h, w, c)], lambda a: _pool(kind, a, attrs, layout="NHWC"))
    per_element = _run(nhwc, [np.ascontiguousarray(x.transpose(0, 2, 3, 1))])
    np.testing.assert_array_equal(got, per_element.transpose(0, 3, 1, 2))


def test_int8_max_pool_rows_exact():
    x = np.random.default_rng(3).integers(-128, 128, (1, 3, 7, 9)).astype(np.int8)
    module = make_module([T(1, 3, 7, 9, et=i8)],
                         lambda a: graph.MaxPool2DOp.make(a, kernel=[3, 3], strides=[2, 2], padding=[1, 1, 1, 1]))
    np.testing.assert_array_equal(_run(module, [x]).view(np.int8), evaluate(module, [x])[0])


def test_column_loop_is_innermost_and_interior_unclamped():
    module = make_module([T(1, 4, 12, 12)], lambda a: graph.MaxPool2DOp.make(
        a, kernel=[3, 3], strides=[2, 2], padding=[1, 1, 1, 1]))
    lower_module(module, flat_conv=True)  # the CPU kernel forms (the driver's); the GPU keeps one thread per output
    loops = [op for op in module.walk() if isinstance(op, ForOp)]
    innermost = [op for op in loops if not any(isinstance(o, ForOp) for o in op.body.block.ops)]
    assert innermost and all(op.body.block.args[0].name_hint.startswith("ow") for op in innermost)
    # rows split into border / interior segments like columns: the interior of both is unclamped
    interior = [op for op in innermost if (op.lower, op.upper) == (1, 6)
                and (op.parent_op().lower, op.parent_op().upper) == (1, 6)]
    assert len(interior) == 1
    assert not any(isinstance(o, (arith.MaxSIOp, arith.MinSIOp)) for o in interior[0].walk())


@pytest.mark.parametrize("ow, kw, sw, dw, pl, w, expected", [
    (6, 3, 2, 1, 1, 12, (1, 6)),  # left tap of column 0 is padding
    (1, 3, 1, 1, 1, 1, (1, 1)),  # every column touches padding
    (5, 3, 1, 1, 0, 7, (0, 5)),  # no padding: all interior
    (3, 3, 2, 1, 0, 6, (0, 2)),  # ceil-mode overhang on the last column
])
def test_interior_columns(ow, kw, sw, dw, pl, w, expected):
    assert _interior_columns(ow, kw, sw, dw, pl, w) == expected
