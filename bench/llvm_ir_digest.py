"""Digest of the LLVM IR that `dlc.compile` produces for each ONNX light model and the
bundled small CNN: the check that a refactoring changed no generated code.

    python -m dlc.bench.llvm_ir_digest [--out DIR] [--models squeezenet,resnet50]

Prints `model sha256-prefix bytes` per model; run it on two trees (e.g. with
PYTHONPATH pointing at a checkout of the old commit) with the same `--models` and compare
the columns (weight globals are numbered per process, `@__dlc_w<module>_<i>`, so a digest
depends on which models were compiled before it in that run). Same digest, same machine
code, so the same speed and the same results. `--out` also writes
each module's `.ll` for a diff.
"""

from __future__ import annotations

import argparse
import hashlib
import os

from dlc.bench.models import model_paths


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", help="also write each model's LLVM IR (.ll) here")
    parser.add_argument("--models", help="comma-separated name parts (default: all)")
    args = parser.parse_args()
    import dlc

    if args.out:
        os.makedirs(args.out, exist_ok=True)
    for path in model_paths(args.models):
        ir = dlc.compile(path).llvm_ir
        name = os.path.basename(path)
        if args.out:
            with open(os.path.join(args.out, name + ".ll"), "w") as f:
                f.write(ir)
        print(name, hashlib.sha256(ir.encode()).hexdigest()[:16], len(ir), flush=True)


if __name__ == "__main__":
    main()
