"""The recurrent converters' time loop: one ``graph.scan`` per direction (its body, one
cell, becomes kernels once however long the sequence), compiled and run against
onnxruntime on odd shapes (hidden 5, seq 1 and 7, batch 1 and 3, every direction,
sequence_lens known and at run time), and the LSTM language model of the modern-model
benchmark (its quick size) compiled and matching onnxruntime."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from xdsl.dialects import func

import dlc
from dlc.dialects import graph as g
from dlc.frontends.onnx import import_model

from test_onnx_frontend_util import Init, node_model

ort = pytest.importorskip("onnxruntime")

HIDDEN, INPUT = 5, 3
GATES = {"RNN": 1, "GRU": 3, "LSTM": 4}


def _model(kind, seq, batch, direction="forward", lens=None, runtime_lens=False, peepholes=False,
           initial=False, **attrs):
    rng = np.random.default_rng(seq * 10 + batch)
    gates, dirs = GATES[kind], 2 if direction == "bidirectional" else 1
    inputs = {
        "X": rng.standard_normal((seq, batch, INPUT)).astype(np.float32),
        "W": Init(rng.standard_normal((dirs, gates * HIDDEN, INPUT)).astype(np.float32) * 0.6),
        "R": Init(rng.standard_normal((dirs, gates * HIDDEN, HIDDEN)).astype(np.float32) * 0.6),
        "B": Init(rng.standard_normal((dirs, 2 * gates * HIDDEN)).astype(np.float32) * 0.5),
    }
    if lens is not None or initial or peepholes:
        lens_array = np.array(lens if lens is not None else [seq] * batch, np.int32)
        inputs["sequence_lens"] = lens_array if runtime_lens else Init(lens_array)
    if initial or peepholes:
        inputs["initial_h"] = rng.standard_normal((dirs, batch, HIDDEN)).astype(np.float32)
        if kind == "LSTM":
            inputs["initial_c"] = rng.standard_normal((dirs, batch, HIDDEN)).astype(np.float32)
    if peepholes:
        inputs["P"] = Init(rng.standard_normal((dirs, 3 * HIDDEN)).astype(np.float32) * 0.5)
    outputs = ["Y", "Y_h"] + (["Y_c"] if kind == "LSTM" else [])
    model = node_model(kind, inputs, outputs, hidden_size=HIDDEN, direction=direction, **attrs)
    feeds = {k: v for k, v in inputs.items() if v is not None and not isinstance(v, Init)}
    return model, feeds


def _check(model, feeds):
    for out in model.graph.output:  # node_model leaves the output types to the importer
        out.type.tensor_type.elem_type = onnx.TensorProto.FLOAT
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    expected = session.run(None, feeds)
    compiled = dlc.compile(model)
    got = compiled(*[feeds[i.name] for i in session.get_inputs()])
    got = got if isinstance(got, (list, tuple)) else [got]
    assert len(got) == len(expected)
    for out, ref in zip(got, expected):
        np.testing.assert_allclose(np.asarray(out), ref, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("kind", ["LSTM", "GRU", "RNN"])
def test_recurrence_is_one_scan_per_direction(kind):
    model, _ = _model(kind, 7, 3, "bidirectional")
    main = next(op for op in import_model(model).walk() if isinstance(op, func.FuncOp))
    scans = [op for op in main.body.block.ops if isinstance(op, g.ScanOp)]
    assert len(scans) == 2
    assert [list(op.scan_input_directions) for op in scans] == [[0], [1]]
    for scan in scans:
        body_matmuls = [op for op in scan.body.walk() if isinstance(op, g.MatmulOp)]
        # the cell's H*R^T product(s) only: GRU has [z r] and h apart, no weight is sliced per step
        assert len(body_matmuls) == (2 if kind == "GRU" else 1)
        assert not any(isinstance(op, g.SliceOp) and op.operands[0].type.get_shape()[0] == HIDDEN
                       and len(op.operands[0].type.get_shape()) == 2 for op in scan.body.walk())
    # nothing is unrolled: the top level holds no per-step matmul
    assert sum(isinstance(op, g.MatmulOp) for op in main.body.block.ops) == 2  # the two projections


@pytest.mark.parametrize("kind,seq,batch,direction", [
    *[("LSTM", *case) for case in [(1, 1, "forward"), (7, 3, "forward"), (7, 1, "reverse"),
                                   (1, 3, "bidirectional"), (7, 3, "bidirectional")]],
    ("GRU", 7, 3, "forward"), ("GRU", 7, 1, "reverse"), ("GRU", 1, 3, "bidirectional"),
    ("RNN", 1, 1, "forward"), ("RNN", 7, 3, "bidirectional"),
])
def test_recurrent_matches_onnxruntime(kind, seq, batch, direction):
    _check(*_model(kind, seq, batch, direction))


@pytest.mark.parametrize("kind", ["LSTM", "GRU"])
@pytest.mark.parametrize("runtime_lens", [False, True])
def test_sequence_lens_and_initial_state(kind, runtime_lens):
    # entries of length 7, 2 and 5: shorter ones keep their state and write zeros to Y
    _check(*_model(kind, 7, 3, "bidirectional", lens=[7, 2, 5], runtime_lens=runtime_lens, initial=True))


def test_lstm_peepholes_and_clip():
    _check(*_model("LSTM", 7, 3, "forward", peepholes=True, clip=1.5))


def test_gru_linear_before_reset():
    _check(*_model("GRU", 7, 3, "reverse", linear_before_reset=1))


def test_lstm_lm_quick_matches_onnxruntime(tmp_path):
    pytest.importorskip("torch")
    from dlc.bench.modern_zoo import export

    path = str(tmp_path / "lstm_lm.onnx")
    inputs = export("lstm_lm", path, "quick")
    session = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    feeds = {i.name: np.asarray(x) for i, x in zip(session.get_inputs(), inputs)}
    expected = session.run(None, feeds)[0]
    got = dlc.compile(path)(*feeds.values())
    got = got[0] if isinstance(got, (list, tuple)) else got
    np.testing.assert_allclose(np.asarray(got), expected, rtol=1e-4, atol=1e-5)
