"""GEMM and conv2d speed of dlc's default dense schedules, against numpy, onnxruntime and the FMA peak.

    python bench/bench_gemm.py                  # peak, square/skinny GEMMs, ResNet-50 convs
    python bench/bench_gemm.py --only gemm --sizes 1024 --runs 11

Everything goes through the normal pipeline (``dlc.compile`` on a graph.matmul /
graph.conv2d). The machine is shared, so each case alternates dlc and numpy runs
and reports medians and their ratio; GEMMs also against onnxruntime's MatMul (both
operands graph inputs, ``intra_op_num_threads`` = the thread count). The peak is
measured, not assumed, in the same interleaved runs as each case (the load changes
minute by minute; numpy and onnxruntime are timed apart, after them, since their
spinning threads would steal a core from them): a
compiled kernel of independent FMA chains (16 x 16 f32 accumulators per thread
with AVX-512, loop IR through the same LLVM backend; ``peak_rows``), cross-checked
against ../shared/tools/fma_peak.c when gcc is there. numpy's conv baseline is im2col +
sgemm (OpenBLAS).
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np

import dlc

FMA_PEAK = """
builtin.module {{
  func.func @peak_0_fma(%x: memref<{t}x{rows}x16xf32>, %y: memref<{t}x{rows}x16xf32>) attributes {{tloop.kernel}} {{
    %c1 = arith.constant 0.999999 : f32
    %c2 = arith.constant 0.000001 : f32
    tloop.for %t = 0 to {t} parallel {{
      %acc = memref.alloca() : memref<{rows}x16xf32>
      tloop.for %i0 = 0 to {rows} {{
        tloop.for %j0 = 0 to 16 vectorized {{
          %v = memref.load %x[%t, %i0, %j0] : memref<{t}x{rows}x16xf32>
          memref.store %v, %acc[%i0, %j0] : memref<{rows}x16xf32>
        }}
      }}
      tloop.for %r = 0 to {reps} {{
        tloop.for %i = 0 to {rows} unrolled {{
          tloop.for %j = 0 to 16 vectorized {{
            %a = memref.load %acc[%i, %j] : memref<{rows}x16xf32>
            %f = math.fma %a, %c1, %c2 : f32
            memref.store %f, %acc[%i, %j] : memref<{rows}x16xf32>
          }}
        }}
      }}
      tloop.for %i1 = 0 to {rows} {{
        tloop.for %j1 = 0 to 16 vectorized {{
          %w = memref.load %acc[%i1, %j1] : memref<{rows}x16xf32>
          memref.store %w, %y[%t, %i1, %j1] : memref<{t}x{rows}x16xf32>
        }}
      }}
    }}
    func.return
  }}
  func.func @main(%x: memref<{t}x{rows}x16xf32>, %y: memref<{t}x{rows}x16xf32>) attributes {{tloop.host, tloop.num_inputs = 1 : i64}} {{
    func.call @peak_0_fma(%x, %y) : (memref<{t}x{rows}x16xf32>, memref<{t}x{rows}x16xf32>) -> ()
    func.return
  }}
}}
"""


def tensor(shape) -> str:
    return "tensor<" + "x".join(map(str, shape)) + "xf32>"


def matmul_source(m: int, n: int, k: int) -> str:
    a, b, c = tensor((m, k)), tensor((k, n)), tensor((m, n))
    return (f"func.func @main(%a: {a}, %b: {b}) -> {c} {{\n"
            f"  %c = graph.matmul %a, %b : ({a}, {b}) -> {c}\n  func.return %c : {c}\n}}")


def conv_source(c: int, hw: int, o: int, ksize: int, stride: int) -> tuple[str, tuple, tuple]:
    pad = ksize // 2
    out_hw = (hw + 2 * pad - ksize) // stride + 1
    x, w, y = (1, c, hw, hw), (o, c, ksize, ksize), (1, o, out_hw, out_hw)
    src = (f"func.func @main(%x: {tensor(x)}, %w: {tensor(w)}) -> {tensor(y)} {{\n"
           f"  %y = graph.conv2d %x, %w {{strides = array<i64: {stride}, {stride}>, "
           f"padding = array<i64: {pad}, {pad}, {pad}, {pad}>}} : ({tensor(x)}, {tensor(w)}) -> {tensor(y)}\n"
           f"  func.return %y : {tensor(y)}\n}}")
    return src, x, w


def im2col_conv(x: np.ndarray, w: np.ndarray, stride: int) -> np.ndarray:
    o, c, kh, kw = w.shape
    pad = kh // 2
    xp = np.pad(x[0], ((0, 0), (pad, pad), (pad, pad)))
    win = np.lib.stride_tricks.sliding_window_view(xp, (kh, kw), axis=(1, 2))[:, ::stride, ::stride]
    cols = win.transpose(0, 3, 4, 1, 2).reshape(c * kh * kw, -1)
    return (w.reshape(o, -1) @ cols).reshape(1, o, win.shape[1], win.shape[2])


def alternate(fns, runs: int, clock=time.perf_counter) -> list[float]:
    """Median seconds of each function on `clock`, runs interleaved (shared, noisy machine)."""
    for fn in fns:
        fn()
    times = [[] for _ in fns]
    for _ in range(runs):
        for i, fn in enumerate(fns):
            start = clock()
            fn()
            times[i].append(clock() - start)
    return [statistics.median(t) for t in times]


def peak_rows() -> int:
    """Independent accumulator rows of 16 f32 for the peak kernel: 16 zmm chains with
    AVX-512 (32 registers; two FMA ports x latency 4 need 8 in flight, 16 leaves margin),
    6 rows = 12 ymm chains with AVX2's 16 registers."""
    from dlc.target import Target

    return 16 if Target.host().vector_bits >= 512 else 6


def c_fma_peak(threads: int) -> float | None:
    """The hardware's FMA peak from ../shared/tools/fma_peak.c (gcc -O3 -march=native, 12
    independent chains at the widest vector width), when the file and gcc are there: the
    cross-check that the dlc kernel below reaches it."""
    import os
    import re
    import shutil
    import subprocess
    import tempfile

    source = os.path.join(os.path.dirname(__file__), "..", "..", "shared", "tools", "fma_peak.c")
    if not (os.path.exists(source) and shutil.which("gcc")):
        return None
    with tempfile.TemporaryDirectory() as tmp:
        exe = os.path.join(tmp, "fma_peak")
        subprocess.run(["gcc", "-O3", "-march=native", "-fopenmp", source, "-o", exe], check=True)
        out = subprocess.run([exe], env={**os.environ, "OMP_NUM_THREADS": str(threads)},
                             capture_output=True, text=True, check=True).stdout
    return float(re.search(r"peak ([0-9.]+)", out).group(1))


class Peak:
    """The FMA-chain kernel: run alongside each case so that both see the same machine load."""

    def __init__(self, threads: int, reps: int = 8_000_000):
        rows = peak_rows()
        self.compiled = dlc.compile(FMA_PEAK.format(t=threads, reps=reps, rows=rows), num_threads=threads)
        self.flops = threads * reps * rows * 16 * 2
        self.x = np.ones((threads, rows, 16), np.float32)
        self.out = np.empty_like(self.x)

    def __call__(self) -> None:
        self.compiled(self.x, outputs=[self.out])

    def gflops(self, runs: int) -> float:
        (seconds,) = alternate([self], runs)
        return self.flops / seconds / 1e9


def run_case(name: str, flops: float, ours, theirs, peak: Peak, runs: int, ort=None) -> None:
    """Peak, dlc and numpy (and onnxruntime: `ort`) interleaved; GFLOP/s from medians, %
    of the peak of the same run.

    Wall-clock GFLOP/s suffer from time slicing when other jobs share the cores, so the
    % of peak is also given per CPU-second (process time of all threads), which stays
    near what an idle machine shows for compute-bound kernels."""
    t_peak, t_ours = alternate([peak, ours], runs)
    c_peak, c_ours = alternate([peak, ours], runs, clock=time.process_time)
    # numpy and onnxruntime apart, last: OpenBLAS's and onnxruntime's threads spin for a
    # while after each call (about 0.1 s) and steal a core from whatever runs next
    # (measured: dlc and the peak halved)
    (t_theirs,) = alternate([theirs], runs)
    time.sleep(0.5)
    ort_text = ""
    if ort is not None:
        (t_ort,) = alternate([ort], runs)
        time.sleep(0.5)
        ort_text = f"   onnxruntime {flops / t_ort / 1e9:6.1f}   dlc/ort {t_ort / t_ours:5.2f}"
    p, g, gn = peak.flops / t_peak / 1e9, flops / t_ours / 1e9, flops / t_theirs / 1e9
    cpu_peak = peak.flops / c_peak / 1e9
    cpu_ratio = flops / c_ours / 1e9 / cpu_peak
    print(f"{name:<30} dlc {g:6.1f} GFLOP/s = {100 * g / p:5.1f}% of peak {p:5.1f} "
          f"(per CPU-second: {100 * cpu_ratio:5.1f}% of {cpu_peak:5.1f})   numpy {gn:6.1f}   "
          f"dlc/numpy {g / gn:5.2f}{ort_text}",
          flush=True)


def ort_matmul(a: np.ndarray, b: np.ndarray, threads: int):
    """onnxruntime's MatMul of `a` and `b` (both graph inputs, as dlc's are) on `threads`
    intra-op threads, as a no-argument call; None without onnxruntime."""
    try:
        import onnxruntime as ort
        from onnx import TensorProto, helper
    except ImportError:
        return None
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["a", "b"], ["c"])], "gemm",
        [helper.make_tensor_value_info("a", TensorProto.FLOAT, a.shape),
         helper.make_tensor_value_info("b", TensorProto.FLOAT, b.shape)],
        [helper.make_tensor_value_info("c", TensorProto.FLOAT, (a.shape[0], b.shape[1]))])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    session = ort.InferenceSession(model.SerializeToString(), options, providers=["CPUExecutionProvider"])
    feeds = {"a": a, "b": b}
    got = session.run(None, feeds)[0]
    assert np.abs(got - a @ b).max() <= 1e-4 * max(1.0, np.abs(got).max()), "onnxruntime: wrong result"
    return lambda: session.run(None, feeds)


def bench_gemm(shapes, threads: int, runs: int, peak: float, rng) -> None:
    for m, n, k in shapes:
        compiled = dlc.compile(matmul_source(m, n, k), num_threads=threads)
        a = rng.standard_normal((m, k)).astype(np.float32)
        b = rng.standard_normal((k, n)).astype(np.float32)
        out = np.empty((m, n), np.float32)
        compiled(a, b, outputs=[out])
        expected = a @ b
        assert np.abs(out - expected).max() <= 1e-4 * max(1.0, np.abs(expected).max()), "wrong result"
        run_case(f"gemm {m}x{n}x{k}", 2 * m * n * k, lambda: compiled(a, b, outputs=[out]),
                 lambda: a @ b, peak, runs, ort=ort_matmul(a, b, threads))


RESNET50_CONVS = [  # (channels in, image size, channels out, kernel, stride)
    (3, 224, 64, 7, 2),
    (64, 56, 64, 3, 1),
    (64, 56, 256, 1, 1),
    (128, 28, 128, 3, 1),
    (256, 14, 256, 3, 1),
    (1024, 14, 256, 1, 1),
    (512, 7, 512, 3, 1),
]


def bench_conv(threads: int, runs: int, peak: float, rng) -> None:
    for c, hw, o, ks, st in RESNET50_CONVS:
        src, xs, ws = conv_source(c, hw, o, ks, st)
        compiled = dlc.compile(src, num_threads=threads)
        x = rng.standard_normal(xs).astype(np.float32)
        w = rng.standard_normal(ws).astype(np.float32)
        got = compiled(x, w)[0]
        expected = im2col_conv(x, w, st)
        assert np.abs(got - expected).max() <= 1e-4 * max(1.0, np.abs(expected).max()), "wrong result"
        out = np.empty_like(got)
        run_case(f"conv {c}x{hw}x{hw} -> {o} k{ks} s{st}", 2 * got.size * c * ks * ks,
                 lambda: compiled(x, w, outputs=[out]), lambda: im2col_conv(x, w, st), peak, runs)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--sizes", type=int, nargs="*", default=[256, 512, 1024, 2048])
    parser.add_argument("--only", choices=["gemm", "conv"], default=None)
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    peak = Peak(args.threads)
    print(f"measured FMA peak: {Peak(1).gflops(args.runs):.1f} GFLOP/s on 1 thread, "
          f"{peak.gflops(args.runs):.1f} GFLOP/s on {args.threads} (re-measured with each case)")
    reference = c_fma_peak(args.threads)
    if reference is not None:
        print(f"fma_peak.c (gcc -march=native) on {args.threads} threads: {reference:.1f} GFLOP/s")
    if args.only in (None, "gemm"):
        squares = [(s, s, s) for s in args.sizes]
        skinny = [(1021, 997, 509), (1024, 1024, 64), (64, 1024, 1024), (49, 2048, 512), (1, 1000, 2048),
                  (1, 4096, 9216), (1, 4096, 4096), (3, 1000, 1024)]  # AlexNet/VGG dense layers at batch 1
        bench_gemm(squares + (skinny if args.sizes == parser.get_default("sizes") else []),
                   args.threads, args.runs, peak, rng)
    if args.only in (None, "conv"):
        bench_conv(args.threads, args.runs, peak, rng)


if __name__ == "__main__":
    main()
