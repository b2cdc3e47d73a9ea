"""``python test/fuzz [--family F] [--case ID ...] [--keep DIR] [--isolated]``."""

from __future__ import annotations

import argparse
import importlib.util
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))


def load_package():
    """Import this folder as the package ``dlc_fuzz`` (``test`` is the stdlib's)."""
    if "dlc_fuzz" in sys.modules:
        return sys.modules["dlc_fuzz"]
    spec = importlib.util.spec_from_file_location(
        "dlc_fuzz", os.path.join(HERE, "__init__.py"), submodule_search_locations=[HERE])
    module = importlib.util.module_from_spec(spec)
    sys.modules["dlc_fuzz"] = module
    spec.loader.exec_module(module)
    return module


def main(argv: list[str]) -> int:
    if sys.path and os.path.abspath(sys.path[0]) == HERE:
        del sys.path[0]  # the folder's modules are the package's, not top-level ones
    fuzz = load_package()
    if argv[:1] == ["--worker"]:
        from dlc_fuzz.worker import main as worker_main

        return worker_main(argv[1])
    parser = argparse.ArgumentParser(prog="python test/fuzz", description=__doc__)
    parser.add_argument("--family", action="append", choices=["onnx", "mlir", "runtime"])
    parser.add_argument("--case", action="append", default=[], help="run only this case id (repeatable)")
    parser.add_argument("--list", action="store_true", help="list the cases and exit")
    parser.add_argument("--keep", metavar="DIR", help="keep the case directories under DIR")
    parser.add_argument("--isolated", action="store_true", help="one worker process per case")
    args = parser.parse_args(argv)
    families = args.family or sorted({c.split("-")[0] for c in args.case}) or ["onnx", "mlir", "runtime"]
    cases = fuzz.all_cases(tuple(families))
    if args.case:
        unknown = set(args.case) - {c.id for c in cases}
        if unknown:
            parser.error(f"unknown case id(s): {', '.join(sorted(unknown))}")
        cases = [c for c in cases if c.id in args.case]
    if args.list:
        for c in cases:
            print(f"{c.id}\t{c.expect}\t{c.what}\t{' '.join(c.argv) if c.argv else c.api}")
        return 0
    results = fuzz.run_cases(cases, keep=args.keep, isolated=args.isolated)
    if args.case:
        for r in results:
            print(f"== {r.case.id} [{r.case.what}] expect={r.case.expect}")
            print("command:", " ".join(r.case.argv) if r.case.argv else f"{r.case.api}({r.case.params})")
            print("returncode:", r.outcome.returncode, r.outcome.died or "")
            if r.outcome.api_error:
                print("raised:", r.outcome.api_error)
            print("stderr:\n" + r.outcome.stderr)
    print(fuzz.summary(results))
    return 0 if all(r.passed for r in results) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
