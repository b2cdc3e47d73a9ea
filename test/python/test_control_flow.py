"""graph.if / graph.loop / graph.scan: syntax, verifier, evaluator semantics,
expand-control-flow (evaluator-preserving) and native execution via dlc.compile."""

from __future__ import annotations

import numpy as np
import pytest
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp, TensorType, f32, i1, i64
from xdsl.ir import Block, Region
from xdsl.utils.exceptions import VerifyException

import dlc
from dlc.context import make_context
from dlc.dialects import graph as g
from dlc.dialects.graph_base import tensor_type
from dlc.evaluator import evaluate
from dlc.transforms.expand_control_flow import ExpandControlFlowPass
from test_graph_syntax import assert_round_trips, example_function
from test_graph_util import parse, to_text

RNG = np.random.default_rng(7)


def T(*shape, et=f32) -> TensorType:
    return tensor_type(shape, et)


def body(arg_types, build) -> Region:
    """A region whose block takes ``arg_types``; ``build(args)`` returns
    (ops, yielded values)."""
    block = Block(arg_types=arg_types)
    ops, values = build(*block.args)
    block.add_ops([*ops, g.YieldOp.make(*values)])
    return Region(block)


def module_of(arg_types, build) -> ModuleOp:
    block = Block(arg_types=arg_types)
    ops, results = build(*block.args)
    block.add_ops([*ops, func.ReturnOp(*results)])
    fn = func.FuncOp("main", (arg_types, [r.type for r in results]), Region(block))
    module = ModuleOp([fn])
    module.verify()
    return module


def check_all_paths(module: ModuleOp, inputs, expected=None):
    """evaluator == expand-control-flow + evaluator == dlc.compile (== expected)."""
    text = to_text(module)
    want = evaluate(module, inputs)
    if expected is not None:
        for w, e in zip(want, expected, strict=True):
            np.testing.assert_allclose(w, e, rtol=1e-5, atol=1e-6)
    expanded = parse(text)
    ExpandControlFlowPass().apply(make_context(), expanded)
    expanded.verify()
    assert not any(isinstance(op, (g.IfOp, g.LoopOp, g.ScanOp)) for op in expanded.walk())
    for w, got in zip(want, evaluate(expanded, inputs), strict=True):
        np.testing.assert_allclose(got, w, rtol=1e-5, atol=1e-6)
    compiled = dlc.compile(parse(text))
    for w, got in zip(want, compiled(*inputs), strict=True):
        assert got.shape == w.shape
        np.testing.assert_allclose(got, w, rtol=1e-5, atol=1e-6)
    return want


# ---------------------------------------------------------------------------
# syntax and verifier
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("op_cls", [g.IfOp, g.LoopOp, g.ScanOp], ids=lambda c: c.name)
def test_docstring_example_round_trips(op_cls):
    module = parse(example_function(op_cls))
    assert len([op for op in module.walk() if isinstance(op, op_cls)]) == 1
    assert_round_trips(to_text(module))


def test_region_ops_are_in_the_dialect_but_not_in_graph_ops():
    names = {op.name for op in g.Graph.operations}
    assert {"graph.if", "graph.loop", "graph.scan", "graph.yield"} <= names
    assert not set(g.CONTROL_FLOW_OPS) & set(g.GRAPH_OPS)


def test_if_make_infers_results_and_rejects_mismatched_branches():
    x = T(3, 5)
    then_r = body([x], lambda a: ([n := g.NegOp.make(a)], [n.results[0]]))
    else_r = body([x], lambda a: ([], [a]))
    cond = Block(arg_types=[T(et=i1), x]).args
    op = g.IfOp.make_with_regions(cond, [then_r, else_r])
    assert [r.type for r in op.results] == [x]
    bad_else = body([x], lambda a: ([c := g.CastOp.make(a, to=i64)], [c.results[0]]))
    then_r2 = body([x], lambda a: ([], [a]))
    with pytest.raises(VerifyException, match="graph.if: then body yields .* but else body yields"):
        g.IfOp.make_with_regions(cond, [then_r2, bad_else])


def test_loop_rejects_a_non_bool_yielded_condition():
    args = Block(arg_types=[T(et=i64), T(et=i1), T(2)]).args
    r = body([T(et=i64), T(et=i1), T(2)], lambda i, k, v: ([], [v, v]))
    with pytest.raises(VerifyException, match="graph.loop: yielded condition element type"):
        g.LoopOp.make_with_regions(args, [r], num_carried=1, max_iterations=2)


def test_bodies_are_isolated_from_above():
    text = """
    func.func @f(%c: tensor<i1>, %x: tensor<3xf32>) -> tensor<3xf32> {
      %r = graph.if %c {
        graph.yield %x : (tensor<3xf32>) -> ()
      } {
        graph.yield %x : (tensor<3xf32>) -> ()
      } : (tensor<i1>) -> tensor<3xf32>
      func.return %r : tensor<3xf32>
    }"""
    with pytest.raises(VerifyException):
        parse(text)


# ---------------------------------------------------------------------------
# semantics: evaluator vs expansion vs native code
# ---------------------------------------------------------------------------


def _if_module(x_type):
    def build(c, x, y):
        then_r = body([x_type, x_type], lambda a, b: ([m := g.MulOp.make(a, b)], [m.results[0], a]))
        else_r = body([x_type, x_type], lambda a, b: ([s := g.SubOp.make(a, b)], [s.results[0], b]))
        op = g.IfOp.make_with_regions([c, x, y], [then_r, else_r])
        return [op], list(op.results)

    return module_of([T(1, et=i1), x_type, x_type], build)


@pytest.mark.parametrize("flag", [True, False])
def test_if_with_a_runtime_condition(flag):
    x, y = RNG.standard_normal((2, 7, 3)).astype(np.float32)
    expected = [x * y, x] if flag else [x - y, y]
    check_all_paths(_if_module(T(7, 3)), [np.array([flag]), x, y], expected)


def test_if_with_a_constant_condition_inlines_only_the_taken_body():
    module = _if_module(T(1))
    fn = module.body.block.first_op
    const = g.ConstantOp.from_numpy(np.array([False]))
    fn.body.block.insert_op_before(const, fn.body.block.first_op)
    fn.body.block.args[0].replace_all_uses_with(const.results[0])
    ExpandControlFlowPass().apply(make_context(), module)
    names = [op.name for op in module.walk()]
    assert "graph.sub" in names and "graph.mul" not in names and "graph.where" not in names


def _counting_loop(bound: int, carried_shape, stop_at: float | None):
    """v <- v * 2 + 1 while i < M and (stop_at is None or sum(v) < stop_at);
    scans out v and the iteration number."""
    vt = T(*carried_shape)

    def step(i, k, v, w):
        two = g.ConstantOp.from_numpy(np.array(2.0, np.float32))
        m = g.MulOp.make(v, two)
        a = g.AddOp.make(m, w)
        ops = [two, m, a]
        cond = k
        if stop_at is not None:
            s = g.ReduceSumOp.make(a, axes=list(range(len(carried_shape))))
            lim = g.ConstantOp.from_numpy(np.array(stop_at, np.float32))
            lt = g.LessOp.make(s, lim)
            ops += [s, lim, lt]
            cond = lt.results[0]
        return ops, [cond, a.results[0], a.results[0], i]

    def build(m, c, v, w):
        r = body([T(et=i64), T(et=i1), vt, vt], step)
        op = g.LoopOp.make_with_regions([m, c, v, w], [r], num_carried=1, max_iterations=bound)
        return [op], list(op.results)

    return module_of([T(et=i64), T(et=i1), vt, vt], build)


@pytest.mark.parametrize("trips", [0, 1, 3, 5, 9])
def test_loop_trip_count_below_at_and_above_the_bound(trips):
    module = _counting_loop(5, (2, 3), None)
    v = RNG.standard_normal((2, 3)).astype(np.float32)
    w = np.ones((2, 3), np.float32)
    want = v.copy()
    rows = []
    for i in range(min(trips, 5)):
        want = want * 2 + w
        rows.append((want.copy(), i))
    scan_v = np.zeros((5, 2, 3), np.float32)
    scan_i = np.zeros(5, np.int64)
    for i, (row, n) in enumerate(rows):
        scan_v[i], scan_i[i] = row, n
    got = check_all_paths(module, [np.array(trips), np.array(True), v, w],
                          [want, scan_v, scan_i])
    assert got[2].dtype == np.int64


def test_loop_stops_when_the_body_condition_turns_false():
    module = _counting_loop(7, (1,), stop_at=20.0)
    v, w = np.array([1.0], np.float32), np.array([1.0], np.float32)
    # v: 3, 7, 15, 31 (cond false after 31 >= 20) -> 4 iterations
    out = check_all_paths(module, [np.array(100), np.array(True), v, w])
    assert out[0].tolist() == [31.0]
    assert out[2].tolist() == [0, 1, 2, 3, 0, 0, 0]


def test_loop_with_a_false_initial_condition_runs_zero_times():
    module = _counting_loop(3, (5,), None)
    v = RNG.standard_normal(5).astype(np.float32)
    out = check_all_paths(module, [np.array(3), np.array(False), v, v])
    np.testing.assert_array_equal(out[0], v)
    assert not out[1].any()


def _scan_module(in_axis: int, in_dir: int, out_axis: int, out_dir: int, length: int = 5):
    """running sum over axis ``in_axis`` of a [length x 3] (or [3 x length])
    input, plus a read-only bias; scans out the state."""
    xs_shape = (length, 3) if in_axis == 0 else (3, length)

    def step(acc, x, bias):
        a = g.AddOp.make(acc, x)
        b = g.MulOp.make(a, bias)
        return [a, b], [a.results[0], b.results[0]]

    def build(init, xs, bias):
        r = body([T(3), T(3), T(3)], step)
        op = g.ScanOp.make_with_regions(
            [init, xs, bias], [r], num_carried=1, num_scan_inputs=1,
            scan_input_axes=[in_axis], scan_input_directions=[in_dir],
            scan_output_axes=[out_axis], scan_output_directions=[out_dir])
        return [op], list(op.results)

    return module_of([T(3), T(*xs_shape), T(3)], build), xs_shape


@pytest.mark.parametrize("in_axis,in_dir,out_axis,out_dir",
                         [(0, 0, 0, 0), (1, 1, 0, 0), (0, 0, 1, 1), (1, 0, -1, 0)])
def test_scan_axes_and_directions(in_axis, in_dir, out_axis, out_dir):
    module, xs_shape = _scan_module(in_axis, in_dir, out_axis, out_dir)
    init = RNG.standard_normal(3).astype(np.float32)
    xs = RNG.standard_normal(xs_shape).astype(np.float32)
    bias = RNG.standard_normal(3).astype(np.float32)
    seq = np.moveaxis(xs, in_axis, 0)
    if in_dir:
        seq = seq[::-1]
    acc, rows = init, []
    for x in seq:
        acc = acc + x
        rows.append(acc * bias)
    stacked = np.stack(rows[::-1] if out_dir else rows)
    expected = [acc, np.moveaxis(stacked, 0, out_axis)]
    check_all_paths(module, [init, xs, bias], expected)


def test_if_nested_in_a_loop():
    """A loop whose body branches on the iteration number's parity."""
    vt = T(4)

    def step(i, k, v):
        two = g.ConstantOp.from_numpy(np.array(2, np.int64))
        zero = g.ConstantOp.from_numpy(np.array(0, np.int64))
        rem = g.ModOp.make(i, two)
        even = g.EqualOp.make(rem, zero)
        then_r = body([vt], lambda a: ([n := g.NegOp.make(a)], [n.results[0]]))
        else_r = body([vt], lambda a: ([s := g.AddOp.make(a, a)], [s.results[0]]))
        branch = g.IfOp.make_with_regions([even, v], [then_r, else_r])
        return [two, zero, rem, even, branch], [k, branch.results[0]]

    def build(m, c, v):
        r = body([T(et=i64), T(et=i1), vt], step)
        op = g.LoopOp.make_with_regions([m, c, v], [r], num_carried=1, max_iterations=4)
        return [op], list(op.results)

    module = module_of([T(et=i64), T(et=i1), vt], build)
    v = np.array([1.0, -2.0, 3.5, 0.0], np.float32)
    # i=0 neg, 1 double, 2 neg, 3 double -> 4 * v
    check_all_paths(module, [np.array(4), np.array(True), v], [4 * v])


def test_expand_refuses_more_than_max_unroll():
    from xdsl.utils.exceptions import DiagnosticException

    module = _counting_loop(50, (1,), None)
    with pytest.raises(DiagnosticException, match="graph.loop runs 50 iterations, more than max-unroll=10"):
        ExpandControlFlowPass(max_unroll=10).apply(make_context(), module)
