"""Run dlc's CUDA target on a real GPU, once, and print every figure as it is measured.

Sections (each prints its rows and a summary line as soon as it finishes, so a run
cut short by a timeout still reports what it did):

1. op cases: every graph op (backends/cuda/op_cases.py, plus larger shapes) through
   ``dlc.compile(..., target="cuda")`` against ``dlc.evaluator``;
2. CNNs: the small CNNs through ``dlc.compile`` and through the exported library
   (``CudaProgram.export`` -> ``dlc.runtime.load``: host buffers and the device entry);
3. control flow: ONNX If, Loop (early exit; 20,000 iterations on a device) and Scan,
   host branches and loops launching kernels, against the evaluator;
4. tensor cores: ``bench/gpu/tensor_core_checks.py``'s ``run(quick, emulate)`` when that
   module is present (a note when it is not);
5. ResNet-50 (torchvision's architecture defined here, seeded random weights) at
   batch 1 and 16: the exported library's device entry in ms next to torch eager
   (cuDNN) in the same run (goal: at most 1.5x torch), outputs compared with torch's;
6. matmul f32: the generated tiled kernel in GFLOP/s next to torch.matmul (cuBLAS).

    python bench/gpu/run_gpu_checks.py [--quick] [--sizes 1024,2048,4096,8192] [--skip SECTION,...]
    python bench/gpu/run_gpu_checks.py --emulate --quick   # no GPU: the checks on the emulator

Needs Python packages numpy, xdsl (0.75), llvmlite and onnx (lark for the custom-op
case; torch for ResNet-50 and the cuBLAS/cuDNN figures), nvcc, a CUDA driver and a
GPU; it installs nothing and says what is missing. From a clean checkout it imports
``dlc`` from the checkout itself (no pip install). With ``--emulate`` the small cases
run on the emulator and the device-only timings are skipped with a note.
Exit status: 0 all match, 1 a mismatch or a failed program, 2 something missing.
Kernel timings use CUDA events (matmul: the kernel launches only; ResNet-50: the
device entry, inputs already on the GPU).
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import os
import shutil
import sys
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
NEEDED = ("numpy", "xdsl", "llvmlite", "onnx")


def ensure_environment() -> list[str]:
    """Import dlc (from the checkout when it is not installed); lines describing the setup."""
    missing = [name for name in NEEDED if importlib.util.find_spec(name) is None]
    if missing:
        print(f"run_gpu_checks: missing Python packages: {', '.join(missing)} "
              f"(pip install {' '.join(missing)} xdsl==0.75.0)", file=sys.stderr)
        sys.exit(2)
    notes = []
    try:
        import dlc  # noqa: F401
    except ImportError:
        # The repository root is the package: expose it as `dlc` through a symlink.
        shim = tempfile.mkdtemp(prefix="dlc-import-")
        os.symlink(REPO, os.path.join(shim, "dlc"))
        sys.path.insert(0, shim)
        notes.append(f"dlc is not installed: importing it from {REPO}")
    import llvmlite
    import numpy
    import onnx
    import xdsl

    notes.append(f"python {sys.version.split()[0]}, numpy {numpy.__version__}, xdsl {getattr(xdsl, '__version__', '?')}, "
                 f"llvmlite {llvmlite.__version__}, onnx {onnx.__version__}")
    notes.append(f"nvcc: {shutil.which('nvcc') or 'not found'}; torch: "
                 f"{'present' if importlib.util.find_spec('torch') else 'absent (no cuBLAS comparison)'}")
    return notes


# --------------------------------------------------------------------------- programs


def larger_cases():
    """A few bigger shapes: many blocks, capped grids (grid-stride), long rows, big tiles."""
    from dlc.backends.cuda.op_cases import In, _c
    from dlc.dialects import graph as g

    return [
        _c("big_add_broadcast", g.AddOp, [(31, 1, 257), (1, 17, 257)]),
        _c("big_tanh", g.TanhOp, [(1000003,)]),
        _c("big_softmax", g.SoftmaxOp, [(129, 1001)], axis=1, rtol=1e-4, atol=1e-6),
        _c("big_reduce_sum", g.ReduceSumOp, [(7, 4099)], axes=[1], rtol=1e-4, atol=1e-3),
        _c("big_layer_norm", g.LayerNormOp, [(33, 768), (768,), (768,)], rtol=1e-3, atol=1e-4),
        _c("big_matmul", g.MatmulOp, [(3, 67, 129), (129, 71)], rtol=1e-4, atol=1e-4),
        _c("big_conv2d", g.Conv2DOp, [(2, 16, 31, 29), (32, 16, 3, 3)], padding=[1, 1, 1, 1],
           strides=[2, 2], rtol=1e-4, atol=1e-4),
        _c("big_max_pool", g.MaxPool2DOp, [(2, 64, 57, 55)], kernel=[3, 3], strides=[2, 2]),
        _c("big_gather", g.GatherOp, [(1000, 64), In((77,), g.i64, int_range=(0, 1000))]),
    ]


def op_cases(quick: bool):
    from dlc.backends.cuda.op_cases import OP_CASES

    cases = list(OP_CASES) + larger_cases()
    if importlib.util.find_spec("lark") is None:
        print("note: lark absent: the custom (tensor-expression) op case is skipped")
        cases = [c for c in cases if not c.id.startswith("custom")]
    if quick:
        keep = {"add", "exp", "softmax", "matmul", "conv", "max_pool", "reduce_sum", "gather", "dense", "big_add_broadcast"}
        cases = [c for c in cases if c.id in keep]
    return cases


def cnn_programs(emulate: bool):
    """(name, graph module, inputs) of the small CNNs (the emulator takes only the tiny one)."""
    import numpy as np
    from xdsl.parser import Parser

    from dlc.context import make_context
    from dlc.frontends.onnx import import_model
    from dlc.weights import load_for_module

    rng = np.random.default_rng(0)
    graph_ir = os.path.join(REPO, "test", "lit", "cuda", "small_cnn_graph.mlir")
    out = [("small_cnn_graph.mlir", Parser(make_context(), open(graph_ir).read(), graph_ir).parse_module(),
            [rng.standard_normal((2, 3, 7, 5)).astype(np.float32)])]
    if emulate:
        return out
    out.append(("small_cnn.onnx", import_model(os.path.join(REPO, "examples", "small_cnn.onnx")),
                [rng.standard_normal((1, 3, 32, 32)).astype(np.float32)]))
    example = os.path.join(REPO, "examples", "small_cnn.mlir")
    if os.path.exists(example):
        module = Parser(make_context(), open(example).read(), example).parse_module()
        load_for_module(module, example)
        out.append(("small_cnn.mlir", module, [rng.standard_normal((1, 3, 32, 32)).astype(np.float32)]))
    return out


# --------------------------------------------------------------------------- checks


def compile_program(module, emulate: bool):
    """``dlc.compile(module, target="cuda")``, or with --emulate the same lowering run
    by the emulator; either way an object with ``run(entry, *inputs)``."""
    if not emulate:
        import dlc

        return dlc.compile(module, target="cuda")
    import dlc.backends.cuda.matmul_schedule as tiles
    from dlc.backends.cuda.emulator import emulate as run_emulated

    # tiles the emulator can run in seconds (it interprets every thread)
    for name, value in dict(TILE_M=8, TILE_N=8, TILE_K=4, THREADS_Y=4, THREADS_X=4, REG_M=2, REG_N=2).items():
        setattr(tiles, name, value)
    from dlc.driver import load_module
    from dlc.backends.cuda.lower_to_gpu import ensure_gpu_lowered

    lowered = ensure_gpu_lowered(load_module(module))

    class Emulated:
        timings: dict = {}

        def run(self, entry, *inputs):
            return run_emulated(lowered, inputs, entry=entry)

    return Emulated()


def check_ops(cases, emulate: bool) -> tuple[int, list[str]]:
    from dlc.backends.cuda.op_cases import case_inputs, case_module, max_error
    from dlc.evaluator import evaluate

    start = time.perf_counter()
    program = compile_program(case_module(cases), emulate)
    print(f"compiled {len(cases)} op programs into one library in {time.perf_counter() - start:.1f} s "
          f"{dict((k, round(v, 1)) for k, v in program.timings.items())}")
    failures = []
    print(f"\n{'op case':24s} {'result':8s} detail")
    for case in cases:
        inputs = case_inputs(case, seed=1)
        expected = evaluate(case_module([case]), inputs)
        try:
            got = program.run(case.id, *inputs)
            problems = [max_error(o, e, case) for o, e in zip(got, expected)]
            problem = next((p for p in problems if p), None)
        except Exception as err:  # a CUDA error in one program must not hide the others
            problem = f"{type(err).__name__}: {str(err).splitlines()[0]}"
        if problem:
            failures.append(case.id)
        print(f"{case.id:24s} {'FAIL' if problem else 'ok':8s} {problem or case.op.name}", flush=True)
    return len(cases), failures


def _compare(got, want, rtol=1e-4, atol=1e-5) -> tuple[bool, str]:
    import numpy as np

    if len(got) != len(want):
        return False, f"{len(got)} outputs, expected {len(want)}"
    worst = 0.0
    for g, w in zip(got, want):
        g, w = np.asarray(g), np.asarray(w)
        if g.shape != w.shape:
            return False, f"shape {g.shape}, expected {w.shape}"
        if not np.allclose(g, w, rtol=rtol, atol=atol):
            return False, f"max|err| {float(np.max(np.abs(g.astype(np.float64) - w))):.2e}"
        if g.size:
            worst = max(worst, float(np.max(np.abs(g.astype(np.float64) - w))))
    return True, f"max|err| {worst:.2e}"


def run_exported(program, inputs, tmp: str, name: str):
    """Export ``program`` (a CudaProgram), load it with dlc.runtime and run it on host
    buffers and through its device entry (torch tensors on the GPU when torch is here)."""
    import numpy as np

    import dlc.runtime

    path = os.path.join(tmp, f"{name}.so")
    program.export(path)
    module = dlc.runtime.load(path)
    outs = module(*inputs)
    if importlib.util.find_spec("torch") is not None:
        import torch

        if torch.cuda.is_available():
            d_in = [torch.from_numpy(np.ascontiguousarray(a)).cuda() for a in inputs]
            d_out = [torch.empty(shape, dtype=getattr(torch, np.dtype(dt).name)).cuda()
                     for _, shape, dt in module.output_specs]
            module.device_entry()(*[t.data_ptr() for t in d_in + d_out])
            torch.cuda.synchronize()
            for a, b in zip(outs, d_out):
                if not np.array_equal(a, b.cpu().numpy()):
                    raise RuntimeError("the device entry's result differs from the host entry's")
    return outs


def check_cnns(emulate: bool, tmp: str) -> tuple[int, list[str]]:
    from dlc.evaluator import evaluate

    failures = []
    programs = cnn_programs(emulate)
    print(f"\n{'model':28s} {'result':8s} detail")
    count = 0
    for name, module, inputs in programs:
        want = evaluate(module, inputs)
        entry = next(iter(module.ops)).sym_name.data
        paths = [("", None)] if emulate else [("", None), (" (.so)", "export")]
        for suffix, how in paths:
            count += 1
            try:
                start = time.perf_counter()
                program = compile_program(module, emulate)
                built = time.perf_counter() - start
                got = program.run(entry, *inputs) if how is None else run_exported(program, inputs, tmp, f"cnn{count}")
                ok, detail = _compare(got, want)
                detail += f", build {built:.1f} s"
            except Exception as exc:
                ok, detail = False, f"{type(exc).__name__}: {str(exc).splitlines()[0]}"
            if not ok:
                failures.append(name + suffix)
            print(f"{name + suffix:28s} {'ok' if ok else 'FAIL':8s} {detail}", flush=True)
    if emulate:
        count += 1
        ok, detail = export_plumbing(programs[0][1], tmp)
        if not ok:
            failures.append("export plumbing")
        print(f"{'export plumbing':28s} {'ok' if ok else 'FAIL':8s} {detail}", flush=True)
    return count, failures


def export_plumbing(module, tmp: str) -> tuple[bool, str]:
    """--emulate: build and load the exported library (no GPU to call it: a note)."""
    import dlc
    import dlc.runtime
    from dlc.backends.cuda.nvcc_build import find_nvcc

    if find_nvcc() is None:
        return True, "note: nvcc absent, export skipped"
    try:
        from dlc.driver import load_module

        program = dlc.compile(load_module(module), target="cuda", jit=False)
        path = os.path.join(tmp, "plumbing.so")
        program.export(path)
        loaded = dlc.runtime.load(path)
        ok = loaded.input_specs == program.input_specs and "main" in str(loaded.device_entries) or bool(loaded.device_entries)
        return ok, f"{os.path.getsize(path)} bytes, entries {sorted(loaded.entries)} (not called: no GPU)"
    except Exception as exc:
        return False, f"{type(exc).__name__}: {str(exc).splitlines()[0]}"


# --------------------------------------------------------------------------- control flow


def _vi(name, shape, elem=None):
    from onnx import TensorProto, helper

    return helper.make_tensor_value_info(name, TensorProto.FLOAT if elem is None else elem, shape)


def _model(nodes, inputs, outputs, inits=()):
    from onnx import helper

    model = helper.make_model(helper.make_graph(nodes, "g", inputs, outputs, list(inits)),
                              opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return model


def onnx_if():
    """y = c ? x * k : x - k (k = x + x, read by both branches)."""
    from onnx import TensorProto, helper

    then_g = helper.make_graph([helper.make_node("Mul", ["x", "k"], ["t"])], "then", [], [_vi("t", [3, 5])])
    else_g = helper.make_graph([helper.make_node("Sub", ["x", "k"], ["e"])], "else", [], [_vi("e", [3, 5])])
    nodes = [helper.make_node("Add", ["x", "x"], ["k"]),
             helper.make_node("If", ["c"], ["y"], then_branch=then_g, else_branch=else_g)]
    return _model(nodes, [_vi("c", [], TensorProto.BOOL), _vi("x", [3, 5])], [_vi("y", [3, 5])])


def onnx_loop(trips: int, stop_after: int | None):
    """x <- x * 0.999 + step, M = ``trips``; the body stops after ``stop_after`` iterations."""
    import numpy as np
    from onnx import TensorProto, helper, numpy_helper

    B, I = TensorProto.BOOL, TensorProto.INT64
    nodes = [helper.make_node("Mul", ["x_in", "decay"], ["scaled"]),
             helper.make_node("Add", ["scaled", "step"], ["x_out"]),
             helper.make_node("Add", ["n_in", "one"], ["n_out"]),
             helper.make_node("Less", ["n_out", "limit"], ["c_out"])]
    body = helper.make_graph(nodes, "body", [_vi("i", [], I), _vi("c_in", [], B), _vi("x_in", [3, 5]), _vi("n_in", [], I)],
                             [_vi("c_out", [], B), _vi("x_out", [3, 5]), _vi("n_out", [], I)])
    inits = [numpy_helper.from_array(np.array(trips, np.int64), "M"),
             numpy_helper.from_array(np.array(True), "cond"),
             numpy_helper.from_array(np.array(0, np.int64), "n0"),
             numpy_helper.from_array(np.array(1, np.int64), "one"),
             numpy_helper.from_array(np.array(stop_after or trips + 1, np.int64), "limit"),
             numpy_helper.from_array(np.array(0.999, np.float32), "decay")]
    return _model([helper.make_node("Loop", ["M", "cond", "x0", "n0"], ["x", "n"], body=body)],
                  [_vi("x0", [3, 5]), _vi("step", [3, 5])], [_vi("x", [3, 5]), _vi("n", [], I)], inits)


def onnx_scan():
    """s <- s + x_t, y_t = s * -w over the 7 columns of xs."""
    from onnx import helper

    body = helper.make_graph([helper.make_node("Add", ["s_in", "x_t"], ["s_out"]),
                              helper.make_node("Mul", ["s_out", "w"], ["y_t"])], "body",
                             [_vi("s_in", [3]), _vi("x_t", [3])], [_vi("s_out", [3]), _vi("y_t", [3])])
    nodes = [helper.make_node("Neg", ["w0"], ["w"]),
             helper.make_node("Scan", ["s0", "xs"], ["s", "ys"], body=body, num_scan_inputs=1,
                              scan_input_axes=[1], scan_input_directions=[1],
                              scan_output_axes=[1], scan_output_directions=[0])]
    return _model(nodes, [_vi("s0", [3]), _vi("xs", [3, 7]), _vi("w0", [3])], [_vi("s", [3]), _vi("ys", [3, 7])])


def control_flow_cases(emulate: bool, quick: bool):
    import numpy as np

    rng = np.random.default_rng(3)
    x = rng.standard_normal((3, 5)).astype(np.float32)
    step = rng.standard_normal((3, 5)).astype(np.float32)
    cases = [("If (true)", onnx_if(), [np.array(True), x]), ("If (false)", onnx_if(), [np.array(False), x]),
             ("Loop M=6", onnx_loop(6, None), [x, step]), ("Loop M=9, exits after 4", onnx_loop(9, 4), [x, step]),
             ("Scan 7 steps", onnx_scan(), [rng.standard_normal(3).astype(np.float32),
                                            rng.standard_normal((3, 7)).astype(np.float32),
                                            rng.standard_normal(3).astype(np.float32)])]
    if not emulate:
        cases.append(("Loop M=20000", onnx_loop(20_000, None), [x, step]))
        if not quick:
            cases.append(("Loop M=20000, exits after 12345", onnx_loop(20_000, 12_345), [x, step]))
    return cases


def check_control_flow(emulate: bool, quick: bool) -> tuple[int, list[str]]:
    from dlc.evaluator import evaluate
    from dlc.frontends.onnx import import_model

    cases = control_flow_cases(emulate, quick)
    failures = []
    print(f"\n{'control flow':34s} {'result':8s} detail")
    for name, model, inputs in cases:
        try:
            want = evaluate(import_model(model), inputs)
            start = time.perf_counter()
            program = compile_program(import_model(model), emulate)
            built = time.perf_counter() - start
            kernels = getattr(program, "cuda_source", "").count("__global__")
            start = time.perf_counter()
            got = program.run("main", *inputs)
            ran = time.perf_counter() - start
            ok, detail = _compare(got, want, rtol=1e-3, atol=1e-4)
            detail += f", build {built:.1f} s, run {ran * 1e3:.1f} ms" + (f", {kernels} kernels" if kernels else "")
        except Exception as exc:
            ok, detail = False, f"{type(exc).__name__}: {str(exc).splitlines()[0]}"
        if not ok:
            failures.append(name)
        print(f"{name:34s} {'ok' if ok else 'FAIL':8s} {detail}", flush=True)
    return len(cases), failures


# --------------------------------------------------------------------------- tensor cores


def check_tensor_cores(quick: bool, emulate: bool) -> tuple[int, list[str]] | None:
    """``bench/gpu/tensor_core_checks.py``: ``run(quick, emulate)`` checks every tensor-core
    and warp-shuffle case against the evaluator (it prints its own rows) and returns
    ``(count, failures)``; on a device ``bench([4096])`` then prints matmul TFLOP/s next to
    cuBLAS (lines below the 70% goal are notes, not failures). None when the file is absent."""
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "tensor_core_checks.py")
    if not os.path.exists(path):
        return None  # main prints the note
    spec = importlib.util.spec_from_file_location("tensor_core_checks", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    print("\ntensor cores (bench/gpu/tensor_core_checks.py)", flush=True)
    count, failures = module.run(quick, emulate)
    if not emulate and not failures:
        for line in module.bench([1024] if quick else [4096]):
            print(f"note: below the 70% goal: {line}", flush=True)
    return int(count), [str(f) for f in failures]


# --------------------------------------------------------------------------- ResNet-50


def resnet50():
    """torchvision's resnet50 architecture (no torchvision needed), seeded random weights."""
    import torch
    from torch import nn

    class Bottleneck(nn.Module):
        def __init__(self, cin, width, stride):
            super().__init__()
            cout = width * 4
            self.conv1, self.bn1 = nn.Conv2d(cin, width, 1, bias=False), nn.BatchNorm2d(width)
            self.conv2, self.bn2 = nn.Conv2d(width, width, 3, stride, 1, bias=False), nn.BatchNorm2d(width)
            self.conv3, self.bn3 = nn.Conv2d(width, cout, 1, bias=False), nn.BatchNorm2d(cout)
            self.relu = nn.ReLU()
            self.down = None
            if stride != 1 or cin != cout:
                self.down = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout))

        def forward(self, x):
            y = self.relu(self.bn1(self.conv1(x)))
            y = self.relu(self.bn2(self.conv2(y)))
            y = self.bn3(self.conv3(y))
            return self.relu(y + (x if self.down is None else self.down(x)))

    class ResNet50(nn.Module):
        def __init__(self):
            super().__init__()
            self.stem = nn.Sequential(nn.Conv2d(3, 64, 7, 2, 3, bias=False), nn.BatchNorm2d(64), nn.ReLU(),
                                      nn.MaxPool2d(3, 2, 1))
            layers, cin = [], 64
            for width, blocks, stride in ((64, 3, 1), (128, 4, 2), (256, 6, 2), (512, 3, 2)):
                for b in range(blocks):
                    layers.append(Bottleneck(cin, width, stride if b == 0 else 1))
                    cin = width * 4
            self.layers = nn.Sequential(*layers)
            self.pool = nn.AdaptiveAvgPool2d(1)
            self.fc = nn.Linear(2048, 1000)

        def forward(self, x):
            return self.fc(torch.flatten(self.pool(self.layers(self.stem(x))), 1))

    torch.manual_seed(0)
    model = ResNet50().eval()
    with torch.no_grad():  # batch norm statistics that keep activations in range
        for m in model.modules():
            if isinstance(m, nn.BatchNorm2d):
                m.running_mean.uniform_(-0.1, 0.1)
                m.running_var.uniform_(0.5, 1.5)
    return model


def _time_ms(fn, repeats: int) -> float:
    import torch

    fn()
    torch.cuda.synchronize()
    start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    times = []
    for _ in range(repeats):
        start.record()
        fn()
        stop.record()
        torch.cuda.synchronize()
        times.append(start.elapsed_time(stop))
    return sorted(times)[len(times) // 2]


def bench_resnet(batches, tmp: str) -> tuple[int, list[str]]:
    import numpy as np
    import torch

    import dlc
    import dlc.runtime

    failures = []
    print(f"\n{'ResNet-50 f32':16s} {'result':8s} {'dlc ms':>9s} {'torch ms':>9s} {'dlc/torch':>9s} detail", flush=True)
    import copy

    model = resnet50()
    gpu_model = copy.deepcopy(model).cuda()  # dlc.compile traces the CPU copy
    for batch in batches:
        name = f"batch {batch}"
        try:
            x = torch.randn(batch, 3, 224, 224, generator=torch.Generator().manual_seed(batch))
            start = time.perf_counter()
            program = dlc.compile(model, example_args=(x,), target="cuda")
            path = os.path.join(tmp, f"resnet50_b{batch}.so")
            program.export(path)
            built = time.perf_counter() - start
            module = dlc.runtime.load(path)
            d_x = x.cuda()
            with torch.no_grad():
                want = gpu_model(d_x)
            d_y = torch.empty_like(want)
            entry = module.device_entry()
            (host_out,) = module(x.numpy())
            ours = _time_ms(lambda: entry(d_x.data_ptr(), d_y.data_ptr()), 20)
            torch.backends.cudnn.benchmark = True
            with torch.no_grad():
                theirs = _time_ms(lambda: gpu_model(d_x), 20)
            ref = want.cpu().numpy()
            ok = np.allclose(d_y.cpu().numpy(), ref, rtol=1e-3, atol=1e-3) and np.allclose(host_out, ref, rtol=1e-3, atol=1e-3)
            err = float(np.max(np.abs(d_y.cpu().numpy() - ref)))
            ratio = ours / theirs
            detail = f"max|err| vs torch {err:.1e}, build {built:.0f} s, goal <= 1.5x: {'met' if ratio <= 1.5 else 'not met'}"
            print(f"{name:16s} {'ok' if ok else 'FAIL':8s} {ours:9.2f} {theirs:9.2f} {ratio:9.2f} {detail}", flush=True)
        except Exception as exc:
            ok = False
            print(f"{name:16s} {'FAIL':8s} {type(exc).__name__}: {str(exc).splitlines()[0]}", flush=True)
        if not ok:
            failures.append(f"resnet50 {name}")
    return len(batches), failures


# --------------------------------------------------------------------------- matmul speed

def _repeats(size: int) -> int:
    return max(3, min(50, int(2e11 / size**3)))


def matmul_gflops(size: int) -> float:
    from xdsl.parser import Parser

    from dlc.backends.cuda import emit_cuda
    from dlc.backends.cuda.lower_to_gpu import is_kernel
    from dlc.bench.gpu.kernel_timing import kernel_ms
    from dlc.context import make_context

    t = f"tensor<{size}x{size}xf32>"
    text = (f"func.func @main(%a: {t}, %b: {t}) -> {t} {{\n  %r = graph.matmul %a, %b : ({t}, {t}) -> {t}\n"
            f"  func.return %r : {t}\n}}")
    module = Parser(make_context(), text).parse_module()
    source = emit_cuda(module)
    kernel = next(op for op in module.ops if is_kernel(op))
    ms = kernel_ms(source, kernel, _repeats(size), f"{size}^3 matmul")
    return 2.0 * size**3 / (ms * 1e-3) / 1e9


def torch_gflops(size: int) -> float | None:
    from dlc.bench.gpu.kernel_timing import torch_matmul_ms

    ms = torch_matmul_ms(size, "float32", False, _repeats(size))
    return None if ms is None else 2.0 * size**3 / (ms * 1e-3) / 1e9


def bench_matmul(sizes) -> None:
    print(f"\n{'matmul f32 (kernel only)':26s} {'dlc GFLOP/s':>12s} {'cuBLAS GFLOP/s':>15s} {'dlc/cuBLAS':>10s}")
    for size in sizes:
        ours = matmul_gflops(size)
        theirs = torch_gflops(size)
        ratio = f"{ours / theirs:10.2f}" if theirs else f"{'n/a':>10s}"
        print(f"  {size:5d}^3{'':17s} {ours:12.1f} {('n/a' if theirs is None else f'{theirs:.1f}'):>15s} {ratio}")


SECTIONS = ("ops", "cnns", "control-flow", "tensor-cores", "resnet50", "matmul")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a few ops, the CNNs, ResNet-50 batch 1, one matmul size")
    parser.add_argument("--sizes", default="1024,2048,4096,8192", help="matmul sizes to time")
    parser.add_argument("--no-matmul", action="store_true", help="skip the matmul timing")
    parser.add_argument("--skip", default="", help=f"comma-separated sections to skip: {', '.join(SECTIONS)}")
    parser.add_argument("--emulate", action="store_true",
                        help="no GPU: run the correctness checks on the emulator (slow; use --quick)")
    args = parser.parse_args()
    skip = {s for s in args.skip.split(",") if s}
    unknown = skip - set(SECTIONS)
    if unknown:
        parser.error(f"--skip: unknown section(s) {', '.join(sorted(unknown))} (have {', '.join(SECTIONS)})")
    if args.no_matmul:
        skip.add("matmul")
    for line in ensure_environment():
        print(line)
    from dlc.backends.cuda.nvcc_build import missing_cuda_piece

    if not args.emulate:
        missing = missing_cuda_piece()
        if missing:
            print(f"run_gpu_checks: {missing}", file=sys.stderr)
            return 2
    have_torch = importlib.util.find_spec("torch") is not None
    start = time.perf_counter()
    results: list[tuple[str, str, int, list[str], float]] = []  # section, status, count, failures, seconds
    tmp = tempfile.mkdtemp(prefix="dlc-gpu-checks-")

    def section(name: str, run) -> None:
        if name in skip:
            results.append((name, "skipped (--skip)", 0, [], 0.0))
            return
        began = time.perf_counter()
        try:
            outcome = run()
        except Exception as err:  # one broken section must not hide the others
            print(f"{name}: FAIL: {type(err).__name__}: {str(err).splitlines()[0] if str(err) else ''}", flush=True)
            outcome = (1, [f"{name} (crashed)"])
        seconds = time.perf_counter() - began
        if isinstance(outcome, str):  # a note: not run here
            print(f"\nnote: {name}: {outcome}", flush=True)
            results.append((name, outcome, 0, [], seconds))
            return
        count, failures = outcome
        status = "ok" if not failures else f"FAIL: {', '.join(failures)}"
        print(f"[{name}] {count - len(failures)}/{count} ok in {seconds:.0f} s", flush=True)
        results.append((name, status, count, failures, seconds))

    section("ops", lambda: check_ops(op_cases(args.quick), args.emulate))
    section("cnns", lambda: check_cnns(args.emulate, tmp))
    section("control-flow", lambda: check_control_flow(args.emulate, args.quick))
    section("tensor-cores", lambda: check_tensor_cores(args.quick, args.emulate)
            or "bench/gpu/tensor_core_checks.py is missing: the tensor-core checks were not run")
    section("resnet50", lambda: "needs a GPU (skipped with --emulate)" if args.emulate
            else "needs torch (absent)" if not have_torch
            else bench_resnet([1] if args.quick else [1, 16], tmp))

    def matmul():
        bench_matmul([1024] if args.quick else [int(s) for s in args.sizes.split(",")])
        return 1, []

    section("matmul", lambda: "a device timing (skipped with --emulate)" if args.emulate else matmul())
    shutil.rmtree(tmp, ignore_errors=True)
    failures = [f for _, _, _, fs, _ in results for f in fs]
    print(f"\n{'section':14s} {'checks':>7s} {'seconds':>8s}  result")
    for name, status, count, _, seconds in results:
        print(f"{name:14s} {count:7d} {seconds:8.0f}  {status}")
    ops = next((r for r in results if r[0] == "ops"), None)
    cnns = next((r for r in results if r[0] == "cnns"), None)
    if ops and cnns and ops[2] and cnns[2]:
        print(f"\n{ops[2] - len(ops[3])}/{ops[2]} op cases and {cnns[2] - len(cnns[3])}/{cnns[2]} models match "
              "the evaluator")
    print(f"total {time.perf_counter() - start:.0f} s" + (f"; FAILED: {', '.join(failures)}" if failures else "; all ok"))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
