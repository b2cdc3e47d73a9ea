"""``python -m dlc.backends.cuda [--to-cuda|--to-ptx|--to-gpu-ir] FILE``: CUDA backend driver.

A small stand-in for ``dlc-translate --to-cuda/--to-ptx`` used by the lit tests;
errors print one line (``dlc-cuda: <message>``) and exit with status 1.
"""

from __future__ import annotations

import argparse
import sys


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="dlc-cuda", description=__doc__.splitlines()[0])
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--to-cuda", action="store_true", help="print CUDA C (default)")
    mode.add_argument("--to-ptx", action="store_true", help="print PTX (llvmlite NVPTX)")
    mode.add_argument("--to-gpu-ir", action="store_true", help="print the IR after lower-to-gpu")
    parser.add_argument("--arch", default="sm_90")
    parser.add_argument("file", help="loop-level .mlir file ('-' for stdin)")
    args = parser.parse_args(argv)
    try:
        from xdsl.parser import Parser
        from xdsl.utils.exceptions import ParseError

        from dlc.backends.cuda.cuda_c import CudaEmitError, emit_cuda
        from dlc.context import make_context
        from dlc.backends.cuda.lower_to_gpu import GpuLoweringError, lower_to_gpu

        text = sys.stdin.read() if args.file == "-" else open(args.file).read()
        ctx = make_context()
        from xdsl.dialects.gpu import GPU

        if ctx.get_optional_dialect("gpu") is None:
            ctx.load_dialect(GPU)
        try:
            module = Parser(ctx, text, args.file).parse_module()
            module.verify()
        except ParseError as err:
            print(f"dlc-cuda: {str(err).strip().splitlines()[0]}", file=sys.stderr)
            return 1
        if args.to_ptx:
            from dlc.backends.cuda.ptx import PtxEmitError, emit_ptx

            try:
                sys.stdout.write(emit_ptx(module, arch=args.arch))
            except PtxEmitError as err:
                print(f"dlc-cuda: {err}", file=sys.stderr)
                return 1
        elif args.to_gpu_ir:
            lower_to_gpu(module)
            print(module)
        else:
            sys.stdout.write(emit_cuda(module))
    except (GpuLoweringError, CudaEmitError, OSError) as err:
        print(f"dlc-cuda: {err}", file=sys.stderr)
        return 1
    except Exception as err:  # one line, never a traceback
        print(f"dlc-cuda: {args.file}: {type(err).__name__}: {err}".splitlines()[0], file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
