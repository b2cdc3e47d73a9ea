"""The tensor-core and warp-shuffle check cases: small odd shapes (M, N, K primes or 1),
each a graph program, its inputs, whether it opts in to tf32 and the GPU schedule its
main kernel must get. test/python/test_cuda_tensor_core.py runs them on the emulator,
bench/gpu/tensor_core_checks.py on the device (or the emulator with --emulate)."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np


@dataclass
class Case:
    id: str
    text: str  # graph IR with one function @<id>
    shapes: list[tuple[tuple[int, ...], str]]  # (shape, element type) of each input
    schedule: str  # the schedule the case's heavy kernel must get ("mma", "row-reduction")
    allow_tf32: bool = False
    rtol: float = 1e-2
    atol: float = 1e-2
    kernels: list[str] = field(default_factory=list)

    def inputs(self, seed: int = 0) -> list[np.ndarray]:
        import ml_dtypes

        rng = np.random.default_rng(seed)
        dtypes = {"f32": np.float32, "f16": np.float16, "bf16": ml_dtypes.bfloat16}
        return [rng.uniform(-1.0, 1.0, shape).astype(dtypes[t]) for shape, t in self.shapes]


def _t(shape, elt: str) -> str:
    return f"tensor<{'x'.join(map(str, shape))}x{elt}>"


def matmul_case(name: str, m: int, n: int, k: int, elt: str, batch: int | None = None,
                allow_tf32: bool = False) -> Case:
    a_shape = (batch, m, k) if batch else (m, k)
    o_shape = (batch, m, n) if batch else (m, n)
    ta, tb, to = _t(a_shape, elt), _t((k, n), elt), _t(o_shape, elt)
    if elt == "bf16":  # bf16 has no matmul: cast to f32 and back, as a bf16 model does
        fa, fb, fo = _t(a_shape, "f32"), _t((k, n), "f32"), _t(o_shape, "f32")
        body = (f"  %a1 = graph.cast %a {{to = f32}} : ({ta}) -> {fa}\n"
                f"  %b1 = graph.cast %b {{to = f32}} : ({tb}) -> {fb}\n"
                f"  %m = graph.matmul %a1, %b1 : ({fa}, {fb}) -> {fo}\n"
                f"  %r = graph.cast %m {{to = bf16}} : ({fo}) -> {to}\n")
    else:
        body = f"  %r = graph.matmul %a, %b : ({ta}, {tb}) -> {to}\n"
    text = f"func.func @{name}(%a: {ta}, %b: {tb}) -> {to} {{\n{body}  func.return %r : {to}\n}}\n"
    return Case(name, text, [(a_shape, elt), ((k, n), elt)], "mma", allow_tf32)


def epilogue_case(name: str, m: int, n: int, k: int) -> Case:
    """dense + bias + relu + residual add (one fused kernel), f32 with tf32 allowed."""
    ta, tb, tc, to = _t((m, k), "f32"), _t((k, n), "f32"), _t((n,), "f32"), _t((m, n), "f32")
    text = (f"func.func @{name}(%a: {ta}, %b: {tb}, %c: {tc}, %res: {to}) -> {to} {{\n"
            f"  %m = graph.matmul %a, %b : ({ta}, {tb}) -> {to}\n"
            f"  %x = graph.add %m, %c : ({to}, {tc}) -> {to}\n"
            f"  %y = graph.relu %x : ({to}) -> {to}\n"
            f"  %z = graph.add %y, %res : ({to}, {to}) -> {to}\n"
            f"  func.return %z : {to}\n}}\n")
    return Case(name, text, [((m, k), "f32"), ((k, n), "f32"), ((n,), "f32"), ((m, n), "f32")], "mma", True)


def conv_case(name: str, x: tuple[int, int, int, int], oc: int, kernel: int, stride: int, pad: int,
              elt: str, allow_tf32: bool = False, epilogue: bool = False) -> Case:
    """conv2d NCHW (an implicit GEMM on tensor cores); ``epilogue``: + bias, relu, + residual."""
    n, c, h, w = x
    oh, ow = (h + 2 * pad - kernel) // stride + 1, (w + 2 * pad - kernel) // stride + 1
    tx, tw, to, tb = _t(x, elt), _t((oc, c, kernel, kernel), elt), _t((n, oc, oh, ow), elt), _t((oc, 1, 1), elt)
    attrs = f"{{padding = array<i64: {pad}, {pad}, {pad}, {pad}>, strides = array<i64: {stride}, {stride}>}}"
    args = f"%x: {tx}, %w: {tw}" + (f", %b: {tb}, %res: {to}" if epilogue else "")
    body = f"  %r0 = graph.conv2d %x, %w {attrs} : ({tx}, {tw}) -> {to}\n"
    if epilogue:
        body += (f"  %r1 = graph.add %r0, %b : ({to}, {tb}) -> {to}\n  %r2 = graph.relu %r1 : ({to}) -> {to}\n"
                 f"  %r = graph.add %r2, %res : ({to}, {to}) -> {to}\n")
    else:
        body = body.replace("%r0 =", "%r =")
    text = f"func.func @{name}({args}) -> {to} {{\n{body}  func.return %r : {to}\n}}\n"
    shapes = [(x, elt), ((oc, c, kernel, kernel), elt)] + ([((oc, 1, 1), elt), ((n, oc, oh, ow), elt)] if epilogue else [])
    return Case(name, text, shapes, "mma", allow_tf32)


def reduction_case(name: str, op: str, rows: int, cols: int) -> Case:
    t, tv = _t((rows, cols), "f32"), _t((cols,), "f32")
    if op == "softmax":
        text = f"  %r = graph.softmax %a {{axis = 1 : i64}} : ({t}) -> {t}\n"
        args, out, shapes = f"%a: {t}", t, [((rows, cols), "f32")]
    elif op == "layer_norm":
        text = f"  %r = graph.layer_norm %a, %g, %b : ({t}, {tv}, {tv}) -> {t}\n"
        args, out, shapes = f"%a: {t}, %g: {tv}, %b: {tv}", t, [((rows, cols), "f32"), ((cols,), "f32"), ((cols,), "f32")]
    else:
        out = _t((rows,), "f32")
        text = f"  %r = graph.{op} %a {{axes = array<i64: 1>}} : ({t}) -> {out}\n"
        args, shapes = f"%a: {t}", [((rows, cols), "f32")]
    full = f"func.func @{name}({args}) -> {out} {{\n{text}  func.return %r : {out}\n}}\n"
    return Case(name, full, shapes, "row-reduction", rtol=1e-4, atol=1e-5)


def emulator_cases() -> list[Case]:
    """Small enough for the emulator (a few seconds each)."""
    return [
        matmul_case("mm_f16_1x1x1", 1, 1, 1, "f16"),
        matmul_case("mm_f16_5x3x7", 5, 3, 7, "f16"),
        matmul_case("mm_f16_batch_2x13x11x19", 13, 11, 19, "f16", batch=2),
        matmul_case("mm_bf16_31x13x23", 31, 13, 23, "bf16"),
        matmul_case("mm_tf32_7x11x37", 7, 11, 37, "f32", allow_tf32=True),
        epilogue_case("dense_bias_relu_residual_tf32", 9, 5, 13),
        conv_case("conv_f16_1x2x7x9_oc5_k3s2p1", (1, 2, 7, 9), 5, 3, 2, 1, "f16"),
        conv_case("conv_tf32_bias_relu_residual", (1, 1, 5, 7), 3, 3, 1, 1, "f32", allow_tf32=True, epilogue=True),
        reduction_case("softmax_3x37", "softmax", 3, 37),
        reduction_case("softmax_2x300", "softmax", 2, 300),
        reduction_case("layer_norm_3x77", "layer_norm", 3, 77),
        reduction_case("reduce_sum_2x32", "reduce_sum", 2, 32),
        reduction_case("reduce_max_3x257", "reduce_max", 3, 257),
    ]


def device_cases() -> list[Case]:
    """Bigger shapes for a real GPU: many blocks, several K slices, odd edges."""
    return emulator_cases() + [
        matmul_case("mm_f16_509x263x1031", 509, 263, 1031, "f16"),
        matmul_case("mm_bf16_257x129x67", 257, 129, 67, "bf16"),
        matmul_case("mm_tf32_1000x1000x999", 1000, 1000, 999, "f32", allow_tf32=True),
        matmul_case("mm_f16_batch_3x127x65x129", 127, 65, 129, "f16", batch=3),
        epilogue_case("dense_epilogue_tf32_511x257x129", 511, 257, 129),
        conv_case("conv_f16_resnet_2x64x56x56_k3", (2, 64, 56, 56), 64, 3, 1, 1, "f16"),
        conv_case("conv_tf32_epilogue_1x32x29x31_s2", (1, 32, 29, 31), 48, 3, 2, 1, "f32", allow_tf32=True, epilogue=True),
        reduction_case("softmax_129x4001", "softmax", 129, 4001),
        reduction_case("layer_norm_64x768", "layer_norm", 64, 768),
    ]


def tolerance_error(got: np.ndarray, want: np.ndarray, case: Case, k: int | None = None) -> str | None:
    """None when ``got`` matches ``want`` within the case's tolerance, else a one-line reason."""
    got, want = np.asarray(got), np.asarray(want)
    if got.dtype.kind in "iu" and want.dtype.kind not in "iu" and got.dtype.itemsize == want.dtype.itemsize:
        got = got.view(want.dtype)  # a narrow float (bf16) comes back as its bits
    got64 = got.astype(np.float64)
    want64 = np.asarray(want).astype(np.float64)
    if got64.shape != want64.shape:
        return f"shape {got64.shape} != {want64.shape}"
    err = np.abs(got64 - want64)
    limit = case.atol + case.rtol * np.abs(want64)
    if not np.all(err <= limit) or np.isnan(got64).any() != np.isnan(want64).any():
        return f"max|err| {float(np.nanmax(err)):.3g} above {case.atol} + {case.rtol}*|want|"
    return None
