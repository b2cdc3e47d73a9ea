"""The reference evaluator: multi-op functions against numpy written out by
hand, entry-point selection, and one-line errors for bad inputs."""

from __future__ import annotations

import numpy as np
import pytest

from dlc.evaluator import EvaluationError, evaluate, find_function
from test_graph_util import parse

MLP = """
func.func @main(%x: tensor<3x7xf32>, %w1: tensor<5x7xf32>, %b1: tensor<5xf32>, %w2: tensor<2x5xf32>) -> (tensor<3x2xf32>, tensor<3xi64>) {
  %h = graph.dense %x, %w1, %b1 : (tensor<3x7xf32>, tensor<5x7xf32>, tensor<5xf32>) -> tensor<3x5xf32>
  %r = graph.relu %h : (tensor<3x5xf32>) -> tensor<3x5xf32>
  %t = graph.transpose %w2 : (tensor<2x5xf32>) -> tensor<5x2xf32>
  %o = graph.matmul %r, %t : (tensor<3x5xf32>, tensor<5x2xf32>) -> tensor<3x2xf32>
  %c = graph.constant dense<[0.5, -1.0]> : tensor<2xf32>
  %s = graph.add %o, %c : (tensor<3x2xf32>, tensor<2xf32>) -> tensor<3x2xf32>
  %p = graph.softmax %s {axis = -1 : i64} : (tensor<3x2xf32>) -> tensor<3x2xf32>
  %i = graph.argmax %p {axis = 1 : i64} : (tensor<3x2xf32>) -> tensor<3xi64>
  func.return %p, %i : tensor<3x2xf32>, tensor<3xi64>
}
"""


def test_multi_op_function_matches_numpy():
    rng = np.random.default_rng(1)
    x, w1, b1, w2 = (rng.standard_normal(s).astype(np.float32) for s in [(3, 7), (5, 7), (5,), (2, 5)])
    p, i = evaluate(parse(MLP), [x, w1, b1, w2])
    s = np.maximum(x @ w1.T + b1, 0) @ w2.T + np.array([0.5, -1.0], np.float32)
    e = np.exp(s - s.max(axis=1, keepdims=True))
    want = e / e.sum(axis=1, keepdims=True)
    np.testing.assert_allclose(p, want, rtol=1e-5)
    assert p.dtype == np.float32 and i.dtype == np.int64
    np.testing.assert_array_equal(i, want.argmax(axis=1))


SPLIT_CONCAT = """
func.func @helper(%x: tensor<1xf32>) -> tensor<1xf32> {
  func.return %x : tensor<1xf32>
}
func.func @shuffle(%x: tensor<2x5xi32>, %ids: tensor<3xi64>) -> tensor<3x5xi32> {
  %a, %b = graph.split %x {axis = 1 : i64, sizes = array<i64: 2, 3>} : (tensor<2x5xi32>) -> (tensor<2x2xi32>, tensor<2x3xi32>)
  %c = graph.concat %b, %a {axis = 1 : i64} : (tensor<2x3xi32>, tensor<2x2xi32>) -> tensor<2x5xi32>
  %m = graph.greater %c, %x : (tensor<2x5xi32>, tensor<2x5xi32>) -> tensor<2x5xi1>
  %w = graph.where %m, %c, %x : (tensor<2x5xi1>, tensor<2x5xi32>, tensor<2x5xi32>) -> tensor<2x5xi32>
  %g = graph.gather %w, %ids {axis = 0 : i64} : (tensor<2x5xi32>, tensor<3xi64>) -> tensor<3x5xi32>
  func.return %g : tensor<3x5xi32>
}
"""


def test_entry_selection_and_integer_ops():
    module = parse(SPLIT_CONCAT)
    x = np.array([[1, 9, 3, 4, 5], [6, 0, 8, 2, 7]], np.int32)
    ids = np.array([1, -1, 0])
    (got,) = evaluate(module, [x, ids], entry="shuffle")
    c = np.concatenate([x[:, 2:], x[:, :2]], axis=1)
    np.testing.assert_array_equal(got, np.maximum(c, x)[[1, 1, 0]])
    assert got.dtype == np.int32
    # no @main: the first function is the default entry
    assert find_function(module).sym_name.data == "helper"
    np.testing.assert_array_equal(evaluate(module, [np.array([4.0])])[0], [4.0])


def test_inputs_are_converted_to_the_argument_type():
    module = parse(MLP)
    args = [np.ones(s) for s in [(3, 7), (5, 7), (5,), (2, 5)]]  # float64 -> f32
    p, _ = evaluate(module, args)
    assert p.dtype == np.float32


def test_wrong_input_count():
    with pytest.raises(EvaluationError, match=r"^@main takes 4 inputs, got 2$"):
        evaluate(parse(MLP), [np.zeros((3, 7)), np.zeros((5, 7))])


def test_wrong_input_shape():
    args = [np.zeros((3, 7)), np.zeros((5, 6)), np.zeros(5), np.zeros((2, 5))]
    with pytest.raises(EvaluationError, match=r"^@main: input #1 has shape \(5, 6\), expected \(5, 7\)$"):
        evaluate(parse(MLP), args)


def test_wrong_input_dtype_kind():
    args = [np.zeros((2, 5)), np.array([0, 1, 0])]
    with pytest.raises(EvaluationError, match=r"^@shuffle: input #0 has dtype float64, expected int32"):
        evaluate(parse(SPLIT_CONCAT), args, entry="shuffle")


def test_unknown_entry_and_empty_module():
    with pytest.raises(EvaluationError, match=r"^no function named @nope in the module$"):
        evaluate(parse(MLP), [], entry="nope")
    with pytest.raises(EvaluationError, match=r"^the module has no function$"):
        evaluate(parse("builtin.module {\n}\n"), [])


def test_runtime_failure_names_the_op():
    module = parse(SPLIT_CONCAT)
    x = np.zeros((2, 5), np.int32)
    with pytest.raises(EvaluationError, match=r"^graph.gather: .*out of bounds"):
        evaluate(module, [x, np.array([0, 5, 1])], entry="shuffle")


def test_non_graph_op_is_reported():
    module = parse(
        "func.func @main(%x: tensor<2xf32>) -> tensor<2xf32> {\n"
        "  %c = arith.constant 1 : i32\n"
        "  func.return %x : tensor<2xf32>\n"
        "}\n"
    )
    with pytest.raises(EvaluationError, match=r"^cannot evaluate 'arith.constant': not a graph-dialect op$"):
        evaluate(module, [np.zeros(2, np.float32)])
