"""Tensor-core and warp-shuffle checks for the device run (issue 20 items 1-2).

    python bench/gpu/tensor_core_checks.py [--quick] [--emulate] [--sizes 4096]

* correctness: every case of ``dlc.backends.cuda.mma_cases`` (matmul f16 / bf16 / tf32
  on odd shapes, batched, dense + bias + relu + residual, implicit-GEMM convolutions,
  shuffle softmax / layer_norm / reduce_sum / reduce_max) against ``dlc.evaluator``,
  built as ONE library (one nvcc call, ``allow_tf32=True``) and run on the GPU; with
  ``--emulate`` the small cases run on dlc's CUDA emulator instead (no GPU needed).
  Each case's heavy kernel must also get the schedule it is meant for ("mma",
  "row-reduction"): a silent fall back to CUDA cores is a failure.
* speed (GPU only): matmul N^3 f16 and tf32 (default N = 4096) in TFLOP/s, the dlc
  tensor-core kernel alone (CUDA events around its launches) next to torch.matmul
  (cuBLAS, f16 inputs / f32 with ``allow_tf32``) in the same process, as % of cuBLAS
  (issue 20's goal: 70%).

``run_gpu_checks.py`` calls ``run(quick, emulate)`` and ``bench(sizes)``.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))


def _cases(quick: bool, emulate: bool):
    from dlc.backends.cuda.mma_cases import device_cases, emulator_cases

    return emulator_cases() if (quick or emulate) else device_cases()


def _schedule_problem(case) -> str | None:
    """None when the case's kernels include the schedule it is meant to get."""
    from xdsl.dialects.builtin import UnitAttr
    from xdsl.parser import Parser

    from dlc.backends.cuda.lower_to_gpu import ensure_gpu_lowered, is_kernel
    from dlc.context import make_context

    module = Parser(make_context(), case.text).parse_module()
    if case.allow_tf32:
        module.attributes["gpu.allow_tf32"] = UnitAttr()
    got = [k.attributes["gpu.schedule"].data for k in ensure_gpu_lowered(module).ops if is_kernel(k)]
    return None if case.schedule in got else f"expected a '{case.schedule}' kernel, got {got}"


def run(quick: bool, emulate: bool) -> tuple[int, list[str]]:
    """Check every case against the evaluator; returns (cases, failed case ids)."""
    from xdsl.parser import Parser

    from dlc.backends.cuda.mma_cases import tolerance_error
    from dlc.context import make_context
    from dlc.evaluator import evaluate

    cases = _cases(quick, emulate)
    start = time.perf_counter()
    if emulate:
        from xdsl.dialects.builtin import UnitAttr

        from dlc.backends.cuda.emulator import emulate as run_emulated
        from dlc.backends.cuda.lower_to_gpu import ensure_gpu_lowered

        def runner(case, inputs):
            module = Parser(make_context(), case.text).parse_module()
            if case.allow_tf32:
                module.attributes["gpu.allow_tf32"] = UnitAttr()
            return run_emulated(ensure_gpu_lowered(module), inputs, entry=case.id)
    else:
        import dlc

        text = "".join(c.text for c in cases)
        program = dlc.compile(Parser(make_context(), text).parse_module(), target="cuda", allow_tf32=True)
        print(f"tensor cores: compiled {len(cases)} programs into one library in {time.perf_counter() - start:.1f} s")

        def runner(case, inputs):
            # bf16 lives in memory as its bits (i16); CudaProgram converts by value
            bits = [x.view(f"i{x.dtype.itemsize}") if x.dtype.type.__module__ == "ml_dtypes" else x for x in inputs]
            return program.run(case.id, *bits)

    failures = []
    print(f"\n{'tensor-core / shuffle case':36s} {'result':8s} detail")
    for case in cases:
        inputs = case.inputs(seed=1)
        try:
            problem = _schedule_problem(case)
            if problem is None:
                (want,) = evaluate(Parser(make_context(), case.text).parse_module(), inputs)
                (got,) = runner(case, inputs)
                problem = tolerance_error(got, want, case)
        except Exception as err:  # one failing program must not hide the others
            problem = f"{type(err).__name__}: {str(err).splitlines()[0] if str(err) else ''}"
        if problem:
            failures.append(case.id)
        print(f"{case.id:36s} {'FAIL' if problem else 'ok':8s} {problem or case.schedule}")
    return len(cases), failures


# --------------------------------------------------------------------------- speed

def _repeats(size: int) -> int:
    return max(3, min(50, int(2e12 / size**3)))


def dlc_tflops(size: int, kind: str) -> float:
    """TFLOP/s of dlc's tensor-core matmul kernel (f16: the kernel of an f16 model, tf32:
    an f32 model with allow_tf32), kernel only."""
    from xdsl.dialects.builtin import UnitAttr
    from xdsl.parser import Parser

    from dlc.backends.cuda import emit_cuda
    from dlc.backends.cuda.lower_to_gpu import is_kernel
    from dlc.backends.cuda.mma_cases import matmul_case
    from dlc.bench.gpu.kernel_timing import kernel_ms
    from dlc.context import make_context

    case = matmul_case("main", size, size, size, "f16" if kind == "f16" else "f32", allow_tf32=kind == "tf32")
    module = Parser(make_context(), case.text).parse_module()
    if case.allow_tf32:
        module.attributes["gpu.allow_tf32"] = UnitAttr()
    source = emit_cuda(module)
    kernel = next(op for op in module.ops if is_kernel(op) and op.attributes["gpu.schedule"].data == "mma")
    ms = kernel_ms(source, kernel, _repeats(size), f"{size}^3 {kind} tensor-core matmul")
    return 2.0 * size**3 / (ms * 1e-3) / 1e12


def torch_tflops(size: int, kind: str) -> float | None:
    from dlc.bench.gpu.kernel_timing import torch_matmul_ms

    ms = torch_matmul_ms(size, "float16" if kind == "f16" else "float32", kind == "tf32", _repeats(size))
    return None if ms is None else 2.0 * size**3 / (ms * 1e-3) / 1e12


def bench(sizes) -> list[str]:
    """Print dlc vs cuBLAS TFLOP/s; returns the lines below the 70% goal (not failures)."""
    below = []
    print(f"\n{'tensor-core matmul (kernel)':30s} {'dlc TFLOP/s':>12s} {'cuBLAS TFLOP/s':>15s} {'% cuBLAS':>9s}")
    for size in sizes:
        for kind in ("f16", "tf32"):
            ours = dlc_tflops(size, kind)
            theirs = torch_tflops(size, kind)
            pct = f"{100 * ours / theirs:8.1f}%" if theirs else f"{'n/a':>9s}"
            label = f"{size}^3 {kind}"
            print(f"  {label:28s} {ours:12.1f} {('n/a' if theirs is None else f'{theirs:.1f}'):>15s} {pct}")
            if theirs and ours < 0.7 * theirs:
                below.append(f"{label}: {100 * ours / theirs:.0f}% of cuBLAS (goal 70%)")
    return below


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="the small cases only")
    parser.add_argument("--emulate", action="store_true", help="no GPU: the small cases on the emulator")
    parser.add_argument("--sizes", default="4096", help="matmul sizes to time (GPU only)")
    args = parser.parse_args()
    sys.path.insert(0, HERE)
    from run_gpu_checks import ensure_environment

    for line in ensure_environment():
        print(line)
    if not args.emulate:
        from dlc.backends.cuda.nvcc_build import missing_cuda_piece

        missing = missing_cuda_piece()
        if missing:
            print(f"tensor_core_checks: {missing}", file=sys.stderr)
            return 2
    count, failures = run(args.quick, args.emulate)
    print(f"\n{count - len(failures)}/{count} tensor-core / shuffle cases match the evaluator"
          + (f"; FAILED: {', '.join(failures)}" if failures else ""))
    if not args.emulate:
        for line in bench([int(s) for s in args.sizes.split(",")]):
            print(f"below goal: {line}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
