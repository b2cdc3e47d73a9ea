"""The recurrent converters' input projection: one rank-2 GEMM over every time step
(``[seq*batch, input] x [input, G*hidden]``), not a batched product per step, and the
compiled LSTM/GRU match onnx's numpy reference on odd shapes (batch 3, seq 5, input 7, hidden 6)."""

from __future__ import annotations

import numpy as np
import pytest
from onnx.reference import ReferenceEvaluator
from xdsl.dialects import func

import dlc
from dlc.dialects import graph as g
from dlc.frontends.onnx import import_model

from test_onnx_frontend_util import Init, node_model

SEQ, BATCH, INPUT, HIDDEN = 5, 3, 7, 6


def _model(kind: str, direction: str = "forward"):
    rng = np.random.default_rng(21)
    gates = {"LSTM": 4, "GRU": 3}[kind]
    dirs = 2 if direction == "bidirectional" else 1
    inputs = {
        "X": rng.standard_normal((SEQ, BATCH, INPUT)).astype(np.float32),
        "W": Init(rng.standard_normal((dirs, gates * HIDDEN, INPUT)).astype(np.float32) * 0.5),
        "R": Init(rng.standard_normal((dirs, gates * HIDDEN, HIDDEN)).astype(np.float32) * 0.5),
        "B": Init(rng.standard_normal((dirs, 2 * gates * HIDDEN)).astype(np.float32) * 0.5),
    }
    outputs = ["Y", "Y_h"] + (["Y_c"] if kind == "LSTM" else [])
    model = node_model(kind, inputs, outputs, hidden_size=HIDDEN, direction=direction)
    return model, inputs["X"]


@pytest.mark.parametrize("kind", ["LSTM", "GRU"])
def test_input_projection_is_one_rank2_gemm(kind):
    model, _ = _model(kind)
    module = import_model(model)
    main = next(op for op in module.walk() if isinstance(op, func.FuncOp))
    matmuls = [op for op in main.walk() if isinstance(op, g.MatmulOp)]
    projections = [op for op in matmuls if list(op.operands[0].type.get_shape()) == [SEQ * BATCH, INPUT]]
    assert len(projections) == 1, [str(op.operands[0].type) for op in matmuls]
    # no rank-3 product (the per-step batched form) is left
    assert all(len(op.operands[0].type.get_shape()) == 2 for op in matmuls)


@pytest.mark.parametrize("kind,direction", [("LSTM", "forward"), ("GRU", "bidirectional")])
def test_compiled_recurrent_matches_reference(kind, direction):
    model, x = _model(kind, direction)
    expected = ReferenceEvaluator(model).run(None, {"X": x})
    got = dlc.compile(model)(x)
    assert len(got) == len(expected)
    for out, ref in zip(got, expected):
        np.testing.assert_allclose(np.asarray(out), ref, rtol=1e-4, atol=1e-5)
