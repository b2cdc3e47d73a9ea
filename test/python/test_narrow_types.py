"""Narrow element types (bf16, float8, float4, e8m0, int4/uint4, int2/uint2).

The cast kernel (lowering/kernels/narrow.py) is checked bit for bit, compiled,
against graph.cast's reference on every code of each format and a sweep of f32
values (ties, subnormals, out of range, NaN/Inf); the reference is checked
against onnx's own Cast implementation.
"""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest
from xdsl.utils.exceptions import VerifyException

import dlc
from dlc.dialects import graph as g
from dlc.dialects.graph_base import element_type_of, is_float, is_narrow, numpy_dtype

NARROW_FLOATS = ["bf16", "f8E4M3FN", "f8E4M3FNUZ", "f8E5M2", "f8E5M2FNUZ", "f8E8M0FNU", "f4E2M1FN"]
NARROW_INTS = ["i4", "ui4", "i2", "ui2"]
DTYPE_NAMES = {
    "bf16": "bfloat16", "f8E4M3FN": "float8_e4m3fn", "f8E4M3FNUZ": "float8_e4m3fnuz",
    "f8E5M2": "float8_e5m2", "f8E5M2FNUZ": "float8_e5m2fnuz", "f8E8M0FNU": "float8_e8m0fnu",
    "f4E2M1FN": "float4_e2m1fn", "i4": "int4", "ui4": "uint4", "i2": "int2", "ui2": "uint2",
}


def _dtype(name: str) -> np.dtype:
    return np.dtype(getattr(ml_dtypes, DTYPE_NAMES[name])) if name in DTYPE_NAMES else np.dtype(name)


def _mlir_type(dtype: np.dtype) -> str:
    return str(element_type_of(dtype))


def compile_cast(src: np.dtype, dst: np.dtype, n: int, **attrs):
    s, d = _mlir_type(src), _mlir_type(dst)
    extra = "".join(f", {k} = {v}" for k, v in attrs.items())
    text = f"""
func.func @main(%x: tensor<{n}x{s}>) -> tensor<{n}x{d}> {{
  %y = graph.cast %x {{to = {d}{extra}}} : (tensor<{n}x{s}>) -> tensor<{n}x{d}>
  func.return %y : tensor<{n}x{d}>
}}"""
    return dlc.compile(text)


def _reference(x: np.ndarray, dst: np.dtype, saturate=True, round_mode="up") -> np.ndarray:
    return g.narrow_cast_reference(x, element_type_of(dst), saturate, round_mode)


def _bits(a: np.ndarray) -> np.ndarray:
    return a.view({1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}[a.dtype.itemsize])


def assert_same_codes(got: np.ndarray, want: np.ndarray, x: np.ndarray) -> None:
    assert got.dtype == want.dtype
    gb, wb = _bits(got), _bits(want)
    # NaN payloads may differ (bf16 keeps some); NaN-ness must not
    both_nan = np.isnan(got.astype(np.float32)) & np.isnan(want.astype(np.float32))
    bad = (gb != wb) & ~both_nan
    if bad.any():
        i = np.flatnonzero(bad)[:8]
        raise AssertionError(
            f"{bad.sum()} mismatches, e.g. x={x[i]!r} got={gb[i]!r} want={wb[i]!r}"
        )


def all_codes(name: str) -> np.ndarray:
    if name == "bf16":
        return np.arange(1 << 16, dtype=np.uint16).view(ml_dtypes.bfloat16)
    bits = {"f4E2M1FN": 4, "i4": 4, "ui4": 4, "i2": 2, "ui2": 2}.get(name, 8)
    return np.arange(1 << bits, dtype=np.uint8).view(_dtype(name))


def f32_sweep(name: str) -> np.ndarray:
    """Every value of the format, midpoints between neighbours (ties) and
    their f32 neighbours, subnormals of f32, out-of-range values and NaN/Inf."""
    values = all_codes(name).astype(np.float32)
    finite = np.unique(values[np.isfinite(values)]).astype(np.float64)
    mids = ((finite[1:] + finite[:-1]) / 2).astype(np.float32)
    near = np.concatenate([np.nextafter(mids, np.float32(np.inf)), np.nextafter(mids, np.float32(-np.inf))])
    rng = np.random.default_rng(0)
    with np.errstate(over="ignore"):
        wide = (rng.standard_normal(4000) * np.exp2(rng.integers(-140, 128, 4000))).astype(np.float32)
    special = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, -np.nan, 1e-45, -1e-45, 1.2e-38,
                        3.4e38, -3.4e38, 1e6, -1e6, 65504, 57344, 61440, 448, 464, 480, 240, 6, 7],
                       np.float32)
    top = finite.max()
    over = np.array([top * 1.0625, top * 1.125, top * 1.5, top * 2], np.float64)
    over = over[over < 3.4e38].astype(np.float32)
    out = np.concatenate([values, mids, near, wide, special, over, -over])
    return out


@pytest.mark.parametrize("name", NARROW_FLOATS + NARROW_INTS)
def test_decode_every_code(name):
    codes = all_codes(name)
    for target in ("float32", "float16"):
        m = compile_cast(codes.dtype, np.dtype(target), codes.size)
        got = m(codes)[0]
        want = _reference(codes, np.dtype(target))
        np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("name", NARROW_FLOATS)
@pytest.mark.parametrize("saturate", [True, False])
def test_encode_f32_sweep(name, saturate):
    if name == "bf16" and not saturate:
        pytest.skip("saturate does not apply to bf16")
    x = f32_sweep(name)
    dst = _dtype(name)
    m = compile_cast(np.dtype(np.float32), dst, x.size, saturate=str(saturate).lower())
    assert_same_codes(m(x)[0], _reference(x, dst, saturate), x)


@pytest.mark.parametrize("name", ["bf16", "f8E4M3FN", "f8E5M2FNUZ", "f4E2M1FN"])
def test_encode_from_f64_rounds_like_ml_dtypes(name):
    """Midpoints nudged by less than an f32 ulp: ml_dtypes (hence ONNX) rounds
    f64 through f32, so those round to even; the kernel must agree."""
    mids = f32_sweep(name).astype(np.float64)
    mids = mids[np.isfinite(mids)]
    tiny = np.abs(mids) * 2.0**-40
    x = np.concatenate([mids, mids + tiny, mids - tiny, [1e300, -1e300, 1e-300]])
    dst = _dtype(name)
    m = compile_cast(np.dtype(np.float64), dst, x.size)
    with np.errstate(over="ignore"):
        want = _reference(x, dst)
    assert_same_codes(want, _reference(x.astype(np.float32), dst), x)
    assert_same_codes(m(x)[0], want, x)


@pytest.mark.parametrize("round_mode", ["up", "down", "nearest"])
def test_encode_e8m0_round_modes(round_mode):
    x = f32_sweep("f8E8M0FNU")
    dst = _dtype("f8E8M0FNU")
    m = compile_cast(np.dtype(np.float32), dst, x.size, round_mode=f'"{round_mode}"')
    assert_same_codes(m(x)[0], _reference(x, dst, True, round_mode), x)


@pytest.mark.parametrize("name", NARROW_INTS)
@pytest.mark.parametrize("source", ["float32", "float16", "int8", "int64", "uint8"])
def test_encode_narrow_int(name, source):
    x = np.arange(-37, 41).astype(source)
    if source == "uint8":
        x = np.arange(0, 255, 3).astype(source)
    dst = _dtype(name)
    m = compile_cast(x.dtype, dst, x.size)
    np.testing.assert_array_equal(_bits(m(x)[0]), _bits(x.astype(dst)))


@pytest.mark.parametrize("pair", [("f8E4M3FN", "bf16"), ("bf16", "f8E5M2"), ("i4", "f4E2M1FN"),
                                  ("f4E2M1FN", "i4"), ("f4E2M1FN", "int8"), ("ui4", "f8E8M0FNU")])
def test_narrow_to_narrow(pair):
    src, dst = (_dtype(n) for n in pair)
    codes = all_codes(pair[0]) if pair[0] != "bf16" else all_codes("bf16")[::97]
    m = compile_cast(src, dst, codes.size)
    assert_same_codes(m(codes)[0], _reference(codes, dst), codes)


@pytest.mark.parametrize("to", ["FLOAT8E4M3FN", "FLOAT8E4M3FNUZ", "FLOAT8E5M2", "FLOAT8E5M2FNUZ",
                                "FLOAT8E8M0", "BFLOAT16", "FLOAT4E2M1", "INT4", "UINT2"])
@pytest.mark.parametrize("saturate", [True, False])
def test_reference_matches_onnx(to, saturate):
    import onnx
    from onnx.reference.ops.op_cast import cast_to

    proto = getattr(onnx.TensorProto, to)
    dst = onnx.helper.tensor_dtype_to_np_dtype(proto)
    name = _mlir_type(dst)
    x = f32_sweep(name if name in NARROW_FLOATS else "f8E4M3FN")
    if name in NARROW_INTS:
        x = np.arange(-40, 40).astype(np.float32)
    assert_same_codes(_reference(x, dst, saturate), cast_to(x, proto, saturate), x)


# -- the graph dialect ------------------------------------------------------------------


def test_dtype_mapping_round_trips():
    for name in NARROW_FLOATS + NARROW_INTS:
        t = element_type_of(_dtype(name))
        assert str(t) == name and is_narrow(t) and not is_float(t)
        assert numpy_dtype(t) == _dtype(name)


def test_arithmetic_rejects_narrow_types():
    from xdsl.ir import Block
    from dlc.dialects.graph_base import tensor_type

    block = Block(arg_types=[tensor_type([3], element_type_of(_dtype("bf16")))] * 2)
    with pytest.raises(VerifyException, match="bf16"):
        g.AddOp.make(block.args[0], block.args[1])
    g.ReshapeOp.make(block.args[0], shape=[1, 3])  # data movement is fine
    g.CastOp.make(block.args[0], to=element_type_of(np.dtype(np.float32)))


def test_data_movement_on_narrow_types_compiled():
    x = np.arange(-8, 7, dtype=np.float32).reshape(3, 5).astype(ml_dtypes.int4)
    text = """
func.func @main(%x: tensor<3x5xi4>) -> tensor<5x3xi4> {
  %t = graph.transpose %x {perm = array<i64: 1, 0>} : (tensor<3x5xi4>) -> tensor<5x3xi4>
  func.return %t : tensor<5x3xi4>
}"""
    got = dlc.compile(text)(x)[0]
    assert got.dtype == x.dtype
    np.testing.assert_array_equal(got.astype(np.int8), x.T.astype(np.int8))


def test_runtime_rejects_wrong_narrow_dtype():
    m = compile_cast(np.dtype(np.float32), _dtype("bf16"), 3)
    with pytest.raises(Exception, match="dtype"):
        m(np.zeros(3, ml_dtypes.float8_e4m3fn))


def test_exported_library_round_trips_narrow_types(tmp_path):
    import subprocess
    import sys

    m = compile_cast(_dtype("f8E4M3FN"), np.dtype(np.float32), 5)
    path = tmp_path / "m.so"
    m.export(str(path))
    # a fresh interpreter: the runtime resolves ml_dtypes names by itself
    code = (
        "import sys, numpy as np; from dlc.runtime import load; "
        f"m = load({str(path)!r}); import ml_dtypes; "
        "x = np.array([1, 2.5, -3, 448, 0.01], ml_dtypes.float8_e4m3fn); "
        "print(m(x)[0].tolist())"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == str(np.array([1, 2.5, -3, 448, 0.01], ml_dtypes.float8_e4m3fn)
                                     .astype(np.float32).tolist())


# -- the ONNX importer --------------------------------------------------------------


def _onnx_model(node, inputs, outputs, opset=23):
    from onnx import helper

    graph = helper.make_graph([node], "g", inputs, outputs)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])


def test_onnx_cast_no_saturate_compiled():
    from onnx import TensorProto, helper

    node = helper.make_node("Cast", ["x"], ["y"], to=TensorProto.FLOAT8E4M3FN, saturate=0)
    model = _onnx_model(node, [helper.make_tensor_value_info("x", TensorProto.FLOAT, [5])],
                        [helper.make_tensor_value_info("y", TensorProto.FLOAT8E4M3FN, [5])])
    x = np.array([1.0, 500.0, -1e9, np.inf, 0.3], np.float32)
    got = dlc.compile(model)(x)[0]
    assert_same_codes(got, x.astype(ml_dtypes.float8_e4m3fn), x)  # overflow -> NaN


def test_onnx_quantize_dequantize_int4_compiled():
    from onnx import TensorProto, helper, numpy_helper

    scale = numpy_helper.from_array(np.array(0.5, np.float32), "s")
    zero = numpy_helper.from_array(np.array(1, ml_dtypes.int4), "z")
    q = helper.make_node("QuantizeLinear", ["x", "s", "z"], ["q"])
    dq = helper.make_node("DequantizeLinear", ["q", "s", "z"], ["y"])
    graph = helper.make_graph(
        [q, dq], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [7])],
        [helper.make_tensor_value_info("q", TensorProto.INT4, [7]),
         helper.make_tensor_value_info("y", TensorProto.FLOAT, [7])], initializer=[scale, zero])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)])
    x = np.array([-9, -3.25, -0.75, 0, 0.75, 2.5, 9], np.float32)
    got_q, got_y = dlc.compile(model)(x)
    want_q = np.clip(np.round(x / 0.5) + 1, -8, 7)
    np.testing.assert_array_equal(got_q.astype(np.float32), want_q)
    np.testing.assert_array_equal(got_y, (want_q - 1) * 0.5)


def test_onnx_bf16_arithmetic_computes_in_f32():
    from onnx import TensorProto, helper

    from dlc.frontends.onnx import import_model

    node = helper.make_node("Celu", ["x"], ["y"], alpha=0.7)
    model = _onnx_model(node, [helper.make_tensor_value_info("x", TensorProto.BFLOAT16, [3, 7])],
                        [helper.make_tensor_value_info("y", TensorProto.BFLOAT16, [3, 7])])
    module = import_model(model)
    casts = [op for op in module.walk() if isinstance(op, g.CastOp)]
    assert [str(c.to) for c in casts] == ["f32", "bf16"]
    x = np.linspace(-3, 3, 21, dtype=np.float32).reshape(3, 7).astype(ml_dtypes.bfloat16)
    xf = x.astype(np.float32)
    want = (np.maximum(xf, 0) + np.minimum(0, 0.7 * (np.exp(xf / 0.7) - 1))).astype(ml_dtypes.bfloat16)
    got = dlc.compile(model)(x)[0]
    assert got.dtype == ml_dtypes.bfloat16
    np.testing.assert_allclose(got.astype(np.float32), want.astype(np.float32), rtol=2**-7)


def test_evaluator_runs_narrow_casts():
    from xdsl.parser import Parser

    from dlc.context import make_context
    from dlc.evaluator import evaluate

    text = """
func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
  %q = graph.cast %x {to = f8E5M2} : (tensor<4xf32>) -> tensor<4xf8E5M2>
  %t = graph.reshape %q {shape = array<i64: 2, 2>} : (tensor<4xf8E5M2>) -> tensor<2x2xf8E5M2>
  %r = graph.reshape %t {shape = array<i64: 4>} : (tensor<2x2xf8E5M2>) -> tensor<4xf8E5M2>
  %y = graph.cast %r {to = f32} : (tensor<4xf8E5M2>) -> tensor<4xf32>
  func.return %y : tensor<4xf32>
}"""
    x = np.array([0.3, 1e5, -7, 1e-6], np.float32)
    want = np.clip(x, -57344, 57344).astype(ml_dtypes.float8_e5m2).astype(np.float32)
    module = Parser(make_context(), text).parse_module()
    np.testing.assert_array_equal(evaluate(module, [x])[0], want)
    np.testing.assert_array_equal(dlc.compile(text)(x)[0], want)


@pytest.mark.parametrize("out_type", ["INT4", "UINT8", "FLOAT8E4M3FN"])
def test_onnx_blocked_quantize_odd_shape_matches_onnx_reference(out_type):
    from onnx import TensorProto, helper
    from onnx.reference import ReferenceEvaluator

    proto = getattr(TensorProto, out_type)
    node = helper.make_node("QuantizeLinear", ["x", "s"], ["y"], axis=1, block_size=3,
                            output_dtype=proto)
    model = _onnx_model(node, [helper.make_tensor_value_info("x", TensorProto.FLOAT, [3, 7]),
                               helper.make_tensor_value_info("s", TensorProto.FLOAT, [3, 3])],
                        [helper.make_tensor_value_info("y", proto, [3, 7])], opset=21)
    rng = np.random.default_rng(1)
    x = (rng.standard_normal((3, 7)) * 9).astype(np.float32)
    s = rng.uniform(0.5, 2, (3, 3)).astype(np.float32)
    want = ReferenceEvaluator(model).run(None, {"x": x, "s": s})[0]
    got = dlc.compile(model)(x, s)[0]
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(got.astype(np.float32), want.astype(np.float32))
