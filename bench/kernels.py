"""Kernel benchmarks: dlc vs numpy / onnxruntime, GFLOP/s and % of a measured FMA peak.

    python -m dlc.bench.kernels [--threads 1] [--runs 7] [--only gemm,conv,dwconv,elementwise]
                                [--no-expand-math] [--no-fuse]
    python -m dlc.bench.kernels --only pool,gemv,concat,bandwidth   (memory-bound: GB/s)

* peak: a compiled kernel of independent vector FMA chains (llvmlite, host
  CPU features) gives the FMA peak of ``--threads`` cores (run once per thread
  through a thread pool: the FMA loop releases no lock, it is native code);
* gemm: square and model-like sizes; conv2d: ResNet-50 layer shapes (batch 1);
  depthwise conv (MobileNet-like); elementwise/softmax kernels (exp, tanh,
  sigmoid, gelu, softmax rows);
* memory-bound kernels of the CNNs (GB/s of the bytes each must move at least:
  inputs + weights + outputs): pools (model shapes: SqueezeNet, Inception,
  ResNet, DenseNet, VGG), matrix-vector dense layers (AlexNet/VGG FC layers,
  weight ``[K, N]`` after legalize folds the transpose), concat (DenseNet,
  Inception); ``bandwidth`` prints numpy copy / sum bandwidth over 400 MB.

Each case compiles a one-op graph function, times it alternately against the
reference (medians) and prints GFLOP/s, % of peak and the speed ratio. Not
part of CI; the machine is shared, so read ratios, not absolute numbers.
"""

from __future__ import annotations

import argparse
import ctypes
import statistics
import sys
import time

import numpy as np

from dlc.bench.models import time_alternating

FMA_CHAINS = 12  # independent accumulators: enough to cover the FMA latency


def _fma_kernel_ir(lanes: int) -> str:
    vec = f"<{lanes} x float>"
    lines = [f"define void @fma_peak(i64 %n, ptr %out) {{", "entry:", "  br label %loop", "loop:",
             "  %i = phi i64 [0, %entry], [%i.next, %loop]"]
    for c in range(FMA_CHAINS):
        lines.append(f"  %a{c} = phi {vec} [zeroinitializer, %entry], [%a{c}.next, %loop]")
    one = ", ".join(["float 1.000000e+00"] * lanes)
    small = ", ".join(["float 0x3EB0C6F7A0000000"] * lanes)
    for c in range(FMA_CHAINS):
        lines.append(f"  %a{c}.next = call {vec} @llvm.fma.v{lanes}f32({vec} %a{c}, {vec} <{one}>, {vec} <{small}>)")
    lines += ["  %i.next = add i64 %i, 1", "  %done = icmp eq i64 %i.next, %n",
              "  br i1 %done, label %exit, label %loop", "exit:"]
    acc = "%a0.next"
    for c in range(1, FMA_CHAINS):
        lines.append(f"  %s{c} = fadd {vec} {acc}, %a{c}.next")
        acc = f"%s{c}"
    lines += [f"  store {vec} {acc}, ptr %out, align 4", "  ret void", "}",
              f"declare {vec} @llvm.fma.v{lanes}f32({vec}, {vec}, {vec})"]
    return "\n".join(lines)


def measure_fma_peak(threads: int) -> float:
    """GFLOP/s of independent vector FMA chains on ``threads`` threads."""
    from concurrent.futures import ThreadPoolExecutor

    import llvmlite.binding as llvm

    from dlc.backends.llvm.jit import host_target_machine, parse_and_optimize

    features = llvm.get_host_cpu_features().flatten()
    lanes = 16 if "+avx512f" in features.split(",") else 8
    tm = host_target_machine()
    module = parse_and_optimize(_fma_kernel_ir(lanes), tm, opt=2)
    engine = llvm.create_mcjit_compiler(module, tm)
    engine.finalize_object()
    fn = ctypes.CFUNCTYPE(None, ctypes.c_int64, ctypes.c_void_p)(engine.get_function_address("fma_peak"))
    out = np.zeros((threads, lanes), np.float32)
    n = 2_000_000

    def run(t: int) -> None:
        fn(n, out[t].ctypes.data)

    best = 0.0
    with ThreadPoolExecutor(threads) as pool:
        for _ in range(5):
            start = time.perf_counter()
            list(pool.map(run, range(threads)))
            elapsed = time.perf_counter() - start
            best = max(best, threads * n * FMA_CHAINS * lanes * 2 / elapsed / 1e9)
    engine.close() if hasattr(engine, "close") else None
    return best


# -- cases -----------------------------------------------------------------------------


def _t(shape) -> str:
    return "tensor<" + "x".join(str(d) for d in shape) + "xf32>"


def gemm_case(m: int, k: int, n: int):
    text = f"""func.func @main(%a: {_t((m, k))}, %b: {_t((k, n))}) -> {_t((m, n))} {{
  %c = graph.matmul %a, %b : ({_t((m, k))}, {_t((k, n))}) -> {_t((m, n))}
  func.return %c : {_t((m, n))}
}}"""
    rng = np.random.default_rng(0)
    inputs = [rng.standard_normal((m, k)).astype(np.float32), rng.standard_normal((k, n)).astype(np.float32)]
    return f"gemm {m}x{k}x{n}", text, inputs, 2 * m * n * k, lambda a, b: a @ b, _onnx_matmul(m, k, n)


def conv_case(c: int, h: int, o: int, k: int, stride: int, groups: int = 1):
    pad = k // 2
    oh = (h + 2 * pad - k) // stride + 1
    x_s, w_s, y_s = (1, c, h, h), (o, c // groups, k, k), (1, o, oh, oh)
    text = f"""func.func @main(%x: {_t(x_s)}, %w: {_t(w_s)}) -> {_t(y_s)} {{
  %y = graph.conv2d %x, %w {{strides = array<i64: {stride}, {stride}>, padding = array<i64: {pad}, {pad}, {pad}, {pad}>, groups = {groups} : i64}} : ({_t(x_s)}, {_t(w_s)}) -> {_t(y_s)}
  func.return %y : {_t(y_s)}
}}"""
    rng = np.random.default_rng(0)
    inputs = [rng.standard_normal(x_s).astype(np.float32), rng.standard_normal(w_s).astype(np.float32)]
    flops = 2 * o * oh * oh * (c // groups) * k * k
    kind = "dwconv" if groups > 1 else "conv"
    return (f"{kind} c{c} {h}x{h} o{o} k{k} s{stride}", text, inputs, flops, None,
            _onnx_conv(x_s, w_s, stride, pad, groups))


ELEMENTWISE = {
    "exp": (np.exp, "Exp", 1),
    "tanh": (np.tanh, "Tanh", 1),
    "sigmoid": (lambda x: 1 / (1 + np.exp(-x)), "Sigmoid", 1),
    "gelu": (None, None, 8),
}


def elementwise_case(op: str, shape=(64, 16411)):
    numpy_fn, onnx_op, flops_per = ELEMENTWISE[op]
    text = f"""func.func @main(%x: {_t(shape)}) -> {_t(shape)} {{
  %y = graph.{op} %x : ({_t(shape)}) -> {_t(shape)}
  func.return %y : {_t(shape)}
}}"""
    x = np.random.default_rng(0).uniform(-6, 6, shape).astype(np.float32)
    return f"{op} {shape[0]}x{shape[1]}", text, [x], flops_per * x.size, numpy_fn, \
        _onnx_unary(onnx_op, shape) if onnx_op else None


def softmax_case(shape=(512, 1031)):
    text = f"""func.func @main(%x: {_t(shape)}) -> {_t(shape)} {{
  %y = graph.softmax %x {{axis = -1 : i64}} : ({_t(shape)}) -> {_t(shape)}
  func.return %y : {_t(shape)}
}}"""
    x = np.random.default_rng(0).standard_normal(shape).astype(np.float32)

    def numpy_softmax(v):
        e = np.exp(v - v.max(-1, keepdims=True))
        return e / e.sum(-1, keepdims=True)

    return f"softmax {shape[0]}x{shape[1]}", text, [x], 5 * x.size, numpy_softmax, \
        _onnx_unary("Softmax", shape, axis=-1)


def _pool_text(op: str, x_s, y_s, k, stride, pads, ceil: bool = False, include_pad: bool = False) -> str:
    attrs = (f"kernel = array<i64: {k}, {k}>, strides = array<i64: {stride}, {stride}>, "
             f"padding = array<i64: {', '.join(map(str, pads))}>")
    if ceil:
        attrs += ", ceil_mode = true"
    if include_pad:
        attrs += ", count_include_pad = true"
    return f"""func.func @main(%x: {_t(x_s)}) -> {_t(y_s)} {{
  %y = graph.{op} %x {{{attrs}}} : ({_t(x_s)}) -> {_t(y_s)}
  func.return %y : {_t(y_s)}
}}"""


def pool_case(kind: str, c: int, h: int, k: int, stride: int, pads=(0, 0, 0, 0), ceil: bool = False):
    """kind "max" or "avg"; pads [top, left, bottom, right] (ONNX's begin/end order differs)."""
    span = h + pads[0] + pads[2] - k
    oh = (-(-span // stride) if ceil else span // stride) + 1
    x_s, y_s = (1, c, h, h), (1, c, oh, oh)
    text = _pool_text(f"{kind}_pool2d", x_s, y_s, k, stride, pads, ceil)
    x = np.random.default_rng(0).standard_normal(x_s).astype(np.float32)
    moved = 4 * (x.size + c * oh * oh)
    onnx_pads = [pads[0], pads[1], pads[2], pads[3]]
    return (f"{kind}pool c{c} {h}x{h} k{k} s{stride} p{''.join(map(str, pads))}", text, [x], moved, None,
            _onnx_pool("MaxPool" if kind == "max" else "AveragePool", x_s, y_s, k, stride, onnx_pads, ceil))


def gemv_case(k: int, n: int):
    """A dense layer at batch 1 after legalize: [1, K] x [K, N] (B streamed once)."""
    name, text, inputs, _, numpy_fn, onnx_factory = gemm_case(1, k, n)
    return f"gemv {k}x{n}", text, inputs, 4 * (k * n + k + n), numpy_fn, onnx_factory


def concat_case(shapes: list[tuple[int, ...]], axis: int = 1):
    out = list(shapes[0])
    out[axis] = sum(s[axis] for s in shapes)
    args = ", ".join(f"%x{i}: {_t(s)}" for i, s in enumerate(shapes))
    operands = ", ".join(f"%x{i}" for i in range(len(shapes)))
    types = ", ".join(_t(s) for s in shapes)
    text = f"""func.func @main({args}) -> {_t(out)} {{
  %y = graph.concat {operands} {{axis = {axis} : i64}} : ({types}) -> {_t(out)}
  func.return %y : {_t(out)}
}}"""
    rng = np.random.default_rng(0)
    inputs = [rng.standard_normal(s).astype(np.float32) for s in shapes]
    moved = 8 * sum(x.size for x in inputs)
    label = "+".join(str(s[axis]) for s in shapes)
    return (f"concat {label} {'x'.join(map(str, shapes[0][2:]))}", text, inputs, moved,
            lambda *xs: np.concatenate(xs, axis), _onnx_concat(shapes, out, axis))


def measure_bandwidth(threads: int) -> str:
    """numpy copy and sum over 400 MB (one thread: numpy does not thread them)."""
    big = np.ones(100_000_000, np.float32)
    dst = np.empty_like(big)
    copy, total = [], []
    for _ in range(3):
        t = time.perf_counter()
        np.copyto(dst, big)
        copy.append(time.perf_counter() - t)
        t = time.perf_counter()
        big.sum()
        total.append(time.perf_counter() - t)
    return (f"numpy 400 MB: copy {2 * big.nbytes / min(copy) / 1e9:.1f} GB/s (read + write), "
            f"sum {big.nbytes / min(total) / 1e9:.1f} GB/s (one thread)")


# -- onnxruntime references --------------------------------------------------------------


def _session(nodes, inputs, outputs, threads):
    import onnx
    import onnxruntime as ort
    from onnx import TensorProto, helper

    graph = helper.make_graph(
        nodes, "bench",
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, s) for n, s in inputs],
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, s) for n, s in outputs])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    return ort.InferenceSession(model.SerializeToString(), options, providers=["CPUExecutionProvider"])


def _onnx_matmul(m, k, n):
    from onnx import helper

    return lambda threads: _session([helper.make_node("MatMul", ["a", "b"], ["c"])],
                                    [("a", (m, k)), ("b", (k, n))], [("c", (m, n))], threads)


def _onnx_conv(x_s, w_s, stride, pad, groups):
    from onnx import helper

    def make(threads):
        node = helper.make_node("Conv", ["x", "w"], ["y"], strides=[stride, stride], pads=[pad] * 4,
                                group=groups)
        return _session([node], [("x", x_s), ("w", w_s)], [("y", None)], threads)

    return make


def _onnx_unary(op, shape, **attrs):
    from onnx import helper

    return lambda threads: _session([helper.make_node(op, ["x"], ["y"], **attrs)], [("x", shape)],
                                    [("y", shape)], threads)


def _onnx_pool(op, x_s, y_s, k, stride, pads, ceil):
    from onnx import helper

    def make(threads):
        # ONNX pads: [top, left, bottom, right] = begins then ends, the same order as ours
        node = helper.make_node(op, ["x"], ["y"], kernel_shape=[k, k], strides=[stride, stride], pads=pads,
                                ceil_mode=int(ceil))
        return _session([node], [("x", x_s)], [("y", y_s)], threads)

    return make


def _onnx_concat(shapes, out, axis):
    from onnx import helper

    names = [f"x{i}" for i in range(len(shapes))]
    return lambda threads: _session([helper.make_node("Concat", names, ["y"], axis=axis)],
                                    list(zip(names, shapes)), [("y", out)], threads)


# -- driver -------------------------------------------------------------------------------


def run_case(case, threads: int, runs: int, peak: float) -> str:
    import dlc

    name, text, inputs, flops, numpy_fn, onnx_factory = case
    memory_bound = name.split()[0] in MEMORY_BOUND  # `flops` holds bytes moved: GB/s
    compiled = dlc.compile(text, num_threads=threads)
    outputs = [np.empty(shape, dtype) for _, shape, dtype in compiled.output_specs]
    fns = [lambda: compiled(*inputs, outputs=outputs)]
    labels = []
    session = onnx_factory(threads) if onnx_factory else None
    if session is not None:
        feeds = {i.name: x for i, x in zip(session.get_inputs(), inputs)}
        fns.append(lambda: session.run(None, feeds))
        labels.append("ort")
    if numpy_fn is not None:
        fns.append(lambda: numpy_fn(*inputs))
        labels.append("numpy")
    times = time_alternating(fns, runs, budget_s=20.0)
    gflops = flops / times[0] / 1e9
    unit = "GB/s" if memory_bound else "GF/s"
    share = "" if memory_bound else f"{100 * gflops / peak:>6.1f}%"
    row = f"{name:<32}{times[0] * 1e3:>10.3f}{gflops:>9.2f} {unit}{share:>7}"
    for label, t in zip(labels, times[1:]):
        row += f"  {label} {t * 1e3:8.3f} ms ({flops / t / 1e9:6.2f} {unit}, dlc/{label} {times[0] / t:5.2f})"
    return row


MEMORY_BOUND = {"maxpool", "avgpool", "gemv", "concat"}


def cases(only: set[str]):
    if "gemm" in only:
        for m, k, n in [(256, 256, 256), (1024, 1024, 1024), (1, 2048, 1000), (197, 768, 3072), (49, 2048, 512)]:
            yield gemm_case(m, k, n)
    if "conv" in only:  # ResNet-50 layers (batch 1)
        for c, h, o, k, s in [(3, 224, 64, 7, 2), (64, 56, 64, 3, 1), (64, 56, 256, 1, 1), (128, 28, 128, 3, 1),
                              (256, 14, 256, 3, 1), (512, 7, 512, 3, 1), (1024, 14, 256, 1, 1)]:
            yield conv_case(c, h, o, k, s)
    if "dwconv" in only:
        for c, h, s in [(32, 112, 1), (144, 56, 2), (576, 14, 1)]:
            yield conv_case(c, h, c, 3, s, groups=c)
    if "elementwise" in only:
        for op in ELEMENTWISE:
            yield elementwise_case(op)
        yield softmax_case()
    if "pool" in only:  # model shapes (batch 1)
        yield pool_case("max", 64, 111, 3, 2)  # SqueezeNet
        yield pool_case("max", 64, 112, 3, 2, (1, 1, 1, 1))  # ResNet-50, DenseNet
        yield pool_case("max", 192, 55, 3, 2)  # Inception v1
        yield pool_case("max", 256, 27, 3, 1, (1, 1, 1, 1))  # Inception v1 branch pool
        yield pool_case("max", 64, 224, 2, 2)  # VGG-19
        yield pool_case("max", 256, 27, 3, 2)  # SqueezeNet
        yield pool_case("avg", 128, 56, 2, 2)  # DenseNet transition
        yield pool_case("avg", 576, 14, 3, 1, (1, 1, 1, 1))  # Inception v2
        yield pool_case("avg", 136, 28, 3, 2, (1, 1, 1, 1))  # ShuffleNet
    if "gemv" in only:  # FC layers at batch 1
        for k, n in [(9216, 4096), (4096, 4096), (25088, 4096), (4096, 1000), (1024, 1000)]:
            yield gemv_case(k, n)
    if "concat" in only:  # DenseNet / Inception
        yield concat_case([(1, 512, 7, 7), (1, 32, 7, 7)])
        yield concat_case([(1, 256, 28, 28), (1, 32, 28, 28)])
        yield concat_case([(1, 64, 28, 28), (1, 128, 28, 28), (1, 32, 28, 28), (1, 32, 28, 28)])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--only", default="gemm,conv,dwconv,elementwise")
    parser.add_argument("--no-expand-math", action="store_true", help="keep libm calls (before/after)")
    parser.add_argument("--no-fuse", action="store_true", help="skip fuse-ops (before/after)")
    args = parser.parse_args(argv)
    from dlc.driver import disable_passes

    disable_passes({name for name, off in (("expand-math", args.no_expand_math),
                                           ("fuse-ops", args.no_fuse)) if off})
    peak = measure_fma_peak(args.threads)
    print(f"measured FMA peak: {peak:.1f} GFLOP/s on {args.threads} thread(s)")
    if "bandwidth" in args.only.split(","):
        print(measure_bandwidth(args.threads))
    print(f"{'case':<32}{'dlc ms':>10}{'GF/s':>9}{'peak':>8}  references")
    for case in cases(set(args.only.split(","))):
        try:
            print(run_case(case, args.threads, args.runs, peak), flush=True)
        except Exception as err:  # noqa: BLE001 - one line per failing case
            print(f"{case[0]:<32}FAILED: {str(err).splitlines()[0][:120]}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
