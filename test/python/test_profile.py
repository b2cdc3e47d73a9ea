"""Per-kernel profiles (issue 22): ``dlc.compile(..., profile=True)`` times every kernel
call inside the native entry; ``CompiledModule.profile`` reads the records, the kernel
times add up to the entry's measured time, and the Chrome trace JSON has the shape
chrome://tracing and Perfetto read. The build without ``profile`` is untouched."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pytest

import dlc
from dlc.lowering.cost import group_cost, op_flops

ROOT = os.path.join(os.path.dirname(__file__), "..", "..")
SMALL_CNN = os.path.join(ROOT, "examples", "small_cnn.onnx")
RESNET50 = os.path.join(os.path.dirname(__import__("onnx").__file__), "backend", "test", "data", "light",
                        "light_resnet50.onnx")

# The Chrome trace event format (complete events, "ph": "X"): what chrome://tracing and
# Perfetto need of each event; ts and dur are microseconds.
TRACE_SCHEMA = {
    "type": "object",
    "required": ["traceEvents", "displayTimeUnit"],
    "properties": {
        "displayTimeUnit": {"type": "string", "enum": ["ms", "ns"]},
        "traceEvents": {
            "type": "array",
            "minItems": 1,
            "items": {
                "type": "object",
                "required": ["name", "cat", "ph", "ts", "dur", "pid", "tid", "args"],
                "properties": {
                    "name": {"type": "string"},
                    "cat": {"type": "string"},
                    "ph": {"type": "string", "enum": ["X"]},
                    "ts": {"type": "number", "minimum": 0},
                    "dur": {"type": "number", "minimum": 0},
                    "pid": {"type": "integer"},
                    "tid": {"type": "integer"},
                    "args": {"type": "object"},
                },
            },
        },
    },
}

_TYPES = {"object": dict, "array": list, "string": str, "integer": int, "number": (int, float)}


def _validate(value, schema, where="$") -> None:
    """The subset of JSON Schema used above (type, required, properties, items, enum,
    minimum, minItems), checked by hand so no jsonschema package is needed."""
    expected = _TYPES[schema["type"]]
    assert isinstance(value, expected) and not isinstance(value, bool), f"{where}: not {schema['type']}"
    if "enum" in schema:
        assert value in schema["enum"], f"{where}: {value!r} not in {schema['enum']}"
    if "minimum" in schema:
        assert value >= schema["minimum"], f"{where}: {value} < {schema['minimum']}"
    if schema["type"] == "object":
        for key in schema.get("required", []):
            assert key in value, f"{where}: missing '{key}'"
        for key, sub in schema.get("properties", {}).items():
            if key in value:
                _validate(value[key], sub, f"{where}.{key}")
    if schema["type"] == "array":
        assert len(value) >= schema.get("minItems", 0), f"{where}: too few items"
        for i, item in enumerate(value):
            _validate(item, schema["items"], f"{where}[{i}]")


def check_trace(trace: dict) -> None:
    """``trace`` survives a JSON round trip and matches TRACE_SCHEMA (with jsonschema too
    where it is installed)."""
    trace = json.loads(json.dumps(trace))
    _validate(trace, TRACE_SCHEMA)
    try:
        import jsonschema
    except ImportError:
        return
    jsonschema.validate(trace, TRACE_SCHEMA)


def _inputs(compiled, seed=0):
    rng = np.random.default_rng(seed)
    return [rng.standard_normal(shape).astype(dtype) for _, shape, dtype in compiled.input_specs]


def check_profile(compiled, inputs, repeat: int, adds_up: bool = True) -> object:
    """Profile ``repeat`` runs; the kernels' times add up to the entry's within 10%
    (``adds_up``; a toy whose host work is as long as its kernels is not held to it)."""
    profile = compiled.profile(*inputs, repeat=repeat)
    assert profile.runs == repeat
    entry, kernels = profile.entry_ns(), profile.kernel_ns()
    assert 0 < kernels <= entry
    assert not adds_up or kernels >= 0.9 * entry, f"kernels {kernels / 1e6:.3f} ms of the entry's {entry / 1e6:.3f} ms"
    trace = profile.to_chrome_trace()
    check_trace(trace)
    kinds = {e["cat"] for e in trace["traceEvents"]}
    assert kinds == {"entry", "kernel"}
    assert sum(e["cat"] == "entry" for e in trace["traceEvents"]) == repeat
    return profile


@pytest.fixture(scope="module")
def small_cnn():
    return dlc.compile(SMALL_CNN, profile=True)


@pytest.fixture(scope="module")
def plain():
    return dlc.compile(SMALL_CNN)


def test_profiled_build_computes_the_same(small_cnn, plain):
    x = _inputs(small_cnn)
    np.testing.assert_array_equal(small_cnn(*x)[0], plain(*x)[0])
    assert "dlc_profile" not in plain.llvm_ir  # the untouched build has no instrumentation
    assert "dlc_profile_record" in small_cnn.llvm_ir


def test_small_cnn_profile_adds_up(small_cnn, tmp_path):
    profile = check_profile(small_cnn, _inputs(small_cnn), repeat=5)
    rows = profile.rows()
    # every kernel call of the host is timed: one row per kernel, each called once a run
    assert all(row.calls == 5 for row in rows)
    conv = [row for row in rows if row.form == "conv2d_nchwc"]
    assert conv and all(row.source.startswith("graph.conv2d_nchwc") and row.flops for row in conv)
    assert all(row.bytes for row in rows)
    # the ONNX node names travel to the kernel calls, through fusion and the NCHWc rewrite
    nodes = {row.nodes[0] for row in rows if row.nodes and row.nodes[0]}
    assert ("conv1", "bn1", "relu1") in nodes and ("conv2", "relu2") in nodes and ("softmax",) in nodes
    table = profile.table()
    for column in ("kernel", "source ops", "nodes", "calls", "total ms", "%run", "GFLOP/s", "GB/s", "form", "schedule"):
        assert column in table.splitlines()[0]
    assert "conv2d_nchwc+add+relu" in table and "parallel" in table
    path = profile.save(str(tmp_path / "trace.json"))
    with open(path) as f:
        trace = json.load(f)
    check_trace(trace)
    assert any(e["args"].get("nodes") == ["conv1", "bn1", "relu1"] for e in trace["traceEvents"])


def test_profile_needs_a_profiled_build_for_the_llvm_target(plain):
    with pytest.raises(dlc.driver.CompileError, match="profile=True"):
        plain.profile(*_inputs(plain))
    with pytest.raises(dlc.driver.CompileError, match="profile=True is for the llvm target"):
        dlc.compile(SMALL_CNN, target="cuda", profile=True)


def test_loop_inside_the_entry_records_every_iteration():
    """A graph.loop body's kernels are called once per iteration: each call is one record."""
    from test_control_flow_compiled import _affine_loop, parse, to_text

    trips, shape = 6, (3, 1, 5)
    compiled = dlc.compile(parse(to_text(_affine_loop(7, shape))), profile=True)
    rng = np.random.default_rng(3)
    v, w = (rng.standard_normal(shape).astype(np.float32) for _ in range(2))
    inputs = [np.array([trips]), np.array([True]), v, np.array(4, np.int64), w]
    profile = check_profile(compiled, inputs, repeat=2, adds_up=False)
    body = [row for row in profile.rows() if row.source.startswith("graph.mul")]
    assert body and all(row.calls == 2 * trips for row in body)


def test_cost_model_counts_conv_matmul_and_elementwise():
    from dlc.driver import load_module

    module = load_module(SMALL_CNN)
    ops = [op for op in module.walk() if op.name.startswith("graph.")]
    convs = [op for op in ops if op.name == "graph.conv2d"]
    assert convs
    conv = convs[0]
    n, oc, oh, ow = conv.results[0].type.get_shape()
    _, ic, kh, kw = conv.operands[1].type.get_shape()
    assert op_flops(conv) == 2 * n * oc * oh * ow * ic * kh * kw
    cost = group_cost([conv])
    sizes = [np.prod(v.type.get_shape()) * 4 for v in (*conv.operands, conv.results[0])]
    assert cost.bytes == sum(sizes)
    relus = [op for op in ops if op.name == "graph.relu"]
    assert relus and op_flops(relus[0]) == int(np.prod(relus[0].results[0].type.get_shape()))
    reshapes = [op for op in ops if op.name in ("graph.reshape", "graph.flatten")]
    assert not reshapes or op_flops(reshapes[0]) is None  # data movement: not counted


def test_cost_model_counts_packed_matmuls():
    from dlc.driver import load_module

    module = load_module("""
func.func @main(%a: tensor<1x7x5xf32>, %bp: tensor<2x5x3xf32>) -> tensor<1x7x6xf32> {
  %c = graph.matmul_packed %a, %bp : (tensor<1x7x5xf32>, tensor<2x5x3xf32>) -> tensor<1x7x6xf32>
  func.return %c : tensor<1x7x6xf32>
}""")
    (op,) = [op for op in module.walk() if op.name == "graph.matmul_packed"]
    assert op_flops(op) == 2 * 7 * 6 * 5


def test_cli_run_profile_writes_a_trace_and_prints_the_table(tmp_path):
    trace = tmp_path / "trace.json"
    proc = subprocess.run([sys.executable, "-m", "dlc.tools.dlc_cli", "run", SMALL_CNN, "--repeat", "3",
                           "--profile", str(trace)], capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == ""  # piped: no progress display
    assert "conv2d_nchwc+add+relu" in proc.stdout and "GFLOP/s" in proc.stdout
    assert f"profile: {trace}" in proc.stdout
    with open(trace) as f:
        check_trace(json.load(f))


def test_cli_profile_of_a_shared_library_is_one_line_error(tmp_path):
    lib = tmp_path / "m.so"
    lib.write_bytes(b"")
    proc = subprocess.run([sys.executable, "-m", "dlc.tools.dlc_cli", "run", str(lib), "--profile",
                           str(tmp_path / "t.json")], capture_output=True, text=True, timeout=120)
    assert proc.returncode != 0
    assert proc.stderr.strip().count("\n") == 0 and "--profile needs the .onnx/.mlir model" in proc.stderr


def _encoder():
    torch = pytest.importorskip("torch", reason="torch is not installed")
    torch.manual_seed(0)
    layer = torch.nn.TransformerEncoderLayer(d_model=32, nhead=4, dim_feedforward=64, dropout=0.0,
                                             batch_first=True)
    model = torch.nn.TransformerEncoder(layer, num_layers=2, enable_nested_tensor=False).eval()
    return torch, model, torch.randn(1, 16, 32)


@pytest.mark.slow
def test_transformer_encoder_profile_adds_up():
    torch, model, x = _encoder()
    compiled = dlc.compile(model, example_args=(x,), profile=True)
    with torch.no_grad():
        np.testing.assert_allclose(compiled(x.numpy())[0], model(x).numpy(), rtol=1e-4, atol=1e-5)
    profile = check_profile(compiled, [x.numpy()], repeat=20)
    # the weights' products run packed (pack-matmul-weights), counted as matmuls
    assert any(row.form == "matmul_packed" and row.flops for row in profile.rows())
    print(profile.table())


@pytest.mark.slow
def test_resnet50_profile_adds_up():
    compiled = dlc.compile(RESNET50, profile=True)
    profile = check_profile(compiled, _inputs(compiled), repeat=3)
    assert sum(row.form == "conv2d_nchwc" for row in profile.rows()) > 10
    print(profile.table())


def test_cost_model_counts_quantized_multiply_adds():
    """int8 convolutions and products count 2 ops per integer multiply-add, over the real
    channels (a blocked conv's padded channels are not work)."""
    from dlc.dialects import graph as g
    from dlc.driver import load_module

    text = """
func.func @main(%x: tensor<1x2x5x5xui8>, %xb: tensor<1x1x7x7x4xui8>, %a: tensor<3x7xi8>) -> (tensor<1x3x5x5xui8>, tensor<1x1x5x5x16xui8>, tensor<3x2xi8>) {
  %w = graph.constant dense<1> : tensor<3x2x3x3xi8>
  %b = graph.constant dense<0> : tensor<3xi32>
  %wb = graph.constant dense<1> : tensor<3x3x3x3xi8>
  %wd = graph.constant dense<1> : tensor<2x7xi8>
  %y = graph.qconv2d %x, %w, %b {padding = array<i64: 1, 1, 1, 1>, x_scale = array<f32: 0.05>, x_zero_point = array<i64: 128>, w_scale = array<f32: 0.01, 0.02, 0.03>, y_scale = array<f32: 0.1>, y_zero_point = array<i64: 120>} : (tensor<1x2x5x5xui8>, tensor<3x2x3x3xi8>, tensor<3xi32>) -> tensor<1x3x5x5xui8>
  %yb = graph.qconv2d_nchwc %xb, %wb, %b {x_scale = array<f32: 0.05>, x_zero_point = array<i64: 128>, w_scale = array<f32: 0.01, 0.02, 0.03>, y_scale = array<f32: 0.1>, y_zero_point = array<i64: 120>} : (tensor<1x1x7x7x4xui8>, tensor<3x3x3x3xi8>, tensor<3xi32>) -> tensor<1x1x5x5x16xui8>
  %yd = graph.qdense %a, %wd {x_scale = array<f32: 0.1>, w_scale = array<f32: 0.01>, y_scale = array<f32: 0.2>} : (tensor<3x7xi8>, tensor<2x7xi8>) -> tensor<3x2xi8>
  func.return %y, %yb, %yd : tensor<1x3x5x5xui8>, tensor<1x1x5x5x16xui8>, tensor<3x2xi8>
}
"""
    module = load_module(text)
    ops = {op.name: op for op in module.walk()}
    assert op_flops(ops["graph.qconv2d"]) == 2 * 3 * 5 * 5 * 2 * 3 * 3
    assert op_flops(ops["graph.qconv2d_nchwc"]) == 2 * 3 * 5 * 5 * 3 * 3 * 3
    assert op_flops(ops["graph.qdense"]) == 2 * 3 * 2 * 7
    x = np.zeros((1, 2, 8, 8, 16), np.uint8)
    dw = g.QDepthwiseConv2DNCHWcOp.make(
        g.ConstantOp.from_numpy(x).results[0], g.ConstantOp.from_numpy(np.ones((20, 1, 3, 3), np.int8)).results[0],
        strides=[2, 2], padding=[0, 0, 1, 1], x_scale=[0.05], w_scale=[0.01], y_scale=[0.1])
    assert op_flops(dw) == 2 * 4 * 4 * 20 * 3 * 3  # the 20 real channels of 32
