"""Tests of the command-line tools (dlc-opt, dlc-translate, dlc) and their
shared diagnostics/printing helpers.

Most tests call a tool's ``main(argv)`` in-process (fast; stdout/stderr via
capsys); a few run the installed console scripts as subprocesses to check the
real entry points, exit codes and the absence of tracebacks.
"""

from __future__ import annotations

import os
import subprocess
import sys
import types

import numpy as np
import pytest

from dlc.tools import dlc_cli, dlc_opt, dlc_translate
from dlc.diagnostics import DiagnosticError, op_error
from dlc.tools.printing import ELIDED, module_to_str

ADD = """\
func.func @main(%a: tensor<3x4xf32>, %b: tensor<4xf32>) -> tensor<3x4xf32> {
  %c = graph.add %a, %b : (tensor<3x4xf32>, tensor<4xf32>) -> tensor<3x4xf32>
  %d = graph.add %a, %b : (tensor<3x4xf32>, tensor<4xf32>) -> tensor<3x4xf32>
  %e = graph.mul %c, %d : (tensor<3x4xf32>, tensor<3x4xf32>) -> tensor<3x4xf32>
  func.return %e : tensor<3x4xf32>
}
"""

BAD_SHAPE = """\
func.func @main(%a: tensor<3x4xf32>, %b: tensor<5xf32>) -> tensor<3x4xf32> {
  %c = graph.add %a, %b : (tensor<3x4xf32>, tensor<5xf32>) -> tensor<3x4xf32>
  func.return %c : tensor<3x4xf32>
}
"""


def write(tmp_path, name: str, text: str) -> str:
    path = tmp_path / name
    path.write_text(text)
    return str(path)


def run_opt(capsys, *argv) -> tuple[int, str, str]:
    code = dlc_opt.main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


# ---------------------------------------------------------------------------
# dlc-opt: passes, flags
# ---------------------------------------------------------------------------


def test_opt_runs_pipeline(tmp_path, capsys):
    path = write(tmp_path, "add.mlir", ADD)
    code, out, err = run_opt(capsys, path, "--pipeline=cse")
    assert code == 0, err
    assert out.count("graph.add") == 1
    assert "graph.mul %c, %c" in out


def test_opt_p_alias_and_stdin(tmp_path, capsys, monkeypatch):
    import io

    monkeypatch.setattr(sys, "stdin", io.StringIO(ADD))
    code, out, err = run_opt(capsys, "-p", "cse", "-")
    assert code == 0, err
    assert out.count("graph.add") == 1


def test_opt_output_file_is_written_only_on_success(tmp_path, capsys):
    good = write(tmp_path, "good.mlir", ADD)
    bad = write(tmp_path, "bad.mlir", BAD_SHAPE)
    out_path = tmp_path / "out.mlir"
    assert run_opt(capsys, bad, "-o", str(out_path))[0] == 1
    assert not out_path.exists()
    assert run_opt(capsys, good, "-o", str(out_path))[0] == 0
    assert "graph.mul" in out_path.read_text()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bad.mlir", "good.mlir", "out.mlir"]


def test_opt_generic_round_trips(tmp_path, capsys):
    path = write(tmp_path, "add.mlir", ADD)
    code, generic, _ = run_opt(capsys, path, "--generic")
    assert code == 0 and '"graph.add"' in generic
    again = write(tmp_path, "generic.mlir", generic)
    code, custom, _ = run_opt(capsys, again)
    code2, direct, _ = run_opt(capsys, path)
    assert code == code2 == 0
    assert custom == direct


def test_opt_print_ir_after_all_goes_to_stderr(tmp_path, capsys):
    path = write(tmp_path, "add.mlir", ADD)
    code, out, err = run_opt(capsys, path, "-p", "cse,dce", "--print-ir-after-all")
    assert code == 0
    assert err.index("// -----// IR Dump After cse //----- //") < err.index(
        "// -----// IR Dump After dce //----- //"
    )
    assert "IR Dump" not in out


def test_opt_pass_timing_lists_each_pass(tmp_path, capsys):
    path = write(tmp_path, "add.mlir", ADD)
    code, out, err = run_opt(capsys, path, "-p", "cse,canonicalize", "--pass-timing")
    assert code == 0
    names = [line.split()[-1] for line in err.splitlines() if "%)" in line]
    assert names == ["parse", "verify", "cse", "canonicalize", "output", "Total"]


def test_opt_list_passes_has_descriptions(capsys):
    from dlc.passes import available_passes

    code, out, _ = run_opt(capsys, "--list-passes")
    assert code == 0
    listed = {line.split()[0]: line.split(None, 1)[1] for line in out.splitlines()}
    assert set(listed) == set(available_passes())
    assert listed["canonicalize"] == "Applies all canonicalization patterns."
    assert all(desc.strip() for desc in listed.values())


def _broken_pass():
    import dlc.transforms.no_such_module  # noqa: F401  (a pass whose module does not import)


def test_a_pass_that_does_not_load_is_an_error_not_skipped(monkeypatch):
    from dlc import passes

    monkeypatch.setitem(passes.PASSES, "test-broken", _broken_pass)
    with pytest.raises(passes.PassLoadError, match="pass 'test-broken' is registered but cannot be loaded: "
                                                  "ModuleNotFoundError"):
        passes.available_passes()
    with pytest.raises(passes.PassLoadError, match="pass 'test-broken'"):
        passes.load_pass("test-broken")
    with pytest.raises(passes.PassLoadError, match="pass 'nope' is not registered"):
        passes.load_pass("nope")


def test_opt_names_a_pass_that_does_not_load_in_one_line(tmp_path, capsys, monkeypatch):
    from dlc import passes

    monkeypatch.setitem(passes.PASSES, "test-broken", _broken_pass)
    for argv in (["--list-passes"], [write(tmp_path, "add.mlir", ADD), "-p", "test-broken"]):
        code, out, err = run_opt(capsys, *argv)
        assert code == 1 and out == ""
        assert err.startswith("dlc-opt: error: pass 'test-broken' is registered but cannot be loaded: "
                              "ModuleNotFoundError: No module named 'dlc.transforms.no_such_module'")
        assert err.count("\n") == 1


def test_split_chunks_keep_line_numbers():
    text = "a\n// -----\nb\nc\n  // -----  \nd"
    chunks = dlc_opt.split_chunks(text)
    assert [c.split("\n") for c in chunks] == [["a"], ["", "", "b", "c"], ["", "", "", "", "", "d"]]


def test_split_input_file_reports_original_lines(tmp_path, capsys):
    text = ADD + "// -----\n" + BAD_SHAPE
    path = write(tmp_path, "two.mlir", text)
    code, out, err = run_opt(capsys, path, "--split-input-file")
    assert code == 1
    bad_line = ADD.count("\n") + 1 + 2  # marker line, then line 2 of BAD_SHAPE
    assert err.startswith(f"{path}:{bad_line}:3: error: graph.add: shapes 3x4 and 5")
    assert out == ""  # nothing printed when a chunk fails


def test_expectation_targets():
    chunk = "x // expected-error {{same}}\n// expected-error @+2 {{plus}}\n\n// expected-error @-3 {{minus}}\n// expected-error @above {{above}}\n// expected-error @below {{below}}\n// expected-error @unknown {{nowhere}}"
    got = [(e.text, e.line) for e in dlc_opt.expectations(chunk)]
    assert got == [("same", 1), ("plus", 4), ("minus", 1), ("above", 4), ("below", 7), ("nowhere", None)]


def test_verify_diagnostics(tmp_path, capsys):
    annotated = BAD_SHAPE.replace(
        "  %c = graph.add", "  // expected-error @+1 {{not broadcast-compatible}}\n  %c = graph.add"
    )
    assert run_opt(capsys, write(tmp_path, "ok.mlir", annotated), "--verify-diagnostics")[0] == 0
    wrong = annotated.replace("not broadcast-compatible", "something else")
    code, _, err = run_opt(capsys, write(tmp_path, "wrong.mlir", wrong), "--verify-diagnostics")
    assert code == 1
    assert "unexpected error: graph.add" in err
    assert 'expected error "something else" was not produced' in err
    # an expectation on a module that verifies
    missing = ADD.replace("  %c =", "  // expected-error @+1 {{boom}}\n  %c =")
    code, _, err = run_opt(capsys, write(tmp_path, "missing.mlir", missing), "--verify-diagnostics")
    assert code == 1 and 'missing.mlir:2:3: error: expected error "boom" was not produced' in err


# ---------------------------------------------------------------------------
# dlc-opt: errors
# ---------------------------------------------------------------------------

ERROR_CASES = {
    "syntax": ("func.func @f(%a: tensor<3xf32>) -> tensor<3xf32> {\n  func.return %a, : tensor<3xf32>\n}\n",
               ":2:19: error: operand expected"),
    "unknown-op": ("%x = graph.nope : () -> tensor<3xf32>\n", ":1:6: error: unknown operation 'graph.nope'"),
    "unknown-dialect": ('%x = "zz.op"() : () -> tensor<3xf32>\n',
                        ":1:7: error: unknown operation 'zz.op': no dialect 'zz' is loaded"),
    "type-mismatch": ("func.func @f(%a: tensor<3xf32>) -> tensor<3xf32> {\n  func.return %a : tensor<4xf32>\n}\n",
                      ":2:15: error: operand is used with type tensor<4xf32>"),
    "verifier": (BAD_SHAPE, ":2:3: error: graph.add: shapes 3x4 and 5 are not broadcast-compatible"),
    "undefined-value": ("func.func @f() -> tensor<3xf32> {\n  func.return %nope : tensor<3xf32>\n}\n",
                        ":2:15: error: use of undefined value '%nope'"),
}


@pytest.mark.parametrize("case", sorted(ERROR_CASES))
def test_opt_errors_are_one_located_message(tmp_path, capsys, case):
    text, expected = ERROR_CASES[case]
    path = write(tmp_path, "in.mlir", text)
    code, out, err = run_opt(capsys, path, "-o", str(tmp_path / "out.mlir"))
    assert code == 1
    lines = err.rstrip("\n").split("\n")
    assert lines[0].startswith(path + expected), err
    assert len(lines) == 3 and set(lines[2].strip()) == {"^"}, err  # source line + caret
    assert "Traceback" not in err and out == ""
    assert not (tmp_path / "out.mlir").exists()


@pytest.mark.parametrize(
    "pipeline, message",
    [
        ("nope", "dlc-opt: error: unknown pass 'nope' (not registered; see dlc-opt --list-passes)"),
        ("cse{x=1}", "dlc-opt: error: pass 'cse' has no option 'x' (it takes no options)"),
        ("cse{", "<pipeline>:1:5: error: invalid pass pipeline: Expected argument name here"),
    ],
)
def test_opt_pipeline_errors(tmp_path, capsys, pipeline, message):
    path = write(tmp_path, "add.mlir", ADD)
    code, out, err = run_opt(capsys, path, "-p", pipeline)
    assert code == 1 and err.startswith(message), err
    assert out == ""


def test_opt_missing_file(tmp_path, capsys):
    code, _, err = run_opt(capsys, str(tmp_path / "nope.mlir"))
    assert code == 1 and err == f"dlc-opt: error: cannot open '{tmp_path / 'nope.mlir'}': no such file\n"


class _FailingPass:
    """Registers a pass that fails (OpError at the first graph op) or crashes."""

    @staticmethod
    def make(kind: str):
        from dataclasses import dataclass

        from xdsl.passes import ModulePass

        @dataclass(frozen=True)
        class TestFailPass(ModulePass):
            """A pass that fails, for the tools' tests."""

            name = f"test-{kind}"

            def apply(self, ctx, op) -> None:
                first = next(o for o in op.walk() if o.name.startswith("graph."))
                if kind == "fail":
                    raise op_error(first, "cannot handle this op")
                if kind == "break-ir":  # a wrong result type, at the same location
                    from xdsl.dialects.builtin import Float32Type, TensorType
                    from xdsl.rewriter import Rewriter

                    broken = type(first).create(
                        operands=list(first.operands), attributes=dict(first.attributes),
                        result_types=[TensorType(Float32Type(), [9])], location=first.location,
                    )
                    Rewriter.replace_op(first, broken)
                    return
                raise KeyError("oops")

        return TestFailPass


@pytest.fixture
def failing_passes(monkeypatch):
    from dlc import passes

    for kind in ("fail", "crash", "break-ir"):
        cls = _FailingPass.make(kind)
        monkeypatch.setitem(passes.PASSES, f"test-{kind}", lambda cls=cls: cls)


def test_pass_failure_points_at_the_op(tmp_path, capsys, failing_passes):
    path = write(tmp_path, "add.mlir", ADD)
    code, out, err = run_opt(capsys, path, "-p", "cse,test-fail", "-o", str(tmp_path / "o.mlir"))
    assert code == 1
    assert err.startswith(f"{path}:2:3: error: pass 'test-fail' failed: cannot handle this op\n")
    assert not (tmp_path / "o.mlir").exists()


def test_invalid_ir_after_a_pass_is_reported(tmp_path, capsys, failing_passes):
    path = write(tmp_path, "add.mlir", ADD)
    code, _, err = run_opt(capsys, path, "-p", "test-break-ir")
    assert code == 1
    assert err.startswith(f"{path}:2:3: error: graph.add: result type")
    assert "(after pass 'test-break-ir')" in err.split("\n")[0]


def test_internal_error_is_one_line(tmp_path, capsys, failing_passes, monkeypatch):
    monkeypatch.delenv("DLC_TRACEBACK", raising=False)
    path = write(tmp_path, "add.mlir", ADD)
    code, out, err = run_opt(capsys, path, "-p", "test-crash")
    assert code == 1
    assert err.splitlines() == [
        "dlc-opt: internal error: RuntimeError: in pass 'test-crash': KeyError: 'oops'",
        "dlc-opt: note: rerun with DLC_TRACEBACK=1 to see the traceback",
    ]
    monkeypatch.setenv("DLC_TRACEBACK", "1")
    code, out, err = run_opt(capsys, path, "-p", "test-crash")
    assert code == 1 and "Traceback (most recent call last)" in err and "KeyError: 'oops'" in err


# ---------------------------------------------------------------------------
# printing
# ---------------------------------------------------------------------------


def test_elide_constants_only_in_the_eliding_printer():
    from xdsl.dialects.builtin import ModuleOp

    from dlc.dialects import graph

    big = graph.ConstantOp.from_numpy(np.arange(7, dtype=np.float32))
    small = graph.ConstantOp.from_numpy(np.arange(3, dtype=np.int32))
    module = ModuleOp([big, small])
    elided = module_to_str(module, elide_constants=5)
    assert f"graph.constant {ELIDED} : tensor<7xf32>" in elided
    assert "dense<[0, 1, 2]> : tensor<3xi32>" in elided
    generic = module_to_str(module, elide_constants=5, generic=True)
    assert f"value = {ELIDED} : tensor<7xf32>" in generic
    # every other printer is unaffected
    assert ELIDED not in module_to_str(module) and ELIDED not in str(module)


# ---------------------------------------------------------------------------
# weights
# ---------------------------------------------------------------------------


def test_weights_round_trip_through_output(tmp_path, capsys):
    np.savez(tmp_path / "m.weights.npz", w=np.arange(4, dtype=np.float32))
    text = (
        'builtin.module attributes {dlc.weights = "m.weights.npz"} {\n'
        "  func.func @main(%a: tensor<4xf32>) -> tensor<4xf32> {\n"
        '    %w = graph.weight "w" : tensor<4xf32>\n'
        "    %s = graph.add %a, %w : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>\n"
        "    func.return %s : tensor<4xf32>\n  }\n}\n"
    )
    path = write(tmp_path, "m.mlir", text)
    code, out, _ = run_opt(capsys, path)  # stdout: the weights inline
    assert code == 0 and "dlc.weights = {w = dense_resource<w> : tensor<4xf32>}" in out
    assert 'w: "0x040000000000000000' in out
    (tmp_path / "out").mkdir()
    target = tmp_path / "out" / "r.mlir"
    assert run_opt(capsys, path, "-o", str(target), "--external-weights")[0] == 0
    assert 'dlc.weights = "r.mlir.weights.npz"' in target.read_text()
    saved = np.load(tmp_path / "out" / "r.mlir.weights.npz")
    np.testing.assert_array_equal(saved["w"], np.arange(4, dtype=np.float32))
    code, out, err = run_opt(capsys, str(target))
    assert code == 0, err


# ---------------------------------------------------------------------------
# dlc-translate
# ---------------------------------------------------------------------------


@pytest.fixture
def fake_backend(monkeypatch):
    """A translation registered at runtime, in a module made on the fly."""

    class FakeError(Exception):
        pass

    def emit(module, **options):
        names = [op.name for op in module.walk() if op.name.startswith("graph.")]
        if "graph.mul" not in names:
            raise FakeError("no graph.mul to emit\nsecond line")
        if options.get("crash"):
            raise ZeroDivisionError("bug")
        return "// fake: " + " ".join(names)

    mod = types.ModuleType("dlc_test_fake_backend")
    mod.emit, mod.FakeError = emit, FakeError
    monkeypatch.setitem(sys.modules, "dlc_test_fake_backend", mod)
    monkeypatch.setitem(
        dlc_translate.TRANSLATIONS, "to-fake",
        dlc_translate.Translation("dlc_test_fake_backend", "emit", "export", "fake", ("FakeError",)),
    )
    monkeypatch.setitem(
        dlc_translate.TRANSLATIONS, "to-missing",
        dlc_translate.Translation("dlc_test_no_such_module", "emit", "export", "missing"),
    )


def test_translate_registry(tmp_path, capsys, fake_backend):
    path = write(tmp_path, "add.mlir", ADD)
    assert dlc_translate.main(["--to-fake", path]) == 0
    assert capsys.readouterr().out == "// fake: graph.add graph.add graph.mul\n"
    out = tmp_path / "out.txt"
    assert dlc_translate.main(["--to-fake", path, "-o", str(out)]) == 0
    assert out.read_text() == "// fake: graph.add graph.add graph.mul\n"


def test_translate_import_elides_and_saves_weights(tmp_path, capsys, monkeypatch):
    from xdsl.dialects import func
    from xdsl.dialects.builtin import ModuleOp
    from xdsl.ir import Block, Region

    from dlc.dialects import graph
    from dlc.weights import WeightStore, attach

    def import_model(path):
        big = graph.ConstantOp.from_numpy(np.arange(9, dtype=np.float32))
        weight = graph.WeightOp.make_named("w", graph.ConstantOp.from_numpy(np.zeros(9, np.float32)).out.type)
        add = graph.AddOp.make(big, weight)
        body = Region(Block([big, weight, add, func.ReturnOp(add)]))
        fn = func.FuncOp.from_region("main", [], [add.out.type], body)
        module = ModuleOp([fn])
        attach(module, WeightStore({"w": np.ones(9, np.float32)}))
        return module

    mod = types.ModuleType("dlc_test_fake_frontend")
    mod.import_model = import_model
    monkeypatch.setitem(sys.modules, "dlc_test_fake_frontend", mod)
    monkeypatch.setitem(
        dlc_translate.TRANSLATIONS, "from-fake",
        dlc_translate.Translation("dlc_test_fake_frontend", "import_model", "import", "fake"),
    )
    model = write(tmp_path, "m.fake", "")
    assert dlc_translate.main(["--from-fake", model, "--elide-constants=8"]) == 0
    out = capsys.readouterr().out
    assert "graph.constant dense_resource<__elided__> : tensor<9xf32>" in out
    assert "dlc.weights = {w = dense_resource<__elided__> : tensor<9xf32>}" in out  # (9 > 8)
    assert "dialect_resources" not in out
    target = tmp_path / "m.mlir"
    assert dlc_translate.main(["--from-fake", model, "-o", str(target), "--external-weights"]) == 0
    assert 'dlc.weights = "m.mlir.weights.npz"' in target.read_text()
    np.testing.assert_array_equal(np.load(tmp_path / "m.mlir.weights.npz")["w"], np.ones(9))


def test_translate_errors(tmp_path, capsys, fake_backend):
    no_mul = write(tmp_path, "nomul.mlir", BAD_SHAPE.replace("5xf32", "4xf32"))
    assert dlc_translate.main(["--to-fake", no_mul, "-o", str(tmp_path / "o")]) == 1
    assert capsys.readouterr().err == "dlc-translate: error: --to-fake: no graph.mul to emit\n"
    assert not (tmp_path / "o").exists()
    assert dlc_translate.main(["--to-missing", no_mul]) == 1
    err = capsys.readouterr().err
    assert err.startswith("dlc-translate: error: this translation is not available: cannot import dlc_test_no_such_module")


# ---------------------------------------------------------------------------
# dlc (compile/run) against a stand-in driver
# ---------------------------------------------------------------------------


class _StandInCompiled:
    """Stands in for dlc.driver.CompiledModule in CLI tests: runs the
    reference evaluator, optionally off by ``error`` to test --check."""

    def __init__(self, module, error: float = 0.0):
        from dlc.evaluator import find_function
        from dlc.dialects.graph_base import numpy_dtype

        self.module, self.error = module, error
        fn = find_function(module)
        self.input_specs = [
            (f"in{i}", tuple(a.type.get_shape()), numpy_dtype(a.type.element_type))
            for i, a in enumerate(fn.body.block.args)
        ]
        self.output_specs = [
            (f"out{i}", tuple(t.get_shape()), numpy_dtype(t.element_type))
            for i, t in enumerate(fn.function_type.outputs.data)
        ]
        self.timings = {"stage-a": 0.25, "stage-b": 0.5}

    def __call__(self, *arrays):
        from dlc.evaluator import evaluate

        return [np.asarray(o) + np.asarray(self.error, dtype=o.dtype) for o in evaluate(self.module, arrays)]

    def export(self, path):
        with open(path, "wb") as f:
            f.write(b"\x7fELF stand-in")


@pytest.fixture
def stand_in_driver(monkeypatch):
    calls = []
    mod = types.ModuleType("dlc.driver")

    def compile(source, target="llvm", entry=None, num_threads=None, jit=True):
        calls.append(dict(source=source, target=target, entry=entry, num_threads=num_threads, jit=jit))
        return _StandInCompiled(source, error=float(os.environ.get("STAND_IN_ERROR", "0")))

    mod.compile = compile
    monkeypatch.setitem(sys.modules, "dlc.driver", mod)
    return calls


def test_cli_run_random_inputs_and_check(tmp_path, capsys, stand_in_driver):
    path = write(tmp_path, "add.mlir", ADD)
    assert dlc_cli.main(["run", path, "--check", "--repeat", "2", "--threads", "3"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("output 0 'out0': shape (3, 4) float32 sum=")
    assert out[1].startswith("median run time: ") and out[1].endswith("over 2 runs")
    assert out[2] == "check: output 0: max abs err 0, max rel err 0: ok"
    assert stand_in_driver[0]["num_threads"] == 3 and stand_in_driver[0]["target"] == "llvm"


def test_cli_run_same_seed_same_inputs(tmp_path, capsys, stand_in_driver):
    path = write(tmp_path, "add.mlir", ADD)
    dlc_cli.main(["run", path, "--seed", "7"])
    first = capsys.readouterr().out.splitlines()[0]
    dlc_cli.main(["run", path, "--seed", "7"])
    assert capsys.readouterr().out.splitlines()[0] == first
    dlc_cli.main(["run", path, "--seed", "8"])
    assert capsys.readouterr().out.splitlines()[0] != first


def test_cli_check_mismatch_exits_1(tmp_path, capsys, stand_in_driver, monkeypatch):
    monkeypatch.setenv("STAND_IN_ERROR", "0.01")
    path = write(tmp_path, "add.mlir", ADD)
    assert dlc_cli.main(["run", path, "--check"]) == 1
    captured = capsys.readouterr()
    assert "check: output 0: max abs err 0.01" in captured.out and "FAILED" in captured.out
    assert captured.err == "dlc: error: outputs differ from the reference\n"


def test_cli_inputs_by_position_and_name(tmp_path, capsys, stand_in_driver):
    path = write(tmp_path, "add.mlir", ADD)
    a = np.full((3, 4), 2, np.float32)
    b = np.arange(4, dtype=np.float32)
    np.save(tmp_path / "a.npy", a)
    np.save(tmp_path / "b.npy", b)
    expected = (a + b) * (a + b)
    for args in (["--input", str(tmp_path / "a.npy"), "--input", str(tmp_path / "b.npy")],
                 ["--input", f"in1={tmp_path / 'b.npy'}", "--input", str(tmp_path / "a.npy")]):
        assert dlc_cli.main(["run", path, *args]) == 0
        line = capsys.readouterr().out.splitlines()[0]
        assert f"sum={expected.sum():.6g}" in line
    assert dlc_cli.main(["run", path, "--input", str(tmp_path / "b.npy")]) == 1
    assert "does not match input 'in0' (3, 4)" in capsys.readouterr().err
    assert dlc_cli.main(["run", path, "--input", f"zz={tmp_path / 'a.npy'}"]) == 1
    assert "no input named 'zz' (inputs: in0, in1)" in capsys.readouterr().err


def test_cli_compile_writes_library_and_timings(tmp_path, capsys, stand_in_driver):
    path = write(tmp_path, "add.mlir", ADD)
    target = tmp_path / "add.so"
    assert dlc_cli.main(["compile", path, "-o", str(target), "--pass-timing"]) == 0
    assert target.read_bytes() == b"\x7fELF stand-in"
    err = capsys.readouterr().err
    assert "stage-a" in err and "stage-b" in err and "(100.0%)  Total" in err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["add.mlir", "add.so"]
    assert stand_in_driver[0]["jit"] is False  # export only: LLVM runs once


def test_cli_without_driver(tmp_path, capsys, monkeypatch):
    monkeypatch.setitem(sys.modules, "dlc.driver", None)  # import fails
    path = write(tmp_path, "add.mlir", ADD)
    assert dlc_cli.main(["run", path]) == 1
    assert capsys.readouterr().err.startswith("dlc: error: compiling needs dlc.driver, which is not available")


# ---------------------------------------------------------------------------
# the installed console scripts
# ---------------------------------------------------------------------------


def _script(name: str, *args, **kwargs) -> subprocess.CompletedProcess:
    return subprocess.run([name, *args], capture_output=True, text=True, timeout=120, **kwargs)


@pytest.mark.parametrize("tool", ["dlc-opt", "dlc-translate", "dlc"])
def test_console_scripts_help(tool):
    result = _script(tool, "--help")
    assert result.returncode == 0 and result.stdout.startswith(f"usage: {tool}")


def test_console_script_error_exit_code(tmp_path):
    path = write(tmp_path, "bad.mlir", BAD_SHAPE)
    result = _script("dlc-opt", path, "-o", str(tmp_path / "out.mlir"))
    assert result.returncode == 1
    assert result.stderr.startswith(f"{path}:2:3: error: graph.add: shapes")
    assert "Traceback" not in result.stderr and result.stdout == ""
    assert not (tmp_path / "out.mlir").exists()
    result = _script("dlc-opt", "-", input=ADD)
    assert result.returncode == 0 and "graph.mul" in result.stdout


def test_diagnostic_error_format():
    err = DiagnosticError("boom", "f.mlir", 2, 3, caret_len=4, text="  abcdef")
    assert err.format("t") == "f.mlir:2:3: error: boom\n  abcdef\n  ^^^^"
    assert DiagnosticError("no place").format("t") == "t: error: no place"
    assert DiagnosticError("file only", "f.mlir").format("t") == "f.mlir: error: file only"
