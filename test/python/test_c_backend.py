"""The portable C target (dlc.backends.c): archives, strict compiles, host runs, errors.

* The generated C compiles with the host gcc under ``-std=c99 -Wall -Wextra -Werror
  -ffreestanding``; its objects' undefined symbols are within the documented libm list
  (``LIBM_FUNCTIONS``) plus the weights of the other file: no malloc, no threads, no OS.
* Run by the host harness (``backends/c/harness/host_main.c``, workspace filled with NaN
  bytes), it matches onnxruntime on examples/small_cnn.onnx and on single-op models of
  odd shapes (primes, ones, broadcasts, integers, bools); squeezenet under ``-m slow``.
* ``dlc compile --target c -o model.tar``: the archive's files, metadata, the arena line.
* Errors are one line: an unsupported type, a bad target option, bad entry arguments
  (NULL, misaligned workspace) are status codes.
* test_c_cortex_m4.py runs the MNIST-sized CNN on a Cortex-M4 under qemu.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tarfile

import numpy as np
import onnx
import pytest
from onnx import TensorProto as T
from onnx import helper as h
from onnx import numpy_helper as nh

import dlc
from dlc.backends.c import LIBM_FUNCTIONS, CProgram
from dlc.backends.c.toolchain import STRICT_FLAGS, compile_objects, host_cc, run_on_host, undefined_symbols
from dlc.driver import CompileError

ROOT = os.path.join(os.path.dirname(__file__), "..", "..")
CNN_ONNX = os.path.join(ROOT, "examples", "small_cnn.onnx")
ALLOWED = set(LIBM_FUNCTIONS) | {f[:-1] for f in LIBM_FUNCTIONS}

try:
    import onnxruntime as ort
except ImportError:  # pragma: no cover - onnxruntime is a test dependency
    ort = None


def _ort(model: onnx.ModelProto, inputs: list[np.ndarray]) -> list[np.ndarray]:
    if ort is None:
        pytest.skip("onnxruntime is not installed")
    session = ort.InferenceSession(model.SerializeToString())
    names = [i.name for i in session.get_inputs()]
    return session.run(None, dict(zip(names, inputs)))


def _model(nodes, inputs, outputs, inits=(), opset=17) -> onnx.ModelProto:
    graph = h.make_graph(nodes, "g", inputs, outputs, list(inits))
    model = h.make_model(graph, opset_imports=[h.make_opsetid("", opset)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    return model


def _vi(name, elem, shape):
    return h.make_tensor_value_info(name, elem, shape)


def _check(model, inputs, tmp_path, rtol=1e-5, atol=1e-6):
    program = dlc.compile(model, target="c")
    got = run_on_host(program, inputs, str(tmp_path))
    want = _ort(model, inputs)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert g.shape == w.shape and g.dtype == w.dtype
        np.testing.assert_allclose(g, w, rtol=rtol, atol=atol)
    return program


# --------------------------------------------------------------------------- models


def test_small_cnn_matches_onnxruntime(tmp_path):
    model = onnx.load(CNN_ONNX)
    x = np.random.default_rng(0).standard_normal((1, 3, 32, 32)).astype(np.float32)
    program = _check(model, [x], tmp_path, rtol=1e-4, atol=1e-6)
    meta = program.metadata
    assert meta["inputs"][0]["name"] == "image" and meta["outputs"][0]["name"] == "probs"
    ws = meta["workspace"]
    # the plan: offsets inside the arena, the arena between the lower bound and the sum
    assert ws["peak_live_bytes"] <= ws["bytes"] <= ws["sum_of_buffers"]
    for buf in meta["buffer_plan"]:
        assert buf["offset"] % 64 == 0 and buf["offset"] + buf["bytes"] <= ws["bytes"]
    assert meta["constants"]["bytes"] == sum(a["bytes"] for a in meta["constants"]["arrays"])


ODD = np.random.default_rng(1)


def _f(*shape):
    return ODD.standard_normal(shape).astype(np.float32)


SINGLE_OPS = {
    # broadcasting of a 1-sized and a missing axis, prime extents
    "add_broadcast": (lambda: _model([h.make_node("Add", ["a", "b"], ["y"])],
                                     [_vi("a", T.FLOAT, [7, 1, 5]), _vi("b", T.FLOAT, [3, 1])],
                                     [_vi("y", T.FLOAT, [7, 3, 5])]), lambda: [_f(7, 1, 5), _f(3, 1)]),
    "matmul_primes": (lambda: _model([h.make_node("MatMul", ["a", "b"], ["y"])],
                                     [_vi("a", T.FLOAT, [2, 13, 11]), _vi("b", T.FLOAT, [11, 7])],
                                     [_vi("y", T.FLOAT, [2, 13, 7])]), lambda: [_f(2, 13, 11), _f(11, 7)]),
    "softmax_1x1": (lambda: _model([h.make_node("Softmax", ["a"], ["y"], axis=-1)],
                                   [_vi("a", T.FLOAT, [1, 1])], [_vi("y", T.FLOAT, [1, 1])]), lambda: [_f(1, 1)]),
    "conv_stride_pad": (lambda: _model(
        [h.make_node("Conv", ["x", "w"], ["y"], pads=[2, 1, 0, 1], strides=[2, 3], dilations=[1, 2])],
        [_vi("x", T.FLOAT, [1, 3, 11, 13])], [_vi("y", T.FLOAT, [1, 5, 6, 4])],
        [nh.from_array(_f(5, 3, 3, 3), "w")]), lambda: [_f(1, 3, 11, 13)]),
    "sqrt_floor_exp": (lambda: _model(
        [h.make_node("Abs", ["a"], ["p"]), h.make_node("Sqrt", ["p"], ["s"]), h.make_node("Floor", ["a"], ["f"]),
         h.make_node("Exp", ["a"], ["e"]), h.make_node("Sum", ["s", "f", "e"], ["y"])],
        [_vi("a", T.FLOAT, [5, 3])], [_vi("y", T.FLOAT, [5, 3])]), lambda: [_f(5, 3)]),
    "int32_wraps": (lambda: _model([h.make_node("Mul", ["a", "b"], ["y"])],
                                   [_vi("a", T.INT32, [3]), _vi("b", T.INT32, [3])], [_vi("y", T.INT32, [3])]),
                    lambda: [np.array([2**30, -7, 2**31 - 1], np.int32), np.array([4, 3, 2], np.int32)]),
    "where_bool_uint8": (lambda: _model([h.make_node("Where", ["c", "a", "b"], ["y"])],
                                        [_vi("c", T.BOOL, [2, 3]), _vi("a", T.UINT8, [2, 3]), _vi("b", T.UINT8, [1])],
                                        [_vi("y", T.UINT8, [2, 3])]),
                         lambda: [np.array([[1, 0, 1], [0, 0, 1]], bool), np.array([[200, 1, 2], [3, 255, 5]], np.uint8),
                                  np.array([7], np.uint8)]),
    "gather_concat_reduce": (lambda: _model(
        [h.make_node("Gather", ["a", "i"], ["g"], axis=1), h.make_node("Concat", ["g", "a"], ["c"], axis=1),
         h.make_node("ReduceMax", ["c"], ["y"], axes=[1], keepdims=0)],
        [_vi("a", T.FLOAT, [3, 5]), _vi("i", T.INT64, [2])], [_vi("y", T.FLOAT, [3])], opset=17),
        lambda: [_f(3, 5), np.array([4, -1], np.int64)]),
    # LRN's pow has a constant exponent expand-math folds: the kernel keeps an argument
    # it no longer reads (an unused parameter is -Werror)
    "lrn_folded_pow": (lambda: _model([h.make_node("LRN", ["x"], ["y"], size=3, alpha=1e-3, beta=0.75, bias=2.0)],
                                      [_vi("x", T.FLOAT, [1, 5, 3, 7])], [_vi("y", T.FLOAT, [1, 5, 3, 7])]),
                       lambda: [_f(1, 5, 3, 7)]),
}


@pytest.mark.parametrize("case", sorted(SINGLE_OPS))
def test_single_op_matches_onnxruntime(case, tmp_path):
    make_model, make_inputs = SINGLE_OPS[case]
    _check(make_model(), make_inputs(), tmp_path)


@pytest.mark.slow
def test_squeezenet_matches_shipped_output(tmp_path):
    sys.path.insert(0, os.path.join(ROOT, "conformance"))
    import run_light_models

    path = os.path.join(run_light_models.LIGHT_DIR, "light_squeezenet.onnx")
    if not os.path.exists(path):
        pytest.skip(f"{path} is not there")
    program = dlc.compile(path, target="c")
    out = run_on_host(program, [run_light_models.light_input("squeezenet")], str(tmp_path))
    tensor = onnx.TensorProto()
    with open(path.replace(".onnx", "_output_0.pb"), "rb") as f:
        tensor.ParseFromString(f.read())
    np.testing.assert_allclose(out[0], nh.to_array(tensor), rtol=run_light_models.RTOL, atol=run_light_models.ATOL)


# --------------------------------------------------------------------------- no dependencies


def test_strict_freestanding_compile_and_undefined_symbols(tmp_path):
    model, _ = SINGLE_OPS["sqrt_floor_exp"]
    program = dlc.compile(model(), target="c")
    objects = compile_objects(program, str(tmp_path), flags=("-O2",))  # STRICT_FLAGS: -Werror ...
    assert set(STRICT_FLAGS) >= {"-std=c99", "-Wall", "-Wextra", "-Werror", "-ffreestanding"}
    undefined = undefined_symbols(objects)
    weights = {a["symbol"] for a in program.metadata["constants"]["arrays"]}
    assert undefined - weights <= ALLOWED, undefined - weights - ALLOWED
    assert {"sqrtf", "floorf"} <= undefined  # exp became a polynomial (expand-math)
    assert not any(s.startswith("exp") for s in undefined)
    assert set(program.metadata["libm"]) == undefined - weights - {"fmaf"} | ({"fmaf"} & undefined)
    for forbidden in ("malloc", "free", "pthread", "GOMP", "printf", "memcpy", "abort"):
        assert not any(forbidden in s for s in undefined)


def test_readable_source(tmp_path):
    program = dlc.compile(CNN_ONNX, target="c")
    src = program.source
    assert "static void main_4_conv2d_add_relu(const float *restrict x, const float *restrict w, const float *restrict extra0, float *restrict out)" in src
    assert "// main_4_conv2d_add_relu: graph.conv2d+add+relu (form conv2d.direct)" in src
    assert "for (dlc_index_t oc = 0; oc < 16; oc++) {" in src
    assert "int dlc_model_run(const float *in_image, float *out_probs, void *workspace) {" in src
    assert "malloc" not in src and "#include <math.h>" not in src
    assert '__attribute__((section(".rodata.dlc_weights"), aligned(16)))' in program.weights_source
    assert "#define DLC_MODEL_WORKSPACE_BYTES 81920u" in program.header
    assert "#define DLC_MODEL_INPUT0_SHAPE {1, 3, 32, 32}" in program.header


STATUS_MAIN = r"""
#include <stdint.h>
#include <stdio.h>
#include "dlc_model.h"
static float x[4], y[4];
static uint8_t arena[DLC_MODEL_WORKSPACE_BYTES + 16] __attribute__((aligned(16)));
int main(void) {
  printf("%d %d %d %d %d\n", dlc_model_run(NULL, y, arena), dlc_model_run(x, NULL, arena),
         dlc_model_run(x, y, NULL), dlc_model_run(x, y, arena + 1), dlc_model_run(x, y, arena));
  return 0;
}
"""


def test_entry_refuses_null_and_misaligned_arguments(tmp_path):
    # the softmax row scratch lives in the arena: a workspace is needed
    model = _model([h.make_node("MatMul", ["a", "b"], ["m"]), h.make_node("Relu", ["m"], ["r"]),
                    h.make_node("Softmax", ["r"], ["y"])],
                   [_vi("a", T.FLOAT, [2, 2])], [_vi("y", T.FLOAT, [2, 2])], [nh.from_array(_f(2, 2), "b")])
    program = dlc.compile(model, target="c")
    assert program.workspace_bytes > 0
    objects = compile_objects(program, str(tmp_path))
    (tmp_path / "status.c").write_text(STATUS_MAIN)
    exe = str(tmp_path / "status")
    subprocess.run([host_cc(), "-std=c99", "-I", str(tmp_path / "include"), str(tmp_path / "status.c"), *objects,
                    "-lm", "-o", exe], check=True)
    out = subprocess.run([exe], capture_output=True, text=True, check=True).stdout.split()
    assert out == ["1", "1", "1", "2", "0"]  # NULL, NULL, NULL workspace, misaligned, ok


# --------------------------------------------------------------------------- archive, CLI, errors


def _cli(*args, cwd=None):
    return subprocess.run([sys.executable, "-m", "dlc.tools.dlc_cli", *args], capture_output=True, text=True,
                          cwd=cwd)


def test_cli_writes_the_archive_and_prints_the_arena(tmp_path):
    out = tmp_path / "model.tar"
    proc = _cli("compile", CNN_ONNX, "--target", "c", "-o", str(out))
    assert proc.returncode == 0, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("dlc: c target: workspace (arena) 81920 bytes")
    with tarfile.open(out) as tar:
        assert sorted(tar.getnames()) == ["include/dlc_model.h", "metadata.json", "src/model.c", "src/weights.c"]
        meta = json.load(tar.extractfile("metadata.json"))
    assert meta["format"] == "dlc-c-1" and meta["workspace"]["bytes"] == 81920
    assert meta["inputs"] == [{"name": "image", "shape": [1, 3, 32, 32], "dtype": "float32", "ctype": "float",
                               "bytes": 12288, "param": "in_image"}]
    assert {"peak_live_bytes", "sum_of_buffers", "alignment"} <= set(meta["workspace"])


def test_export_is_deterministic(tmp_path):
    a = dlc.compile(CNN_ONNX, target="c")
    b = dlc.compile(CNN_ONNX, target="c")
    assert isinstance(a, CProgram)
    assert a.export(str(tmp_path / "a.tar")) and b.export(str(tmp_path / "b.tar"))
    assert (tmp_path / "a.tar").read_bytes() == (tmp_path / "b.tar").read_bytes()


def test_unsupported_type_is_one_line(tmp_path):
    half_io = _model([h.make_node("Add", ["a", "a"], ["y"])], [_vi("a", T.FLOAT16, [3])], [_vi("y", T.FLOAT16, [3])])
    with pytest.raises(CompileError, match=r"^c target: kernel @main_0_add \(graph.add\): unsupported type f16$"):
        dlc.compile(half_io, target="c")
    # f16 inside the model: the kernel and its graph op are named
    model = _model([h.make_node("Cast", ["a"], ["b"], to=T.FLOAT16), h.make_node("Cast", ["b"], ["y"], to=T.FLOAT)],
                   [_vi("a", T.FLOAT, [3])], [_vi("y", T.FLOAT, [3])])
    path = tmp_path / "half.onnx"
    onnx.save(model, path)
    proc = _cli("compile", str(path), "--target", "c", "-o", str(tmp_path / "half.tar"))
    assert proc.returncode == 1 and "Traceback" not in proc.stderr
    (line,) = proc.stderr.strip().splitlines()
    assert line.startswith(f"dlc: error: compiling '{path}': c target: kernel @main_")
    assert "(graph.cast" in line and line.endswith("unsupported type f16")
    assert not (tmp_path / "half.tar").exists()


def test_bad_target_options_are_one_line(tmp_path):
    with pytest.raises(CompileError, match="the c target takes no options, got '-mcpu=m4'"):
        dlc.compile(CNN_ONNX, target="c -mcpu=m4")
    with pytest.raises(CompileError, match="num_threads is for the llvm target"):
        dlc.compile(CNN_ONNX, target="c", num_threads=2)
    proc = _cli("compile", CNN_ONNX, "--target", "c -O3", "-o", str(tmp_path / "x.tar"))
    assert proc.returncode == 1 and len(proc.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "x.tar").exists()


# --------------------------------------------------------------------------- every op


def _op_case_ids():
    from dlc.backends.cuda.op_cases import OP_CASES

    return {c.id: c for c in OP_CASES}


# a cross-section that runs by default: integers, bools, NaN, reductions, indexing,
# transcendental polynomials (expand-math), the nchwc ops and the te custom op
FAST_OP_CASES = ("relu_nan", "mod_i32", "shift_right", "cast_u8_2f", "argmax_last", "top_k", "resize_linear",
                 "atan", "scatter_elements", "custom_matmul_relu",
                 "qavg_pool2d",  # an i64 `1 << n` of the requantize rounding (n up to 32)
                 "qdense_float")  # the f32 rescale's bitcast round


def _run_op_case(case, tmp_path):
    import dlc.frontends.te  # noqa: F401  (graph.custom's te language)
    from xdsl.dialects.builtin import ModuleOp

    from dlc.backends.c import build
    from dlc.backends.cuda.op_cases import case_function, case_inputs, max_error
    from dlc.evaluator import evaluate

    module = ModuleOp([case_function(case)])
    inputs = case_inputs(case)
    want = evaluate(module.clone(), inputs, entry=case.id)
    if any("f16" in str(x.type) for x in case.inputs) or case.id == "cast_f2f16":
        with pytest.raises(Exception, match=r"^c target: kernel @\w+ \(graph\.\w+\): unsupported type f16$"):
            build(module, entry=case.id)
        return
    got = run_on_host(build(module, entry=case.id), inputs, str(tmp_path), flags=("-O0",))
    for g, w in zip(got, want):
        assert max_error(g, w, case) is None, max_error(g, w, case)


@pytest.mark.parametrize("case_id", FAST_OP_CASES)
def test_op_case(case_id, tmp_path):
    _run_op_case(_op_case_ids()[case_id], tmp_path)


@pytest.mark.slow
@pytest.mark.parametrize("case_id", sorted(set(_op_case_ids()) - set(FAST_OP_CASES)))
def test_every_op_case(case_id, tmp_path):
    """Every op class of the GPU coverage cases (backends/cuda/op_cases.py) through the C
    target against the evaluator; f16 cases are the one-line unsupported-type error."""
    _run_op_case(_op_case_ids()[case_id], tmp_path)
