"""The C runtime (dlc/runtime/c) and `dlc-run`, built on the host with
`dlc.backends.c_runtime.build_runtime` (-Werror -pedantic):

* examples/small_cnn.onnx through dlc-run matches dlc.runtime.load bit for bit and
  onnxruntime within float tolerance; the fast ONNX light models match their shipped
  outputs (the rest under `-m slow`);
* the C API used directly from a C program (entries, specs, threads, buffer checks);
* every bad input is one line `dlc-run: error: ...` and exit status 1: truncated,
  modified, foreign and not-dlc libraries, hostile metadata (hand-written model
  libraries in C with the exporter's ABI), wrong shape / dtype / rank, missing and
  garbage .npy files, unknown entries and inputs.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import onnx
import pytest
from onnx import numpy_helper

import dlc
from dlc.backends.c_runtime import LIBRARY_SOURCES, RUNNER_SOURCES, build_runtime, source_dir
from dlc.runtime.library import append_trailer

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SMALL_CNN = os.path.join(REPO, "examples", "small_cnn.onnx")
sys.path.insert(0, os.path.join(REPO, "conformance"))

import run_light_models  # noqa: E402

FAST_LIGHT = ["squeezenet", "bvlc_alexnet"]  # ~10 s each to compile; the others 15-60 s


@pytest.fixture(scope="module")
def runtime(tmp_path_factory):
    return build_runtime(str(tmp_path_factory.mktemp("runtime")), strict=True)


@pytest.fixture(scope="module")
def small_cnn(tmp_path_factory):
    path = str(tmp_path_factory.mktemp("model") / "small_cnn.so")
    dlc.compile(SMALL_CNN).export(path)
    return path


def run_c(runtime, *args, cwd=None):
    return subprocess.run([runtime.runner, *map(str, args)], capture_output=True, text=True, cwd=cwd, timeout=120)


def assert_error(proc, *fragments, status=1):
    """One line `dlc-run: error: ...` naming every fragment, the given exit status."""
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode == status, (proc.returncode, proc.stderr)
    assert len(lines) == 1 and lines[0].startswith("dlc-run: error: "), proc.stderr
    for fragment in fragments:
        assert fragment in lines[0], (fragment, lines[0])
    return lines[0]


def test_build_writes_header_libraries_and_runner(runtime):
    for path in (runtime.header, runtime.static_library, runtime.shared_library, runtime.runner):
        assert os.path.isfile(path), path
    assert os.access(runtime.runner, os.X_OK)
    assert not [n for n in os.listdir(runtime.directory) if n.startswith(".")]  # no build leftovers
    proc = run_c(runtime, "--help")
    assert proc.returncode == 0 and "usage: dlc-run MODEL.so" in proc.stdout


def test_sources_are_what_the_builder_compiles():
    shipped = sorted(n for n in os.listdir(source_dir()) if n.endswith(".c"))
    assert shipped == sorted(LIBRARY_SOURCES + RUNNER_SOURCES)


def test_small_cnn_matches_python_runtime_and_onnxruntime(runtime, small_cnn, tmp_path):
    ort = pytest.importorskip("onnxruntime")
    x = np.random.default_rng(0).standard_normal((1, 3, 32, 32)).astype(np.float32)
    np.save(tmp_path / "x.npy", x)
    proc = run_c(runtime, small_cnn, tmp_path / "x.npy", "-o", tmp_path / "out", "--repeat", "3")
    assert proc.returncode == 0, proc.stderr
    assert "output 0 'probs': float32 [1, 10] sum" in proc.stdout
    assert "time: median" in proc.stdout and "(3 runs)" in proc.stdout
    y = np.load(tmp_path / "out" / "probs.npy")
    expected = dlc.runtime.load(small_cnn)(x)[0]
    np.testing.assert_array_equal(y, expected)  # the same machine code on the same input
    session = ort.InferenceSession(SMALL_CNN, providers=["CPUExecutionProvider"])
    (reference,) = session.run(None, {session.get_inputs()[0].name: x})
    np.testing.assert_allclose(y, reference, rtol=1e-4, atol=1e-5)
    # by name, with threads, to the same directory again (replaced)
    proc = run_c(runtime, small_cnn, "-i", f"image={tmp_path / 'x.npy'}", "--threads", "1", "-o", tmp_path / "out")
    assert proc.returncode == 0, proc.stderr
    np.testing.assert_array_equal(np.load(tmp_path / "out" / "probs.npy"), expected)
    assert sorted(os.listdir(tmp_path / "out")) == ["probs.npy"]


def test_info_lists_entries(runtime, small_cnn):
    proc = run_c(runtime, small_cnn, "--info")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines() == ["entry @main (default)", "  input 0 'image': float32 [1, 3, 32, 32]",
                                        "  output 0 'probs': float32 [1, 10]"]


def _light(name, runtime, tmp_path):
    so = str(tmp_path / f"{name}.so")
    dlc.compile(os.path.join(run_light_models.LIGHT_DIR, f"light_{name}.onnx")).export(so)
    np.save(tmp_path / "x.npy", run_light_models.light_input(name))
    proc = run_c(runtime, so, tmp_path / "x.npy", "-o", tmp_path / "out")
    assert proc.returncode == 0, proc.stderr
    (output,) = os.listdir(tmp_path / "out")
    tensor = onnx.load_tensor(os.path.join(run_light_models.LIGHT_DIR, f"light_{name}_output_0.pb"))
    np.testing.assert_allclose(np.load(tmp_path / "out" / output), numpy_helper.to_array(tensor),
                               rtol=run_light_models.RTOL, atol=run_light_models.ATOL)


@pytest.mark.parametrize("name", FAST_LIGHT)
def test_light_model_through_dlc_run(name, runtime, tmp_path):
    _light(name, runtime, tmp_path)


@pytest.mark.slow
@pytest.mark.parametrize("name", [n for n in run_light_models.ALL_LIGHT if n not in FAST_LIGHT])
def test_every_light_model_through_dlc_run(name, runtime, tmp_path):
    _light(name, runtime, tmp_path)


# -- errors of a real model -----------------------------------------------------------


def test_bad_libraries(runtime, small_cnn, tmp_path):
    x = tmp_path / "x.npy"
    np.save(x, np.zeros((1, 3, 32, 32), np.float32))
    data = open(small_cnn, "rb").read()
    (tmp_path / "trunc.so").write_bytes(data[: len(data) // 2])
    assert_error(run_c(runtime, tmp_path / "trunc.so", x), "trunc.so: truncated")
    (tmp_path / "short.so").write_bytes(data[:-1])  # ELF intact, trailer cut
    assert_error(run_c(runtime, tmp_path / "short.so", x), "no dlc checksum trailer")
    flipped = bytearray(data)
    flipped[len(data) // 3] ^= 0xFF
    (tmp_path / "flip.so").write_bytes(bytes(flipped))
    assert_error(run_c(runtime, tmp_path / "flip.so", x), "checksum mismatch")
    (tmp_path / "text.so").write_text("hello")
    assert_error(run_c(runtime, tmp_path / "text.so", x), "not an ELF shared library")
    assert_error(run_c(runtime, tmp_path / "missing.so", x), "missing.so: no such file")
    assert_error(run_c(runtime, tmp_path, x), "not a regular file (a directory)")
    foreign = bytearray(data)
    foreign[18:20] = (183).to_bytes(2, "little")  # e_machine: aarch64
    (tmp_path / "arm.so").write_bytes(bytes(foreign))
    assert_error(run_c(runtime, tmp_path / "arm.so", x), "built for another machine (ELF machine 183")


def test_bad_inputs(runtime, small_cnn, tmp_path):
    good = np.zeros((1, 3, 32, 32), np.float32)
    np.save(tmp_path / "shape.npy", np.zeros((1, 4, 32, 32), np.float32))
    assert_error(run_c(runtime, small_cnn, tmp_path / "shape.npy"), "input 'image'", "dim 1 is 4, the model expects 3")
    np.save(tmp_path / "rank.npy", np.zeros((3, 32, 32), np.float32))
    assert_error(run_c(runtime, small_cnn, tmp_path / "rank.npy"), "input 'image'", "has 3 dims, the model expects 4")
    np.save(tmp_path / "f64.npy", good.astype(np.float64))
    assert_error(run_c(runtime, small_cnn, tmp_path / "f64.npy"), "input 'image'",
                 "dtype float64, the model expects float32")
    assert_error(run_c(runtime, small_cnn, tmp_path / "none.npy"), "input 'image'", "none.npy: no such file")
    (tmp_path / "garbage.npy").write_bytes(os.urandom(200))
    assert_error(run_c(runtime, small_cnn, tmp_path / "garbage.npy"), "garbage.npy: not a .npy file")
    np.save(tmp_path / "good.npy", good)
    raw = (tmp_path / "good.npy").read_bytes()
    (tmp_path / "cut.npy").write_bytes(raw[:-7])
    assert_error(run_c(runtime, small_cnn, tmp_path / "cut.npy"), "cut.npy", "(truncated)")
    (tmp_path / "header.npy").write_bytes(raw[:10] + raw[10:].replace(b"'shape'", b"'shxpe'", 1))
    assert_error(run_c(runtime, small_cnn, tmp_path / "header.npy"), "unknown key 'shxpe'")
    np.save(tmp_path / "fortran.npy", np.asfortranarray(good.reshape(3, 1024).T))
    assert_error(run_c(runtime, small_cnn, tmp_path / "fortran.npy"), "Fortran-order")
    np.save(tmp_path / "big.npy", good.astype(">f4"))
    assert_error(run_c(runtime, small_cnn, tmp_path / "big.npy"), "big-endian")
    np.save(tmp_path / "obj.npy", np.array([1, "a"], dtype=object), allow_pickle=True)
    assert_error(run_c(runtime, small_cnn, tmp_path / "obj.npy"), "element type '|O' is not supported")
    assert_error(run_c(runtime, small_cnn), "input 'image' of @main is missing")
    assert_error(run_c(runtime, small_cnn, tmp_path / "good.npy", tmp_path / "good.npy"), "takes 1 inputs, got 2")
    assert_error(run_c(runtime, small_cnn, "-i", f"imag={tmp_path / 'good.npy'}"), "-i imag=", "no input named")
    assert_error(run_c(runtime, small_cnn, tmp_path / "good.npy", "-i", f"image={tmp_path / 'good.npy'}"),
                 "input 'image' is given twice")
    assert_error(run_c(runtime, small_cnn, tmp_path / "good.npy", "--entry", "nope"),
                 "no entry point named @nope (have @main)")
    (tmp_path / "file").write_text("")
    assert_error(run_c(runtime, small_cnn, tmp_path / "good.npy", "-o", tmp_path / "file"), "not a directory")
    assert_error(run_c(runtime, small_cnn, "--threads", "2000"), "--threads", status=2)
    assert_error(run_c(runtime, small_cnn, "--bogus"), "unknown option: --bogus", status=2)
    assert_error(run_c(runtime), "no model given", status=2)


# -- hand-written model libraries (the exporter's ABI, metadata of our choosing) -------

TINY_C = r"""
#include <stdint.h>
%(metadata)s
static int64_t failure;
int32_t add1(void *x, void *y) {
    const float *a = x;
    float *b = y;
    int i;
    if (a[0] == -1.0f) { failure = (int64_t)1 << 40; return 1; }
    if (a[0] == -2.0f) { failure = 1000; return 2; }
    if (a[0] == -3.0f) return 7;
    for (i = 0; i < 4; i++) b[i] = a[i] + 1.0f;
    return 0;
}
#ifndef NO_WRAPPER
int32_t add1__packed(void **args) { return add1(args[0], args[1]); }
#endif
int32_t dlc_threads = -1;
void dlc_set_num_threads(int32_t n) { dlc_threads = n; }
void dlc_release_workspaces(void) {}
int64_t dlc_alloc_failure_bytes(void) { return failure; }
"""


def meta(**override):
    spec = {"name": "x", "shape": [4], "dtype": "float32"}
    data = {"format": "dlc-2", "default_entry": "add1",
            "entries": {"add1": {"inputs": [spec], "outputs": [dict(spec, name="y")]}}}
    data.update(override)
    return json.dumps(data)


def tiny_model(tmp_path, metadata: str | None = None, raw_metadata: str | None = None, name="tiny",
               defines=(), cc=None, trailer=True) -> str:
    """A model library written in C: metadata (JSON, or a raw C definition), add1(x) = x + 1."""
    if raw_metadata is None:
        literal = json.dumps(metadata if metadata is not None else meta())  # a valid C string literal here
        raw_metadata = f"const char dlc_metadata[] = {literal};"
    src = tmp_path / f"{name}.c"
    src.write_text(TINY_C % {"metadata": raw_metadata})
    so = tmp_path / f"{name}.so"
    subprocess.run([cc or "cc", "-shared", "-fPIC", "-O1", *defines, "-o", str(so), str(src)], check=True)
    if trailer:
        append_trailer(str(so))
    return str(so)


def test_hand_written_model_runs(runtime, tmp_path):
    so = tiny_model(tmp_path, meta(entries={"add1": {"inputs": [{"name": "x", "shape": [4], "dtype": "float32"}],
                                                     "outputs": [{"name": "../a/b", "shape": [4],
                                                                  "dtype": "float32"}]}}))
    np.save(tmp_path / "x.npy", np.arange(4, dtype=np.float32))
    proc = run_c(runtime, so, tmp_path / "x.npy", "-o", tmp_path / "out")
    assert proc.returncode == 0, proc.stderr
    assert os.listdir(tmp_path / "out") == ["_._a_b.npy"]  # sanitized: stays inside -o
    np.testing.assert_array_equal(np.load(tmp_path / "out" / "_._a_b.npy"), np.arange(4) + 1)


def test_model_statuses(runtime, tmp_path):
    so = tiny_model(tmp_path)
    for value, message in ((-1, "out of memory: workspace of 1.0 TiB for @add1 could not be allocated"),
                           (-2, "out of memory: a buffer of 1000 B in @add1 could not be allocated"),
                           (-3, "@add1 failed with unknown status 7")):
        np.save(tmp_path / "x.npy", np.full(4, value, np.float32))
        assert_error(run_c(runtime, so, tmp_path / "x.npy"), message)


def test_not_dlc_libraries(runtime, tmp_path):
    x = tmp_path / "x.npy"
    np.save(x, np.zeros(4, np.float32))
    plain = tiny_model(tmp_path, name="plain", trailer=False)
    assert_error(run_c(runtime, plain, x), "no dlc checksum trailer")
    nometa = tiny_model(tmp_path, raw_metadata="", name="nometa")
    assert_error(run_c(runtime, nometa, x), "not a dlc model (no dlc_metadata symbol)")
    old = tiny_model(tmp_path, name="old", defines=["-DNO_WRAPPER"])
    assert_error(run_c(runtime, old, x), "@add1 has no packed wrapper add1__packed", "re-export")
    lacks = tiny_model(tmp_path, meta(default_entry="sub1", entries={"sub1": json.loads(meta())["entries"]["add1"]}),
                       name="lacks")
    assert_error(run_c(runtime, lacks, x), "the metadata names @sub1, which the library lacks")


DEEP = "[" * 200 + "]" * 200
HOSTILE = {
    "unterminated": ('const char dlc_metadata[5] = "{\\"ab\\"";', "not NUL-terminated"),
    "deep": (None, meta(extra=None).replace('"extra": null', f'"extra": {DEEP}'), "nested deeper than 64"),
    "old_format": (None, meta(format="dlc-1"), "metadata format 'dlc-1', this runtime reads 'dlc-2'"),
    "negative_dim": (None, meta().replace("[4]", "[-4]", 1), "a dim is negative"),
    "float_dim": (None, meta().replace("[4]", "[4.5]", 1), "expected an integer"),
    "huge": (None, meta().replace("[4]", "[4611686018427387904, 4611686018427387904]", 1), "too large"),
    "dtype": (None, meta().replace('"float32"', '"complex64"', 1), "unknown dtype 'complex64'"),
    "spec_key": (None, meta().replace('"dtype"', '"kind": 1, "dtype"', 1), "unknown key 'kind' in a tensor spec"),
    "no_default": (None, meta(default_entry="zzz"), "the default entry @zzz is not among the entries"),
    "trailing": (None, meta() + " {}", "text after the metadata object"),
    "escape": (None, meta().replace('"x"', '"\\q"', 1), "bad escape"),
    "surrogate": (None, meta().replace('"x"', '"\\ud800"', 1), "unpaired surrogate"),
    "nul": (None, meta().replace('"x"', '"\\u0000"', 1), "NUL character"),
    "truncated": (None, meta()[:-5], "corrupt dlc_metadata"),
    "no_entries": (None, meta(entries={}), "no entries"),
    "repeated": (None, meta()[:-1] + ', "format": "dlc-2"}', "key 'format' repeated"),
    "not_json": (None, "hello", "expected '{'"),
}


@pytest.mark.parametrize("case", sorted(HOSTILE))
def test_hostile_metadata_is_one_error(runtime, tmp_path, case):
    raw, *rest = HOSTILE[case]
    text, fragment = (None, rest[0]) if raw is not None else rest
    so = tiny_model(tmp_path, text, raw_metadata=raw)
    np.save(tmp_path / "x.npy", np.zeros(4, np.float32))
    assert_error(run_c(runtime, so, tmp_path / "x.npy"), fragment)


def test_unknown_top_level_keys_are_skipped(runtime, tmp_path):
    so = tiny_model(tmp_path, meta(target={"triple": "x", "list": [1, 2.5e3, True, None, "\u00e9"]},
                                   num_threads=1))
    np.save(tmp_path / "x.npy", np.zeros(4, np.float32))
    proc = run_c(runtime, so, tmp_path / "x.npy")
    assert proc.returncode == 0, proc.stderr


# -- the C API from C -------------------------------------------------------------------

API_TEST = r"""
#include <stdio.h>
#include <string.h>
#include "dlc_runtime.h"
#define CHECK(c) do { if (!(c)) { printf("FAIL line %d: %s\n", __LINE__, #c); return 1; } } while (0)
int main(int argc, char **argv) {
    dlc_error err;
    dlc_model *m = (dlc_model *)1;
    const dlc_entry *e;
    const dlc_tensor_info *t;
    float x[4] = {1, 2, 3, 4}, y[4];
    void *in[1], *out[1];
    (void)argc;
    CHECK(dlc_model_open("/nonexistent.so", &m, &err) == DLC_ERR_IO && m == NULL);
    CHECK(err.status == DLC_ERR_IO && strstr(err.message, "no such file"));
    CHECK(dlc_model_open(argv[1], &m, &err) == DLC_OK && err.message[0] == 0);
    CHECK(dlc_model_num_entries(m) == 1 && dlc_model_entry(m, 1) == NULL);
    e = dlc_model_default_entry(m);
    CHECK(strcmp(dlc_entry_name(e), "add1") == 0);
    CHECK(dlc_model_find_entry(m, "add1", &e, &err) == DLC_OK);
    CHECK(dlc_model_find_entry(m, "nope", &e, NULL) == DLC_ERR_ARGUMENT && e == NULL);
    CHECK(dlc_model_find_entry(m, NULL, &e, &err) == DLC_OK);
    CHECK(dlc_entry_num_inputs(e) == 1 && dlc_entry_num_outputs(e) == 1 && dlc_entry_input(e, 1) == NULL);
    t = dlc_entry_output(e, 0);
    CHECK(strcmp(t->name, "y") == 0 && t->dtype == DLC_FLOAT32 && t->ndim == 1 && t->shape[0] == 4);
    CHECK(t->num_elements == 4 && t->byte_size == 16);
    CHECK(strcmp(dlc_dtype_name(DLC_BFLOAT16), "bfloat16") == 0 && dlc_dtype_size(DLC_INT64) == 8);
    in[0] = x; out[0] = y;
    CHECK(dlc_entry_run(e, in, out, &err) == DLC_OK && y[0] == 2 && y[3] == 5);
    out[0] = x + 2;  /* overlaps the input */
    CHECK(dlc_entry_run(e, in, out, &err) == DLC_ERR_ARGUMENT && strstr(err.message, "overlaps input 'x'"));
    out[0] = NULL;
    CHECK(dlc_entry_run(e, in, out, &err) == DLC_ERR_ARGUMENT && strstr(err.message, "output buffer 'y' is NULL"));
    out[0] = y;
    CHECK(dlc_entry_run(e, NULL, out, &err) == DLC_ERR_ARGUMENT && strstr(err.message, "inputs array is NULL"));
    CHECK(dlc_model_set_num_threads(m, 1025, &err) == DLC_ERR_ARGUMENT && strstr(err.message, "out of range"));
    CHECK(dlc_model_set_num_threads(m, 3, &err) == DLC_OK);
    CHECK(strcmp(dlc_status_name(DLC_ERR_FORMAT), "DLC_ERR_FORMAT") == 0);
    dlc_model_close(m);
    dlc_model_close(NULL);
    printf("ok\n");
    return 0;
}
"""


@pytest.mark.parametrize("link", ["static", "shared"])
def test_c_api(runtime, tmp_path, link):
    so = tiny_model(tmp_path)
    src = tmp_path / "api_test.c"
    src.write_text(API_TEST)
    exe = tmp_path / "api_test"
    library = runtime.static_library if link == "static" else runtime.shared_library
    subprocess.run(["cc", "-std=c99", "-pedantic", "-Wall", "-Wextra", "-Werror",
                    f"-I{os.path.dirname(runtime.header)}", "-o", str(exe), str(src), library, "-ldl"], check=True)
    env = dict(os.environ, LD_LIBRARY_PATH=runtime.directory)
    proc = subprocess.run([str(exe), so], capture_output=True, text=True, env=env, timeout=60)
    assert proc.returncode == 0 and proc.stdout.strip() == "ok", proc.stdout + proc.stderr


def test_build_errors(tmp_path):
    from dlc.backends.c_runtime import RuntimeBuildError

    (tmp_path / "file").write_text("")
    with pytest.raises(RuntimeBuildError, match="exists and is not a directory"):
        build_runtime(str(tmp_path / "file"))
    with pytest.raises(RuntimeBuildError, match="unknown target 'sparc64-linux-gnu'"):
        build_runtime(str(tmp_path / "x"), "sparc64-linux-gnu")
    assert not os.path.exists(tmp_path / "x")


def test_cli_build_runtime(tmp_path):
    # -o relative to the working directory (the README's `-o rt/`)
    proc = subprocess.run(["dlc", "build-runtime", "-o", "rt/"], capture_output=True, text=True, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert os.path.isfile(tmp_path / "rt" / "dlc-run") and os.path.isfile(tmp_path / "rt" / "include" / "dlc_runtime.h")
    proc = subprocess.run(["dlc", "build-runtime", "-o", str(tmp_path / "x"), "--target", "sparc64-linux-gnu"],
                          capture_output=True, text=True)
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode == 1 and len(lines) == 1 and lines[0].startswith(
        "dlc: error: unknown target 'sparc64-linux-gnu'"), proc.stderr


EXPORTS_MAIN = r"""
#include <stdio.h>
#include "dlc_runtime.h"
static float x[1 * 3 * 32 * 32], y[10];
int main(int argc, char **argv) {
    dlc_error err;
    dlc_model *m;
    void *in[1] = {x}, *out[1] = {y};
    float sum = 0;
    int i;
    if (argc != 2) { printf("the model called the program's main\n"); return 3; }
    if (dlc_model_open(argv[1], &m, &err) != DLC_OK ||
        dlc_entry_run(dlc_model_default_entry(m), in, out, &err) != DLC_OK) {
        printf("%s\n", err.message);
        return 1;
    }
    for (i = 0; i < 10; i++) sum += y[i];
    printf("%.3f\n", sum);
    dlc_model_close(m);
    return 0;
}
"""


def test_entry_main_is_not_the_programs_main(runtime, small_cnn, tmp_path):
    """The model's @main__packed calls the model's @main even in a program that exports
    its own `main` (-rdynamic here; riscv64 executables always do): the export links
    with -Bsymbolic-functions."""
    src = tmp_path / "exports_main.c"
    src.write_text(EXPORTS_MAIN)
    exe = tmp_path / "exports_main"
    subprocess.run(["cc", "-std=c99", "-rdynamic", f"-I{os.path.dirname(runtime.header)}", "-o", str(exe), str(src),
                    runtime.static_library, "-ldl"], check=True)
    for _ in range(20):  # dlc_model_close once unloaded libgomp under its idle workers: a
        # SIGSEGV at exit in about 1 run of 3 (dlc_runtime.c: pin_openmp_runtime)
        proc = subprocess.run([str(exe), small_cnn], capture_output=True, text=True, timeout=60)
        assert proc.returncode == 0 and proc.stdout.strip() == "1.000", (proc.returncode, proc.stdout + proc.stderr)
