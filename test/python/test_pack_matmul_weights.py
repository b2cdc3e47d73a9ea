"""pack-matmul-weights and graph.matmul_packed end to end: the packed layout, the compiled
kernel against numpy on odd shapes (primes, one panel, several K blocks, row tails inside
and outside the row block, fused epilogues, two threads), and the schedule's structure
(no B copy, the epilogue in the register tile's write-back)."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

import dlc
from dlc.dialects import graph as g
from dlc.dialects.graph.linalg import pack_columns
from dlc.dialects.tloop import ForOp
from dlc.driver import graph_passes, lower_to_loops_pass, run_pass, schedule_pass
from dlc.frontends.onnx import import_model
from dlc.lowering.schedule.core import loop_name

RNG = np.random.default_rng(11)

def test_pack_columns_layout():
    b = np.arange(5 * 6, dtype=np.float32).reshape(5, 6)
    bp = pack_columns(b, 3)
    assert bp.shape == (2, 5, 3) and bp.flags.c_contiguous
    for p in range(2):
        for k in range(5):
            np.testing.assert_array_equal(bp[p, k], b[k, 3 * p:3 * p + 3])
    tail = pack_columns(b[:, :5], 2)  # 5 columns: 3 panels, the last one's second column 0
    assert tail.shape == (3, 5, 2)
    np.testing.assert_array_equal(tail[2, :, 0], b[:, 4])
    assert not tail[2, :, 1].any()

def _model(m: int, k: int, n: int, epilogue: str = "none", lead: bool = True, shared: bool = False,
           batch: int = 1):
    """x [batch, m, k] (or [m, k]) @ W [k, n] (+ bias, then relu)."""
    w = RNG.standard_normal((k, n)).astype(np.float32)
    bias = RNG.standard_normal(n).astype(np.float32)
    x_shape = (batch, m, k) if lead else (m, k)
    y_shape = x_shape[:-1] + (n,)
    nodes = [helper.make_node("MatMul", ["x", "W"], ["t"])]
    last = "t"
    if epilogue != "none":
        nodes.append(helper.make_node("Add", ["t", "bias"], ["tb"]))
        last = "tb"
    if epilogue == "relu":
        nodes.append(helper.make_node("Relu", [last], ["tr"]))
        last = "tr"
    outputs = [helper.make_tensor_value_info("y", TensorProto.FLOAT, y_shape)]
    nodes.append(helper.make_node("Identity", [last], ["y"]))
    if shared:  # a second product with the same weight
        nodes.append(helper.make_node("MatMul", ["x", "W"], ["y2"]))
        outputs.append(helper.make_tensor_value_info("y2", TensorProto.FLOAT, y_shape))
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, x_shape)],
                              outputs, [numpy_helper.from_array(w, "W"), numpy_helper.from_array(bias, "bias")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    x = RNG.standard_normal(x_shape).astype(np.float32)
    want = x.astype(np.float64) @ w
    if epilogue != "none":
        want = want + bias
    if epilogue == "relu":
        want = np.maximum(want, 0)
    return model, x, want, w

def _graph_after_passes(model):
    module = import_model(model)
    for name in graph_passes():
        run_pass(name, module)
    return module

@pytest.mark.parametrize("m,k,n,epilogue,threads", [
    (4, 2, 32, "none", 1),        # fewest rows, K = 2, one panel
    (7, 13, 64, "bias", 2),       # primes; rows < MR: one (7-row) tile
    (29, 300, 96, "relu", 2),     # K blocks (fused epilogue at the last one), inner row tail
    (197, 768, 32 * 7, "bias", 1),  # ViT's rows: 24 tiles of 8 and a 5-row tail, 7 panels
    (523, 64, 64, "relu", 2),     # more rows than one block: the row tail in its own nest
    (64, 512, 1000, "bias", 2),   # the LSTM LM's head: 31 panels and 8 columns (a padded panel)
    (9, 20, 130, "relu", 1),      # 4 panels and 2 columns
])
def test_packed_matmul_matches_numpy(m, k, n, epilogue, threads):
    model, x, want, _ = _model(m, k, n, epilogue)
    module = _graph_after_passes(model)
    assert any(isinstance(op, g.MatmulPackedOp) for op in module.walk())
    compiled = dlc.compile(model, num_threads=threads)
    y = np.full(want.shape, np.nan, np.float32)  # every element written (no fill nest)
    compiled(x, outputs=[y])
    np.testing.assert_allclose(y, want, rtol=1e-4, atol=1e-4 * np.sqrt(k))

def test_shared_weight_is_packed_once_and_2d_lhs():
    model, x, want, w = _model(16, 40, 64, lead=False, shared=True)
    module = _graph_after_passes(model)
    names = {op.weight_name.data for op in module.walk() if isinstance(op, g.WeightOp)}
    packed = [op for op in module.walk() if isinstance(op, g.MatmulPackedOp)]
    assert len(packed) == 2 and len({op.operands[1].owner.weight_name.data for op in packed}) == 1
    assert "W" not in names  # the plain weight is gone from the module and its store
    y, y2 = dlc.compile(model, num_threads=2)(x)
    np.testing.assert_allclose(y, want, rtol=1e-4, atol=1e-3)
    np.testing.assert_allclose(y2, x.astype(np.float64) @ w, rtol=1e-4, atol=1e-3)

def test_batched_lhs_is_one_packed_product():
    """[3, 37, 64] @ [64, 96] + bias, relu: one [111, 64] packed product between reshapes."""
    model, x, want, _ = _model(37, 64, 96, "relu", batch=3)
    module = _graph_after_passes(model)
    (packed,) = [op for op in module.walk() if isinstance(op, g.MatmulPackedOp)]
    assert packed.operands[0].type.get_shape() == (111, 64)
    np.testing.assert_allclose(dlc.compile(model, num_threads=2)(x)[0], want, rtol=1e-4, atol=1e-3)


def test_few_rows_and_narrow_odd_columns_stay_plain():
    for m, n in ((3, 64), (8, 33), (8, 127)):
        model, x, want, _ = _model(m, 16, n, "bias")
        module = _graph_after_passes(model)
        assert not any(isinstance(op, g.MatmulPackedOp) for op in module.walk())
        np.testing.assert_allclose(dlc.compile(model)(x)[0], want, rtol=1e-4, atol=1e-4)

def test_schedule_reads_panels_and_fuses_the_epilogue():
    """The packed kernel has no B copy and no separate epilogue nest: the bias is added in
    the register tile's write-back at the last K block (K = 512: two blocks of 256)."""
    model, _, _, _ = _model(64, 512, 2048, "bias")
    module = _graph_after_passes(model)
    run_pass(lower_to_loops_pass(), module)
    run_pass(schedule_pass(), module)
    kernel = next(op for op in module.ops if op.attributes.get("tloop.form") is not None
                  and op.attributes["tloop.form"].data == "matmul_packed")
    assert "tloop.schedule_fallback" not in kernel.attributes
    names = [loop_name(op) for op in kernel.walk() if isinstance(op, ForOp)]
    assert not any(n.startswith("b_pack") for n in names)
    assert "ko" in names and "ni" in names and "nr_s1" in names
    top = [op for op in kernel.body.block.ops if isinstance(op, ForOp)]
    assert len(top) == 1, [loop_name(t) for t in top]  # no zero fill, no epilogue nest
    assert "scf.if" in str(kernel)  # zeros at the first K block, bias at the last

def test_cross_target_panel_follows_its_register_tile():
    from dlc.target import Target

    avx2 = Target.from_string("x86-64-v3")
    passes = graph_passes(None, avx2)
    assert f"pack-matmul-weights{{panel={avx2.matmul_register_tile[1]}}}" in passes \
        or avx2.matmul_register_tile[1] == Target.host().matmul_register_tile[1]
    assert passes.index([p for p in passes if p.startswith("pack-matmul-weights")][0]) < passes.index("fuse-ops")
