"""legalize: every composite op is expanded into core ops with the same values.

Each case builds a one-op function on odd shapes (primes, size-1 dims,
broadcast parameters), evaluates it before and after `legalize` with random
inputs, and checks the results agree within 1e-5 relative.
"""

from __future__ import annotations

import numpy as np
import pytest
from xdsl.dialects import func
from xdsl.dialects.builtin import FunctionType, ModuleOp
from xdsl.ir import Block, Region

from dlc.context import make_context
from dlc.dialects import graph as g
from dlc.dialects.graph_base import tensor_type_of
from dlc.evaluator import evaluate
from dlc.dialects.traits import Composite
from dlc.transforms.legalize import LegalizePass


def one_op_module(op_type, inputs, **attrs) -> ModuleOp:
    block = Block(arg_types=[tensor_type_of(a) for a in inputs])
    op = op_type.make(*block.args, **attrs)
    block.add_ops([op, func.ReturnOp(*op.results)])
    signature = FunctionType.from_lists(block.arg_types, [r.type for r in op.results])
    return ModuleOp([func.FuncOp("main", signature, Region(block))])


def rand(*shape, low=-3.0, high=3.0, seed=[0]):
    seed[0] += 1
    rng = np.random.default_rng(seed[0])
    return rng.uniform(low, high, size=shape).astype(np.float32)


def positive(*shape):
    return rand(*shape, low=0.1, high=3.0)


# (op, input arrays, attributes): odd shapes, size-1 dims, broadcasting
CASES = [
    (g.DenseOp, [rand(7, 13), rand(5, 13), rand(5)], {}),
    (g.DenseOp, [rand(2, 1, 13), rand(3, 13)], {}),
    (g.DenseOp, [rand(13), rand(1, 13), rand(1)], {}),
    (g.DenseOp, [rand(3, 7, 11), rand(5, 11), rand(1)], {}),
    (g.BatchNormOp, [rand(2, 5, 3, 7), rand(5), rand(5), rand(5), positive(5)], {}),
    (g.BatchNormOp, [rand(1, 3, 1), rand(3), rand(3), rand(3), positive(3)], {"epsilon": 1e-3}),
    (g.BatchNormOp, [rand(3, 1, 7), rand(7), rand(7), rand(7), positive(7)], {"axis": -1}),
    (g.BatchNormOp, [rand(11, 2), rand(11), rand(11), rand(11), positive(11)], {"axis": 0}),
    (g.LayerNormOp, [rand(2, 5, 13), rand(13), rand(13)], {}),
    (g.LayerNormOp, [rand(3, 5, 7), rand(5, 7), rand(1)], {"axis": 1, "epsilon": 1e-3}),
    (g.LayerNormOp, [rand(1, 1), rand(1), rand(1)], {}),
    (g.GeluOp, [rand(3, 17)], {}),
    (g.GeluOp, [rand(1, 97, 1)], {"approximate": "tanh"}),
    (g.SoftmaxOp, [rand(3, 13)], {}),
    (g.SoftmaxOp, [rand(2, 5, 7) * 30], {"axis": 1}),
    (g.SoftmaxOp, [rand(1)], {"axis": 0}),
    (g.LogSoftmaxOp, [rand(3, 13)], {}),
    (g.LogSoftmaxOp, [rand(2, 5, 7) * 30], {"axis": -3}),
    (g.GlobalAvgPoolOp, [rand(2, 3, 5, 7)], {}),
    (g.GlobalAvgPoolOp, [rand(1, 7, 3)], {}),
    (g.GlobalAvgPoolOp, [rand(2, 5, 7, 3)], {"layout": "NHWC"}),
    (g.GlobalMaxPoolOp, [rand(2, 3, 5, 7)], {}),
    (g.GlobalMaxPoolOp, [rand(1, 5, 1, 3)], {"layout": "NHWC"}),
    (g.SqueezeOp, [rand(1, 3, 1, 5)], {}),
    (g.SqueezeOp, [rand(1, 3, 1, 5)], {"axes": [-2]}),
    (g.UnsqueezeOp, [rand(3, 5)], {"axes": [0, 3]}),
    (g.HardSigmoidOp, [rand(5, 7)], {}),
    (g.HardSigmoidOp, [rand(13)], {"alpha": 0.3, "beta": 0.4}),
    (g.EluOp, [rand(5, 7)], {}),
    (g.EluOp, [rand(1, 13)], {"alpha": 0.7}),
    (g.SoftplusOp, [rand(3, 11)], {}),
    (g.SoftplusOp, [rand(97, low=-40.0, high=40.0)], {}),
    (g.ReciprocalOp, [positive(3, 7) * np.sign(rand(3, 7))], {}),
    (g.AttentionOp, [rand(1, 5, 2, 4), rand(1, 7, 2, 4), rand(1, 7, 2, 3), rand(1, 1, 5, 7)],
     {"scale": 0.5, "q_perm": [0, 2, 1, 3], "k_perm": [0, 2, 1, 3], "v_perm": [0, 2, 1, 3], "out_perm": [0, 2, 1, 3]}),
    (g.AttentionOp, [rand(2, 3, 5, 4), rand(2, 3, 4, 6), rand(2, 3, 6, 4)], {"scale": 0.25, "k_perm": [0, 1, 3, 2]}),
]


def case_id(case) -> str:
    op_type, inputs, attrs = case
    shapes = ",".join("x".join(map(str, a.shape)) or "scalar" for a in inputs)
    extra = "".join(f"-{k}" for k in attrs)
    return f"{op_type.name.removeprefix('graph.')}[{shapes}]{extra}"


@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_legalize_preserves_values(case):
    op_type, inputs, attrs = case
    module = one_op_module(op_type, inputs, **attrs)
    expected = evaluate(module, inputs)
    LegalizePass().apply(make_context(), module)
    module.verify()
    names = {op.name for op in module.walk()}
    assert op_type.name not in names
    assert not any(g.is_composite(type(op)) for op in module.walk())
    actual = evaluate(module, inputs)
    for a, e in zip(actual, expected, strict=True):
        assert a.shape == e.shape and a.dtype == e.dtype
        scale = max(float(np.max(np.abs(e))), 1e-30)
        # elementwise 1e-5 relative, except near zero where x*s+t style forms cancel:
        # there the error is bounded by 5e-7 of the largest magnitude
        np.testing.assert_allclose(a, e, rtol=1e-5, atol=5e-7 * scale)


def test_every_composite_op_has_a_rewrite_and_a_test():
    composite = {op for op in g.GRAPH_OPS if g.is_composite(op)}
    assert all(callable(op.get_trait(Composite).decompose) for op in composite)
    assert composite <= {case[0] for case in CASES}


def test_softplus_keeps_relative_accuracy_for_very_negative_inputs():
    x = np.array([-30.0, -15.0, -8.0, -1e-3, 0.0, 1e-3, 20.0], dtype=np.float32)
    module = one_op_module(g.SoftplusOp, [x])
    LegalizePass().apply(make_context(), module)
    (actual,) = evaluate(module, [x])
    exact = np.logaddexp(0.0, x.astype(np.float64))
    np.testing.assert_allclose(actual, exact, rtol=1e-6)


def test_legalize_leaves_core_ops_alone():
    x = rand(3, 5)
    module = one_op_module(g.ReluOp, [x])
    before = str(module)
    LegalizePass().apply(make_context(), module)
    assert str(module) == before


def test_batch_norm_on_constant_parameters_folds_to_one_mul_add():
    from dlc.transforms.fold_constant import FoldConstantPass

    x_t = tensor_type_of(rand(1, 5, 3, 3))
    block = Block(arg_types=[x_t])
    params = [g.ConstantOp.from_numpy(p) for p in (rand(5), rand(5), rand(5), positive(5))]
    bn = g.BatchNormOp.make(block.args[0], *params)
    block.add_ops([*params, bn, func.ReturnOp(bn)])
    module = ModuleOp([func.FuncOp("main", FunctionType.from_lists([x_t], [x_t]), Region(block))])
    x = rand(1, 5, 3, 3)
    (expected,) = evaluate(module, [x])
    LegalizePass().apply(make_context(), module)
    FoldConstantPass().apply(make_context(), module)
    names = sorted(op.name for op in module.body.block.first_op.body.block.ops)
    assert names == ["func.return", "graph.add", "graph.constant", "graph.constant", "graph.mul"]
    (actual,) = evaluate(module, [x])
    np.testing.assert_allclose(actual, expected, rtol=1e-5, atol=1e-6)


def test_composite_op_without_rewrite_is_a_one_line_error():
    # the rewrite is the trait's parameter: an op cannot be declared composite without one
    with pytest.raises(TypeError, match=r"^Composite needs a decomposition function, got None$"):
        Composite(None)
