"""int8 benchmark: dlc int8 vs dlc f32 vs onnxruntime int8, plus the int8 GEMM (not part of CI).

    python bench/bench_int8.py [--models resnet50,mobilenet] [--threads 2] [--rounds 7] [--block 3]
                               [--gemm 1024] [--no-models] [--no-gemm]

Models: onnx's light ResNet-50 (the real graph, seeded random weights) and a MobileNet-V2
style network built from torch.nn (inverted residual blocks: 1x1 expand, depthwise 3x3,
1x1 project, relu6; random weights), both quantized by onnxruntime's ``quantize_static``
(QDQ, per-channel s8 weights, u8 activations, calibrated on random inputs, after
onnxruntime's ``quant_pre_process``: batch norms folded into the convs). Engines:
``dlc-int8`` (dlc.compile of the QDQ model: fold-qdq, the qgemm kernels), ``dlc-f32``
(the float model), ``ort-int8`` (onnxruntime on the QDQ model). As bench/bench_byoc.py:
each engine in its own process, only one running at a time, rounds alternating with
the order rotating, 0.1 s of untimed calls before each block; medians over all timed
calls, the spread of the per-round medians. The table's last columns: the ratio to
ort-int8 and to dlc-f32, and the output's max |difference| from ort-int8 in units of
the output's quantization step (f32 rows: from the float model's onnxruntime output).

GEMM: ``M = N = K = --gemm``: dlc's qgemm (graph.qdense, u8 x s8, per-channel requant to
u8), dlc's f32 matmul, onnxruntime MatMulInteger (u8 x s8 -> i32) and QLinearMatMul;
GOP/s = 2 M N K / time. The VNNI peak is measured, not assumed: a C loop of 12
independent ``_mm512_dpbusd_epi32`` chains (gcc -O3 -march=native -fopenmp) on
``--threads`` threads, and the f32 FMA peak likewise (as /work/shared/tools/fma_peak.c).
The host's ISA flags are printed with the table (onnxruntime's MLAS picks kernels by
them: a ratio holds for one host only).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

LIGHT = os.path.join(os.path.dirname(__import__("onnx").__file__), "backend", "test", "data", "light")
MODEL_ENGINES = ("dlc-int8", "dlc-f32", "ort-int8")
GEMM_ENGINES = ("dlc-qgemm", "dlc-f32-gemm", "ort-MatMulInteger", "ort-QLinearMatMul")
CALIBRATION_INPUTS = 4

PEAK_C = r"""
#include <immintrin.h>
#include <stdio.h>
#include <omp.h>
int main(int argc, char **argv) {
  double dot = 0, fma = 0;
  long n = 40000000;
  #pragma omp parallel reduction(+:dot, fma)
  {
    __m512i a[12]; __m512 f[12];
    for (int i = 0; i < 12; i++) { a[i] = _mm512_set1_epi32(i); f[i] = _mm512_set1_ps(i * 0.1f); }
    __m512i x = _mm512_set1_epi32(0x01010101), y = _mm512_set1_epi32(0x01ff01ff);
    __m512 b = _mm512_set1_ps(0.9999f), c = _mm512_set1_ps(0.0001f);
    double t0 = omp_get_wtime();
    for (long k = 0; k < n; k++)
      for (int i = 0; i < 12; i++) a[i] = _mm512_dpbusd_epi32(a[i], x, y);
    double t1 = omp_get_wtime();
    for (long k = 0; k < n; k++)
      for (int i = 0; i < 12; i++) f[i] = _mm512_fmadd_ps(f[i], b, c);
    double t2 = omp_get_wtime();
    int s = 0; float g = 0;
    for (int i = 0; i < 12; i++) { s += _mm512_reduce_add_epi32(a[i]); g += _mm512_reduce_add_ps(f[i]); }
    if (s == 12345 && g == 1.5f) printf("x");
    dot = n * 12.0 * 64 * 2 / (t1 - t0) / 1e9;   /* 64 u8 x s8 multiply-adds per vpdpbusd */
    fma = n * 12.0 * 16 * 2 / (t2 - t1) / 1e9;
  }
  printf("%.1f %.1f\n", dot, fma);
  return 0;
}
"""


# -- the models --------------------------------------------------------------------------

def _constants_to_initializers(model):
    """Constant nodes -> initializers (quantize_static quantizes initializer weights only)."""
    import onnx
    from onnx import numpy_helper

    keep = []
    for node in model.graph.node:
        if node.op_type == "Constant" and len(node.attribute) == 1 and node.attribute[0].name == "value":
            tensor = numpy_helper.to_array(node.attribute[0].t)
            model.graph.initializer.append(numpy_helper.from_array(tensor, node.output[0]))
        else:
            keep.append(node)
    del model.graph.node[:]
    model.graph.node.extend(keep)
    return model


def _seeded_weights(model, seed: int = 0):
    """The light model's weights (ConstantOfShape nodes of constant shapes) -> seeded random
    initializers: He-normal conv / Gemm weights, batch-norm scale, bias, mean and variance
    of sensible ranges (quantize_static quantizes initializer weights only)."""
    from onnx import numpy_helper

    rng = np.random.default_rng(seed)
    inits = {t.name: numpy_helper.to_array(t) for t in model.graph.initializer}
    role = {}
    for node in model.graph.node:
        if node.op_type == "BatchNormalization":
            for i, name in enumerate(node.input[1:5], start=1):
                role[name] = ("scale", "bias", "mean", "var")[i - 1]
    keep = []
    for node in model.graph.node:
        if node.op_type != "ConstantOfShape" or node.input[0] not in inits:
            keep.append(node)
            continue
        shape = [int(d) for d in inits[node.input[0]]]
        out = node.output[0]
        kind = role.get(out)
        if kind == "scale":
            value = rng.uniform(0.5, 1.0, shape)
        elif kind == "var":
            value = rng.uniform(0.5, 1.5, shape)
        elif kind in ("bias", "mean") or len(shape) < 2:
            value = rng.standard_normal(shape) * 0.1
        else:
            value = rng.standard_normal(shape) * np.sqrt(2.0 / max(1, int(np.prod(shape[1:]))))
        model.graph.initializer.append(numpy_helper.from_array(value.astype(np.float32), out))
    del model.graph.node[:]
    model.graph.node.extend(keep)
    model.ir_version = max(model.ir_version, 7)  # (IR < 4 wants every initializer a graph input)
    return model


def resnet50(path: str) -> None:
    import onnx

    from onnx import version_converter

    model = onnx.load(os.path.join(LIGHT, "light_resnet50.onnx"))
    model = _seeded_weights(_constants_to_initializers(model))
    # opset 13: per-channel DequantizeLinear (its axis) needs it; quantize_static keeps the opset
    onnx.save(version_converter.convert_version(model, 13), path)


def mobilenet(path: str) -> None:
    """A MobileNet-V2 style network (torch.nn, random weights) exported to ONNX."""
    import torch
    from torch import nn

    def block(cin: int, cout: int, stride: int, expand: int) -> nn.Module:
        mid = cin * expand
        layers = [] if expand == 1 else [nn.Conv2d(cin, mid, 1, bias=False), nn.BatchNorm2d(mid), nn.ReLU6()]
        layers += [nn.Conv2d(mid, mid, 3, stride, 1, groups=mid, bias=False), nn.BatchNorm2d(mid), nn.ReLU6(),
                   nn.Conv2d(mid, cout, 1, bias=False), nn.BatchNorm2d(cout)]
        body = nn.Sequential(*layers)

        class Residual(nn.Module):
            def __init__(self):
                super().__init__()
                self.body = body

            def forward(self, x):
                y = self.body(x)
                return x + y if stride == 1 and cin == cout else y

        return Residual()

    torch.manual_seed(0)
    cfg = [(1, 16, 1, 1), (6, 24, 2, 2), (6, 32, 3, 2), (6, 64, 4, 2), (6, 96, 3, 1), (6, 160, 3, 2), (6, 320, 1, 1)]
    layers, cin = [nn.Conv2d(3, 32, 3, 2, 1, bias=False), nn.BatchNorm2d(32), nn.ReLU6()], 32
    for t, c, n, s in cfg:
        for i in range(n):
            layers.append(block(cin, c, s if i == 0 else 1, t))
            cin = c
    layers += [nn.Conv2d(cin, 1280, 1, bias=False), nn.BatchNorm2d(1280), nn.ReLU6(),
               nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(1280, 1000)]
    net = nn.Sequential(*layers).eval()
    for m in net.modules():  # non-trivial batch-norm statistics
        if isinstance(m, nn.BatchNorm2d):
            m.running_mean.uniform_(-0.1, 0.1)
            m.running_var.uniform_(0.5, 1.5)
    torch.onnx.export(net, (torch.randn(1, 3, 224, 224),), path, input_names=["x"], output_names=["y"],
                      opset_version=17, dynamo=False)


def _input_spec(path: str) -> tuple[str, list[int]]:
    import onnx

    model = onnx.load(path, load_external_data=False)
    init = {t.name for t in model.graph.initializer}
    inp = next(i for i in model.graph.input if i.name not in init)
    return inp.name, [d.dim_value or 1 for d in inp.type.tensor_type.shape.dim]


def quantize(float_path: str, qdq_path: str) -> None:
    from onnxruntime.quantization import CalibrationDataReader, QuantFormat, QuantType, quantize_static

    from onnxruntime.quantization.shape_inference import quant_pre_process

    name, shape = _input_spec(float_path)
    # onnxruntime's recommended pre-processing (batch norms folded into the convs, shapes
    # inferred): what a deployed QDQ model looks like; both int8 engines run the result
    pre_path = qdq_path.removesuffix(".onnx") + ".pre.onnx"
    quant_pre_process(float_path, pre_path)

    class Reader(CalibrationDataReader):
        def __init__(self):
            self.items = iter([{name: np.random.default_rng(100 + i).standard_normal(shape).astype(np.float32)}
                               for i in range(CALIBRATION_INPUTS)])

        def get_next(self):
            return next(self.items, None)

    from dlc.bench.quant_accuracy import ort_u8s8_saturates

    # 7-bit weights where onnxruntime's int8 kernels would saturate (x86 without VNNI):
    # both engines then compute the same exact sums (quant_accuracy.ort_u8s8_saturates)
    quantize_static(pre_path, qdq_path, Reader(), quant_format=QuantFormat.QDQ, per_channel=True,
                    activation_type=QuantType.QUInt8, weight_type=QuantType.QInt8,
                    reduce_range=ort_u8s8_saturates())


# -- the engines (each in its own worker process) ---------------------------------------

def _ort_session(path: str, threads: int):
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    options.log_severity_level = 3  # errors only: not one warning per initializer listed as an input
    return ort.InferenceSession(path, options, providers=["CPUExecutionProvider"])


def _dlc(source, threads: int, x: np.ndarray):
    import dlc

    start = time.perf_counter()
    module = dlc.compile(source, num_threads=threads)
    note = f"compile {time.perf_counter() - start:.1f} s"
    ir = module._jit.optimized_ir if getattr(module, "_jit", None) is not None else ""
    dots = ir.count("@llvm.x86.avx512.vpdpbusd.512(")
    note += f", {dots} vpdpbusd" if dots else ""
    outputs = [np.empty(shape, dtype) for _, shape, dtype in module.output_specs]
    return (lambda: module(x, outputs=outputs)[0]), note


def model_engine(name: str, files: dict, threads: int):
    """(run() -> output, note) of a model engine."""
    input_name, shape = _input_spec(files["f32"])
    x = np.random.default_rng(0).standard_normal(shape).astype(np.float32)
    if name == "ort-int8" or name == "ort-f32":
        session = _ort_session(files["int8" if name == "ort-int8" else "f32"], threads)
        import onnxruntime as ort

        return (lambda: session.run(None, {input_name: x})[0]), f"onnxruntime {ort.__version__}"
    return _dlc(files["int8" if name == "dlc-int8" else "f32"], threads, x)


def gemm_engine(name: str, size: int, threads: int):
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(0)
    x8 = rng.integers(0, 256, (size, size)).astype(np.uint8)
    w8 = rng.integers(-128, 128, (size, size)).astype(np.int8)  # [K, N]
    if name == "dlc-qgemm":
        from xdsl.dialects import func
        from xdsl.dialects.builtin import FunctionType, ModuleOp
        from xdsl.ir import Block, Region

        from dlc.dialects import graph as g
        from dlc.dialects.graph_base import tensor_type_of

        block = Block(arg_types=[tensor_type_of(x8)])
        w = g.ConstantOp.from_numpy(np.ascontiguousarray(w8.T))  # qdense's weight is [N, K]
        op = g.QDenseOp.make(block.args[0], w.results[0], x_scale=[0.02], x_zero_point=[128],
                             w_scale=list(rng.uniform(0.001, 0.002, size)), y_scale=[0.5], y_zero_point=[128])
        block.add_ops([w, op, func.ReturnOp(op.results[0])])
        fn = func.FuncOp("main", FunctionType.from_lists([block.args[0].type], [op.results[0].type]),
                         Region(block))
        return _dlc(ModuleOp([fn]), threads, x8)
    if name == "dlc-f32-gemm":
        xf = rng.standard_normal((size, size)).astype(np.float32)
        wf = numpy_helper.from_array(rng.standard_normal((size, size)).astype(np.float32), "w")
        graph = helper.make_graph([helper.make_node("MatMul", ["x", "w"], ["y"])], "g",
                                  [helper.make_tensor_value_info("x", TensorProto.FLOAT, [size, size])],
                                  [helper.make_tensor_value_info("y", TensorProto.FLOAT, [size, size])], [wf])
        return _dlc(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), threads, xf)
    if name == "ort-MatMulInteger":
        nodes = [helper.make_node("MatMulInteger", ["x", "w", "xz"], ["y"])]
        out_type = TensorProto.INT32
        inits = [numpy_helper.from_array(w8, "w"), numpy_helper.from_array(np.array(128, np.uint8), "xz")]
    else:  # ort-QLinearMatMul
        nodes = [helper.make_node("QLinearMatMul", ["x", "xs", "xz", "w", "ws", "wz", "ys", "yz"], ["y"])]
        out_type = TensorProto.UINT8
        inits = [numpy_helper.from_array(w8, "w"), numpy_helper.from_array(np.array(0.02, np.float32), "xs"),
                 numpy_helper.from_array(np.array(128, np.uint8), "xz"),
                 numpy_helper.from_array(np.array(0.0015, np.float32), "ws"),
                 numpy_helper.from_array(np.array(0, np.int8), "wz"),
                 numpy_helper.from_array(np.array(0.5, np.float32), "ys"),
                 numpy_helper.from_array(np.array(128, np.uint8), "yz")]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.UINT8, [size, size])],
                              [helper.make_tensor_value_info("y", out_type, [size, size])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    path = os.path.join(tempfile.mkdtemp(), "gemm.onnx")
    onnx.save(model, path)
    session = _ort_session(path, threads)
    return (lambda: session.run(None, {"x": x8})[0]), "onnxruntime"


def worker(kind: str, name: str, files: dict, threads: int, size: int) -> None:
    """Serve the parent: 'check FILE' -> output saved, 'run BLOCK' -> timings."""
    run, note = model_engine(name, files, threads) if kind == "model" else gemm_engine(name, size, threads)
    print(json.dumps({"ready": note}), flush=True)
    for line in sys.stdin:
        cmd = line.split()
        if cmd[0] == "check":
            np.save(cmd[1], run())
            print(json.dumps({"ok": True}), flush=True)
        elif cmd[0] == "run":
            settle_until = time.perf_counter() + 0.1
            run()
            while time.perf_counter() < settle_until:
                run()
            times = []
            for _ in range(int(cmd[1])):
                t = time.perf_counter()
                run()
                times.append(time.perf_counter() - t)
            print(json.dumps({"times": times}), flush=True)
        else:
            return


def _ask(proc, command: str) -> dict:
    proc.stdin.write(command + "\n")
    proc.stdin.flush()
    line = proc.stdout.readline()
    if not line:
        raise SystemExit(f"a worker died (exit {proc.wait()}) on '{command}'")
    return json.loads(line)


def race(kind: str, engines, files: dict, args) -> tuple[dict, dict, dict, dict]:
    """(notes, outputs, all timed samples, per-round medians) of `engines`, alternating."""
    env = dict(os.environ, OMP_NUM_THREADS=str(args.threads))
    procs, notes, outs = {}, {}, {}
    try:
        for name in engines:  # start (compile) one at a time
            procs[name] = subprocess.Popen(
                [sys.executable, os.path.abspath(__file__), "--worker", f"{kind}:{name}", "--files",
                 json.dumps(files), "--threads", str(args.threads), "--gemm", str(args.gemm)],
                stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env)
            line = procs[name].stdout.readline()
            if not line:
                raise SystemExit(f"{name}: the worker failed to start (exit {procs[name].wait()})")
            notes[name] = json.loads(line)["ready"]
        with tempfile.TemporaryDirectory() as tmp:
            for name, proc in procs.items():
                file = os.path.join(tmp, f"{len(outs)}.npy")
                _ask(proc, f"check {file}")
                outs[name] = np.load(file)
        samples = {name: [] for name in engines}
        medians = {name: [] for name in engines}
        order = list(engines)
        for _ in range(args.rounds):
            for name in order:
                times = _ask(procs[name], f"run {args.block}")["times"]
                samples[name] += times
                medians[name].append(statistics.median(times))
            order = order[1:] + order[:1]
    finally:
        for proc in procs.values():
            if proc.poll() is None:
                proc.stdin.write("quit\n")
                proc.stdin.flush()
                proc.wait(timeout=60)
    return notes, outs, samples, medians


def _output_step(qdq_path: str) -> float:
    """The scale of the QDQ model's last QuantizeLinear (one step of its output)."""
    import onnx
    from onnx import numpy_helper

    model = onnx.load(qdq_path)
    inits = {t.name: numpy_helper.to_array(t) for t in model.graph.initializer}
    q = [n for n in model.graph.node if n.op_type == "QuantizeLinear"]
    return float(np.ravel(inits[q[-1].input[1]])[0]) if q and q[-1].input[1] in inits else float("nan")


def run_models(args) -> None:
    tmp = tempfile.mkdtemp(prefix="bench_int8_")
    for model in [m for m in args.models.split(",") if m]:
        files = {"f32": os.path.join(tmp, f"{model}.onnx"), "int8": os.path.join(tmp, f"{model}.int8.onnx")}
        {"resnet50": resnet50, "mobilenet": mobilenet}[model](files["f32"])
        quantize(files["f32"], files["int8"])
        notes, outs, samples, medians = race("model", MODEL_ENGINES, files, args)
        # the float model's onnxruntime output: the f32 row's reference
        name, shape = _input_spec(files["f32"])
        x = np.random.default_rng(0).standard_normal(shape).astype(np.float32)
        ref_f32 = _ort_session(files["f32"], args.threads).run(None, {name: x})[0]
        step = _output_step(files["int8"])
        print(f"\n{model}, {args.threads} threads, {args.rounds} rounds x {args.block} calls per engine "
              f"(each engine in its own process, alternating)")
        for engine in MODEL_ENGINES:
            print(f"  {engine}: {notes[engine]}")
        t_ort, t_f32 = (statistics.median(samples[e]) for e in ("ort-int8", "dlc-f32"))
        print(f"{'engine':<12}{'median ms':>10}{'spread ms':>18}{'vs ort-int8':>12}{'vs dlc-f32':>11}"
              f"  max |diff| (steps)  top-1 = ort")
        for engine in MODEL_ENGINES:
            med = statistics.median(samples[engine])
            lo, hi = min(medians[engine]), max(medians[engine])
            ref = ref_f32 if engine == "dlc-f32" else outs["ort-int8"]
            diff = float(np.abs(outs[engine].astype(np.float64) - ref).max()) / step
            top1 = bool((outs[engine].reshape(len(ref), -1).argmax(1) == ref.reshape(len(ref), -1).argmax(1)).all())
            print(f"{engine:<12}{med * 1e3:>10.1f}{f'{lo * 1e3:.1f} .. {hi * 1e3:.1f}':>18}{med / t_ort:>12.2f}"
                  f"{med / t_f32:>11.2f}  {diff:>18.1f}  {top1}")


def measured_peaks(threads: int) -> tuple[float, float] | None:
    """(VNNI int8 GOP/s, f32 FMA GFLOP/s) of this host on `threads` threads; None without VNNI."""
    flags = open("/proc/cpuinfo").read()
    if "avx512_vnni" not in flags:
        return None
    tmp = tempfile.mkdtemp()
    src, exe = os.path.join(tmp, "peak.c"), os.path.join(tmp, "peak")
    with open(src, "w") as f:
        f.write(PEAK_C)
    subprocess.run(["gcc", "-O3", "-march=native", "-fopenmp", src, "-o", exe], check=True)
    out = subprocess.run([exe], capture_output=True, text=True, check=True,
                         env=dict(os.environ, OMP_NUM_THREADS=str(threads))).stdout.split()
    return float(out[0]), float(out[1])


def run_gemm(args) -> None:
    notes, outs, samples, medians = race("gemm", GEMM_ENGINES, {}, args)
    ops = 2.0 * args.gemm ** 3
    peaks = measured_peaks(args.threads)
    print(f"\nGEMM {args.gemm}^3 (u8 x s8), {args.threads} threads, {args.rounds} rounds x {args.block} calls")
    if peaks:
        print(f"  measured peaks: vpdpbusd {peaks[0]:.0f} GOP/s, f32 FMA {peaks[1]:.0f} GFLOP/s "
              f"(int8/f32 = {peaks[0] / peaks[1]:.1f})")
    print(f"{'engine':<20}{'median ms':>10}{'spread ms':>18}{'GOP/s':>8}{'% VNNI peak':>13}  note")
    for engine in GEMM_ENGINES:
        med = statistics.median(samples[engine])
        lo, hi = min(medians[engine]), max(medians[engine])
        pct = f"{100 * ops / med / 1e9 / peaks[0]:.0f}" if peaks else "-"
        print(f"{engine:<20}{med * 1e3:>10.2f}{f'{lo * 1e3:.2f} .. {hi * 1e3:.2f}':>18}"
              f"{ops / med / 1e9:>8.1f}{pct:>13}  {notes[engine]}")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", default="resnet50,mobilenet")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--block", type=int, default=3, help="timed calls per engine per round")
    ap.add_argument("--gemm", type=int, default=1024, help="M = N = K of the GEMM microbenchmark")
    ap.add_argument("--no-models", action="store_true")
    ap.add_argument("--no-gemm", action="store_true")
    ap.add_argument("--worker", help=argparse.SUPPRESS)
    ap.add_argument("--files", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.worker:
        kind, name = args.worker.split(":", 1)
        worker(kind, name, json.loads(args.files), args.threads, args.gemm)
        return 0
    flags = sorted({f for f in open("/proc/cpuinfo").read().split() if f.startswith(("avx512", "avx2", "amx"))})
    print(f"host: {os.cpu_count()} cpus, {' '.join(flags)}")
    if not args.no_gemm:
        run_gemm(args)
    if not args.no_models:
        run_models(args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
