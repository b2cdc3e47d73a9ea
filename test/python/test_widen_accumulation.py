"""widen-accumulation: f16 matmul, reductions and conv2d accumulate in f32 (one rounding
at the end), compiled end to end."""

from __future__ import annotations

import numpy as np

from dlc.dialects import graph as g

from one_op_util import RNG, run_compiled


def test_f16_reductions_accumulate_in_f32():
    # 1 + 2048 terms of 1/2048: f16 accumulation stalls at 1 + 1/1024 steps; one
    # rounding at the end gives 2.0 exactly
    a = np.concatenate([[1.0], np.full(2048, 1 / 2048)]).astype(np.float16).reshape(1, -1)
    ones = np.ones((a.shape[1], 3), np.float16)
    (got,), _ = run_compiled(g.MatmulOp, [a, ones])
    np.testing.assert_array_equal(got, np.full((1, 3), 2.0, np.float16))
    (got,), _ = run_compiled(g.ReduceSumOp, [a], axes=[1])
    np.testing.assert_array_equal(got, [2.0])
    x = RNG.standard_normal((1, 3, 7, 5)).astype(np.float16)
    w = RNG.standard_normal((2, 3, 3, 3)).astype(np.float16)
    (got,), _ = run_compiled(g.Conv2DOp, [x, w], padding=[1, 1, 1, 1])
    exact = run_compiled(g.Conv2DOp, [x.astype(np.float32), w.astype(np.float32)], padding=[1, 1, 1, 1])[0][0]
    np.testing.assert_array_equal(got, exact.astype(np.float16))
