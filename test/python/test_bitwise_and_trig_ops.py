"""acos/asin/atan, bitwise ops and shifts (ONNX BitShift semantics on signed and
unsigned types): compiled (lower-to-loops -> LLVM) against numpy or onnx.reference
on odd shapes (primes, size-1 dims, broadcasting), and their ONNX converters."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import helper
from onnx.reference import ReferenceEvaluator
from xdsl.ir import Block
from xdsl.utils.exceptions import VerifyException

from dlc.dialects import graph as g
from dlc.dialects.graph_base import tensor_type_of
from dlc.frontends.onnx import import_model
from dlc.frontends.onnx.errors import OnnxImportError

from one_op_util import compile_op, exact, integers, onnx_model, run_compiled, run_onnx_compiled
from test_graph_util import onnx_run


TRIG = [(g.AcosOp, np.arccos), (g.AsinOp, np.arcsin), (g.AtanOp, np.arctan)]


def _ulps(got: np.ndarray, exact: np.ndarray) -> float:
    """Largest error in units of the last place of got's type (NaNs must agree)."""
    assert (np.isnan(got) == np.isnan(exact)).all()
    finite = ~np.isnan(exact)
    spacing = np.spacing(np.abs(exact[finite]).astype(got.dtype)).astype(np.float64)
    return float((np.abs(got[finite].astype(np.float64) - exact[finite]) / spacing).max())


@pytest.mark.parametrize("op_cls,fn", TRIG)
@pytest.mark.parametrize("dtype,max_ulps", [(np.float32, 3.0), (np.float64, 1.0), (np.float16, 1.0)])
def test_inverse_trig_is_accurate_over_the_domain(op_cls, fn, dtype, max_ulps):
    # f32/f16 go through expand-math's polynomials, f64 through libm: a dense
    # sweep of [-1, 1] (acos/asin) or [-40, 40] (atan), tiny and huge
    # magnitudes, the edges, values outside the domain (NaN), infinities, NaN
    span = 1.0 if op_cls is not g.AtanOp else 40.0
    special = [-1.0, 1.0, -0.0, 0.0, 1e-30, -1e-4, 0.5, -0.5, 1.0001, -1.5, 2.0, 6e4, -np.inf, np.inf, np.nan]
    x = np.concatenate([np.linspace(-span, span, 20011), special]).astype(dtype)
    x = np.concatenate([x, np.zeros(3 * 29 * 233 - x.size, dtype)]).reshape(3, 29, 233)
    got, want = run_compiled(op_cls, [x])
    with np.errstate(invalid="ignore"):
        exact = fn(x.astype(np.float64))
    assert got[0].dtype == dtype
    assert _ulps(got[0], exact) <= max_ulps
    assert _ulps(want[0], exact) <= max_ulps  # numpy's own f32 functions are not exact either


def test_inverse_trig_kernels_call_no_libm_for_f32():
    x = np.linspace(-1, 1, 7, dtype=np.float32)
    for op_cls, _ in TRIG:
        compiled, _ = compile_op(op_cls, [x])
        assert not any(f"@{name}f(" in compiled.llvm_ir for name in ("acos", "asin", "atan"))


def test_inverse_trig_rejects_integers():
    with pytest.raises(VerifyException, match="graph.atan: operand element type i32 is not float"):
        g.AtanOp.make(*Block(arg_types=[tensor_type_of(np.zeros(3, np.int32))]).args)


@pytest.mark.parametrize("dtype", [np.int8, np.uint8, np.int16, np.int32, np.uint32, np.int64, np.uint64])
def test_bitwise_ops_exact_with_broadcasting(dtype):
    a, b = integers((3, 1, 5), dtype), integers((7, 1), dtype)
    for op_cls, fn in [(g.BitwiseAndOp, np.bitwise_and), (g.BitwiseOrOp, np.bitwise_or),
                       (g.BitwiseXorOp, np.bitwise_xor)]:
        (got,) = exact(op_cls, [a, b])
        np.testing.assert_array_equal(got, fn(a, b))
    (got,) = exact(g.BitwiseNotOp, [a])
    np.testing.assert_array_equal(got, np.invert(a))


def _shift_cases(dtype):
    bits = np.iinfo(dtype).bits
    a = integers((3, 1, 13), dtype)
    a[0, 0, :4] = [np.iinfo(dtype).min, np.iinfo(dtype).max, 1, 0]
    counts = np.array([0, 1, bits - 1, bits, bits + 1, 100, 3, 2, 5, bits - 2, 7, 1, 0], dtype=dtype)
    if np.iinfo(dtype).min < 0:
        counts[11:] = [-1, -bits]  # negative counts are out of range too
    return a, counts


@pytest.mark.parametrize("dtype", [np.int8, np.uint8, np.int16, np.uint16, np.int32, np.uint32, np.int64, np.uint64])
@pytest.mark.parametrize("direction", ["LEFT", "RIGHT"])
def test_shifts_match_the_onnx_reference(dtype, direction):
    a, counts = _shift_cases(dtype)
    op_cls = g.ShiftLeftOp if direction == "LEFT" else g.ShiftRightOp
    (got,) = exact(op_cls, [a, counts])
    (want,) = onnx_run("BitShift", [a, np.broadcast_to(counts, a.shape).copy()], {"direction": direction})
    np.testing.assert_array_equal(got, want)


def test_right_shift_of_negative_values_is_arithmetic():
    a = np.array([-8, -1, -(2**31), 12], np.int32)
    (got,) = exact(g.ShiftRightOp, [a, np.array([1, 31, 40, 2], np.int32)])
    np.testing.assert_array_equal(got, [-4, -1, -1, 3])


def test_bitwise_ops_fuse_into_a_producer_kernel():
    # the entries sit in elementwise.py's tables, so fuse-ops chains them
    from dlc.lowering.kernels.elementwise import scalar_compute

    a = tensor_type_of(np.zeros((2, 3), np.int16))
    block = Block(arg_types=[a, a])
    op = g.ShiftLeftOp.make(*block.args)
    assert scalar_compute(op) is not None


def test_onnx_bitshift_signed_and_bitwise_import_and_run():
    a, counts = _shift_cases(np.int16)
    counts = np.broadcast_to(counts, a.shape).copy()
    for direction in ("LEFT", "RIGHT"):
        node = helper.make_node("BitShift", ["a", "b"], ["y"], direction=direction)
        model = onnx_model(node, {"a": a, "b": counts})
        (got,) = run_onnx_compiled(model, {"a": a, "b": counts})
        np.testing.assert_array_equal(got, ReferenceEvaluator(model).run(None, {"a": a, "b": counts})[0])
    x, y = integers((2, 3), np.uint8), integers((3,), np.uint8)
    node = helper.make_node("BitwiseXor", ["x", "y"], ["z"])
    (got,) = run_onnx_compiled(onnx_model(node, {"x": x, "y": y}), {"x": x, "y": y})
    np.testing.assert_array_equal(got, x ^ y)


def test_onnx_bitshift_rejects_floats_in_one_line():
    x = np.ones(3, np.float32)
    node = helper.make_node("BitShift", ["a", "b"], ["y"], direction="LEFT")
    with pytest.raises(OnnxImportError, match="BitShift takes integer tensors, got float32") as info:
        import_model(onnx_model(node, {"a": x, "b": x}))
    assert "\n" not in str(info.value)
