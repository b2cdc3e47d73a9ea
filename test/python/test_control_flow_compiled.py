"""graph.if / graph.loop / graph.scan compiled to real branches and loops
(lowering/bufferize.py): host code has scf.if / scf.while / scf.for, nothing is
unrolled, and results match the evaluator on odd shapes."""

from __future__ import annotations

import time

import numpy as np
import pytest
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp, i1, i64

import dlc
from dlc.context import make_context
from dlc.dialects import graph as g
from dlc.driver import GRAPH_PASSES, run_pass
from dlc.evaluator import evaluate
from dlc.transforms.expand_control_flow import ExpandControlFlowPass
from test_control_flow import T, body, module_of
from test_graph_util import parse, to_text

RNG = np.random.default_rng(11)


def host_op_names(module: ModuleOp) -> list[str]:
    """Op names of the host functions after the default graph passes + lower-to-loops."""
    lowered = parse(to_text(module))
    for name in GRAPH_PASSES:
        run_pass(name, lowered)
    run_pass("lower-to-loops", lowered)
    hosts = [op for op in lowered.ops if isinstance(op, func.FuncOp) and "tloop.host" in op.attributes]
    assert hosts
    return [op.name for host in hosts for op in host.walk()]


def compiled_matches_evaluator(module: ModuleOp, inputs, expected=None):
    want = evaluate(module, inputs)
    if expected is not None:
        for w, e in zip(want, expected, strict=True):
            np.testing.assert_allclose(w, e, rtol=1e-5, atol=1e-6)
    got = dlc.compile(parse(to_text(module)))(*inputs)
    for w, o in zip(want, got, strict=True):
        assert o.shape == w.shape and o.dtype == w.dtype
        np.testing.assert_allclose(o, w, rtol=1e-5, atol=1e-6)
    return got


# ---------------------------------------------------------------------------
# graph.if
# ---------------------------------------------------------------------------


def _if_on_data(shape):
    """if sum(x) > 0 then (exp(x) * y, x) else (x - y, y): the condition is computed."""
    xt = T(*shape)

    def build(x, y):
        s = g.ReduceSumOp.make(x, axes=list(range(len(shape))))
        zero = g.ConstantOp.from_numpy(np.array(0, np.float32))
        positive = g.GreaterOp.make(s, zero)
        then_r = body([xt, xt], lambda a, b: ([e := g.ExpOp.make(a), m := g.MulOp.make(e, b)],
                                               [m.results[0], a]))
        else_r = body([xt, xt], lambda a, b: ([d := g.SubOp.make(a, b)], [d.results[0], b]))
        op = g.IfOp.make_with_regions([positive, x, y], [then_r, else_r])
        return [s, zero, positive, op], list(op.results)

    return module_of([xt, xt], build)


@pytest.mark.parametrize("sign", [1.0, -1.0])
def test_if_on_a_computed_condition_takes_either_branch(sign):
    module = _if_on_data((7, 3))
    assert "scf.if" in host_op_names(module)
    x = sign * np.abs(RNG.standard_normal((7, 3))).astype(np.float32)
    y = RNG.standard_normal((7, 3)).astype(np.float32)
    expected = [np.exp(x) * y, x] if sign > 0 else [x - y, y]
    compiled_matches_evaluator(module, [x, y], expected)


def test_if_body_ops_are_legalized_and_folded():
    """Composite ops in a body (gelu) are legalized; constant subexpressions fold."""
    xt = T(5)

    def then_build(a):
        one = g.ConstantOp.from_numpy(np.ones(5, np.float32))
        two = g.AddOp.make(one, one)
        gelu = g.GeluOp.make(a)
        m = g.MulOp.make(gelu, two)
        return [one, two, gelu, m], [m.results[0]]

    def build(c, x):
        op = g.IfOp.make_with_regions([c, x], [body([xt], then_build), body([xt], lambda a: ([], [a]))])
        return [op], list(op.results)

    module = module_of([T(et=i1), xt], build)
    names = host_op_names(module)
    assert "scf.if" in names
    x = RNG.standard_normal(5).astype(np.float32)
    compiled_matches_evaluator(module, [np.array(True), x])
    compiled_matches_evaluator(module, [np.array(False), x], [x])


# ---------------------------------------------------------------------------
# graph.loop
# ---------------------------------------------------------------------------


def _affine_loop(bound: int, shape, stop_at: float | None = None):
    """v <- v * 0.5 + w (carried, odd shape) and n <- n + 1 (scalar i64);
    scans out v and i; stops early once sum(v) <= stop_at when given."""
    vt, nt = T(*shape), T(et=i64)

    def step(i, k, v, n, w):
        half = g.ConstantOp.from_numpy(np.array(0.5, np.float32))
        one = g.ConstantOp.from_numpy(np.array(1, np.int64))
        m = g.MulOp.make(v, half)
        a = g.AddOp.make(m, w)
        n2 = g.AddOp.make(n, one)
        ops = [half, one, m, a, n2]
        cond = k
        if stop_at is not None:
            s = g.ReduceSumOp.make(a, axes=list(range(len(shape))))
            lim = g.ConstantOp.from_numpy(np.array(stop_at, np.float32))
            ge = g.GreaterOp.make(s, lim)
            ops += [s, lim, ge]
            cond = ge.results[0]
        return ops, [cond, a.results[0], n2.results[0], a.results[0], i]

    def build(m, c, v, n, w):
        r = body([T(et=i64), T(et=i1), vt, nt, vt], step)
        op = g.LoopOp.make_with_regions([m, c, v, n, w], [r], num_carried=2, max_iterations=bound)
        return [op], list(op.results)

    return module_of([T(1, et=i64), T(1, et=i1), vt, nt, vt], build)


def _affine_reference(trips, bound, v, w, stop_at=None):
    rows = np.zeros((bound, *v.shape), np.float32)
    iters = np.zeros(bound, np.int64)
    n = 0
    for i in range(min(trips, bound)):
        v = v * np.float32(0.5) + w
        rows[i], iters[i] = v, i
        n += 1
        if stop_at is not None and not v.sum() > stop_at:
            break
    return [v, np.array(n, np.int64), rows, iters]


@pytest.mark.parametrize("trips", [0, 1, 6, 13])
def test_loop_fixed_trip_count_with_odd_carried_shapes(trips):
    bound, shape = 7, (3, 1, 5)
    module = _affine_loop(bound, shape)
    names = host_op_names(module)
    assert names.count("scf.while") == 1
    v = RNG.standard_normal(shape).astype(np.float32)
    w = RNG.standard_normal(shape).astype(np.float32)
    inputs = [np.array([trips]), np.array([True]), v, np.array(4, np.int64), w]
    expected = _affine_reference(trips, bound, v, w)
    expected[1] = expected[1] + 4
    compiled_matches_evaluator(module, inputs, expected)


def test_loop_exits_early_on_a_data_dependent_condition():
    bound, shape = 11, (2, 3)
    module = _affine_loop(bound, shape, stop_at=1.0)
    v = np.full(shape, 8.0, np.float32)
    w = np.zeros(shape, np.float32)
    # sum(v): 24, 12, 6, 3, 1.5, 0.75 -> stops after 6 iterations
    expected = _affine_reference(100, bound, v, w, stop_at=1.0)
    got = compiled_matches_evaluator(
        module, [np.array([100]), np.array([True]), v, np.array(0, np.int64), w], expected)
    assert int(got[1]) == 6
    assert got[3].tolist() == [0, 1, 2, 3, 4, 5, 0, 0, 0, 0, 0]  # rows that did not run are zero


def test_loop_with_a_false_initial_condition_keeps_the_initial_values():
    module = _affine_loop(3, (1,))
    v, w = np.array([2.5], np.float32), np.array([1.0], np.float32)
    got = compiled_matches_evaluator(
        module, [np.array([3]), np.array([False]), v, np.array(9, np.int64), w])
    assert got[0].tolist() == [2.5] and int(got[1]) == 9 and not got[2].any()


def test_loop_body_that_swaps_its_carried_values():
    vt = T(2, 3)

    def step(i, k, a, b):
        return [], [k, b, a]

    def build(m, c, a, b):
        op = g.LoopOp.make_with_regions([m, c, a, b], [body([T(et=i64), T(et=i1), vt, vt], step)],
                                        num_carried=2, max_iterations=5)
        return [op], list(op.results)

    module = module_of([T(et=i64), T(et=i1), vt, vt], build)
    a = RNG.standard_normal((2, 3)).astype(np.float32)
    b = RNG.standard_normal((2, 3)).astype(np.float32)
    compiled_matches_evaluator(module, [np.array(3), np.array(True), a, b], [b, a])
    compiled_matches_evaluator(module, [np.array(4), np.array(True), a, b], [a, b])


def _counter_loop(bound: int):
    """acc <- acc + x (a [1 x 3] carried value); no scan outputs."""
    at = T(1, 3)

    def step(i, k, acc, x):
        s = g.AddOp.make(acc, x)
        return [s], [k, s.results[0]]

    def build(m, c, acc, x):
        op = g.LoopOp.make_with_regions([m, c, acc, x], [body([T(et=i64), T(et=i1), at, at], step)],
                                        num_carried=1, max_iterations=bound)
        return [op], list(op.results)

    return module_of([T(et=i64), T(et=i1), at, at], build)


def test_ten_thousand_iterations_compile_fast():
    """Unrolling refuses this loop (max-unroll 4096); the compiled loop is one
    kernel call inside scf.while, so compiling stays small."""
    from xdsl.utils.exceptions import DiagnosticException

    module = _counter_loop(10_000)
    with pytest.raises(DiagnosticException, match="10000 iterations"):
        ExpandControlFlowPass().apply(make_context(), parse(to_text(module)))
    start = time.perf_counter()
    program = dlc.compile(parse(to_text(module)))
    elapsed = time.perf_counter() - start
    assert elapsed < 10.0, f"compiling took {elapsed:.1f}s"
    acc = np.zeros((1, 3), np.float32)
    x = np.array([[1.0, 0.5, -2.0]], np.float32)
    (out,) = program(np.array(10_000), np.array(True), acc, x)
    np.testing.assert_allclose(out, x * 10_000, rtol=1e-5)
    (out,) = program(np.array(37), np.array(True), acc, x)
    np.testing.assert_allclose(out, x * 37, rtol=1e-5)


# ---------------------------------------------------------------------------
# graph.scan
# ---------------------------------------------------------------------------


def _two_input_scan(length: int, in_axes, in_dirs, out_axes, out_dirs):
    """state <- state * a + b over two scan inputs (rows of 3); scans out the
    state and a * b."""
    shapes = [(length, 3) if ax == 0 else (3, length) for ax in in_axes]

    def step(state, a, b):
        m = g.MulOp.make(state, a)
        s = g.AddOp.make(m, b)
        p = g.MulOp.make(a, b)
        return [m, s, p], [s.results[0], s.results[0], p.results[0]]

    def build(init, xa, xb):
        op = g.ScanOp.make_with_regions(
            [init, xa, xb], [body([T(3), T(3), T(3)], step)], num_carried=1, num_scan_inputs=2,
            scan_input_axes=list(in_axes), scan_input_directions=list(in_dirs),
            scan_output_axes=list(out_axes), scan_output_directions=list(out_dirs))
        return [op], list(op.results)

    return module_of([T(3), T(*shapes[0]), T(*shapes[1])], build), shapes


@pytest.mark.parametrize("in_axes,in_dirs,out_axes,out_dirs", [
    ((0, 0), (0, 0), (0, 0), (0, 0)),
    ((0, 1), (1, 0), (0, 1), (1, 0)),
    ((1, 1), (0, 1), (-1, 0), (0, 1)),
])
def test_scan_forward_and_reverse_with_two_inputs(in_axes, in_dirs, out_axes, out_dirs):
    length = 5
    module, shapes = _two_input_scan(length, in_axes, in_dirs, out_axes, out_dirs)
    names = host_op_names(module)
    assert names.count("scf.for") == 1 and "scf.while" not in names
    init = RNG.standard_normal(3).astype(np.float32)
    xa = RNG.standard_normal(shapes[0]).astype(np.float32)
    xb = RNG.standard_normal(shapes[1]).astype(np.float32)
    seq_a, seq_b = np.moveaxis(xa, in_axes[0], 0), np.moveaxis(xb, in_axes[1], 0)
    if in_dirs[0]:
        seq_a = seq_a[::-1]
    if in_dirs[1]:
        seq_b = seq_b[::-1]
    state, states, products = init, [], []
    for a, b in zip(seq_a, seq_b):
        state = state * a + b
        states.append(state)
        products.append(a * b)
    outs = []
    for rows, axis, rev in zip((states, products), out_axes, out_dirs):
        stacked = np.stack(rows[::-1] if rev else rows)
        outs.append(np.moveaxis(stacked, 0, axis))
    compiled_matches_evaluator(module, [init, xa, xb], [state, *outs])


def test_scan_over_scalar_rows_of_an_odd_length():
    """A running sum over a [13] sequence: rank-0 rows and states."""

    def step(acc, x):
        s = g.AddOp.make(acc, x)
        return [s], [s.results[0], s.results[0]]

    def build(init, xs):
        op = g.ScanOp.make_with_regions([init, xs], [body([T(), T()], step)],
                                        num_carried=1, num_scan_inputs=1)
        return [op], list(op.results)

    module = module_of([T(), T(13)], build)
    xs = RNG.standard_normal(13).astype(np.float32)
    init = np.array(1.5, np.float32)
    compiled_matches_evaluator(module, [init, xs], [init + xs.sum(), init + np.cumsum(xs)])


# ---------------------------------------------------------------------------
# nesting
# ---------------------------------------------------------------------------


def test_loop_nested_in_an_if():
    """if c: (loop acc += x M times, sum of its scan rows) else: (-x, 2 acc)."""
    at = T(2, 7)

    def then_build(m, acc, x):
        true = g.ConstantOp.from_numpy(np.array(True))

        def step(i, k, a, xx):
            s = g.AddOp.make(a, xx)
            return [s], [k, s.results[0], s.results[0]]

        loop = g.LoopOp.make_with_regions(
            [m, true, acc, x], [body([T(et=i64), T(et=i1), at, at], step)],
            num_carried=1, max_iterations=6)
        first = g.ReduceSumOp.make(loop.results[1], axes=[0])
        return [true, loop, first], [loop.results[0], first.results[0]]

    def else_build(m, acc, x):
        minus = g.ConstantOp.from_numpy(np.array(-1.0, np.float32))
        n = g.MulOp.make(x, minus)
        z = g.AddOp.make(acc, acc)
        return [minus, n, z], [n.results[0], z.results[0]]

    def build(c, m, acc, x):
        args = [T(et=i64), at, at]
        op = g.IfOp.make_with_regions([c, m, acc, x], [body(args, then_build), body(args, else_build)])
        return [op], list(op.results)

    module = module_of([T(et=i1), T(et=i64), at, at], build)
    names = host_op_names(module)
    assert names.index("scf.if") < names.index("scf.while")
    acc = RNG.standard_normal((2, 7)).astype(np.float32)
    x = RNG.standard_normal((2, 7)).astype(np.float32)
    rows = np.zeros((6, 2, 7), np.float32)
    for i in range(4):
        rows[i] = acc + (i + 1) * x
    compiled_matches_evaluator(module, [np.array(True), np.array(4), acc, x],
                               [acc + 4 * x, rows.sum(axis=0)])
    compiled_matches_evaluator(module, [np.array(False), np.array(4), acc, x],
                               [-x, 2 * acc])


def test_scan_nested_in_a_loop_body():
    """Each loop iteration runs a scan (buffers of both bodies are hoisted out of
    the loops, freed once) and a body intermediate feeds the next op."""
    vt, xt = T(4), T(5, 4)

    def scan_step(acc, x):
        half = g.ConstantOp.from_numpy(np.array(0.5, np.float32))
        m = g.MulOp.make(acc, half)
        a = g.AddOp.make(m, x)
        return [half, m, a], [a.results[0], m.results[0]]

    def loop_step(i, k, v, xs):
        scan = g.ScanOp.make_with_regions([v, xs], [body([vt, vt], scan_step)],
                                          num_carried=1, num_scan_inputs=1)
        total = g.ReduceSumOp.make(scan.results[1], axes=[0])
        nxt = g.SubOp.make(scan.results[0], total)
        return [scan, total, nxt], [k, nxt.results[0], total.results[0]]

    def build(m, c, v, xs):
        op = g.LoopOp.make_with_regions([m, c, v, xs], [body([T(et=i64), T(et=i1), vt, xt], loop_step)],
                                        num_carried=1, max_iterations=3)
        return [op], list(op.results)

    module = module_of([T(et=i64), T(et=i1), vt, xt], build)
    names = host_op_names(module)
    assert names.index("scf.while") < names.index("scf.for")
    v = RNG.standard_normal(4).astype(np.float32)
    xs = RNG.standard_normal((5, 4)).astype(np.float32)
    for trips in (2, 3):
        compiled_matches_evaluator(module, [np.array(trips), np.array(True), v, xs])


def test_gpu_pipeline_keeps_host_control_flow():
    """lower-to-gpu keeps the host's scf.if (backends/cuda/host_code.py); nothing unrolled."""
    from dlc.backends.cuda.lower_to_gpu import ensure_gpu_lowered

    module = _if_on_data((3,))
    ensure_gpu_lowered(module)
    hosts = [op for op in module.ops if isinstance(op, func.FuncOp) and "tloop.host" in op.attributes]
    assert hosts
    assert any(op.name == "scf.if" for host in hosts for op in host.walk())
    assert not any(isinstance(op, (g.IfOp, g.LoopOp, g.ScanOp)) for op in module.walk())


def test_onnx_loop_of_twenty_thousand_iterations_against_onnxruntime():
    """An ONNX Loop far above the unrolling limit imports and compiles to a real loop."""
    import onnxruntime
    from onnx import TensorProto, helper, numpy_helper

    from dlc.frontends.onnx import import_model

    body = helper.make_graph(
        [helper.make_node("Identity", ["c_in"], ["c_out"]),
         helper.make_node("Mul", ["x_in", "decay"], ["scaled"]),
         helper.make_node("Add", ["scaled", "step"], ["x_out"])],
        "body",
        [helper.make_tensor_value_info("i", TensorProto.INT64, []),
         helper.make_tensor_value_info("c_in", TensorProto.BOOL, []),
         helper.make_tensor_value_info("x_in", TensorProto.FLOAT, [3, 5])],
        [helper.make_tensor_value_info("c_out", TensorProto.BOOL, []),
         helper.make_tensor_value_info("x_out", TensorProto.FLOAT, [3, 5])])
    graph = helper.make_graph(
        [helper.make_node("Loop", ["M", "cond", "x0"], ["x"], body=body)], "g",
        [helper.make_tensor_value_info("x0", TensorProto.FLOAT, [3, 5]),
         helper.make_tensor_value_info("step", TensorProto.FLOAT, [3, 5])],
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [3, 5])],
        [numpy_helper.from_array(np.array(20_000, np.int64), "M"),
         numpy_helper.from_array(np.array(True), "cond"),
         numpy_helper.from_array(np.array(0.999, np.float32), "decay")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    x0 = RNG.standard_normal((3, 5)).astype(np.float32)
    step = RNG.standard_normal((3, 5)).astype(np.float32)
    session = onnxruntime.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    (want,) = session.run(None, {"x0": x0, "step": step})
    (got,) = dlc.compile(import_model(model))(x0, step)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)
