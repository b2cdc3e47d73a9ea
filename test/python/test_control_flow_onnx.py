"""ONNX If / Loop / Scan / RNN / GRU / LSTM through dlc.compile (native code),
checked against onnxruntime, plus the onnx backend node test cases (slow)."""

from __future__ import annotations

import warnings

import numpy as np
import onnxruntime
import pytest
from onnx import TensorProto, helper, numpy_helper

import dlc
from dlc.evaluator import evaluate
from dlc.frontends.onnx import NeedsConstantError, OnnxImportError, import_model

RNG = np.random.default_rng(11)
FLOAT, BOOL, INT64 = TensorProto.FLOAT, TensorProto.BOOL, TensorProto.INT64


def vi(name, shape, elem=FLOAT):
    return helper.make_tensor_value_info(name, elem, shape)


def model_of(nodes, inputs, outputs, initializers=(), opset=17):
    graph = helper.make_graph(nodes, "g", inputs, outputs, list(initializers))
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 8
    return model


def check_against_ort(model, feeds: dict, rtol=1e-4, atol=1e-5, constant_inputs=None,
                      engine="ort"):
    if engine == "ort":
        session = onnxruntime.InferenceSession(model.SerializeToString(),
                                               providers=["CPUExecutionProvider"])
        want = session.run(None, feeds)
    else:  # onnxruntime has no batch-major (layout=1) recurrent kernels
        from onnx.reference import ReferenceEvaluator

        want = ReferenceEvaluator(model).run(None, feeds)
    module = import_model(model, constant_inputs=constant_inputs)
    runtime = [v for k, v in feeds.items() if k not in (constant_inputs or {})]
    for w, got in zip(want, evaluate(module, runtime), strict=True):
        np.testing.assert_allclose(got, w, rtol=rtol, atol=atol)
    compiled = dlc.compile(module)
    for w, got in zip(want, compiled(*runtime), strict=True):
        assert got.shape == w.shape
        np.testing.assert_allclose(got, w, rtol=rtol, atol=atol)
    return module


def _ops(module):
    return [op.name for op in module.walk()]


# ---------------------------------------------------------------------------
# If / Loop / Scan
# ---------------------------------------------------------------------------


def _if_model():
    """y = c ? x * k : x - k, where k is an outer value read by both branches."""
    then_g = helper.make_graph([helper.make_node("Mul", ["x", "k"], ["t"])], "then", [],
                               [vi("t", [3, 5])])
    else_g = helper.make_graph([helper.make_node("Sub", ["x", "k"], ["e"])], "else", [],
                               [vi("e", [3, 5])])
    nodes = [helper.make_node("Add", ["x", "x"], ["k"]),
             helper.make_node("If", ["c"], ["y"], then_branch=then_g, else_branch=else_g)]
    return model_of(nodes, [vi("c", [], BOOL), vi("x", [3, 5])], [vi("y", [3, 5])])


@pytest.mark.parametrize("flag", [True, False])
def test_if_with_run_time_condition_and_captured_outer_value(flag):
    x = RNG.standard_normal((3, 5)).astype(np.float32)
    module = check_against_ort(_if_model(), {"c": np.array(flag), "x": x})
    assert "graph.if" in _ops(module)


def test_if_with_compile_time_condition_imports_only_the_taken_branch():
    x = RNG.standard_normal((3, 5)).astype(np.float32)
    module = check_against_ort(_if_model(), {"c": np.array(False), "x": x},
                               constant_inputs={"c": np.array(False)})
    assert "graph.if" not in _ops(module) and "graph.sub" in _ops(module)
    assert "graph.mul" not in _ops(module)


def _loop_model(trips_const: bool):
    """carried v <- v * 1.5 + x[i] (reads outer x with Gather on the iteration
    number); scan out v; stops when sum(v) > 50."""
    body_nodes = [
        helper.make_node("Gather", ["x", "i"], ["row"], axis=0),
        helper.make_node("Mul", ["v_in", "s"], ["scaled"]),
        helper.make_node("Add", ["scaled", "row"], ["v_out"]),
        helper.make_node("ReduceSum", ["v_out"], ["total"], keepdims=0),
        helper.make_node("Less", ["total", "limit"], ["cond_out"]),
        helper.make_node("Identity", ["v_out"], ["scan_out"]),
    ]
    body = helper.make_graph(
        body_nodes, "body",
        [vi("i", [], INT64), vi("cond_in", [], BOOL), vi("v_in", [3])],
        [vi("cond_out", [], BOOL), vi("v_out", [3]), vi("scan_out", [3])],
        [numpy_helper.from_array(np.array(1.5, np.float32), "s"),
         numpy_helper.from_array(np.array(50.0, np.float32), "limit")])
    inputs = [vi("x", [7, 3]), vi("v0", [3]), vi("c", [], BOOL)]
    inits = []
    if trips_const:
        inits = [numpy_helper.from_array(np.array(7, np.int64), "M")]
    else:
        inputs.append(vi("M", [], INT64))
    node = helper.make_node("Loop", ["M", "c", "v0"], ["v", "vs"], body=body)
    return model_of([node], inputs, [vi("v", [3]), vi("vs", [7, 3])], inits)


def test_loop_with_early_exit_matches_onnxruntime_on_carried_value():
    x = np.abs(RNG.standard_normal((7, 3))).astype(np.float32) + 1
    v0 = np.ones(3, np.float32)
    model = _loop_model(trips_const=True)
    session = onnxruntime.InferenceSession(model.SerializeToString(),
                                           providers=["CPUExecutionProvider"])
    v_want, vs_want = session.run(None, {"x": x, "v0": v0, "c": np.array(True)})
    module = import_model(model)
    assert "graph.loop" in _ops(module)
    v, vs = dlc.compile(module)(x, v0, np.array(True))
    np.testing.assert_allclose(v, v_want, rtol=1e-5)
    # onnxruntime returns only the rows that ran; dlc's static shape pads with zeros
    ran = vs_want.shape[0]
    assert ran < 7
    np.testing.assert_allclose(vs[:ran], vs_want, rtol=1e-5)
    assert not vs[ran:].any()


def test_loop_with_run_time_trip_count_asks_for_a_constant():
    with pytest.raises(NeedsConstantError, match="'M \\(trip count\\)' must be known at compile time"):
        import_model(_loop_model(trips_const=False))


def test_loop_whose_body_slices_by_iteration_is_unrolled_at_import():
    """Slice starts computed from the iteration number: unrolled during import."""
    body_nodes = [
        helper.make_node("Unsqueeze", ["i", "zero"], ["start"]),
        helper.make_node("Add", ["start", "one"], ["end"]),
        helper.make_node("Slice", ["x", "start", "end"], ["piece"]),
        helper.make_node("Add", ["acc_in", "piece"], ["acc_out"]),
        helper.make_node("Identity", ["cond_in"], ["cond_out"]),
    ]
    body = helper.make_graph(
        body_nodes, "body", [vi("i", [], INT64), vi("cond_in", [], BOOL), vi("acc_in", [1])],
        [vi("cond_out", [], BOOL), vi("acc_out", [1]), vi("piece", [1])],
        [numpy_helper.from_array(np.array([0], np.int64), "zero"),
         numpy_helper.from_array(np.array([1], np.int64), "one")])
    node = helper.make_node("Loop", ["M", "", "a0"], ["acc", "pieces"], body=body)
    model = model_of([node], [vi("x", [5]), vi("a0", [1])], [vi("acc", [1]), vi("pieces", [4, 1])],
                     [numpy_helper.from_array(np.array(4, np.int64), "M")])
    x = RNG.standard_normal(5).astype(np.float32)
    module = check_against_ort(model, {"x": x, "a0": np.array([0.5], np.float32)})
    assert "graph.loop" not in _ops(module)


@pytest.mark.parametrize("directions", [(0, 0), (1, 1)])
def test_scan_with_axes_directions_and_a_captured_value(directions):
    in_dir, out_dir = directions
    body_nodes = [
        helper.make_node("Add", ["s_in", "x_t"], ["s_out"]),
        helper.make_node("Mul", ["s_out", "w"], ["y_t"]),
    ]
    body = helper.make_graph(body_nodes, "body", [vi("s_in", [3]), vi("x_t", [3])],
                             [vi("s_out", [3]), vi("y_t", [3])])
    nodes = [helper.make_node("Neg", ["w0"], ["w"]),
             helper.make_node("Scan", ["s0", "xs"], ["s", "ys"], body=body, num_scan_inputs=1,
                              scan_input_axes=[1], scan_input_directions=[in_dir],
                              scan_output_axes=[1], scan_output_directions=[out_dir])]
    model = model_of(nodes, [vi("s0", [3]), vi("xs", [3, 7]), vi("w0", [3])],
                     [vi("s", [3]), vi("ys", [3, 7])])
    feeds = {"s0": RNG.standard_normal(3).astype(np.float32),
             "xs": RNG.standard_normal((3, 7)).astype(np.float32),
             "w0": RNG.standard_normal(3).astype(np.float32)}
    module = check_against_ort(model, feeds)
    assert "graph.scan" in _ops(module)


def _scan8_model(lens):
    body = helper.make_graph([helper.make_node("Add", ["s_in", "x_t"], ["s_out"]),
                              helper.make_node("Identity", ["s_out"], ["y_t"])], "body",
                             [vi("s_in", [2]), vi("x_t", [2])], [vi("s_out", [2]), vi("y_t", [2])])
    inits = [] if lens is None else [numpy_helper.from_array(np.array(lens, np.int64), "lens")]
    node = helper.make_node("Scan", ["" if lens is None else "lens", "s0", "xs"], ["s", "ys"],
                            body=body, num_scan_inputs=1, directions=[1])
    return model_of([node], [vi("s0", [3, 2]), vi("xs", [3, 5, 2])],
                    [vi("s", [3, 2]), vi("ys", [3, 5, 2])], inits, opset=8)


def test_scan_opset_8_batch_axis_and_reverse_direction():
    feeds = {"s0": RNG.standard_normal((3, 2)).astype(np.float32),
             "xs": RNG.standard_normal((3, 5, 2)).astype(np.float32)}
    check_against_ort(_scan8_model([5, 5, 5]), feeds)


def test_scan_opset_8_short_sequence_lens_is_refused_in_one_line():
    with pytest.raises(OnnxImportError, match="Scan-8 with sequence_lens shorter"):
        import_model(_scan8_model([5, 2, 5]))


# ---------------------------------------------------------------------------
# RNN / GRU / LSTM
# ---------------------------------------------------------------------------

_GATES = {"RNN": 1, "GRU": 3, "LSTM": 4}


def _recurrent_model(kind, seq, batch, inp, hidden, direction="forward", layout=0,
                     with_bias=True, with_h0=False, with_lens=False, **attrs):
    dirs = 2 if direction == "bidirectional" else 1
    gates = _GATES[kind]
    def weight(name, *shape):
        return numpy_helper.from_array(RNG.standard_normal(shape).astype(np.float32) * 0.5, name)

    inits = [weight("W", dirs, gates * hidden, inp), weight("R", dirs, gates * hidden, hidden)]
    names = ["X", "W", "R"]
    if with_bias:
        inits.append(weight("B", dirs, 2 * gates * hidden))
        names.append("B")
    else:
        names.append("")
    x_shape = [seq, batch, inp] if layout == 0 else [batch, seq, inp]
    h_shape = [dirs, batch, hidden] if layout == 0 else [batch, dirs, hidden]
    inputs = [vi("X", x_shape)]
    names.append("lens" if with_lens else "")
    if with_lens:
        inputs.append(vi("lens", [batch], TensorProto.INT32))
    names.append("h0" if with_h0 else "")
    if with_h0:
        inputs.append(vi("h0", h_shape))
    if kind == "LSTM" and with_h0:
        names.append("c0")
        inputs.append(vi("c0", h_shape))
    while names[-1] == "":
        names.pop()
    y_shape = [seq, dirs, batch, hidden] if layout == 0 else [batch, seq, dirs, hidden]
    outs = [vi("Y", y_shape), vi("Y_h", h_shape)] + ([vi("Y_c", h_shape)] if kind == "LSTM" else [])
    node = helper.make_node(kind, names, [o.name for o in outs], hidden_size=hidden,
                            direction=direction, layout=layout, **attrs)
    return model_of([node], inputs, outs, inits, opset=14)


def _feeds(model):
    feeds = {}
    for i in model.graph.input:
        shape = [d.dim_value for d in i.type.tensor_type.shape.dim]
        if i.name == "lens":  # (layout 0) lengths in 1..seq, the first one full
            seq = model.graph.input[0].type.tensor_type.shape.dim[0].dim_value
            feeds[i.name] = RNG.integers(1, seq + 1, size=shape).astype(np.int32)
            feeds[i.name][0] = seq
        else:
            feeds[i.name] = RNG.standard_normal(shape).astype(np.float32)
    return feeds


SLOW = pytest.mark.slow  # ~2-3 s each (every unrolled step is a kernel); one per feature stays fast


@pytest.mark.parametrize("kind,direction", [
    ("RNN", "forward"), pytest.param("GRU", "reverse", marks=SLOW),
    pytest.param("LSTM", "reverse", marks=SLOW), ("RNN", "bidirectional"),
    ("GRU", "bidirectional"), ("LSTM", "bidirectional")])
def test_recurrent_directions_odd_sizes(kind, direction):
    model = _recurrent_model(kind, seq=3, batch=2, inp=5, hidden=7, direction=direction,
                             with_h0=direction != "forward")
    check_against_ort(model, _feeds(model))


@pytest.mark.parametrize("kind", [pytest.param("RNN", marks=SLOW),
                                  pytest.param("GRU", marks=SLOW), "LSTM"])
def test_recurrent_layout_1(kind):
    # (onnx's reference evaluator ignores sequence_lens, so none here)
    model = _recurrent_model(kind, seq=3, batch=2, inp=2, hidden=3, direction="reverse",
                             layout=1, with_h0=True)
    check_against_ort(model, _feeds(model), engine="onnx-reference")


@pytest.mark.parametrize("kind", [pytest.param("RNN", marks=SLOW), "GRU",
                                  pytest.param("LSTM", marks=SLOW)])
def test_recurrent_run_time_sequence_lens(kind):
    model = _recurrent_model(kind, seq=3, batch=3, inp=2, hidden=3, direction="bidirectional",
                             with_lens=True)
    check_against_ort(model, _feeds(model))


def test_gru_linear_before_reset_without_bias_batch_of_one():
    model = _recurrent_model("GRU", seq=5, batch=1, inp=3, hidden=2, with_bias=False,
                             linear_before_reset=1)
    check_against_ort(model, _feeds(model))


def test_lstm_custom_activations_and_clip():
    model = _recurrent_model("LSTM", seq=2, batch=3, inp=3, hidden=4, clip=0.7,
                             activations=["HardSigmoid", "Relu", "Tanh"],
                             activation_alpha=[0.3], activation_beta=[0.4])
    check_against_ort(model, _feeds(model))


def test_unknown_activation_is_one_line():
    model = _recurrent_model("RNN", seq=2, batch=1, inp=2, hidden=2, activations=["Swish"])
    with pytest.raises(OnnxImportError, match="activation 'Swish' is not supported"):
        import_model(model)


# ---------------------------------------------------------------------------
# the onnx backend node test cases (compiled; slow: ~1 s a case)
# ---------------------------------------------------------------------------

# sequence / optional types are not graph tensors
_UNSUPPORTED = {"test_if_seq", "test_if_opt", "test_loop13_seq", "test_loop16_seq_none"}


def _backend_cases():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with np.errstate(all="ignore"):
            from onnx.backend.test.case.node import collect_testcases

            cases = collect_testcases()
    prefixes = ("test_if", "test_loop", "test_scan", "test_lstm", "test_gru", "test_rnn")
    return sorted((c for c in cases if c.name.startswith(prefixes)), key=lambda c: c.name)


@pytest.mark.slow
@pytest.mark.parametrize("case", _backend_cases(), ids=lambda c: c.name)
def test_backend_node_case(case):
    if case.name in _UNSUPPORTED:
        pytest.xfail("sequence/optional types are not supported")
    model = case.model
    inits = {i.name for i in model.graph.initializer}
    names = [i.name for i in model.graph.input if i.name not in inits]
    for inputs, outputs in case.data_sets:
        feeds = dict(zip(names, inputs))
        constants = {}
        while True:
            try:
                module = import_model(model, constant_inputs=constants)
                break
            except NeedsConstantError as err:
                assert err.input_name in feeds and err.input_name not in constants
                constants[err.input_name] = feeds[err.input_name]
        runtime = [feeds[n] for n in names if n not in constants]
        got = dlc.compile(module)(*runtime)
        for g_, want in zip(got, outputs, strict=True):
            np.testing.assert_allclose(g_, want, rtol=case.rtol * 10, atol=max(case.atol, 1e-6))
