"""Runtime family: mutated ``dlc run`` / ``dlc compile`` arguments, environment and
output paths, and Python-API scenarios (``dlc.compile`` on a tiny model called
with wrong dtypes, shapes, counts, strides, aliasing outputs, bad thread counts;
exported libraries truncated, corrupted, re-exported; a fork after a threaded call).

"Located" here: the message names the option (``--threads``, ``DLC_NUM_THREADS``,
``--output``...), the input (``'a'``), the file, or the thread count.
"""

from __future__ import annotations

import io
import os
import time

import numpy as np

from .case import Case

# 16x16: big enough for the packed, parallel kernel (at 4x4 aliasing and threads go unseen)
N = 16
MATMUL = """\
func.func @main(%a: tensor<NxNxf32>, %b: tensor<NxNxf32>) -> tensor<NxNxf32> {
  %c = graph.matmul %a, %b : (tensor<NxNxf32>, tensor<NxNxf32>) -> tensor<NxNxf32>
  func.return %c : tensor<NxNxf32>
}
""".replace("N", str(N))

TWO_OUT = """\
func.func @main(%a: tensor<2x3xf32>) -> (tensor<2x3xf32>, tensor<2x3xf32>) {
  %r = graph.relu %a : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %n = graph.neg %a : (tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return %r, %n : tensor<2x3xf32>, tensor<2x3xf32>
}
"""

NEG = MATMUL.replace("graph.matmul %a, %b", "graph.sub %a, %b")


def _npy(array) -> bytes:
    buf = io.BytesIO()
    np.save(buf, np.asarray(array))
    return buf.getvalue()


def _huge_onnx() -> bytes:
    """Expand to a 2**22 x 2**22 float tensor (64 TiB), Softmax, ReduceMax to a scalar."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    shape = numpy_helper.from_array(np.array([2**22, 2**22], np.int64), "shape")
    nodes = [helper.make_node("Expand", ["x", "shape"], ["e"], "expand0"),
             helper.make_node("Softmax", ["e"], ["s"], "softmax0", axis=-1),
             helper.make_node("ReduceMax", ["s"], ["y"], "reducemax0", keepdims=0)]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [])], [shape])
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    return m.SerializeToString()


# ---------------------------------------------------------------------------
# Python-API scenarios: run inside the worker in the case's directory; they raise
# (the oracle judges the exception) or return None, or a note when the result is wrong
# ---------------------------------------------------------------------------

_COMPILED: dict[str, object] = {}


def _compiled(text: str = MATMUL):
    import dlc

    if text not in _COMPILED:
        _COMPILED[text] = dlc.compile(text)
    return _COMPILED[text]


def _ab():
    rng = np.random.default_rng(0)
    return rng.standard_normal((N, N)).astype(np.float32), rng.standard_normal((N, N)).astype(np.float32)


def api_call(kind: str):
    m = _compiled()
    a, b = _ab()
    args = {
        "dtype": (a.astype(np.float64), b),
        "int_dtype": (a.astype(np.int32), b),
        "shape": (a[:3], b),
        "rank": (a.reshape(N * N), b),
        "count_few": (a,),
        "count_many": (a, b, b),
        "none": (None, b),
        "object": ("abc", b),
    }[kind]
    m(*args)


def api_noncontiguous():
    m = _compiled()
    a, b = _ab()
    wide = np.zeros((N, 2 * N), np.float32)
    wide[:, ::2] = a
    (got,) = m(wide[:, ::2], b.T.copy().T)
    if not np.allclose(got, a @ b, rtol=1e-5, atol=1e-5):
        return "non-contiguous input gave a wrong product"
    return None


def api_alias(which: str):
    m = _compiled()
    a, b = _ab()
    expected = a @ b
    target = {"a": a, "b": b}[which]
    (got,) = m(a, b, outputs=[target])
    if not np.allclose(got, expected, rtol=1e-5, atol=1e-5):
        return f"outputs=[{which}] accepted and the product is wrong"
    return None


def api_output_buffer(kind: str):
    m = _compiled()
    a, b = _ab()
    out = {"noncontig": np.zeros((N, 2 * N), np.float32)[:, ::2], "dtype": np.zeros((N, N), np.float64),
           "readonly": np.zeros((N, N), np.float32), "count": None}[kind]
    if kind == "readonly":
        out.flags.writeable = False
    m(a, b, outputs=[out, out] if kind == "count" else [out])


def api_threads(n: int):
    m = _compiled()
    m.set_num_threads(n)
    a, b = _ab()
    (got,) = m(a, b)
    m.set_num_threads(1)
    if not np.allclose(got, a @ b, rtol=1e-5, atol=1e-5):
        return f"set_num_threads({n}) then a wrong product"
    return None


def api_compile_threads(n: int):
    import dlc

    m = dlc.compile(MATMUL, num_threads=n)
    a, b = _ab()
    m(a, b)


def api_export(path_kind: str):
    m = _compiled()
    target = {"dir": "outdir", "missing": "missing/model.so", "ok": "model.so"}[path_kind]
    m.export(target)


def _exported(path: str = "model.so", text: str = MATMUL) -> bytes:
    _compiled(text).export(path)
    with open(path, "rb") as f:
        return f.read()


def api_load_truncated(keep: int):
    import dlc.runtime

    data = _exported("full.so")
    os.unlink("full.so")
    with open("model.so", "wb") as f:
        f.write(data[: keep if keep > 0 else len(data) // 2])
    dlc.runtime.load("model.so")(*_ab())


def api_load_corrupt_metadata():
    import dlc.runtime

    data = bytearray(_exported("full.so"))
    os.unlink("full.so")
    k = data.find(b'{"format"')
    if k < 0:
        return "no metadata found in the exported library"
    data[k + 1] = ord("!")  # the JSON no longer parses; the library still loads
    with open("model.so", "wb") as f:
        f.write(bytes(data))
    dlc.runtime.load("model.so")(*_ab())


def api_load_not_a_library(kind: str):
    import dlc.runtime

    if kind == "empty":
        open("model.so", "wb").close()
    elif kind == "text":
        with open("model.so", "w") as f:
            f.write("not an ELF file\n")
    elif kind == "dir":
        os.mkdir("model.so")
    dlc.runtime.load("model.so")


def api_reexport_same_path():
    """Export model A, load it, export model B to the same path, load again: B must run."""
    import dlc.runtime

    a, b = _ab()
    _exported("model.so", MATMUL)
    first = dlc.runtime.load("model.so")(a, b)[0]
    _exported("model.so", NEG)
    second = dlc.runtime.load("model.so")(a, b)[0]
    if not np.allclose(first, a @ b, rtol=1e-5, atol=1e-5):
        return "the first library gave a wrong product"
    if not np.allclose(second, a - b):
        return "the re-exported library at the same path ran the old model"
    return None


def api_fork_after_threads():
    """A forked child's first call after a 2-thread call in the parent must finish."""
    m = _compiled()
    m.set_num_threads(2)
    a, b = _ab()
    m(a, b)
    pid = os.fork()
    if pid == 0:  # the child: one call, then exit without Python's cleanup
        try:
            (got,) = m(a, b)
            os._exit(0 if np.allclose(got, a @ b, rtol=1e-5, atol=1e-5) else 3)
        except BaseException:
            os._exit(4)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            code = os.waitstatus_to_exitcode(status)
            return None if code == 0 else f"the forked child's call failed (exit {code})"
        time.sleep(0.05)
    os.kill(pid, 9)
    os.waitpid(pid, 0)
    return "the forked child hung on its first call (killed after 10 s)"


def api_te_compile():
    """``import dlc; dlc.te.compile(...)`` as the README shows it."""
    import dlc

    fn = dlc.te.compile("input A: f32[4, 3]\ninput B: f32[3, 5]\nC[i, j] = sum(k: A[i, k] * B[k, j])\n")
    a, b = np.ones((4, 3), np.float32), np.ones((3, 5), np.float32)
    got = fn(a, b)  # one output: the array itself
    return None if np.allclose(got, a @ b) else "dlc.te.compile gave a wrong product"


def selftest_crash():
    """For the runner's own test: die by SIGSEGV."""
    import ctypes

    ctypes.string_at(0)


def selftest_hang():
    """For the runner's own test: never return."""
    while True:
        time.sleep(1)


def selftest_ok():
    return None


API = {f.__name__: f for f in [selftest_crash, selftest_hang, selftest_ok, api_te_compile, 
    api_call, api_noncontiguous, api_alias, api_output_buffer, api_threads, api_compile_threads, api_export,
    api_load_truncated, api_load_corrupt_metadata, api_load_not_a_library, api_reexport_same_path,
    api_fork_after_threads,
]}


# ---------------------------------------------------------------------------
# the cases
# ---------------------------------------------------------------------------


def runtime_cases() -> list[Case]:
    cases: list[Case] = []

    def add(what, expect, locators, argv=None, api=None, params=None, files=None, **kw):
        cases.append(Case(id=f"runtime-{len(cases)}", family="runtime", what=what, argv=argv or [], api=api,
                          params=params or {}, files=files or {}, expect=expect, locators=locators, **kw))

    rng = np.random.default_rng(0)
    a = rng.standard_normal((N, N)).astype(np.float32)
    model = {"m.mlir": MATMUL.encode()}
    run = ["dlc", "run", "m.mlir", "--repeat", "1"]
    add("dlc run, valid", "ok", [], run, files=model)
    # threads
    for value, expect, isolated in [("1000000", "any", True), ("2147483648", "error", True), ("-1", "error", False),
                                    ("abc", "error", False), ("0", "any", False), ("99999999999999999999", "error", True)]:
        add(f"--threads {value}", expect, [r"--threads|thread"], run + ["--threads", value], files=model,
            isolated=isolated)
    for value, expect in [("abc", "error"), ("-3", "error"), ("99999999999", "error"), ("", "any"), ("2", "ok")]:
        add(f"DLC_NUM_THREADS={value!r}", expect, [r"DLC_NUM_THREADS"], run, files=model,
            env={"DLC_NUM_THREADS": value})
    for value, expect in [("-1", "any"), ("18446744073709551616", "any"), ("x", "error")]:
        add(f"--seed {value}", expect, [r"--seed"], run + ["--seed", value], files=model)
    # inputs
    b = rng.standard_normal((N, N)).astype(np.float32)
    npys = {"a.npy": _npy(a), "b.npy": _npy(b), "a3.npy": _npy(a[:3]), "a64.npy": _npy(a.astype(np.float64)),
            "bad.npy": _npy(a)[:40], "obj.npy": b"\x93NUMPY" + b"\x00" * 30}
    for what, inputs, expect, locs in [
        ("--input a, b valid", ["a.npy", "b.npy"], "ok", []),
        ("--input wrong shape", ["a3.npy", "b.npy"], "error", [r"'a'|\ba\b", r"a3\.npy"]),
        ("--input wrong dtype", ["a64.npy", "b.npy"], "error", [r"'a'|\ba\b", r"a64\.npy"]),
        ("--input one of two (the other random)", ["a.npy"], "any", [r"input", r"'b'"]),
        ("--input three for two", ["a.npy", "b.npy", "b.npy"], "error", [r"--input|input"]),
        ("--input unknown name", ["zz=a.npy", "b.npy"], "error", [r"zz"]),
        ("--input truncated .npy", ["bad.npy", "b.npy"], "error", [r"bad\.npy"]),
        ("--input corrupt .npy header", ["obj.npy", "b.npy"], "error", [r"obj\.npy"]),
        ("--input missing file", ["nope.npy", "b.npy"], "error", [r"nope\.npy"]),
    ]:
        argv = run + [x for f in inputs for x in ("--input", f)]
        add(what, expect, locs, argv, files={**model, **npys})
    # outputs of dlc run
    add("--output DIR", "error", [r"--output|outdir"], run + ["--output", "outdir"], files=model,
        special={"outdir": "dir"}, must_not_exist=["outdir.npy", "outdir/0.npy"])
    add("--output missing dir", "error", [r"--output|missing"], run + ["--output", "missing/y.npy"], files=model)
    add("--output FIFO", "any", [r"--output|pipe"], run + ["--output", "pipe.npy"], files=model,
        special={"pipe.npy": "fifo"})
    two = {"m.mlir": TWO_OUT.encode()}
    run2 = ["dlc", "run", "m.mlir", "--repeat", "1"]
    add("two --output, the second to a missing dir", "error", [r"--output|missing"],
        run2 + ["--output", "y1.npy", "--output", "missing/y2.npy"], files=two, must_not_exist=["y1.npy"])
    add("three --output for two outputs", "error", [r"--output|output"],
        run2 + ["--output", "y1.npy", "--output", "y2.npy", "--output", "y3.npy"], files=two,
        must_not_exist=["y1.npy", "y2.npy"])
    add("--expect wrong shape", "error", [r"--expect|a3\.npy|output"], run + ["--expect", "a3.npy"],
        files={**model, **npys})
    add("dlc run on a directory", "error", [r"m\.mlir"], run, special={"m.mlir": "dir"})
    add("dlc run on an empty .onnx", "error", [r"m\.onnx"], ["dlc", "run", "m.onnx", "--repeat", "1"],
        files={"m.onnx": b""})
    add("dlc run: 64 TiB intermediate", "error", [r"expand0|softmax0|reducemax0|alloc|memory|bytes|TiB"],
        ["dlc", "run", "m.onnx", "--repeat", "1"], files={"m.onnx": _huge_onnx()}, isolated=True)
    # file outputs of the tools
    opt = ["dlc-opt", "m.mlir"]
    add("dlc-opt -o FIFO", "ok", [], opt + ["-o", "pipe.mlir"], files=model, special={"pipe.mlir": "fifo"})
    add("dlc-opt -o symlink", "ok", [], opt + ["-o", "link.mlir"], files={**model, "target.mlir": b"old\n"},
        special={"link.mlir": "symlink:target.mlir"})
    add("dlc-translate -o symlink", "ok", [], ["dlc-translate", "--to-llvm", "m.mlir", "-o", "link.ll"],
        files={**model, "target.ll": b"old\n"}, special={"link.ll": "symlink:target.ll"})
    add("dlc-opt -o DIR", "error", [r"outdir"], opt + ["-o", "outdir"], files=model, special={"outdir": "dir"})
    for target, locs in [("outdir", [r"outdir"]), ("missing/x.so", [r"missing"]), ("/proc/x.so", [r"/proc/x\.so"])]:
        special = {"outdir": "dir"} if target == "outdir" else {}
        add(f"dlc compile -o {target}", "error", locs, ["dlc", "compile", "m.mlir", "-o", target], files=model,
            special=special, must_not_exist=["outdir/m.so"])
    add("dlc compile -o x.so, valid", "ok", [], ["dlc", "compile", "m.mlir", "-o", "x.so"], files=model)
    # targets, BYOC, the C runtime's builder and RPC: bad words name the word
    compile_ = ["dlc", "compile", "m.mlir", "-o", "x.so", "--target"]
    for target, locs in [("llvm -mtriple=mips-linux-gnu", [r"mips"]), ("llvm -mattr=+nosuch", [r"nosuch"]),
                         ("llvm -mcpu=nosuchcpu", [r"nosuchcpu"]), ("llvm -num-cores=0", [r"num-cores"]),
                         ("llvm -num-cores=abc", [r"num-cores|abc"]), ("llvm -mtriple=", [r"mtriple"]),
                         ("", [r"target"]), ("c -O3", [r"-O3"]), ("tpu", [r"tpu"]),
                         ("aarch64 -mattr=+avx512f", [r"avx512f"]), ("llvm -mtriple=riscv64-linux-gnu -mattr=-d", [r"\bd\b|riscv64"])]:
        add(f"dlc compile --target {target!r}", "error", locs, compile_ + [target], files=model,
            must_not_exist=["x.so"])
    add("dlc compile --target aarch64 (cross)", "any", [r"aarch64"], compile_ + ["aarch64"], files=model)
    add("dlc run --target aarch64 (not runnable here)", "error", [r"aarch64"], run + ["--target", "aarch64"],
        files=model)
    add("dlc compile --target c -o DIR", "error", [r"outdir"], ["dlc", "compile", "m.mlir", "--target", "c",
                                                                 "-o", "outdir"], files=model,
        special={"outdir": "dir"}, must_not_exist=["outdir/m.tar"])
    add("dlc compile --target c, valid", "ok", [], ["dlc", "compile", "m.mlir", "--target", "c", "-o", "m.tar"],
        files=model)
    for byoc, expect, locs in [("nope", "error", [r"nope"]), ("c,nope", "error", [r"nope"]), ("", "any", [r"byoc"]),
                               ("c", "ok", [])]:
        add(f"dlc compile --byoc {byoc!r}", expect, locs, ["dlc", "compile", "m.mlir", "-o", "x.so", "--byoc", byoc],
            files=model, must_not_exist=["x.so"] if expect == "error" else [])
    add("dlc build-runtime -o FILE", "error", [r"afile"], ["dlc", "build-runtime", "-o", "afile"],
        files={"afile": b"x"})
    add("dlc build-runtime --target sparc64", "error", [r"sparc64"],
        ["dlc", "build-runtime", "-o", "rt", "--target", "sparc64-linux-gnu"], must_not_exist=["rt/dlc-run"])
    for rpc, locs in [("notaport", [r"notaport|--rpc"]), ("127.0.0.1:99999", [r"99999|--rpc|port"]),
                      ("127.0.0.1:1", [r"127\.0\.0\.1:1|connect"])]:
        add(f"dlc run --rpc {rpc}", "error", locs, ["dlc", "run", "x.so", "--rpc", rpc], files={"x.so": b"\x7fELF"})
    add("dlc run m.mlir --rpc (not a library)", "error", [r"m\.mlir|--rpc"], run + ["--rpc", "127.0.0.1:1"],
        files=model)
    add("dlc rpc server on 0.0.0.0 without a token", "error", [r"0\.0\.0\.0|token"],
        ["dlc", "rpc", "server", "--host", "0.0.0.0", "--port", "0"])
    add("dlc rpc server --port 99999", "error", [r"99999|port"], ["dlc", "rpc", "server", "--port", "99999"])
    add("dlc rpc server --token-file missing", "error", [r"missing|token"],
        ["dlc", "rpc", "server", "--port", "0", "--token-file", "missing.txt"])
    # Python API
    name_a = [r"'a'|\ba\b"]
    for kind in ["dtype", "int_dtype", "shape", "rank", "none", "object"]:
        add(f"API: call with a wrong {kind}", "error", name_a, api="api_call", params={"kind": kind})
    for kind in ["count_few", "count_many"]:
        add(f"API: call with a wrong count ({kind})", "error", [r"inputs?"], api="api_call", params={"kind": kind})
    add("API: non-contiguous input", "ok", [], api="api_noncontiguous")
    for which in ["a", "b"]:
        add(f"API: outputs=[{which}] aliases an input", "any", [r"alias|overlap|output"], api="api_alias",
            params={"which": which})
    for kind in ["noncontig", "dtype", "readonly", "count"]:
        add(f"API: output buffer {kind}", "error", [r"output"], api="api_output_buffer", params={"kind": kind})
    for n, expect, isolated in [(-1, "error", False), (2**32 + 1, "error", True), (10**6, "any", True),
                                (2**31, "error", True)]:
        add(f"API: set_num_threads({n})", expect, [r"thread"], api="api_threads", params={"n": n},
            isolated=isolated)
    add("API: dlc.compile(num_threads=-1)", "error", [r"num_threads"], api="api_compile_threads", params={"n": -1})
    for kind, expect, locs in [("dir", "error", [r"outdir"]), ("missing", "error", [r"missing"]), ("ok", "ok", [])]:
        special = {"outdir": "dir"} if kind == "dir" else {}
        add(f"API: export to {kind}", expect, locs, api="api_export", params={"path_kind": kind}, special=special,
            must_not_exist=["outdir/model.so"])
    for keep in [0, 100]:
        add(f"API: load a truncated .so ({'half' if keep == 0 else keep} bytes)", "error", [r"model\.so"],
            api="api_load_truncated", params={"keep": keep}, isolated=True, scratch=["model.so"])
    add("API: load a .so with corrupt metadata", "error", [r"model\.so"], api="api_load_corrupt_metadata",
        isolated=True, scratch=["model.so"])
    for kind in ["empty", "text", "dir", "missing"]:
        add(f"API: load a {kind} model.so", "error", [r"model\.so"], api="api_load_not_a_library",
            params={"kind": kind}, scratch=["model.so"])
    add("API: re-export to the same path and load again", "ok", [], api="api_reexport_same_path", isolated=True)
    add("API: import dlc; dlc.te.compile(...) as the README shows", "ok", [], api="api_te_compile", isolated=True)
    add("API: fork after a 2-thread call", "ok", [], api="api_fork_after_threads", isolated=True, timeout=90)
    return cases
