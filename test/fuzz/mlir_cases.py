"""MLIR family: graph, loop and llvm-dialect text (test/lit inputs, examples/ and
the tools' own output for a small graph), mutated with seeded byte, line, type
and number changes, run through ``dlc-opt`` pipelines and ``dlc-translate
--to-llvm``; pass options mutated too; a few tensor-expression (TE) inputs.

"Located" here: ``in.mlir:LINE:COL: error:`` (a pass option error names the
option; an unreadable file names the file).
"""

from __future__ import annotations

import os
import random
import re
import tempfile

from .case import FILE_LINE_COL, Case

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

SOFTMAX = """\
func.func @main(%a: tensor<2x3xf32>, %b: tensor<3xf32>) -> tensor<2x3xf32> {
  %c = graph.add %a, %b : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  %d = graph.softmax %c {axis = 1 : i64} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return %d : tensor<2x3xf32>
}
"""

TO_LOOPS = "legalize,lower-to-loops"
TO_LLVM = "legalize,lower-to-loops,tloop-default-schedule,lower-to-llvm"
GRAPH_PIPELINES = ["legalize,fold-constant", TO_LOOPS, TO_LLVM]
LOOP_PIPELINES = ["tloop-default-schedule", "tloop-default-schedule,expand-math,plan-workspace,lower-to-llvm"]
LOCATED = [FILE_LINE_COL]


def _read(rel: str) -> bytes:
    with open(os.path.join(ROOT, rel), "rb") as f:
        return f.read()


def _lower(text: str, pipeline: str) -> bytes:
    """The tools' own output for ``text`` (run in-process, once per suite build)."""
    from dlc.tools import dlc_opt

    with tempfile.TemporaryDirectory() as tmp:
        src, out = os.path.join(tmp, "in.mlir"), os.path.join(tmp, "out.mlir")
        with open(src, "w") as f:
            f.write(text)
        code = dlc_opt.main([src, "-p", pipeline, "-o", out])
        if code != 0:
            raise RuntimeError(f"fuzz seed: dlc-opt -p {pipeline} failed on the softmax graph")
        with open(out, "rb") as f:
            return f.read()


def seeds() -> dict[str, tuple[str, bytes, dict[str, bytes]]]:
    """name -> (level, text, side files)."""
    cnn_weights = {"small_cnn.weights.npz": _read("examples/small_cnn.weights.npz")}
    return {
        "add": ("graph", _read("test/lit/tools/Inputs/add.mlir"), {}),
        "small_cnn": ("graph", _read("examples/small_cnn.mlir"), cnn_weights),
        "softmax": ("graph", SOFTMAX.encode(), {}),
        "softmax_loops": ("loop", _lower(SOFTMAX, TO_LOOPS), {}),
        "softmax_llvm": ("llvm", _lower(SOFTMAX, TO_LLVM), {}),
    }


# ---------------------------------------------------------------------------
# text mutators: (bytes, rng) -> (what, bytes, expect)
# ---------------------------------------------------------------------------


def truncate(data, rng):
    cut = rng.randrange(1, len(data))
    return f"truncated at {cut}/{len(data)}", data[:cut], "any"


def flip_byte(data, rng):
    buf = bytearray(data)
    k = rng.randrange(len(buf))
    buf[k] = rng.choice(b"{}()<>%@:,=x0\"#^!")
    return f"byte {k} -> {chr(buf[k])}", bytes(buf), "any"


def insert_bytes(data, rng):
    k = rng.randrange(len(data))
    junk = rng.choice([b"{", b"}}", b"%", b"<<", b"\"", b"tensor<", b"\x00", b"#map", b"^bb9"])
    return f"insert {junk!r} at {k}", data[:k] + junk + data[k:], "any"


def delete_line(data, rng):
    lines = data.split(b"\n")
    k = rng.randrange(len(lines))
    return f"delete line {k + 1}", b"\n".join(lines[:k] + lines[k + 1:]), "any"


def duplicate_line(data, rng):
    lines = data.split(b"\n")
    k = rng.randrange(len(lines))
    return f"duplicate line {k + 1}", b"\n".join(lines[: k + 1] + lines[k:]), "any"


def swap_type(data, rng):
    found = [m.start() for m in re.finditer(rb"\bf32\b", data)]
    if not found:
        return None
    k = rng.choice(found)
    new = rng.choice([b"i1", b"f16", b"i64", b"index", b"f64"])
    return f"f32 -> {new.decode()} at {k}", data[:k] + new + data[k + 3:], "any"


def huge_dim(data, rng):
    found = [m.start(1) for m in re.finditer(rb"[<x](\d+)x", data)]
    if not found:
        return None
    k = rng.choice(found)
    end = k + len(re.match(rb"\d+", data[k:]).group())
    new = rng.choice([b"0", b"-2", b"99999999999999999999", b"4294967296", b"9223372036854775807"])
    return f"dim at {k} -> {new.decode()}", data[:k] + new + data[end:], "error" if new == b"-2" else "any"


def huge_number(data, rng):
    found = [m for m in re.finditer(rb"(?<![%\w#^])(\d+)(?= : i64|\) : i64| to |\b)", data)
             if not data[max(0, m.start() - 1): m.start()].isalpha()]
    if not found:
        return None
    m = rng.choice(found)
    new = rng.choice([b"99999999999999999999999", b"-1", b"4294967297"])
    return f"number {m.group().decode()} at {m.start()} -> {new.decode()}", \
        data[: m.start()] + new + data[m.end():], "any"


def invalid_utf8(data, rng):
    k = rng.randrange(len(data))
    return f"invalid UTF-8 at {k}", data[:k] + b"\xff\xfe" + data[k:], "error"


TEXT_MUTATORS = [truncate, flip_byte, insert_bytes, delete_line, duplicate_line, swap_type, huge_dim,
                 huge_number, invalid_utf8]


def _case(n, what, text, argv, expect, files=None, locators=None, **kw) -> Case:
    return Case(id=f"mlir-{n}", family="mlir", what=what, files={"in.mlir": text, **(files or {})},
                argv=argv, expect=expect, locators=LOCATED if locators is None else locators,
                must_not_exist=["out.mlir", "out.ll", "out.weights.npz"], **kw)


def _commands(level: str, rng) -> list[list[str]]:
    """Two commands per mutant: a seeded pipeline for its level and --to-llvm."""
    pipelines = {"graph": GRAPH_PIPELINES, "loop": LOOP_PIPELINES, "llvm": ["cse"]}[level]
    return [["dlc-opt", "in.mlir", "-p", rng.choice(pipelines), "-o", "out.mlir"],
            ["dlc-translate", "--to-llvm", "in.mlir", "-o", "out.ll"]]


def _structural(n: int) -> list[Case]:
    """Deep nesting, huge constants, long lines, bad pass options, TE inputs."""
    opt = ["dlc-opt", "in.mlir", "-o", "out.mlir"]
    add = _read("test/lit/tools/Inputs/add.mlir")
    deep_modules = b"builtin.module {\n" * 5000 + b"}\n" * 5000
    deep_tuple = (b"func.func @f(%a: " + b"tuple<" * 5000 + b"f32" + b">" * 5000 + b") {\n  func.return\n}\n")
    splat = (b"func.func @main() -> tensor<100000000000x100000000000x1000000xf32> {\n"
             b"  %c = graph.constant dense<1.0> : tensor<100000000000x100000000000x1000000xf32>\n"
             b"  func.return %c : tensor<100000000000x100000000000x1000000xf32>\n}\n")
    # the error is at column ~1,000,060 of line 2: the diagnostic must cut the line around it
    long_line = (b"func.func @main(%a: tensor<2xf32>) -> tensor<2xf32> {\n"
                 b"  %c = graph.relu %a : (tensor<2xf32>) -> tensor<2xf32>" + b" " * 1000000 + b"!\n"
                 b"  func.return %c : tensor<2xf32>\n}\n")
    unfilled = b"func.func @main(%a: tensor<2xf32>) -> tensor<2xf32> {\n  func.return %a : tensor<2xf32> {\n}\n"
    items = [
        ("5000 nested modules", deep_modules, opt, "error", [FILE_LINE_COL, r"nest"]),
        ("5000 nested tuple types", deep_tuple, opt, "error", [FILE_LINE_COL, r"nest"]),
        ("splat constant of 1e28 elements", splat, opt + ["-p", "fold-constant"], "error", LOCATED),
        ("splat constant of 1e28 elements --to-llvm", splat, ["dlc-translate", "--to-llvm", "in.mlir", "-o", "out.ll"],
         "error", LOCATED),
        ("error in a 1 MB line", long_line, opt, "error", LOCATED),
        ("stray '{' after a type", unfilled, opt, "error", LOCATED),
    ]
    for option in ["size-limit=abc", "size-limit=-1", "size-limit=99999999999999999999999", "nosuch=1",
                   "size-limit=1.5", "size-limit"]:
        # the message names the option, not only the pass
        items.append((f"fold-constant{{{option}}}", add, opt + ["-p", f"fold-constant{{{option}}}"],
                      "error" if option not in ("size-limit=99999999999999999999999",) else "any",
                      [r"size-limit" if "size-limit" in option else r"nosuch"]))
    for pipeline in ["nosuch-pass", "legalize,,cse", "legalize{", "tloop-split{kernel=\"main_0_add\" loop=\"d0\" factor=0}",
                     "tloop-split{kernel=\"main_0_add\" loop=\"d0\" factor=99999999999999999999}"]:
        items.append((f"pipeline {pipeline}", add if "tloop" not in pipeline else seeds_loop(), opt + ["-p", pipeline],
                      "error", [r"nosuch-pass|pipeline|legalize|factor|tloop-split", FILE_LINE_COL]))
    cases = [_case(n + i, w, t, a, e, locators=loc) for i, (w, t, a, e, loc) in enumerate(items)]
    n += len(cases)
    # TE inputs (dlc-translate --from-te)
    te_argv = ["dlc-translate", "--from-te", "k.te", "-o", "out.mlir"]
    terms = " + ".join(["A[i]"] * 10000)
    te_items = [
        ("TE: 10000-term expression", f"input A: f32[4]\nB[i] = {terms}\n".encode(), "any"),
        ("TE: invalid UTF-8", b"input A: f32[4]\nB[i] = A[i] \xff\xfe\n", "error"),
        ("TE: 3000 nested parentheses", b"input A: f32[4]\nB[i] = " + b"(" * 3000 + b"A[i]" + b")" * 3000 + b"\n",
         "any"),
        ("TE: index out of its extent", b"input A: f32[4]\nB[i] = A[i + 9999999999999]\n", "any"),
    ]
    for i, (what, text, expect) in enumerate(te_items):
        cases.append(Case(id=f"mlir-{n + i}", family="mlir", what=what, files={"k.te": text}, argv=te_argv,
                          expect=expect, locators=[r"^k\.te:\d+:\d+: error: ", r"nest"],
                          must_not_exist=["out.mlir"]))
    n += len(te_items)
    cases.append(Case(id=f"mlir-{n}", family="mlir", what="TE: input is a directory", special={"k.te": "dir"},
                      argv=te_argv, expect="error", locators=[r"k\.te"], must_not_exist=["out.mlir"]))
    return cases


_LOOPS_CACHE: list[bytes] = []


def seeds_loop() -> bytes:
    if not _LOOPS_CACHE:
        _LOOPS_CACHE.append(_lower(SOFTMAX, TO_LOOPS))
    return _LOOPS_CACHE[0]


def _translate_stdout(argv: list[str]) -> bytes:
    """What ``dlc-translate ARGV`` prints (in-process, once per suite build)."""
    import contextlib
    import io

    from dlc.tools import dlc_translate

    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        code = dlc_translate.main(argv)
    if code != 0:
        raise RuntimeError(f"fuzz seed: dlc-translate {' '.join(argv)} failed")
    return buf.getvalue().encode()


def _self_contained(n: int) -> list[Case]:
    """IR text that must stand on its own: imported ONNX printed to stdout (no .npz
    beside it), elided output parsed back, loop IR run with --check; a truncated .npz."""
    onnx_path = os.path.join(ROOT, "examples", "small_cnn.onnx")
    piped = _translate_stdout(["--from-onnx", onnx_path])
    elided = _translate_stdout(["--from-onnx", onnx_path, "--elide-constants", "16"])
    cnn = _read("examples/small_cnn.mlir")
    npz = _read("examples/small_cnn.weights.npz")
    items = [
        ("small_cnn imported to stdout, --to-llvm", piped, ["dlc-translate", "--to-llvm", "in.mlir", "-o", "out.ll"],
         "ok", {}, LOCATED),
        ("small_cnn imported to stdout, lowered to loops", piped, ["dlc-opt", "in.mlir", "-p", TO_LOOPS, "-o",
                                                                   "out.mlir"], "ok", {}, LOCATED),
        ("small_cnn --elide-constants output parsed back", elided, ["dlc-opt", "in.mlir", "-o", "out.mlir"], "ok", {},
         LOCATED),
        ("small_cnn --elide-constants output run: names the elided weight", elided,
         ["dlc", "run", "in.mlir", "--repeat", "1"], "error", {}, [FILE_LINE_COL, r"elided"]),
        ("dlc-opt's own loop IR, dlc run --check", seeds_loop(), ["dlc", "run", "in.mlir", "--repeat", "1", "--check"],
         "ok", {}, LOCATED),
        ("small_cnn with a truncated weights .npz", cnn, ["dlc-opt", "in.mlir", "-p", "fold-constant", "-o",
                                                          "out.mlir"], "error",
         {"small_cnn.weights.npz": npz[: len(npz) // 2]}, [r"small_cnn\.weights\.npz"]),
        ("small_cnn with its weights .npz missing", cnn, ["dlc-translate", "--to-llvm", "in.mlir", "-o", "out.ll"],
         "error", {}, [r"small_cnn\.weights\.npz"]),
    ]
    return [_case(n + i, w, t, a, e, files=f, locators=loc) for i, (w, t, a, e, f, loc) in enumerate(items)]


def _loop_bounds(n: int) -> list[Case]:
    """Constant loop bounds past the buffers they index: a compile-time error, never a
    segfault or heap corruption at run time."""
    loops = seeds_loop().decode()
    cases = []
    for i, bound in enumerate([300, 3000000]):
        text = loops.replace("tloop.for %d1 = 0 to 3 {", f"tloop.for %d1 = 0 to {bound} {{", 1)
        assert text != loops
        cases.append(_case(n + i, f"loop IR: tloop.for 0 to {bound} over memref<2x3>, dlc run", text.encode(),
                           ["dlc", "run", "in.mlir", "--repeat", "1"], "error", isolated=True))
    return cases


def mlir_cases() -> list[Case]:
    cases: list[Case] = []
    n = 0
    for name, (level, text, files) in seeds().items():
        rng = random.Random(f"mlir-{name}")
        for argv in _commands(level, rng)[:1]:  # the valid seed itself must pass
            cases.append(_case(n, f"{name}: unmutated", text, argv, "ok", files))
            n += 1
        for mutator in TEXT_MUTATORS:
            for _ in range(2 if mutator in (truncate, flip_byte, insert_bytes, delete_line) else 1):
                got = mutator(text, rng)
                if got is None:
                    continue
                what, mutant, expect = got
                for argv in _commands(level, rng):
                    locators = [FILE_LINE_COL, r"in\.mlir"] if mutator is invalid_utf8 else LOCATED
                    how = "--to-llvm" if argv[0] == "dlc-translate" else f"-p {argv[3]}"
                    cases.append(_case(n, f"{name}: {what}: {how}", mutant, argv, expect, files,
                                       locators=locators))
                    n += 1
    for extra in (_structural, _self_contained, _loop_bounds):
        cases += extra(len(cases))
    return cases
