"""Helpers of the tuner tests: a tiny ONNX matmul, and a fake task whose candidates are C
libraries that compute, crash, hang or fail to build, chosen by its config."""

from __future__ import annotations

import os
import subprocess
from dataclasses import dataclass, field

import numpy as np

from dlc.lowering.schedule.space import Knob, Space

FAKE_C = r"""
#include <stdint.h>
#include <string.h>
#define SPEC "{\"inputs\":[{\"name\":\"x\",\"shape\":[256],\"dtype\":\"float32\"}]," \
             "\"outputs\":[{\"name\":\"y\",\"shape\":[256],\"dtype\":\"float32\"}]}"
const char dlc_metadata[] = "{\"format\":\"dlc-2\",\"default_entry\":\"main\",\"entries\":{\"main\":" SPEC "}}";
int32_t main_entry(float *x, float *y) {
#if MODE == 1
    volatile float *p = 0; *p = x[0];
#elif MODE == 2
    for (volatile int i = 0;; i = 1 - i) {}
#endif
    for (int r = 0; r < REPS; r++)
        for (int i = 0; i < 256; i++) y[i] = x[i] * 0.5f + y[i] * (float)r;
    return 0;
}
int32_t main(void *x, void *y) __attribute__((alias("main_entry")));
void dlc_set_num_threads(int32_t n) { (void)n; }
void dlc_release_workspaces(void) {}
int64_t dlc_alloc_failure_bytes(void) { return 0; }
"""

KERNEL_TEXT = """
func.func @k(%a: memref<{n}xf32>, %c: memref<{n}xf32>) attributes {{tloop.kernel}} {{
  tloop.for %i = 0 to {n} {{
    %x = memref.load %a[%i] : memref<{n}xf32>
    %m = arith.mulf %x, %x : f32
    memref.store %m, %c[%i] : memref<{n}xf32>
  }}
  func.return
}}
"""

MODES = {"ok": 0, "crash": 1, "hang": 2}


@dataclass
class FakeTask:
    """A Task (tune/tasks.py) stand-in: `mode` picks what its library does ("build-error":
    the build raises), `reps` how long it computes."""

    modes: tuple = ("ok",)
    reps: tuple = (1, 4, 16, 64, 256, 1024)
    key: str = "fake|f32[256]->f32[256]|llvm"
    form: str = "fake"
    target: str = "llvm"
    count: int = 1
    flops: float = 256 * 2.0
    module_text: str = ""
    space: Space = field(init=False)

    def __post_init__(self):
        self.space = Space("fake", (Knob("mode", self.modes), Knob("reps", self.reps), Knob("pad", (0, 1, 2, 3))))

    def build(self, config: dict, out_path: str) -> str:
        from dlc.runtime.library import append_trailer

        if config["mode"] == "build-error":
            raise RuntimeError("this candidate does not build")
        source = out_path + ".c"
        with open(source, "w") as f:
            f.write(FAKE_C)
        subprocess.run(["cc", "-shared", "-fPIC", "-O1", f"-DMODE={MODES[config['mode']]}",
                        f"-DREPS={config['reps']}", "-o", out_path, source], check=True)
        os.unlink(source)
        append_trailer(out_path)
        return out_path

    def scheduled_kernel(self, config: dict):
        from xdsl.dialects import func

        from dlc.context import make_context
        from dlc.diagnostics import parse_module

        module = parse_module(make_context(), KERNEL_TEXT.format(n=16 * config["reps"]), "fake")
        return next(op for op in module.ops if isinstance(op, func.FuncOp))


def matmul_onnx(path: str, m: int = 64, k: int = 64, n: int = 64) -> str:
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(0)
    w = numpy_helper.from_array(rng.standard_normal((k, n)).astype(np.float32), "w")
    graph = helper.make_graph([helper.make_node("MatMul", ["x", "w"], ["y"])], "mm",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [m, k])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [m, n])], [w])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), path)
    return path
