"""The fuzz suite (test/fuzz): every case, one test each, judged by the suite's oracle
(no crash signal or hang, no traceback, no internal error; a refused input exits
non-zero with one located line and writes nothing).

The cases run once per session, in batches (test/fuzz/runner.py), for the selected
tests only: ``pytest test/python/test_fuzz.py -k onnx-17`` runs one case. The same
case from the command line, with its whole stderr: ``python test/fuzz --case onnx-17``.
"""

from __future__ import annotations

import importlib.util
import os
import sys

import pytest

FUZZ_DIR = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "fuzz")


def _load_fuzz():
    """test/fuzz as the package ``dlc_fuzz`` (``test`` is the standard library's name)."""
    if "dlc_fuzz" not in sys.modules:
        spec = importlib.util.spec_from_file_location(
            "dlc_fuzz", os.path.join(FUZZ_DIR, "__init__.py"), submodule_search_locations=[FUZZ_DIR])
        module = importlib.util.module_from_spec(spec)
        sys.modules["dlc_fuzz"] = module
        spec.loader.exec_module(module)
    return sys.modules["dlc_fuzz"]


fuzz = _load_fuzz()
CASES = fuzz.all_cases()
BY_ID = {c.id: c for c in CASES}


@pytest.fixture(scope="module")
def results(request):
    selected = [item.callspec.params["case_id"] for item in request.session.items
                if getattr(item, "callspec", None) and "case_id" in item.callspec.params
                and item.module is request.module]
    got = fuzz.run_cases([BY_ID[i] for i in selected])
    print("\n" + fuzz.summary(got))
    return {r.case.id: r for r in got}


@pytest.mark.parametrize("case_id", list(BY_ID))
def test_fuzz_case(results, case_id):
    r = results[case_id]
    detail = r.outcome.api_error if r.case.api else r.outcome.stderr.strip()[:500]
    if not r.passed:
        pytest.fail(f"{case_id} [{r.case.what}]: {'; '.join(r.problems)}\n{detail}", pytrace=False)


def test_case_ids_are_stable():
    """Ids are reproducible (seeded generation): a second build gives the same cases."""
    again = fuzz.all_cases()
    assert [(c.id, c.what, c.argv, c.files) for c in again] == [(c.id, c.what, c.argv, c.files) for c in CASES]
    counts = {f: sum(c.family == f for c in CASES) for f in ("onnx", "mlir", "runtime")}
    assert all(n >= 40 for n in counts.values()), counts


def test_oracle_flags_each_failure_kind():
    """The oracle itself: each promise broken once, on a made-up outcome."""
    from dlc_fuzz.case import Case, Outcome, judge

    bad = Case(id="x", family="mlir", what="w", expect="error", locators=[r"^in\.mlir:\d+:\d+: error: "],
               must_not_exist=["out.mlir"])
    located = "in.mlir:1:2: error: bad\n  text\n  ^"
    assert judge(bad, Outcome(returncode=1, stderr=located)) == []
    assert judge(bad, Outcome(returncode=None, died="signal 11")) == ["crashed or hung: signal 11"]
    assert "invalid input accepted" in judge(bad, Outcome(returncode=0))
    assert "message not located" in judge(bad, Outcome(returncode=1, stderr="dlc-opt: error: bad"))
    assert "traceback in stderr" in judge(bad, Outcome(returncode=1, stderr=located + "\nTraceback (most"))
    assert "internal error" in judge(bad, Outcome(returncode=1, stderr="dlc-opt: internal error: KeyError"))
    assert any("wrote files" in p for p in judge(bad, Outcome(returncode=1, stderr=located,
                                                              listing_changed=["out.mlir"])))
    assert any("characters" in p for p in judge(bad, Outcome(returncode=1, stderr="in.mlir:1:2: error: "
                                                             + "x" * 2000)))
    ok = Case(id="y", family="mlir", what="w", expect="ok")
    assert judge(ok, Outcome(returncode=1, stderr="in.mlir:1:2: error: no")) == ["valid input refused"]
    assert judge(ok, Outcome(returncode=0, specials_broken=["p (fifo) replaced"])) == ["clobbered: p (fifo) replaced"]


def test_runner_catches_crash_and_hang():
    """A case that kills its worker or hangs is reported as such, and the cases after
    it in the same batch still run (in a new worker)."""
    from dlc_fuzz.case import Case

    cases = [Case(id="t-crash", family="t", what="segfault", api="selftest_crash"),
             Case(id="t-hang", family="t", what="hang", api="selftest_hang", timeout=3),
             Case(id="t-ok", family="t", what="ok", api="selftest_ok", expect="ok")]
    got = {r.case.id: r for r in fuzz.run_cases(cases)}
    assert got["t-crash"].outcome.died.startswith("signal 11"), got["t-crash"].outcome
    assert got["t-hang"].outcome.died.startswith("timeout"), got["t-hang"].outcome
    assert got["t-ok"].passed and got["t-ok"].outcome.returncode == 0
