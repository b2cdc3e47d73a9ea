"""Schedule spaces, workload keys, tuning records and tasks (issue 19 items 1, 2 and 5):
lowering/schedule/space.py, records.py, tune/tasks.py, and their use at compile time
(tloop-default-schedule{tuning-records=}, dlc.compile(tuning_records=), dlc compile
--tuning-records)."""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import dlc
from dlc.driver import CompileError
from dlc.lowering.schedule.defaults_forms import apply_form_schedule
from dlc.lowering.schedule.records import (
    TuningRecord,
    TuningRecordError,
    append_records,
    best_configs,
    read_records,
)
from dlc.lowering.schedule.space import Knob, ScheduleConfigError, Space, space_of, workload_key
from dlc.runtime import load
from dlc.target import Target
from dlc.tune import extract_tasks

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SMALL_CNN = os.path.join(ROOT, "examples", "small_cnn.onnx")
HOST = Target.host()


def _model(nodes, inputs, weights, output="y"):
    graph = helper.make_graph(nodes, "g", inputs, [helper.make_tensor_value_info(output, TensorProto.FLOAT, None)],
                              [numpy_helper.from_array(w, name) for name, w in weights.items()])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def matmul_model(m, k, n, relu=True, seed=0):
    w = np.random.default_rng(seed).standard_normal((k, n)).astype(np.float32)
    nodes = [helper.make_node("MatMul", ["a", "w"], ["t" if relu else "y"])]
    if relu:
        nodes.append(helper.make_node("Relu", ["t"], ["y"]))
    return _model(nodes, [helper.make_tensor_value_info("a", TensorProto.FLOAT, [m, k])], {"w": w}), w


def conv_model(c, o, h, w_, group=1, stride=1):
    rng = np.random.default_rng(0)
    w = rng.standard_normal((o, c // group, 3, 3)).astype(np.float32)
    b = rng.standard_normal((o,)).astype(np.float32)
    nodes = [helper.make_node("Conv", ["x", "w", "b"], ["t"], pads=[1] * 4, strides=[stride] * 2, group=group),
             helper.make_node("Relu", ["t"], ["y"])]
    model = _model(nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, c, h, w_])], {"w": w, "b": b})
    return model, w, b


def conv_reference(x, w, b, stride=1):
    n, c, h, wd = x.shape
    o, _, kh, kw = w.shape
    xp = np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1)))
    oh, ow = (h + 2 - kh) // stride + 1, (wd + 2 - kw) // stride + 1
    out = np.zeros((n, o, oh, ow), np.float64)
    for i in range(kh):
        for j in range(kw):
            patch = xp[:, :, i:i + stride * oh:stride, j:j + stride * ow:stride]
            out += np.einsum("nchw,oc->nohw", patch, w[:, :, i, j])
    return np.maximum(out + b[None, :, None, None], 0)


def one_task(model, form, layout=None):
    tasks = [t for t in extract_tasks(model, layout=layout) if t.form == form]
    assert len(tasks) == 1, [t.key for t in tasks]
    return tasks[0]


# one kernel of each form with a space (the skinny matmul path too)
FORM_CASES = {
    "matmul": lambda: (matmul_model(37, 53, 45)[0], None),
    "matmul.skinny": lambda: (matmul_model(2, 64, 300)[0], None),
    "conv2d.flat": lambda: (conv_model(8, 16, 13, 11)[0], "NCHW"),
    "conv2d.grouped": lambda: (conv_model(16, 32, 10, 10, group=2)[0], "NCHW"),
    "conv2d.depthwise": lambda: (conv_model(16, 16, 14, 14, group=16)[0], "NCHW"),
    "conv2d_nchwc": lambda: (conv_model(16, 32, 13, 11)[0], "NCHWc"),
    "pool2d_nchwc": lambda: (SMALL_CNN, "NCHWc"),
}


@pytest.mark.parametrize("case", sorted(FORM_CASES))
def test_default_config_is_todays_schedule(case):
    """config=None (the heuristics) and config=space.default() give identical loop IR."""
    model, layout = FORM_CASES[case]()
    form = case.split(".skinny")[0]
    task = [t for t in extract_tasks(model, layout=layout) if t.form == form][0]
    assert task.space.valid(task.space.default())
    assert str(task.scheduled_kernel(None)) == str(task.scheduled_kernel(task.space.default()))


def test_matmul_non_default_config_changes_ir_and_keeps_results():
    model, w = matmul_model(37, 53, 45)
    task = one_task(model, "matmul")
    config = dict(task.space.default(), mr=4, nr=16, mc=36, nc=32, kc=16, order="nm", pack_a=False)
    task.space.validate(config)
    assert str(task.scheduled_kernel(config)) != str(task.scheduled_kernel(None))
    a = np.random.default_rng(1).standard_normal((37, 53)).astype(np.float32)
    got = load(task.build(config, os.path.join(_tmp(), "mm.so")))(a, w)[0]
    np.testing.assert_allclose(got, np.maximum(a.astype(np.float64) @ w, 0), rtol=1e-4, atol=1e-4)


def test_random_matmul_configs_keep_results():
    model, w = matmul_model(19, 33, 40)
    task = one_task(model, "matmul")
    a = np.random.default_rng(2).standard_normal((19, 33)).astype(np.float32)
    want = np.maximum(a.astype(np.float64) @ w, 0)
    rng = random.Random(7)
    for i in range(3):
        config = task.space.random(rng)
        got = load(task.build(config, os.path.join(_tmp(), f"mm{i}.so")))(a, w)[0]
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4, err_msg=str(config))


@pytest.mark.parametrize("layout,form", [("NCHW", "conv2d.flat"), ("NCHWc", "conv2d_nchwc")])
def test_conv_non_default_config_changes_ir_and_keeps_results(layout, form):
    model, w, b = conv_model(8, 16, 13, 11)
    task = one_task(model, form, layout)
    default = task.space.default()
    if form == "conv2d.flat":
        config = dict(default, ocb=2, cols=8, order="input" if default["order"] == "weight" else "weight")
    else:
        config = dict(default, cols=5, rows_parallel=not default["rows_parallel"])
    task.space.validate(config)
    assert str(task.scheduled_kernel(config)) != str(task.scheduled_kernel(None))
    lib = load(task.build(config, os.path.join(_tmp(), "conv.so")))
    specs = lib.entries[lib.default_entry].inputs
    x = np.random.default_rng(3).standard_normal((1, 8, 13, 11)).astype(np.float32)
    want = conv_reference(x.astype(np.float64), w.astype(np.float64), b)
    if form == "conv2d.flat":
        got = lib(*_flat_args(specs, x, w, b))[0].reshape(want.shape)
    else:  # the blocked kernel's own inputs: its default build is the reference layout
        rng = np.random.default_rng(4)
        ins = [rng.standard_normal(shape).astype(dtype) for _, shape, dtype in specs]
        base = load(task.build(None, os.path.join(_tmp(), "conv0.so")))
        np.testing.assert_allclose(lib(*ins)[0], base(*ins)[0], rtol=1e-4, atol=1e-4)
        return
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)


def _flat_args(specs, x, w, b):
    """The flat conv kernel's inputs from x, w, b by their specs' shapes."""
    out = []
    for _, shape, _ in specs:
        for value in (x, w, b):
            if value.size == int(np.prod(shape)) and not any(v is value for v in out):
                out.append(np.ascontiguousarray(value.reshape(shape)))
                break
    assert len(out) == len(specs), specs
    return out


def test_bad_configs_fail_loudly():
    model, _ = matmul_model(37, 53, 45)
    task = one_task(model, "matmul")
    space = task.space
    with pytest.raises(ScheduleConfigError, match=r"unknown knob 'tile' for form 'matmul' \(knobs: mr, nr"):
        space.validate(dict(space.default(), tile=4))
    with pytest.raises(ScheduleConfigError, match=r"knob 'mr' = 99 is not allowed \(allowed: 1, 2, 3"):
        space.validate(dict(space.default(), mr=99))
    with pytest.raises(ScheduleConfigError, match="knob 'order' is missing"):
        space.validate({k: v for k, v in space.default().items() if k != "order"})
    big = dict(space.default(), mr=16, nr=32)
    assert not space.valid(big)
    with pytest.raises(ScheduleConfigError, match="vector accumulators"):
        space.validate(big)
    kernel = task.scheduled_kernel(None)  # scheduled already: no config applies any more
    with pytest.raises(ScheduleConfigError, match="scheduled already"):
        apply_form_schedule(kernel, HOST, space.default())
    with pytest.raises(ScheduleConfigError, match=r"kernel @\w+: schedule config of form 'matmul': knob 'mr'"):
        task.build(dict(space.default(), mr=99), os.path.join(_tmp(), "bad.so"))


def test_space_api():
    space = Space("toy", (Knob("a", (1, 2, 4)), Knob("b", ("x", "y"), default="y"), Knob("c", (True, False))),
                  constraint=lambda c: "a=4 needs b=x" if c["a"] == 4 and c["b"] == "y" else None)
    assert space.default() == {"a": 1, "b": "y", "c": True}
    assert space.size == 12
    assert not space.valid({"a": 4, "b": "y", "c": True})
    with pytest.raises(ScheduleConfigError, match="a=4 needs b=x"):
        space.validate({"a": 4, "b": "y", "c": True})
    with pytest.raises(ScheduleConfigError, match="knob 'a' = True is not allowed"):
        space.validate({"a": True, "b": "y", "c": True})  # a bool is not the int 1
    rng = random.Random(0)
    assert all(space.valid(space.random(rng)) for _ in range(20))
    assert all(space.valid(space.random(np.random.default_rng(0))) for _ in range(5))
    neighbors = space.neighbors(space.default())
    assert {"a": 2, "b": "y", "c": True} in neighbors and {"a": 1, "b": "x", "c": True} in neighbors
    assert {"a": 4, "b": "y", "c": True} not in neighbors
    with pytest.raises(ValueError, match="default 3 is not one of"):
        Knob("k", (1, 2), default=3)


def test_kernels_without_a_space():
    """A kernel without a form (relu) has no space; space_of says None."""
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, 8])
    model = _model([helper.make_node("Relu", ["x"], ["y"])], [x], {})
    assert extract_tasks(model) == []


def test_workload_key_is_stable_across_processes():
    model, _ = matmul_model(8, 24, 16)
    path = os.path.join(_tmp(), "key.onnx")
    onnx.save(model, path)
    key = extract_tasks(path)[0].key
    assert key.startswith("matmul|f32[8,24];f32[24,16]->f32[8,16]|epi:relu|h:") and key.endswith(f"|{HOST}")
    code = f"from dlc.tune import extract_tasks; print(extract_tasks({path!r})[0].key)"
    other = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                           env=dict(os.environ, PYTHONHASHSEED="123"))
    assert other.stdout.strip() == key


def test_records_round_trip_and_best_configs(tmp_path):
    path = str(tmp_path / "tune.jsonl")
    target = str(HOST)
    records = [TuningRecord("k1", target, {"mr": 4}, [3.0, 1.0, 2.0], None, 10.0, 1.0),
               TuningRecord("k1", target, {"mr": 8}, [1.5, 1.5, 1.5], None, 10.0, 2.0),
               TuningRecord("k1", target, {"mr": 2}, [], "segfault", 10.0, 3.0),
               TuningRecord("k2", target, {"nr": 16}, [5.0], None, 1.0, 4.0)]
    append_records(path, records[:2])
    append_records(path, records[2:])
    assert read_records(path) == records
    assert best_configs(path, HOST) == {"k1": {"mr": 8}, "k2": {"nr": 16}}
    assert best_configs(records, target) == {"k1": {"mr": 8}, "k2": {"nr": 16}}


def test_malformed_record_line(tmp_path):
    path = tmp_path / "tune.jsonl"
    good = TuningRecord("k", str(HOST), {"mr": 4}, [1.0]).to_json()
    path.write_text(good + "\n\n" + '{"workload_key": "k", "target": "llvm", "config": {"mr": [1]}}\n')
    with pytest.raises(TuningRecordError) as err:
        read_records(str(path))
    assert str(err.value) == f"{path}:3: error: bad record: config knob 'mr' is list (knobs are int, str or bool)"
    path.write_text(good + "\nnot json\n")
    with pytest.raises(TuningRecordError, match=r"tune.jsonl:2: error: bad record: Expecting value"):
        read_records(str(path))


def test_records_for_another_target_are_refused(tmp_path):
    path = str(tmp_path / "tune.jsonl")
    append_records(path, [TuningRecord("k", "aarch64", {"mr": 4}, [1.0])])
    with pytest.raises(TuningRecordError, match=r"tuning records '.*tune.jsonl' are for target 'aarch64', not for"):
        best_configs(path, HOST)
    with pytest.raises(CompileError, match="are for target 'aarch64'"):
        dlc.compile(SMALL_CNN, tuning_records=path)
    with pytest.raises(CompileError, match="was tuned for 'aarch64'"):
        dlc.compile(SMALL_CNN, tuning_records={"matmul|x|aarch64": {}})


def test_extract_tasks_small_cnn():
    tasks = extract_tasks(SMALL_CNN)
    assert [(t.form, t.count) for t in tasks] == [("conv2d_nchwc", 1), ("pool2d_nchwc", 1), ("conv2d_nchwc", 1),
                                                 ("pool2d_nchwc", 1), ("matmul", 1)]
    conv = tasks[0]
    assert conv.flops == 2 * 16 * 32 * 32 * 3 * 9 + 2 * 16 * 32 * 32  # multiply-adds, bias, relu
    assert tasks[-1].flops == 2 * 32 * 10 + 10
    assert len({t.key for t in tasks}) == 5


def test_extract_tasks_counts_repeated_kernels():
    """Two identical matmuls (same shapes, same epilogue): one task, count 2."""
    rng = np.random.default_rng(0)
    w1, w2 = (rng.standard_normal((16, 16)).astype(np.float32) for _ in range(2))
    nodes = [helper.make_node("MatMul", ["x", "w1"], ["t"]), helper.make_node("MatMul", ["t", "w2"], ["y"])]
    model = _model(nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT, [8, 16])], {"w1": w1, "w2": w2})
    (task,) = extract_tasks(model)
    assert task.count == 2 and task.form == "matmul"


def test_task_build_runs(tmp_path):
    import pickle

    task = pickle.loads(pickle.dumps(extract_tasks(SMALL_CNN)[0]))  # runner processes get tasks pickled
    assert task.space.default() == extract_tasks(SMALL_CNN)[0].space.default()
    lib = load(task.build(task.space.default(), str(tmp_path / "task.so")))
    point = lib.entries[lib.default_entry]
    rng = np.random.default_rng(0)
    ins = [rng.standard_normal(shape).astype(dtype) for _, shape, dtype in point.inputs]
    (out,) = lib(*ins)
    assert out.shape == point.outputs[0][1] and np.isfinite(out).all()


def two_matmuls(path):
    """x[8,16] @ w1[16,24] -> relu -> @ w2[24,12]: two tunable kernels, saved at `path`."""
    rng = np.random.default_rng(0)
    w1, w2 = rng.standard_normal((16, 24)).astype(np.float32), rng.standard_normal((24, 12)).astype(np.float32)
    nodes = [helper.make_node("MatMul", ["x", "w1"], ["t"]), helper.make_node("Relu", ["t"], ["r"]),
             helper.make_node("MatMul", ["r", "w2"], ["y"])]
    onnx.save(_model(nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT, [8, 16])], {"w1": w1, "w2": w2}),
              path)
    return path


def test_tuning_records_applied_at_compile_time(tmp_path):
    model = two_matmuls(str(tmp_path / "mm2.onnx"))
    first = extract_tasks(model)[0]
    config = dict(first.space.default(), unroll=False, pack_a=False)
    path = str(tmp_path / "tune.jsonl")
    append_records(path, [TuningRecord(first.key, str(HOST), config, [1e-6], None, first.flops, 0.0),
                          TuningRecord(first.key, str(HOST), first.space.default(), [2e-6], None, first.flops, 0.0),
                          TuningRecord("matmul|unused|" + str(HOST), str(HOST), {}, [1e-6])])
    default = dlc.compile(model)
    tuned = dlc.compile(model, tuning_records=path)
    assert default.tuning_note is None
    assert tuned.tuning_note == f"tuning: 1 of 2 kernels from {path}, 1 default"
    assert _ir(tuned) != _ir(default)
    x = np.random.default_rng(0).standard_normal((8, 16)).astype(np.float32)
    np.testing.assert_allclose(tuned(x)[0], default(x)[0], rtol=1e-5, atol=1e-5)
    same = dlc.compile(model, tuning_records={first.key: first.space.default()})
    assert _ir(same) == _ir(default) and same.tuning_note.startswith("tuning: 1 of 2 kernels")
    out = str(tmp_path / "m.so")
    run = subprocess.run([sys.executable, "-m", "dlc.tools.dlc_cli", "compile", model, "--tuning-records",
                          path, "-v", "-o", out], capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    assert f"tuning: 1 of 2 kernels from {path}, 1 default" in run.stderr
    np.testing.assert_allclose(load(out)(x)[0], tuned(x)[0])


def test_tuning_record_with_a_bad_config_fails(tmp_path):
    matmul = [t for t in extract_tasks(SMALL_CNN) if t.form == "matmul"][0]
    with pytest.raises(CompileError, match=r"knob 'skinny_rows' = 5 is not allowed"):
        dlc.compile(SMALL_CNN, tuning_records={matmul.key: dict(matmul.space.default(), skinny_rows=5)})


def test_dlc_opt_tuning_records_option(tmp_path):
    path = tmp_path / "tune.jsonl"
    path.write_text(json.dumps({"workload_key": "k", "target": "aarch64", "config": {}}) + "\n")
    mlir = os.path.join(ROOT, "examples", "small_cnn.mlir")
    run = subprocess.run([sys.executable, "-m", "dlc.tools.dlc_opt", mlir, "-p",
                          f'legalize,lower-to-loops,tloop-default-schedule{{tuning-records="{path}"}}'],
                         capture_output=True, text=True)
    assert run.returncode != 0 and "are for target 'aarch64'" in run.stderr and "Traceback" not in run.stderr


def _ir(compiled) -> str:
    """LLVM IR with the weight globals' per-process numbers (``__dlc_w<module>_<i>``) left out."""
    import re

    return re.sub(r"__dlc_w\d+_", "__dlc_w_", compiled.llvm_ir)


_TMP = []


def _tmp() -> str:
    if not _TMP:
        import tempfile

        _TMP.append(tempfile.mkdtemp(prefix="dlc_tune_"))
    return _TMP[0]
