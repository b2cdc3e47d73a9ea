"""The loop-IR interpreter (dlc.lowering.interp) on hand-written loop IR."""

from __future__ import annotations

import numpy as np
import pytest
from xdsl.parser import Parser

from dlc.context import make_context
from dlc.lowering.interp import InterpError, LoopProgram

RELU = """
func.func @relu(%x: memref<4x7xf32>, %y: memref<4x7xf32>) attributes {tloop.kernel} {
  %z = arith.constant 0.0 : f32
  tloop.for %i = 0 to 4 parallel {
    tloop.for %j = 0 to 7 step 2 vectorized {
      %v = memref.load %x[%i, %j] : memref<4x7xf32>
      %r = arith.maximumf %v, %z : f32
      memref.store %r, %y[%i, %j] : memref<4x7xf32>
    }
  }
  func.return
}
func.func @main(%x: memref<4x7xf32>, %y: memref<4x7xf32>) attributes {tloop.host, tloop.num_inputs = 1 : i64} {
  func.call @relu(%x, %y) : (memref<4x7xf32>, memref<4x7xf32>) -> ()
  func.return
}
"""


def parse(text: str):
    return Parser(make_context(), text).parse_module()


def test_parsed_loop_ir_runs_with_steps_and_kinds():
    x = np.random.default_rng(1).uniform(-1, 1, (4, 7)).astype(np.float32)
    (y,) = LoopProgram(parse(RELU)).run([x])
    # step 2: odd columns are never written and keep the NaN sentinel
    np.testing.assert_array_equal(y[:, ::2], np.maximum(x[:, ::2], 0))
    assert np.isnan(y[:, 1::2]).all()


def test_out_of_bounds_access_is_reported():
    bad = RELU.replace("tloop.for %j = 0 to 7 step 2", "tloop.for %j = 0 to 8 step 1")
    with pytest.raises(InterpError, match=r"out-of-bounds access .* shape \[4, 7\]"):
        LoopProgram(parse(bad)).run([np.zeros((4, 7), np.float32)])


def test_integer_ops_wrap_and_truncate_like_c():
    text = """
    func.func @main(%a: memref<3xi8>, %b: memref<3xi8>, %o: memref<3xi8>) attributes {tloop.host, tloop.num_inputs = 2 : i64} {
      tloop.for %i = 0 to 3 {
        %x = memref.load %a[%i] : memref<3xi8>
        %y = memref.load %b[%i] : memref<3xi8>
        %s = arith.addi %x, %y : i8
        %q = arith.divsi %s, %y : i8
        memref.store %q, %o[%i] : memref<3xi8>
      }
      func.return
    }
    """
    a = np.array([120, -7, 5], np.int8)
    b = np.array([10, 2, -2], np.int8)
    (o,) = LoopProgram(parse(text)).run([a, b])
    # 120 + 10 wraps to -126; -126 / 10 = -12 (toward zero); -5 / 2 = -2; 3 / -2 = -1
    np.testing.assert_array_equal(o, [-12, -2, -1])
