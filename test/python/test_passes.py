"""fold-constant and shape-infer (legalize: test_passes_legalize.py)."""

from __future__ import annotations

import numpy as np
import pytest
from xdsl.dialects import func
from xdsl.dialects.builtin import DenseIntOrFPElementsAttr, FunctionType, ModuleOp, f32
from xdsl.ir import Block, Region
from xdsl.rewriter import Rewriter

from dlc.context import make_context
from dlc.dialects import graph as g
from dlc.dialects.graph_base import tensor_type, tensor_type_of
from dlc.evaluator import evaluate
from dlc.diagnostics import OpError
from dlc.transforms.fold_constant import FoldConstantPass
from dlc.transforms.shape_infer import ShapeInferPass
from dlc.weights import WeightStore, attach, store_of


def module_of(arg_types, build) -> ModuleOp:
    """@main(args) whose body is the ops ``build(args)`` returns (last one returned)."""
    block = Block(arg_types=arg_types)
    ops = build(*block.args)
    block.add_ops([*ops, func.ReturnOp(*ops[-1].results)])
    signature = FunctionType.from_lists(arg_types, [r.type for r in ops[-1].results])
    return ModuleOp([func.FuncOp("main", signature, Region(block))])


def body_ops(module: ModuleOp) -> list:
    return list(module.body.block.first_op.body.block.ops)


def op_names(module: ModuleOp) -> list[str]:
    return [op.name for op in body_ops(module)]


def rand(*shape, seed=[0]):
    seed[0] += 1
    return np.random.default_rng(seed[0]).uniform(-2, 2, size=shape).astype(np.float32)


def const(array) -> g.ConstantOp:
    return g.ConstantOp.from_numpy(np.asarray(array))


def fold(module, **options) -> None:
    FoldConstantPass(**options).apply(make_context(), module)


# ---------------------------------------------------------------------------
# fold-constant
# ---------------------------------------------------------------------------


def constant_graph():
    """A graph of constants only: odd shapes, broadcasting, several op kinds."""
    a, b, c = const(rand(7, 1)), const(rand(1, 13)), const(rand(13))
    s = g.AddOp.make(a, b)  # 7x13 broadcast
    t = g.TransposeOp.make(s)  # 13x7
    m = g.MatmulOp.make(c, t)  # 7
    r = g.ReduceSumOp.make(s, axes=[1], keepdims=True)  # 7x1
    e = g.ExpOp.make(g.MulOp.make(r, a))
    out = g.ConcatOp.make(e, r, axis=1)  # 7x2
    w = g.SubOp.make(g.ReshapeOp.make(out, shape=[14]), g.ConcatOp.make(m, m, axis=0))
    return [a, b, c, s, t, m, r, e.x.owner, e, out, w.lhs.owner, w.rhs.owner, w]


@pytest.mark.parametrize("inline_limit", [0, 4, 64, 1000])
def test_fold_constant_matches_evaluator(inline_limit):
    module = module_of([], lambda: constant_graph())
    expected = evaluate(module, [])
    fold(module, inline_limit=inline_limit)
    module.verify()
    ops = body_ops(module)
    assert [op.name for op in ops[:-1]] == ["graph.weight" if inline_limit < 14 else "graph.constant"]
    actual = evaluate(module, [])
    np.testing.assert_array_equal(actual[0], expected[0])
    store = store_of(module)
    assert len(store) == (1 if inline_limit < 14 else 0)  # intermediates removed


def test_fold_constant_keeps_ops_on_arguments_and_folds_their_constant_inputs():
    x_t = tensor_type_of(rand(3, 5))

    def build(x):
        a, b = const(rand(5)), const(np.float32(3.0))
        scaled = g.MulOp.make(a, b)
        return [a, b, scaled, g.AddOp.make(x, scaled)]

    module = module_of([x_t], build)
    x = rand(3, 5)
    expected = evaluate(module, [x])
    fold(module)
    assert op_names(module) == ["graph.constant", "graph.add", "func.return"]
    np.testing.assert_array_equal(evaluate(module, [x])[0], expected[0])


def test_fold_constant_uses_weights_and_names_results_after_them():
    w = rand(11, 7)

    def build():
        weight = g.WeightOp.make_named("fc.weight", tensor_type_of(w))
        return [weight, g.TransposeOp.make(weight)]

    module = module_of([], build)
    attach(module, WeightStore({"fc.weight": w}))
    fold(module)
    ops = body_ops(module)
    assert [op.name for op in ops] == ["graph.weight", "func.return"]
    assert ops[0].weight_name.data == "fc.weight.transpose"
    store = store_of(module)
    assert list(store) == ["fc.weight.transpose"]  # the dead source weight is dropped
    np.testing.assert_array_equal(store["fc.weight.transpose"], w.T)
    module.verify()


def test_fold_constant_respects_size_limit():
    def build():
        a = const(rand(1, 5))
        return [a, g.BroadcastToOp.make(a, shape=[7, 5])]

    module = module_of([], build)
    fold(module, size_limit=34)
    assert op_names(module) == ["graph.constant", "graph.broadcast_to", "func.return"]
    fold(module, size_limit=35)
    assert op_names(module) == ["graph.constant", "func.return"]


def test_fold_constant_handles_multi_result_bool_and_int_ops():
    def build():
        a = const(np.arange(10, dtype=np.int64).reshape(2, 5))
        parts = g.SplitOp.make(a, axis=1, sizes=[2, 3])
        less = g.LessOp.make(parts.results[1], const(np.int64(3)))
        as_float = g.CastOp.make(less, to=f32)
        return [a, parts, less.rhs.owner, less, as_float]

    module = module_of([], build)
    expected = evaluate(module, [])
    fold(module)
    assert op_names(module) == ["graph.constant", "func.return"]
    np.testing.assert_array_equal(evaluate(module, [])[0], expected[0])


def test_fold_constant_leaves_unused_results_and_other_users_alone():
    def build():
        a = const(rand(3))
        parts = g.SplitOp.make(a, axis=0, sizes=[1, 2])
        return [a, parts, g.NegOp.make(parts.results[1])]

    module = module_of([], build)
    expected = evaluate(module, [])
    fold(module)
    module.verify()
    np.testing.assert_array_equal(evaluate(module, [])[0], expected[0])
    assert op_names(module)[-2:] == ["graph.constant", "func.return"]


def test_fold_constant_failure_names_the_op():
    def build():
        data, idx = const(rand(4, 3)), const(np.array([0, 9], dtype=np.int64))
        return [data, idx, g.GatherOp.make(data, idx)]

    module = module_of([], build)
    with pytest.raises(OpError, match=r"cannot evaluate 'graph.gather' \(op #2 of @main\): .*out of bounds"):
        fold(module)


@pytest.mark.parametrize("options", [{"size_limit": -1}, {"inline_limit": -5}])
def test_fold_constant_rejects_negative_limits(options):
    with pytest.raises(ValueError, match="must be >= 0"):
        FoldConstantPass(**options)


# ---------------------------------------------------------------------------
# shape-infer
# ---------------------------------------------------------------------------


def test_shape_infer_follows_a_changed_argument_type():
    w = rand(3, 5)

    def build(x):
        weight = const(w)
        y = g.DenseOp.make(x, weight)
        relu = g.ReluOp.make(y)
        return [weight, y, relu, g.SoftmaxOp.make(relu)]

    module = module_of([tensor_type_of(rand(2, 5))], build)
    fn = module.body.block.first_op
    Rewriter.replace_value_with_new_type(fn.args[0], tensor_type_of(rand(7, 5)))
    ShapeInferPass().apply(make_context(), module)
    module.verify()
    assert str(fn.function_type) == "(tensor<7x5xf32>) -> tensor<7x3xf32>"
    x = rand(7, 5)
    expected = evaluate(module_of([tensor_type_of(x)], build), [x])
    np.testing.assert_array_equal(evaluate(module, [x])[0], expected[0])


def test_shape_infer_fixes_placeholder_result_types_and_calls():
    from xdsl.parser import Parser

    text = """
    func.func @scale(%x: tensor<3x1xf32>) -> tensor<1xf32> {
      %y = graph.mul %x, %x : (tensor<3x1xf32>, tensor<3x1xf32>) -> tensor<1xf32>
      func.return %y : tensor<1xf32>
    }
    func.func @main(%x: tensor<3x1xf32>, %b: tensor<5xf32>) -> tensor<1xf32> {
      %s = func.call @scale(%x) : (tensor<3x1xf32>) -> tensor<1xf32>
      %r = graph.add %s, %b : (tensor<1xf32>, tensor<5xf32>) -> tensor<1xf32>
      func.return %r : tensor<1xf32>
    }
    """
    module = Parser(make_context(), text).parse_module()
    ShapeInferPass().apply(make_context(), module)
    module.verify()
    scale, main = list(module.body.block.ops)
    assert str(scale.function_type) == "(tensor<3x1xf32>) -> tensor<3x1xf32>"
    assert str(main.function_type) == "(tensor<3x1xf32>, tensor<5xf32>) -> tensor<3x5xf32>"


def test_shape_infer_failure_names_the_op():
    def build(a, b):
        return [g.AddOp.make(a, b)]

    module = module_of([tensor_type_of(rand(2, 3)), tensor_type_of(rand(3))], build)
    fn = module.body.block.first_op
    Rewriter.replace_value_with_new_type(fn.args[1], tensor_type_of(rand(4)))
    with pytest.raises(OpError, match=r"'graph.add' \(op #0 of @main\): shapes 2x3 and 4 are not broadcast-compatible"):
        ShapeInferPass().apply(make_context(), module)


def test_shape_infer_is_a_no_op_on_consistent_ir():
    module = module_of([tensor_type_of(rand(2, 3))], lambda x: [g.ExpOp.make(x)])
    before = str(module)
    ShapeInferPass().apply(make_context(), module)
    assert str(module) == before


def _all_constant_case_ids():
    from test_passes_legalize import CASES, case_id

    return CASES, [case_id(c) for c in CASES]


_CASES, _CASE_IDS = _all_constant_case_ids()


@pytest.mark.parametrize("case", _CASES, ids=_CASE_IDS)
def test_fold_constant_on_constant_operands_matches_evaluator(case):
    """Every composite op (odd shapes, broadcasting) folded on constant operands."""
    op_type, inputs, attrs = case

    def build():
        operands = [const(a) for a in inputs]
        return [*operands, op_type.make(*operands, **attrs)]

    module = module_of([], build)
    expected = evaluate(module, [])
    fold(module, inline_limit=16)
    module.verify()
    (folded,) = body_ops(module)[:-1]
    assert isinstance(folded, g.WeightOp if expected[0].size > 16 else g.ConstantOp)
    actual = evaluate(module, [])
    assert actual[0].dtype == expected[0].dtype
    np.testing.assert_array_equal(actual[0], expected[0])


def test_fold_constant_missing_weight_is_a_one_line_error():
    def build():
        weight = g.WeightOp.make_named("gone", tensor_type_of(rand(2, 3)))
        return [weight, g.ExpOp.make(weight)]

    module = module_of([], build)
    attach(module, WeightStore({}))
    with pytest.raises(OpError, match=r"^cannot evaluate 'graph.exp' \(op #1 of @main\): weight \"gone\" is not in the module's weights store$"):
        fold(module)


def test_fold_constant_stores_contiguous_arrays_from_splats():
    def build():
        splat_value = DenseIntOrFPElementsAttr.from_list(tensor_type([7, 11], f32), [1.5])
        splat = g.ConstantOp.make(value=splat_value)
        return [splat, g.TransposeOp.make(splat)]

    module = module_of([], build)
    fold(module)
    (weight,) = body_ops(module)[:-1]
    array = store_of(module)[weight.weight_name.data]
    assert array.flags.c_contiguous and array.shape == (11, 7)
    assert np.all(array == 1.5)
