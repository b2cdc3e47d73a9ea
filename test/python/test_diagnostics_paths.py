"""Bad inputs that used to escape as tracebacks or `internal error` (issue 14,
part 4): each tool run ends with one located error line (plus, where a column
is known, the source excerpt and a caret), exit status 1, no traceback.

The tools run as subprocesses (`python -m dlc.tools...`), as a user runs them:
recursion limits, the tool thread's stack and torch's own logging are
process-level behaviour.
"""

from __future__ import annotations

import importlib.util
import os
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import numpy as np
import pytest

from dlc.diagnostics import EXCERPT_CHARS, MAX_NESTING, DiagnosticError, excerpt

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
TOOLS = {"dlc-opt": "dlc.tools.dlc_opt", "dlc-translate": "dlc.tools.dlc_translate", "dlc": "dlc.tools.dlc_cli"}

ADD_RELU = """func.func @main(%x: tensor<2x3xf32>, %y: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %s = graph.add %x, %y : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  %r = graph.relu %s : (tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return %r : tensor<2x3xf32>
}
"""


def tool(name: str, *argv: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    env = dict(os.environ)
    env.pop("DLC_TRACEBACK", None)
    return subprocess.run([sys.executable, "-m", TOOLS[name], *map(str, argv)], capture_output=True,
                          text=True, env=env, cwd=cwd, timeout=600)


def assert_one_error(result: subprocess.CompletedProcess, pattern: str) -> str:
    """Exit 1; stderr is one `...: error: ...` line matching ``pattern`` (a
    regex searched from the start), optionally followed by the source excerpt
    and its caret line; no traceback, no internal error. Returns the line."""
    err = result.stderr
    assert result.returncode == 1, (result.returncode, err)
    assert "Traceback" not in err and "internal error" not in err, err
    lines = err.rstrip("\n").split("\n")
    assert len(lines) in (1, 3), err
    assert sum(": error: " in line for line in lines) == 1, err
    assert re.match(pattern, lines[0]), (pattern, lines[0])
    if len(lines) == 3:
        assert set(lines[2]) <= {" ", "^"} and "^" in lines[2], err
        assert len(lines[1]) <= 2 * EXCERPT_CHARS + EXCERPT_CHARS + 6, len(lines[1])
    return lines[0]


def write(tmp_path: Path, name: str, text: str | bytes) -> Path:
    path = tmp_path / name
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text)
    return path


# ---------------------------------------------------------------------------
# command-line values
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("flag, value, message", [
    ("--seed", "-1", r"dlc: error: --seed needs a number >= 0, got -1$"),
    ("--rtol", "nan", r"dlc: error: --rtol needs a finite number >= 0, got nan$"),
    ("--atol", "-1", r"dlc: error: --atol needs a finite number >= 0, got -1.0$"),
])
def test_run_option_values(tmp_path, flag, value, message):
    model = write(tmp_path, "m.mlir", ADD_RELU)
    assert_one_error(tool("dlc", "run", model, flag, value), message)


@pytest.mark.parametrize("pipeline, message", [
    ("fold-constant{size-limit=abc}",
     "invalid options for pass 'fold-constant': option 'size-limit' takes an integer, got 'abc'"),
    ("fold-constant{size-limit=1,2}",
     "invalid options for pass 'fold-constant': option 'size-limit' takes an integer, got 1,2"),
    ("fuse-ops{dense=maybe}", "invalid options for pass 'fuse-ops': option 'dense' takes true or false, got 'maybe'"),
    ('tloop-split{kernel="k" loop="i" factor=x}',
     "invalid options for pass 'tloop-split': option 'factor' takes an integer, got 'x'"),
    ("tloop-reorder{kernel=1 order=i,j}",
     "invalid options for pass 'tloop-reorder': option 'kernel' takes a string, got 1"),
])
def test_pass_option_types(tmp_path, pipeline, message):
    model = write(tmp_path, "m.mlir", ADD_RELU)
    assert_one_error(tool("dlc-opt", model, "-p", pipeline), "dlc-opt: error: " + re.escape(message) + "$")


def test_option_type_words():
    from dlc.passes import describe_option_type

    assert describe_option_type(int) == "an integer"
    assert describe_option_type(int | None) == "an integer (or nothing)"
    assert describe_option_type(tuple[str, ...]) == "a comma-separated list of strings"


# ---------------------------------------------------------------------------
# MLIR text
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("constant", [
    "arith.constant dense<1.0> : tensor<10000000000000000000000xf32>",  # 10^22: OverflowError in xDSL
    "arith.constant dense<1.0> : tensor<100000x100000xf32>",  # 40 GB: would exhaust memory
    'arith.constant dense<"0x0000803F"> : tensor<10000000000000000000000xf32>',  # a hex splat
    "graph.constant dense<0> : tensor<10000000000000000000000xi8>",  # a graph op's literal
])
def test_huge_dense_literal(tmp_path, constant):
    op, _, type_ = constant.partition(" : ")
    text = f"func.func @f() -> {type_} {{\n  %0 = {op} : {type_}\n  func.return %0 : {type_}\n}}\n"
    path = write(tmp_path, "c.mlir", text)
    count = re.search(r"<([\dx]+)x", type_).group(1).split("x")
    elements = int(np.prod([int(c) for c in count], dtype=object))
    col = text.split("\n")[1].index(type_) + 1 if "graph" not in op else None
    where = rf":2:{col}:" if col else r":2:\d+:"
    assert_one_error(tool("dlc-opt", path),
                     re.escape(str(path)) + where + rf" error: dense literal of {elements} elements \(.*\) "
                     r"is larger than the 2 GiB limit on constants$")


def test_value_out_of_range_for_its_type(tmp_path):
    path = write(tmp_path, "i.mlir", "func.func @f() {\n  %0 = arith.constant dense<[1, 999]> : tensor<2xi8>\n"
                                     "  func.return\n}\n")
    assert_one_error(tool("dlc-opt", path), re.escape(str(path)) + r":2:\d+: error: Integer value 999 is out of range")


def nested_modules(depth: int) -> str:
    return "builtin.module {" * depth + "}" * depth + "\n"


def nested_tuples(depth: int) -> str:
    return "func.func @f(%a: " + "tuple<" * depth + "f32" + ">" * depth + ") {\n  func.return\n}\n"


@pytest.mark.parametrize("make", [nested_modules, nested_tuples])
def test_nesting_too_deep(tmp_path, make):
    path = write(tmp_path, "deep.mlir", make(5000))
    assert_one_error(tool("dlc-opt", path),
                     re.escape(str(path)) + rf":1:\d+: error: nesting too deep \(more than {MAX_NESTING} levels\)$")


def test_nesting_at_the_limit_works(tmp_path):
    """MAX_NESTING levels parse, verify, run a pass and print (the tool's deep stack)."""
    path = write(tmp_path, "deep.mlir", nested_modules(MAX_NESTING - 1))
    result = tool("dlc-opt", path, "-p", "cse")
    assert result.returncode == 0, result.stderr
    assert result.stdout.count("builtin.module") == MAX_NESTING - 1


def test_error_in_a_10_mb_line(tmp_path):
    text = "func.func @f() {\n  %0 = arith.constant " + " " * 10_000_000 + "x : i32\n}\n"
    path = write(tmp_path, "long.mlir", text)
    result = tool("dlc-opt", path)
    assert_one_error(result, re.escape(str(path)) + r":2:10000023: error: ")
    assert len(result.stderr) < 1000
    assert result.stderr.split("\n")[1].startswith("...")


def test_excerpt_cut_around_the_column():
    line = "a" * 500 + "XYZ" + "b" * 500
    text, caret = excerpt(line, 501, 3).split("\n")
    assert text == "..." + "a" * EXCERPT_CHARS + "XYZ" + "b" * EXCERPT_CHARS + "..."
    assert caret == " " * (3 + EXCERPT_CHARS) + "^^^"
    assert excerpt("short", 2) == "short\n ^"
    assert DiagnosticError("m" * 5000, "f", 1, 1).format().startswith("f:1:1: error: " + "m" * 1000 + "...")


@pytest.mark.parametrize("text, prefix", [
    ("func.func @f(% : i32) {\n  func.return\n}\n", "%"),
    ("func.func @f() {\n  cf.br ^\n}\n", "^"),
    ("func.func @f(%a: !) {\n  func.return\n}\n", "!"),
])
def test_xdsl_unfilled_suffix_message(tmp_path, text, prefix):
    # xDSL 0.75's lexer says "Expected suffix identifier after {first_char}" (no f-string)
    path = write(tmp_path, "s.mlir", text)
    line = assert_one_error(tool("dlc-opt", path),
                            re.escape(str(path)) + rf":\d+:\d+: error: expected a name or number after '\{prefix}'$")
    assert "{first_char}" not in line


def test_invalid_utf8_mlir(tmp_path):
    path = write(tmp_path, "u.mlir", b"func.func @f() {\n  %0 = arith.constant 1 : i32 \xff\n}\n")
    assert_one_error(tool("dlc-opt", path), re.escape(str(path)) + r":2:31: error: not UTF-8 text \(byte 0xff\)$")


@pytest.mark.parametrize("body, message", [
    # %s used before it is defined in the same block
    ("    memref.store %s, %c[%i] : memref<4xf32>\n    %s = memref.load %a[%i] : memref<4xf32>\n",
     r"'memref.store' op operand #0 \(%s\) does not dominate this use \(it is defined later, at line 4\)"),
    # a value used before a loop that defines it inside
    ("    memref.store %s, %c[%i] : memref<4xf32>\n"
     "    tloop.for %j = 0 to 2 {\n      %s = memref.load %a[%i] : memref<4xf32>\n    }\n",
     r"'memref.store' op operand #0 \(%s\) is defined in a region that does not enclose this use"),
])
def test_values_used_where_they_are_not_visible(tmp_path, body, message):
    text = ("func.func @k(%a: memref<4xf32>, %c: memref<4xf32>) attributes {tloop.kernel} {\n"
            f"  tloop.for %i = 0 to 4 {{\n{body}  }}\n  func.return\n}}\n")
    path = write(tmp_path, "d.mlir", text)
    for name, argv in (("dlc-opt", [path]), ("dlc-translate", ["--to-llvm", path])):
        assert_one_error(tool(name, *argv), re.escape(str(path)) + r":\d+:\d+: error: " + message)


def test_value_used_after_the_loop_defining_it(tmp_path):
    """xDSL's parser scopes it out; the error points at the use, not the definition."""
    text = ("func.func @k(%a: memref<4xf32>, %c: memref<4xf32>) attributes {tloop.kernel} {\n"
            "  tloop.for %i = 0 to 4 {\n    %s = memref.load %a[%i] : memref<4xf32>\n  }\n"
            "  %z = arith.addf %s, %s : f32\n  func.return\n}\n")
    path = write(tmp_path, "d.mlir", text)
    assert_one_error(tool("dlc-opt", path), re.escape(str(path)) + r":5:19: error: use of undefined value '%s'$")


def test_truncated_weights_npz(tmp_path):
    shutil.copy(EXAMPLES / "small_cnn.mlir", tmp_path / "m.mlir")
    npz = (EXAMPLES / "small_cnn.weights.npz").read_bytes()
    (tmp_path / "small_cnn.weights.npz").write_bytes(npz[: len(npz) // 3])
    for name, argv in (("dlc-opt", ["m.mlir"]), ("dlc", ["run", "m.mlir"])):
        assert_one_error(tool(name, *argv, cwd=tmp_path),
                         r"m\.mlir: error: cannot load weights 'small_cnn\.weights\.npz': not a valid \.npz archive")


# ---------------------------------------------------------------------------
# loop-level IR: dlc run --check
# ---------------------------------------------------------------------------


def test_run_check_on_lower_to_loops_output(tmp_path):
    graph = write(tmp_path, "g.mlir", ADD_RELU)
    loops = tmp_path / "loops.mlir"
    assert tool("dlc-opt", graph, "-p", "legalize,lower-to-loops", "-o", loops).returncode == 0
    result = tool("dlc", "run", loops, "--check", "--repeat", "1")
    assert result.returncode == 0, result.stderr
    assert "check: output 0: max abs err 0, max rel err 0: ok" in result.stdout


# ---------------------------------------------------------------------------
# tensor expressions
# ---------------------------------------------------------------------------


def sum_of(terms: int) -> str:
    return "input A: f32[4]\nB[i] = " + " + ".join(["A[i]"] * terms) + "\n"


def test_te_expression_too_deep(tmp_path):
    path = write(tmp_path, "long.te", sum_of(10_000))
    pattern = re.escape(str(path)) + r":2:\d+: error: nesting too deep \(more than 1000 levels\)$"
    assert_one_error(tool("dlc-translate", "--from-te", path), pattern)
    assert_one_error(tool("dlc", "run", path), pattern)


def test_te_expression_at_the_limit_works_from_python():
    """1000 terms in the main thread, with Python's default recursion limit."""
    from dlc.frontends.te import lower, reference

    limit = sys.getrecursionlimit()
    x = np.arange(4, dtype=np.float32)
    (out,) = reference(sum_of(1000), x)
    np.testing.assert_array_equal(out, 1000 * x)
    assert len(lower(sum_of(1000)).body.block.ops) == 2  # @kernel and @main
    assert sys.getrecursionlimit() == limit  # raised only while the tree is walked


@pytest.mark.parametrize("content", [b"input A: f32[4]\nB[i] = A[i] \xff\n", None])
def test_te_file_unreadable(tmp_path, content):
    path = tmp_path / "k.te"
    if content is None:
        path.mkdir()
        pattern = r"dlc(-translate)?: error: cannot read '" + re.escape(str(path)) + "': is a directory$"
    else:
        path.write_bytes(content)
        pattern = re.escape(str(path)) + r":2:13: error: not UTF-8 text \(byte 0xff\)$"
    assert_one_error(tool("dlc-translate", "--from-te", path), pattern)
    assert_one_error(tool("dlc", "run", path), pattern)


def test_te_integer_too_large(tmp_path):
    path = write(tmp_path, "k.te", "input A: i32[10000000000000000000000]\nB[i] = A[i] * 2\n")
    assert_one_error(tool("dlc-translate", "--from-te", path),
                     re.escape(str(path)) + r":1:14: error: integer 10000000000000000000000 does not fit in 64 bits$")


def test_te_read_of_an_empty_tensor(tmp_path):
    # a select-guarded read is clamped into the tensor: with no elements it has no inside
    path = write(tmp_path, "k.te", "input X: f32[0]\noutput Y: f32[4]\nY[i] = select(i < 0, X[i], 0.0)\n")
    assert_one_error(tool("dlc", "run", path),
                     re.escape(str(path)) + r":3:22: error: 'X' \(f32\[0\]\) has no elements to read$")


def test_random_input_too_big(tmp_path):
    path = write(tmp_path, "k.te", "input A: f32[1048576, 1073741824]\nB[i, j] = A[i, j]\n")
    assert_one_error(tool("dlc", "run", path, "--repeat", "1"),
                     r"dlc: error: cannot make a random input 'A' of shape \(1048576, 1073741824\) float32: "
                     r"4\.0 PiB do not fit in memory \(pass it with --input\)$")


def test_check_compares_infinities_and_nans():
    from dlc.tools.dlc_cli import compare

    inf = np.array([np.inf, -np.inf, np.nan, 1.0], np.float32)
    assert compare([inf], [inf.copy()], 1e-4, 1e-5)
    assert not compare([inf], [np.array([np.inf, -np.inf, 1.0, 1.0])], 1e-4, 1e-5)


def test_dlc_te_is_an_attribute_of_dlc():
    """The README's `import dlc; dlc.te.compile(...)` (te.py's example, verbatim but for `import dlc`)."""
    code = """
import numpy as np
import dlc
f = dlc.te.compile('''
input A: f32[64, 32]
input B: f32[32, 48]
C[i, j] = sum(k: A[i, k] * B[k, j])
''', schedule=lambda s: s.parallel("i"))
A, B = np.ones((64, 32), np.float32), np.ones((32, 48), np.float32)
assert np.allclose(f(A, B), A @ B)
print("ok")
"""
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=600)
    assert result.returncode == 0 and result.stdout.strip() == "ok", result.stderr


def test_import_dlc_stays_light():
    code = "import sys, dlc; print('xdsl' in sys.modules, 'dlc.te' in sys.modules)"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert result.stdout.split() == ["False", "False"], result.stderr


# ---------------------------------------------------------------------------
# torch
# ---------------------------------------------------------------------------


@pytest.mark.skipif(importlib.util.find_spec("torch") is None, reason="torch is not installed")
@pytest.mark.parametrize("damage", ["truncated", "not-a-program"])
def test_damaged_pt2(tmp_path, damage):
    path = tmp_path / "m.pt2"
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("m/archive_format", "pt2")
        archive.writestr("m/models/model.json", '{"not": "a program"' * 50)
    if damage == "truncated":
        data = path.read_bytes()
        path.write_bytes(data[: len(data) // 2])
        why = r"not a \.pt2 archive \(truncated, or not written by torch\.export\.save\)$"
    else:
        why = r"not a torch\.export program \(.*\)$"
    quoted = re.escape(f"'{path}'")
    assert_one_error(tool("dlc-translate", "--from-torch", path),
                     rf"dlc-translate: error: --from-torch: cannot load {quoted}: " + why)
    assert_one_error(tool("dlc", "run", path), rf"dlc: error: compiling {quoted}: cannot load {quoted}: " + why)
