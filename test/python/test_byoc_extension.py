"""The BYOC extension API as a product: a new target defined in this file (a pattern
table, a support predicate, a codegen offloading relu to a C function), a model
compiled with it (outputs equal numpy), and its exported .so run through
dlc.runtime.load in a fresh process."""

import subprocess
import sys
import textwrap

import numpy as np
import pytest

import dlc
import dlc.byoc as byoc
from dlc.byoc import ExternalKernel, is_op, wildcard

MODEL = """
func.func @main(%x: tensor<4x8xf32>, %y: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %s = graph.add %x, %y : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %r = graph.relu %s : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %m = graph.mul %r, %x : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  return %m : tensor<4x8xf32>
}
"""


# ---- the whole target: about 30 lines -------------------------------------------------
def define_myrelu():
    byoc.pattern_table("myrelu", [("relu", is_op("graph.relu")(wildcard()), None)])

    @byoc.supports("myrelu", "graph.relu")
    def f32_only(op):
        return True if str(op.results[0].type.element_type) == "f32" else "f32 only"

    @byoc.codegen("myrelu")
    def generate(partition, ctx):
        n = 1
        for d in partition.function_type.inputs.data[0].get_shape():
            n *= d
        source = textwrap.dedent(f"""
            #include <stdint.h>
            int32_t {ctx.symbol}(void *in, void *out) {{
              const float *x = in; float *y = out;
              for (int64_t i = 0; i < {n}; ++i) y[i] = x[i] > 0.0f ? x[i] : 0.0f;
              return 0;
            }}""")
        return ExternalKernel(symbol=ctx.symbol, sources=[(f"{ctx.symbol}.c", source)],
                              report="relu in C")
# ---------------------------------------------------------------------------------------


@pytest.fixture
def myrelu():
    define_myrelu()
    yield "myrelu"
    byoc.unregister("myrelu")


def _inputs():
    rng = np.random.default_rng(0)
    return rng.standard_normal((4, 8)).astype(np.float32), rng.standard_normal((4, 8)).astype(np.float32)


def test_new_target_compiles_and_matches_numpy(myrelu):
    x, y = _inputs()
    module = dlc.compile(MODEL, byoc=[myrelu])
    assert module.byoc_report[0] == "partition @myrelu_main_0 -> myrelu: 1 ops (graph.relu; composites: myrelu.relu)"
    assert "@myrelu_main_0: relu in C" in module.byoc_report
    np.testing.assert_array_equal(module(x, y)[0], np.maximum(x + y, 0) * x)


def test_exported_library_runs_in_a_fresh_process(myrelu, tmp_path):
    x, y = _inputs()
    path = str(tmp_path / "m.so")
    dlc.compile(MODEL, byoc=[myrelu]).export(path)
    np.save(tmp_path / "x.npy", x)
    np.save(tmp_path / "y.npy", y)
    script = (f"import numpy as np, dlc.runtime as rt; m = rt.load({path!r}); "
              f"x = np.load({str(tmp_path / 'x.npy')!r}); y = np.load({str(tmp_path / 'y.npy')!r}); "
              f"np.save({str(tmp_path / 'out.npy')!r}, m(x, y)[0])")
    subprocess.run([sys.executable, "-c", script], check=True)
    np.testing.assert_array_equal(np.load(tmp_path / "out.npy"), np.maximum(x + y, 0) * x)


def test_a_failing_kernel_names_the_partition(tmp_path):
    byoc.pattern_table("failing", [])

    @byoc.supports("failing", "graph.relu")
    def accept(op):
        return True

    @byoc.codegen("failing")
    def generate(partition, ctx):
        return ExternalKernel(ctx.symbol, [("k.c", f"#include <stdint.h>\nint32_t {ctx.symbol}(void *a, void *b)"
                                                   " { return 7; }\n")])
    try:
        module = dlc.compile(MODEL, byoc=["failing"])
        with pytest.raises(dlc.runtime.DlcRuntimeError,
                           match=r"external kernel @failing_main_0 \(BYOC target 'failing'\) failed with status 7"):
            module(*_inputs())
    finally:
        byoc.unregister("failing")


def test_unknown_target_lists_the_known_ones():
    with pytest.raises(dlc.driver.CompileError, match=r"unknown BYOC target 'nope' \(known: .*c, dnnl"):
        dlc.compile(MODEL, byoc=["nope"])
