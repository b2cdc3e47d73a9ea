#!/usr/bin/env python3
"""ONNX node conformance: run onnx's backend node test cases through dlc.

Each case (``onnx.backend.test.case.node.collect_testcases()``: a one-node
model with input and expected output arrays) is imported with
``dlc.frontends.onnx.import_model`` and executed by

* ``--executor compiled`` (the real target): ``dlc.driver.compile(module)``;
* ``--executor evaluator`` (a development aid): ``dlc.evaluator.evaluate``.

Every case runs in a worker process of a multiprocessing pool under a time
limit (SIGALRM in the worker, plus a hard deadline in the parent). Results are
printed as pass/fail/error counts per op and compared with the expected
failures file (one ``case_name  # reason`` per line): a case that fails but is
not listed (a regression) or is listed but passes (newly passing: remove it)
makes the run exit 1. ``--update`` rewrites the file from this run (with
``-k``, only the entries of the cases that ran).

Inputs that a case feeds at run time but the importer needs at compile time
(Reshape's shape, Slice's starts...) are bound as constants when the importer
asks for them (``NeedsConstantError``); they are not run-time inputs of dlc's
program then.

    python conformance/run_conformance.py --executor evaluator
    python conformance/run_conformance.py --executor compiled -k conv -v
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import os
import re
import signal
import sys
import time
import warnings
from collections import Counter, defaultdict

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
EXPECTED = {
    "compiled": os.path.join(HERE, "expected_failures.txt"),
    "evaluator": os.path.join(HERE, "expected_failures_evaluator.txt"),
}


# extra seconds the parent waits past --timeout before killing a worker
HARD_GRACE_S = 30


class CaseTimeout(Exception):
    pass


# ---------------------------------------------------------------------------
# collecting cases
# ---------------------------------------------------------------------------


_ALL_CASES: list | None = None


def collect_cases(pattern: str | None = None) -> list:
    global _ALL_CASES
    if _ALL_CASES is None:  # building the cases takes seconds: once per process
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            with np.errstate(all="ignore"):
                from onnx.backend.test.case.node import collect_testcases

                _ALL_CASES = collect_testcases()
    cases = _ALL_CASES
    if pattern:
        rx = re.compile(pattern)
        cases = [c for c in cases if rx.search(c.name)]
    return sorted(cases, key=lambda c: c.name)


_SCHEMA_NAMES: list[str] | None = None


def case_op(case) -> str:
    """The op a case tests: its only non-Constant node, else the longest ONNX op
    name the test name starts with (expanded function bodies), else 'other'."""
    global _SCHEMA_NAMES
    nodes = [n.op_type for n in case.model.graph.node if n.op_type != "Constant"]
    if len(nodes) == 1:
        return nodes[0]
    if _SCHEMA_NAMES is None:
        import onnx.defs

        _SCHEMA_NAMES = sorted({s.name for s in onnx.defs.get_all_schemas_with_history()},
                               key=len, reverse=True)
    flat = case.name[len("test_"):].replace("_", "").lower()
    for name in _SCHEMA_NAMES:
        if flat.startswith(name.lower()):
            return name
    if len(case.model.graph.node) == 1:
        return "Constant"
    return "other"


# ---------------------------------------------------------------------------
# running one case (in a worker)
# ---------------------------------------------------------------------------


def _on_alarm(signum, frame):
    raise CaseTimeout()


def _import(model, runtime_inputs: dict):
    """Import, binding graph inputs the importer needs as constants."""
    from dlc.frontends.onnx import NeedsConstantError, import_model

    constants: dict = {}
    while True:
        try:
            return import_model(model, constant_inputs=constants), constants
        except NeedsConstantError as err:
            name = err.input_name
            if name is None or name in constants or name not in runtime_inputs:
                raise
            constants[name] = runtime_inputs[name]


def run_case(payload) -> tuple[str, str, str]:
    """-> (name, status, message) with status pass | fail | error | timeout."""
    name, model_bytes, data_sets, rtol, atol, executor, timeout = payload
    signal.signal(signal.SIGALRM, _on_alarm)
    signal.alarm(timeout)
    try:
        import onnx

        model = onnx.ModelProto.FromString(model_bytes)
        inits = {i.name for i in model.graph.initializer}
        input_names = [i.name for i in model.graph.input if i.name not in inits]
        compiled = None
        bound: set[str] = set()
        for inputs, expected in data_sets:
            inputs = [_normalize(a) for a in inputs]
            expected = [_normalize(a) for a in expected]
            if any(not isinstance(a, np.ndarray) for a in list(inputs) + list(expected)):
                return name, "error", "non-tensor inputs or outputs (sequence/optional)"
            feeds = dict(zip(input_names, inputs))
            module, constants = _import(model, feeds)
            bound.update(constants)
            args = [feeds[n] for n in input_names if n not in constants]
            with warnings.catch_warnings(), np.errstate(all="ignore"):
                warnings.simplefilter("ignore")
                if executor == "evaluator":
                    from dlc.evaluator import evaluate

                    outs = evaluate(module, args)
                else:
                    if compiled is None:
                        from dlc.driver import compile as dlc_compile

                        compiled = dlc_compile(module)
                    outs = compiled(*args)
            if len(outs) != len(expected):
                return name, "fail", f"{len(outs)} outputs, expected {len(expected)}"
            for i, (got, want) in enumerate(zip(outs, expected)):
                got = np.asarray(got)
                if got.shape != want.shape:
                    return name, "fail", f"output {i}: shape {got.shape}, expected {want.shape}"
                if got.dtype != want.dtype:
                    return name, "fail", f"output {i}: dtype {got.dtype}, expected {want.dtype}"
                if want.dtype.type.__module__ == "ml_dtypes" and "int" not in want.dtype.name:
                    # narrow floats (bf16, float8...): compared as f32, NaN equal to NaN
                    ok = np.allclose(got.astype(np.float32), want.astype(np.float32),
                                     rtol=rtol, atol=atol, equal_nan=True)
                elif want.dtype.kind in "fc":
                    ok = np.allclose(got, want, rtol=rtol, atol=atol, equal_nan=True)
                else:
                    ok = np.array_equal(got, want)
                if not ok:
                    err = np.max(np.abs(got.astype(np.float64) - want.astype(np.float64))) if got.size else 0
                    return name, "fail", f"output {i}: values differ (max abs error {err:.3g})"
        # a pass with graph inputs bound at compile time says which
        return name, "pass", ("compile-time inputs: " + ", ".join(sorted(bound))) if bound else ""
    except CaseTimeout:
        return name, "timeout", f"took more than {timeout}s"
    except Exception as err:  # a case's error is its result, reported in one line
        message = str(err).splitlines()[0] if str(err) else ""
        return name, "error", f"{type(err).__name__}: {message}"[:300]
    finally:
        signal.alarm(0)


def _normalize(value):
    """Some cases hold TensorProtos (e.g. float8 data) instead of arrays."""
    import onnx

    if isinstance(value, onnx.TensorProto):
        return onnx.numpy_helper.to_array(value)
    if isinstance(value, np.generic):
        return np.asarray(value)
    return value


def _payload(case, executor: str, timeout: int):
    return (case.name, case.model.SerializeToString(), case.data_sets, case.rtol, case.atol,
            executor, timeout)


def run_all(cases, executor: str, jobs: int, timeout: int, verbose: bool) -> dict[str, tuple[str, str]]:
    """Run every case in a pool of worker processes, with a progress bar on a terminal
    (none when stderr is piped). A worker stuck past the
    hard deadline (inside native code, where SIGALRM cannot interrupt it) is
    killed with its pool, and the cases not finished yet go to a fresh pool."""
    from dlc.tools.progress import task_progress

    with task_progress(len(cases), "conformance") as advance:
        return _run_all(cases, executor, jobs, timeout, verbose, advance)


def _run_all(cases, executor, jobs, timeout, verbose, advance) -> dict[str, tuple[str, str]]:
    results: dict[str, tuple[str, str]] = {}
    ctx = mp.get_context("fork")
    todo = list(cases)
    while todo:
        pool = ctx.Pool(jobs, maxtasksperchild=100)
        pending = [(c, pool.apply_async(run_case, (_payload(c, executor, timeout),))) for c in todo]
        todo = []
        try:
            for i, (case, handle) in enumerate(pending):
                try:
                    _, status, message = handle.get(timeout=timeout + HARD_GRACE_S)
                except mp.TimeoutError:
                    status, message = "timeout", f"worker stuck past {timeout + HARD_GRACE_S}s (killed)"
                    _record(results, case.name, status, message, verbose, advance)
                    rest = pending[i + 1:]
                    for other, h in rest:  # keep what already finished
                        if h.ready():
                            _record(results, other.name, *h.get()[1:], verbose, advance)
                    todo = [other for other, h in rest if other.name not in results]
                    break
                _record(results, case.name, status, message, verbose, advance)
        finally:
            pool.terminate()
            pool.join()
    return results


def _record(results, name, status, message, verbose, advance=lambda label: None) -> None:
    results[name] = (status, message)
    advance(name)
    if verbose and status != "pass":
        print(f"{status:8} {name}: {message}", flush=True)


# ---------------------------------------------------------------------------
# reporting and the expected-failures file
# ---------------------------------------------------------------------------


def read_expected(path: str) -> dict[str, str]:
    expected = {}
    if not os.path.exists(path):
        return expected
    with open(path) as f:
        for line in f:
            line = line.strip()
            if not line or line.startswith("#"):
                continue
            name, _, reason = line.partition("#")
            expected[name.strip()] = reason.strip()
    return expected


def _as_results(entries: dict) -> dict[str, tuple[str, str]]:
    """Expected-file entries ("status: reason") back as (status, message)."""
    out = {}
    for name, (_, reason) in entries.items():
        status, _, message = reason.partition(": ")
        out[name] = (status or "fail", message)
    return out


def write_expected(path: str, results, executor: str) -> None:
    with open(path, "w") as f:
        f.write(f"# ONNX node conformance cases expected to fail with --executor {executor}.\n")
        f.write("# One case per line: name  # status: reason. Regenerate with --update.\n")
        for name in sorted(results):
            status, message = results[name]
            if status != "pass":
                reason = f"{status}: {message}".replace("\n", " ")
                f.write(f"{name}  # {reason}\n")


def report(cases, results) -> None:
    by_op: dict[str, Counter] = defaultdict(Counter)
    for case in cases:
        by_op[case_op(case)][results[case.name][0]] += 1
    print(f"{'op':28} {'pass':>5} {'fail':>5} {'error':>5} {'tmout':>5}")
    for op in sorted(by_op):
        c = by_op[op]
        print(f"{op:28} {c['pass']:5} {c['fail']:5} {c['error']:5} {c['timeout']:5}")
    bound = sum(1 for status, message in results.values() if status == "pass" and message)
    total = Counter(status for status, _ in results.values())
    print(f"{'TOTAL':28} {total['pass']:5} {total['fail']:5} {total['error']:5} {total['timeout']:5}"
          f"   ({total['pass']}/{len(results)} pass)")
    if bound:
        print(f"({bound} passing cases bound shape-like graph inputs as compile-time constants)")


def main(argv=None, cases=None) -> int:
    """``cases`` replaces onnx's collection (objects with name, model, data_sets,
    rtol, atol), e.g. for testing the runner itself."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--executor", choices=("evaluator", "compiled"), default="compiled")
    parser.add_argument("-k", "--filter", help="regex on case names")
    parser.add_argument("-j", "--jobs", type=int, default=os.cpu_count() or 2)
    parser.add_argument("--timeout", type=int, default=60, help="seconds per case")
    parser.add_argument("--expected", help="expected-failures file (default per executor)")
    parser.add_argument("--update", action="store_true",
                        help="rewrite the expected-failures file (with -k: only the matching cases' entries)")
    parser.add_argument("-v", "--verbose", action="store_true", help="print every non-passing case")
    args = parser.parse_args(argv)

    if args.executor == "compiled":
        try:
            import dlc.driver  # noqa: F401
        except ImportError as err:
            print(f"error: --executor compiled needs dlc.driver ({err})", file=sys.stderr)
            return 2
    start = time.time()
    if cases is None:
        cases = collect_cases(args.filter)
    elif args.filter:
        cases = [c for c in cases if re.search(args.filter, c.name)]
    results = run_all(cases, args.executor, args.jobs, args.timeout, args.verbose)
    report(cases, results)
    print(f"{len(cases)} cases in {time.time() - start:.0f}s")

    path = args.expected or EXPECTED[args.executor]
    if args.update:
        if args.filter:  # merge: only the cases of this run change their entries
            kept = {n: ("fail", r) for n, r in read_expected(path).items() if n not in results}
            write_expected(path, {**_as_results(kept), **results}, args.executor)
        else:
            write_expected(path, results, args.executor)
        print(f"wrote {path}")
        return 0
    expected = read_expected(path)
    regressions = sorted(n for n, (s, _) in results.items() if s != "pass" and n not in expected)
    fixed = sorted(n for n, (s, _) in results.items() if s == "pass" and n in expected)
    for name in regressions:
        print(f"REGRESSION {name}: {results[name][0]}: {results[name][1]}")
    for name in fixed:
        print(f"NEWLY PASSING {name} (remove it from {os.path.relpath(path)})")
    if regressions or fixed:
        print(f"{len(regressions)} regressions, {len(fixed)} newly passing vs {os.path.relpath(path)}")
        return 1
    print(f"matches {os.path.relpath(path)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
