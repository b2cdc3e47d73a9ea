"""lower-to-loops: every core graph op, lowered and run by the loop-IR
interpreter (dlc.lowering.interp), against the numpy evaluator.

Shapes are small and odd (primes, size-1 dims, broadcasting, rank 0) because
the interpreter runs the loops in Python. ``DLC_LOOP_EXECUTOR=llvm`` runs the
same lowered modules through the LLVM JIT (``dlc.driver.compile``) instead.
"""

from __future__ import annotations

import os

import numpy as np
import pytest
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp, f32, f64, i1, i32, i64
from xdsl.dialects.builtin import IntegerType, Signedness
from xdsl.ir import Block, Region

from dlc.dialects import graph
from dlc.dialects.graph import GRAPH_OPS, is_composite
from dlc.dialects.graph_base import numpy_dtype, tensor_type
from dlc.evaluator import evaluate
from dlc.lowering.interp import LoopProgram
from dlc.lowering.lower_to_loops import lower_module

i8 = IntegerType(8)
ui8 = IntegerType(8, Signedness.UNSIGNED)
RNG = np.random.default_rng(0)


def make_module(in_types, body, name="main") -> ModuleOp:
    """A module with one graph function; ``body(*args)`` returns the ops to add
    (the last op's results are returned) or (ops, returned values)."""
    block = Block(arg_types=in_types)
    built = body(*block.args)
    if isinstance(built, tuple):
        ops, results = built
    else:
        ops = built if isinstance(built, list) else [built]
        results = list(ops[-1].results)
    for op in ops:
        block.add_op(op)
    block.add_op(func.ReturnOp(*results))
    fn = func.FuncOp(name, (in_types, [r.type for r in results]), Region(block))
    module = ModuleOp([fn])
    module.verify()
    return module


def random_input(t, positive=False) -> np.ndarray:
    shape = tuple(t.get_shape())
    dtype = numpy_dtype(t.element_type)
    if dtype == np.bool_:
        return RNG.random(shape) < 0.5
    if dtype.kind == "f":
        x = RNG.uniform(-2, 2, shape)
        if positive:
            x = np.abs(x) + 0.1
        return x.astype(dtype)
    lo = 0 if dtype.kind == "u" or positive else -9
    return RNG.integers(lo, 10, shape).astype(dtype)


def execute(module: ModuleOp, inputs) -> list[np.ndarray]:
    if os.environ.get("DLC_LOOP_EXECUTOR") == "llvm":
        from dlc.driver import compile as compile_module

        # loop IR has signless integers: unsigned inputs go in as their signed view
        signless = [x.view(f"i{x.dtype.itemsize}") if x.dtype.kind == "u" else x for x in inputs]
        return compile_module(module)(*signless)
    return LoopProgram(module).run(inputs)


def check(module: ModuleOp, inputs=None, positive=False, rtol=1e-5, atol=1e-5):
    fn = next(op for op in module.ops if isinstance(op, func.FuncOp))
    arg_types = [a.type for a in fn.body.block.args]
    if inputs is None:
        inputs = [random_input(t, positive) for t in arg_types]
    expected = evaluate(module, inputs)
    lower_module(module)
    module.verify()
    outputs = execute(module, inputs)
    assert len(outputs) == len(expected)
    for got, want in zip(outputs, expected):
        got = got.view(want.dtype) if got.dtype.itemsize == want.dtype.itemsize and want.dtype.kind in "iub" else got
        assert got.shape == want.shape
        if want.dtype.kind == "f":
            np.testing.assert_allclose(got, want, rtol=rtol, atol=atol, equal_nan=True)
        else:
            np.testing.assert_array_equal(got, want)
    return module


def T(*shape, et=f32):
    return tensor_type(shape, et)


# -- elementwise -------------------------------------------------------------------

UNARY_FLOAT = ["neg", "abs", "sign", "exp", "tanh", "sigmoid", "relu", "erf", "floor",
               "ceil", "round", "sin", "cos", "softplus", "softsign"]
UNARY_POSITIVE = ["log", "sqrt", "rsqrt", "reciprocal"]


def _op_class(name):
    return next(o for o in GRAPH_OPS if o.name == f"graph.{name}")


@pytest.mark.parametrize("name", UNARY_FLOAT + UNARY_POSITIVE)
@pytest.mark.parametrize("shape", [(), (7,), (2, 1, 3)])
def test_unary_float(name, shape):
    cls = _op_class(name)
    check(make_module([T(*shape)], lambda x: cls.make(x)), positive=name in UNARY_POSITIVE)


@pytest.mark.parametrize("name", ["neg", "abs", "sign", "relu"])
@pytest.mark.parametrize("et", [i32, i8, ui8])
def test_unary_int(name, et):
    cls = _op_class(name)
    check(make_module([T(3, 5, et=et)], lambda x: cls.make(x)))


def test_not():
    check(make_module([T(5, 2, et=i1)], lambda x: graph.NotOp.make(x)))


def test_float_special_values():
    x = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1e-30, -3.5, 2.5], np.float32)
    for cls in (graph.SignOp, graph.ReluOp, graph.AbsOp, graph.RoundOp, graph.FloorOp):
        check(make_module([T(8)], lambda a: cls.make(a)), [x])


@pytest.mark.parametrize(
    "op, attrs",
    [
        (graph.ClipOp, {"min": -0.5, "max": 0.75}),
        (graph.ClipOp, {"min": 0.0}),
        (graph.LeakyReluOp, {"alpha": 0.1}),
        (graph.EluOp, {"alpha": 0.7}),
        (graph.HardSigmoidOp, {}),
    ],
)
def test_parametrized_activations(op, attrs):
    check(make_module([T(3, 7)], lambda x: op.make(x, **attrs)))


def test_clip_int():
    check(make_module([T(11, et=i32)], lambda x: graph.ClipOp.make(x, min=-3.0, max=4.0)))


BINARY_NUMERIC = ["add", "sub", "mul", "div", "pow", "mod", "max", "min",
                  "equal", "not_equal", "less", "less_equal", "greater", "greater_equal"]


@pytest.mark.parametrize("name", BINARY_NUMERIC)
@pytest.mark.parametrize("shapes", [((3, 1, 5), (4, 5)), ((), (2, 3)), ((7,), (7,))])
def test_binary_float(name, shapes):
    cls = _op_class(name)
    a, b = shapes
    check(make_module([T(*a), T(*b)], lambda x, y: cls.make(x, y)), positive=name == "pow")


@pytest.mark.parametrize("name", BINARY_NUMERIC)
@pytest.mark.parametrize("et", [i32, i8, ui8, i64])
def test_binary_int(name, et):
    cls = _op_class(name)
    if name == "pow":
        inputs = [RNG.integers(0, 4, (2, 3)).astype(numpy_dtype(et)), RNG.integers(0, 3, (3,)).astype(numpy_dtype(et))]
    else:
        inputs = None  # includes zero divisors and negative dividends
    check(make_module([T(2, 3, et=et), T(3, et=et)], lambda x, y: cls.make(x, y)), inputs)


def test_int_division_is_c_like():
    a = np.array([7, -7, 7, -7, 5, 0, -127], np.int8)
    b = np.array([2, 2, -2, -2, 0, 3, 3], np.int8)
    for cls in (graph.DivOp, graph.ModOp):
        check(make_module([T(7, et=i8), T(7, et=i8)], lambda x, y: cls.make(x, y)), [a, b])


@pytest.mark.parametrize("name", ["and", "or", "xor", "equal", "not_equal"])
def test_binary_bool(name):
    cls = _op_class(name)
    check(make_module([T(3, 1, et=i1), T(4, et=i1)], lambda x, y: cls.make(x, y)))


def test_where_broadcast():
    check(make_module([T(3, et=i1), T(2, 3), T()], lambda c, a, b: graph.WhereOp.make(c, a, b)))


@pytest.mark.parametrize(
    "src, dst",
    [(f32, i32), (f32, ui8), (i32, f32), (ui8, f32), (i8, i64), (ui8, i32), (i64, i8),
     (f32, f64), (f64, f32), (f32, i1), (i1, f32), (i32, i1), (i1, i32)],
)
def test_cast(src, dst):
    if src == f32 and dst == ui8:
        inputs = [RNG.uniform(0, 200, (3, 5)).astype(np.float32)]
    else:
        inputs = None
    check(make_module([T(3, 5, et=src)], lambda x: graph.CastOp.make(x, to=dst)), inputs)


# -- linear algebra / nn ------------------------------------------------------------


@pytest.mark.parametrize(
    "a, b",
    [((3, 5), (5, 2)), ((2, 1, 3, 4), (5, 4, 3)), ((5,), (5, 3)), ((2, 3, 5), (5,)),
     ((7,), (7,)), ((1, 1), (1, 1))],
)
def test_matmul(a, b):
    check(make_module([T(*a), T(*b)], lambda x, y: graph.MatmulOp.make(x, y)))


def test_matmul_int():
    check(make_module([T(2, 3, et=i32), T(3, 4, et=i32)], lambda x, y: graph.MatmulOp.make(x, y)))


CONV_CASES = [
    dict(x=(1, 3, 7, 7), w=(2, 3, 3, 3), attrs={}),
    dict(x=(2, 2, 5, 6), w=(3, 2, 2, 3), attrs={"strides": [2, 1], "padding": [1, 2, 0, 1]}),
    dict(x=(1, 4, 7, 5), w=(4, 2, 3, 3), attrs={"groups": 2, "dilations": [2, 1], "padding": [2, 1, 2, 1]}),
    dict(x=(1, 3, 5, 5), w=(3, 1, 3, 3), attrs={"groups": 3, "padding": [1, 1, 1, 1], "strides": [2, 2]}),
    dict(x=(1, 5, 5, 3), w=(3, 3, 3, 2), attrs={"data_layout": "NHWC", "kernel_layout": "HWIO", "padding": [1, 1, 1, 1]}),
    dict(x=(1, 1, 1, 1), w=(1, 1, 1, 1), attrs={}),
]


@pytest.mark.parametrize("case", CONV_CASES)
def test_conv2d(case):
    check(make_module([T(*case["x"]), T(*case["w"])], lambda x, w: graph.Conv2DOp.make(x, w, **case["attrs"])))


@pytest.mark.parametrize(
    "x, w, attrs",
    [
        ((1, 2, 3, 3), (2, 3, 3, 3), {"strides": [2, 2]}),
        ((1, 4, 2, 3), (4, 1, 2, 2), {"groups": 2, "padding": [1, 0, 0, 1], "output_padding": [1, 0], "strides": [2, 3]}),
        ((2, 1, 3, 2), (1, 2, 2, 2), {"dilations": [2, 1]}),
    ],
)
def test_conv_transpose2d(x, w, attrs):
    check(make_module([T(*x), T(*w)], lambda a, b: graph.ConvTranspose2DOp.make(a, b, **attrs)))


POOL_CASES = [
    {"kernel": [3, 3], "strides": [2, 2]},
    {"kernel": [2, 3], "strides": [2, 2], "padding": [1, 1, 1, 1], "ceil_mode": True},
    {"kernel": [3, 2], "padding": [1, 0, 1, 1], "count_include_pad": True},
    {"kernel": [2, 2], "strides": [3, 2], "ceil_mode": True, "count_include_pad": True, "padding": [1, 1, 0, 0]},
    {"kernel": [2, 2], "dilations": [2, 1], "padding": [1, 0, 1, 0]},
]


@pytest.mark.parametrize("attrs", POOL_CASES)
@pytest.mark.parametrize("op", [graph.MaxPool2DOp, graph.AvgPool2DOp])
def test_pool(op, attrs):
    check(make_module([T(1, 2, 7, 6)], lambda x: op.make(x, **attrs)))


def test_pool_nhwc_and_int():
    check(make_module([T(1, 5, 6, 3)], lambda x: graph.MaxPool2DOp.make(x, kernel=[2, 2], layout="NHWC")))
    check(make_module([T(1, 2, 5, 5, et=i32)], lambda x: graph.MaxPool2DOp.make(x, kernel=[3, 3], padding=[1, 1, 1, 1])))
    check(make_module([T(1, 2, 5, 5, et=i32)], lambda x: graph.AvgPool2DOp.make(x, kernel=[2, 2])))


@pytest.mark.parametrize("op", [graph.GlobalAvgPoolOp, graph.GlobalMaxPoolOp])
@pytest.mark.parametrize("shape, layout", [((2, 3, 5, 7), "NCHW"), ((1, 4, 3, 2), "NHWC"), ((2, 3, 5), "NCHW")])
def test_global_pool(op, shape, layout):
    check(make_module([T(*shape)], lambda x: op.make(x, layout=layout)))


@pytest.mark.parametrize("op", [graph.SoftmaxOp, graph.LogSoftmaxOp])
@pytest.mark.parametrize("shape, axis", [((3, 7), -1), ((2, 5, 3), 1), ((5,), 0), ((1, 1), 0)])
def test_softmax(op, shape, axis):
    check(make_module([T(*shape)], lambda x: op.make(x, axis=axis)))


# -- reductions --------------------------------------------------------------------

REDUCE = ["reduce_sum", "reduce_mean", "reduce_max", "reduce_min", "reduce_prod"]


@pytest.mark.parametrize("name", REDUCE)
@pytest.mark.parametrize(
    "shape, attrs",
    [((3, 5, 2), {"axes": [1]}), ((3, 5, 2), {"axes": [0, 2], "keepdims": True}),
     ((3, 5), {}), ((7,), {"axes": [-1]}), ((), {})],
)
def test_reduce(name, shape, attrs):
    cls = _op_class(name)
    check(make_module([T(*shape)], lambda x: cls.make(x, **attrs)))


@pytest.mark.parametrize("name", REDUCE)
def test_reduce_int(name):
    cls = _op_class(name)
    check(make_module([T(2, 3, 2, et=i32)], lambda x: cls.make(x, axes=[1, 2])))


@pytest.mark.parametrize("op", [graph.ArgMaxOp, graph.ArgMinOp])
@pytest.mark.parametrize("attrs", [{"axis": 1}, {"axis": 0, "keepdims": True}, {"axis": -1, "select_last_index": True}])
def test_arg_reduce(op, attrs):
    x = RNG.integers(0, 3, (3, 5)).astype(np.float32)  # ties
    x[1, 2] = np.nan
    x[2, 0] = x[2, 3] = np.nan
    check(make_module([T(3, 5)], lambda a: op.make(a, **attrs)), [x])
    check(make_module([T(3, 5, et=i8)], lambda a: op.make(a, **attrs)))


# -- data movement -------------------------------------------------------------------


@pytest.mark.parametrize(
    "op, shape, attrs",
    [
        (graph.ReshapeOp, (2, 3, 5), {"shape": [5, -1]}),
        (graph.ReshapeOp, (6,), {"shape": [1, 2, 1, 3]}),
        (graph.ReshapeOp, (), {"shape": [1, 1]}),
        (graph.SqueezeOp, (1, 3, 1), {"axes": [0]}),
        (graph.UnsqueezeOp, (3, 2), {"axes": [0, 2]}),
        (graph.TransposeOp, (2, 3, 5), {"perm": [2, 0, 1]}),
        (graph.TransposeOp, (3, 4), {}),
        (graph.BroadcastToOp, (3, 1), {"shape": [2, 3, 4]}),
        (graph.BroadcastToOp, (), {"shape": [3]}),
        (graph.SliceOp, (5, 7), {"starts": [1, -1], "ends": [5, 0], "steps": [2, -2]}),
        (graph.SliceOp, (7,), {"starts": [-100], "ends": [100], "steps": [-1]}),
        (graph.PadOp, (3, 4), {"pads": [1, 2, 0, 3], "value": 1.5}),
        (graph.PadOp, (3, 4), {"pads": [2, -1, 1, 0]}),
        (graph.PadOp, (3, 4), {"pads": [2, 3, 1, 3], "mode": "reflect"}),
        (graph.PadOp, (3, 4), {"pads": [1, 0, 2, 2], "mode": "edge"}),
        (graph.PadOp, (5, 4), {"pads": [-1, 2, 1, -1], "mode": "reflect"}),
        (graph.PadOp, (1, 3), {"pads": [2, 0, 1, 0], "mode": "edge"}),
    ],
)
def test_movement(op, shape, attrs):
    check(make_module([T(*shape)], lambda x: op.make(x, **attrs)))


def test_concat_split():
    check(make_module([T(2, 3), T(2, 1), T(2, 4)], lambda a, b, c: graph.ConcatOp.make(a, b, c, axis=1)))
    check(make_module([T(3, 5, et=i32)], lambda x: graph.SplitOp.make(x, axis=1, sizes=[2, 0, 3])))


@pytest.mark.parametrize(
    "data, idx, axis",
    [((5, 3), (2, 4), 0), ((2, 7, 3), (4,), 1), ((6,), (), 0), ((3, 4), (2,), -1)],
)
def test_gather(data, idx, axis):
    n = data[axis]
    indices = RNG.integers(-n, n, idx).astype(np.int64)
    check(make_module([T(*data), T(*idx, et=i64)], lambda d, i: graph.GatherOp.make(d, i, axis=axis)),
          [random_input(T(*data)), indices])


@pytest.mark.parametrize("mode", ["nearest", "linear"])
@pytest.mark.parametrize("coord", ["half_pixel", "asymmetric", "align_corners", "pytorch_half_pixel"])
@pytest.mark.parametrize("sizes", [(1, 2, 7, 5), (1, 2, 2, 1)])
def test_resize(mode, coord, sizes):
    check(make_module([T(1, 2, 3, 4)], lambda x: graph.ResizeOp.make(
        x, sizes=list(sizes), mode=mode, coordinate_transformation_mode=coord)))


@pytest.mark.parametrize("nearest", ["round_prefer_ceil", "floor", "ceil"])
def test_resize_nearest_modes(nearest):
    check(make_module([T(1, 1, 4, 3)], lambda x: graph.ResizeOp.make(
        x, sizes=[1, 1, 8, 7], mode="nearest", nearest_mode=nearest)))


def test_every_core_op_has_a_kernel():
    import dlc.frontends.te.custom_kernel  # noqa: F401  graph.custom's generator (the TE frontend's)
    from dlc.lowering.kernels import generator_for

    missing = [o.name for o in GRAPH_OPS if not is_composite(o) and generator_for(o.name) is None
               and o.name not in ("graph.constant", "graph.weight")]
    assert missing == []


@pytest.mark.parametrize("et", [f64, pytest.param("f16", id="f16")])
def test_other_float_widths(et):
    from xdsl.dialects.builtin import f16

    et = f16 if et == "f16" else et
    tol = 1e-3 if et == f16 else 1e-5
    check(make_module([T(3, 5, et=et), T(5, et=et)], lambda x, y: graph.AddOp.make(x, y)), rtol=tol)
    check(make_module([T(3, 5, et=et)], lambda x: graph.ExpOp.make(x)), rtol=tol)
    # f16 sums of 3 products round each partial sum to f16: near 2-4 its ulp is 2e-3, so a
    # result near 0 after cancellation may differ from the evaluator's by a few 1e-3
    check(make_module([T(2, 3, et=et), T(3, 2, et=et)], lambda x, y: graph.MatmulOp.make(x, y)), rtol=tol,
          atol=4e-3 if et == f16 else tol)


# -- random shapes (hypothesis) --------------------------------------------------------

from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402


@st.composite
def broadcast_pair(draw):
    out = draw(st.lists(st.sampled_from([1, 2, 3, 5]), min_size=0, max_size=4))

    def operand():
        rank = draw(st.integers(0, len(out)))
        tail = out[len(out) - rank:]
        return [d if draw(st.booleans()) else 1 for d in tail]

    return operand(), operand()


@settings(max_examples=25, deadline=None)
@given(shapes=broadcast_pair(), name=st.sampled_from(["add", "sub", "max", "less", "div"]))
def test_binary_random_broadcast(shapes, name):
    cls = _op_class(name)
    a, b = shapes
    check(make_module([T(*a), T(*b)], lambda x, y: cls.make(x, y)))


@settings(max_examples=25, deadline=None)
@given(
    shape=st.lists(st.sampled_from([1, 2, 3, 5]), min_size=1, max_size=4),
    data=st.data(),
    name=st.sampled_from(REDUCE),
)
def test_reduce_random_axes(shape, data, name):
    axes = data.draw(st.lists(st.integers(0, len(shape) - 1), unique=True, max_size=len(shape)))
    keep = data.draw(st.booleans())
    cls = _op_class(name)
    check(make_module([T(*shape)], lambda x: cls.make(x, axes=axes, keepdims=keep)))



def test_concat_of_many_inputs_round_trips():
    """A concat of 40 inputs (an unrolled LSTM's step outputs) names its 40 copy loops
    d0, d0b, ..., d0z, d0aa, ...: valid SSA names that print and parse back."""
    from dlc.context import make_context
    from dlc.diagnostics import parse_module

    module = make_module([T(1, 3)] * 40, lambda *xs: graph.ConcatOp.make(*xs, axis=0))
    lowered = check(module)
    text = str(lowered)
    assert "%d0aa" in text
    assert str(parse_module(make_context(), text, "concat40.mlir")) == text
