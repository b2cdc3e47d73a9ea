"""Kernel forms as a contract (lowering/kernels/forms.py, lowering/schedule/defaults_forms.py)
and the target object (dlc/target.py; its strings: test_target.py).

Each generator with a schedule of its own stamps its kernel's form from a typed plan
(ConvPlan for conv2d); the default schedules dispatch on the stamp. A conv or matmul
kernel whose loop (or buffer) is renamed fails loudly, naming kernel, form and what is
missing, instead of silently taking the generic schedule. The target, not the build
machine, picks the register tiles. The driver runs every stage through the pass
registry and stops when a pass cannot load.
"""

from __future__ import annotations

import pytest
from xdsl.utils.exceptions import DiagnosticException

from conv_testing import conv_kernel, conv_src, lowered
from dlc import driver
from dlc.driver import CompileError, load_module, run_pass
from dlc.lowering.kernels.conv import plan_conv2d
from dlc.lowering.kernels.forms import (
    CONV2D_DEPTHWISE, CONV2D_DIRECT, CONV2D_FLAT, CONV2D_GROUPED, CONV2D_NCHWC, FORM_LOOPS, MATMUL,
    KernelOptions, form_of,
)
from dlc.lowering.schedule import apply_default_schedules
from dlc.lowering.schedule.core import loop_name
from dlc.lowering.schedule.defaults_forms import FORM_SCHEDULES, FormError, apply_form_schedule
from dlc.dialects.tloop import ForOp
from dlc.target import Target

AVX512 = Target.from_string("llvm -mcpu=skylake-avx512")
AVX2 = Target.from_string("llvm -mcpu=haswell")


def matmul_src(m, k, n):
    return (f"func.func @main(%a: tensor<{m}x{k}xf32>, %b: tensor<{k}x{n}xf32>) -> tensor<{m}x{n}xf32> {{\n"
            f"  %c = graph.matmul %a, %b : (tensor<{m}x{k}xf32>, tensor<{k}x{n}xf32>) -> tensor<{m}x{n}xf32>\n"
            f"  func.return %c : tensor<{m}x{n}xf32>\n}}")


def kernel_named(module, part):
    return next(op for op in module.ops if getattr(op, "sym_name", None) is not None and part in op.sym_name.data
                and "tloop.kernel" in op.attributes)


def rename_loop(kernel, old, new):
    loop = next(op for op in kernel.walk() if isinstance(op, ForOp) and loop_name(op) == old)
    loop.induction_var.name_hint = new


# -- the forms the generators stamp ----------------------------------------------------

@pytest.mark.parametrize("src,flat,form", [
    (conv_src((1, 3, 9, 9), (8, 3, 3, 3)), True, CONV2D_FLAT),
    (conv_src((1, 3, 9, 9), (8, 3, 3, 3)), False, CONV2D_DIRECT),      # lower-to-loops alone (GPU)
    (conv_src((1, 16, 9, 9), (16, 8, 1, 1), pad=(0, 0, 0, 0), groups=2), True, CONV2D_GROUPED),
    (conv_src((1, 8, 9, 9), (8, 1, 3, 3), groups=8), True, CONV2D_DEPTHWISE),
    (conv_src((1, 6, 7, 9), (4, 3, 3, 3), groups=2), True, CONV2D_FLAT),  # few channels per group
])
def test_conv_generator_stamps_its_plan_form(src, flat, form):
    kernel = conv_kernel(lowered(src, flat=flat))
    assert form_of(kernel) == form
    op = next(o for o in load_module(src).walk() if o.name == "graph.conv2d")
    assert plan_conv2d(op, KernelOptions(flat_conv=flat)).form == form  # the plan decides, once


def test_matmul_and_nchwc_forms():
    assert form_of(kernel_named(lowered(matmul_src(32, 16, 48)), "matmul")) == MATMUL
    vector = ("func.func @main(%a: tensor<9xf32>, %b: tensor<9x12xf32>) -> tensor<12xf32> {\n"
              "  %c = graph.matmul %a, %b : (tensor<9xf32>, tensor<9x12xf32>) -> tensor<12xf32>\n"
              "  func.return %c : tensor<12xf32>\n}")
    assert form_of(kernel_named(lowered(vector), "matmul")) is None  # no m loop: the generic schedule
    module = load_module(conv_src((1, 16, 14, 14), (32, 16, 3, 3)))
    for name in driver.graph_passes("NCHWc"):
        run_pass(name, module)
    run_pass("lower-to-loops{flat-conv=true}", module)
    assert form_of(kernel_named(module, "conv2d_nchwc")) == CONV2D_NCHWC


def test_every_form_has_one_schedule():
    assert sorted(FORM_SCHEDULES.names()) == sorted(FORM_LOOPS)


# -- renamed loops fail loudly ----------------------------------------------------------

@pytest.mark.parametrize("src,part,old", [
    (conv_src((1, 3, 9, 9), (8, 3, 3, 3)), "conv2d", "p"),          # flat
    (conv_src((1, 3, 9, 9), (8, 3, 3, 3)), "conv2d", "oc"),
    (conv_src((1, 16, 9, 9), (16, 8, 1, 1), pad=(0, 0, 0, 0), groups=2), "conv2d", "g"),  # grouped
    (conv_src((1, 8, 9, 9), (8, 1, 3, 3), groups=8), "conv2d", "dw_c"),  # depthwise
    (matmul_src(32, 16, 48), "matmul", "k"),
])
def test_renamed_loop_fails_loudly(src, part, old):
    module = lowered(src)
    kernel = kernel_named(module, part)
    form = form_of(kernel)
    rename_loop(kernel, old, "renamed")
    with pytest.raises(FormError, match=rf"kernel @{kernel.sym_name.data} of form '{form}': no loop named '{old}'"):
        apply_default_schedules(module, AVX512)
    # through the pass: one line, no traceback
    with pytest.raises(DiagnosticException, match=rf"of form '{form}': no loop named '{old}'"):
        run_pass("tloop-default-schedule", module)


def test_renamed_loop_with_the_direct_form_fails_loudly():
    module = lowered(conv_src((1, 3, 9, 19), (8, 3, 3, 3)), flat=False)
    kernel = conv_kernel(module)
    rename_loop(kernel, "ow", "col")
    with pytest.raises(FormError, match="of form 'conv2d.direct': no loop named 'ow'"):
        apply_default_schedules(module, AVX512)


def test_renamed_buffer_fails_loudly():
    module = lowered(matmul_src(32, 16, 48))
    kernel = kernel_named(module, "matmul")
    kernel.body.block.args[0].name_hint = "lhs"
    with pytest.raises(FormError, match="of form 'matmul': no buffer named %a"):
        apply_default_schedules(module, AVX512)
    module = lowered(conv_src((1, 3, 9, 9), (8, 3, 3, 3)))
    kernel = conv_kernel(module)
    scratch = next(v for op in kernel.walk() for v in op.results if v.name_hint == "outpad")
    scratch.name_hint = "acc_buffer"
    with pytest.raises(FormError, match="of form 'conv2d.flat': .* %outpad or %outflat"):
        apply_default_schedules(module, AVX512)


def test_unrenamed_kernels_still_get_their_form_schedule():
    for src, part in [(conv_src((1, 3, 9, 9), (8, 3, 3, 3)), "conv2d"), (matmul_src(32, 16, 48), "matmul")]:
        kernel = kernel_named(lowered(src), part)
        assert apply_form_schedule(kernel, AVX512)
        assert any(getattr(op, "loop_kind", None) == "unrolled" for op in kernel.walk())


# -- the target picks the register tile ------------------------------------------------

def _trip(kernel, name):
    return next(op.trip_count for op in kernel.walk() if isinstance(op, ForOp) and loop_name(op) == name)


def test_target_picks_the_register_tiles():
    neon = Target.from_string("aarch64")  # a cross target plans with its own registers
    for target, rows, channels in [(AVX512, 8, 8), (AVX2, 6, 4), (neon, 6, 4)]:
        kernel = kernel_named(lowered(matmul_src(48, 64, 64)), "matmul")
        assert apply_form_schedule(kernel, target)
        assert _trip(kernel, "mr") == rows
        kernel = conv_kernel(lowered(conv_src((1, 16, 14, 14), (32, 16, 3, 3))))
        assert apply_form_schedule(kernel, target)
        assert _trip(kernel, "oci") == channels


def test_compile_takes_a_target():
    import numpy as np

    src = matmul_src(8, 16, 24)
    a, b = np.ones((8, 16), np.float32), np.ones((16, 24), np.float32)
    for target in ("llvm", "llvm -mcpu=haswell", Target.host()):
        np.testing.assert_allclose(driver.compile(src, target=target)(a, b)[0], a @ b)
    with pytest.raises(CompileError, match="unknown cpu"):
        driver.compile(src, target="llvm -mcpu=nosuchcpu")


# -- the driver's passes come from the registry and must load ---------------------------

def test_driver_fails_loudly_when_a_pass_cannot_load(monkeypatch):
    from dlc.passes import PASSES

    def broken():
        raise ImportError("No module named 'dlc.transforms.fuse_ops'")

    monkeypatch.setitem(PASSES, "fuse-ops", broken)
    with pytest.raises(CompileError, match="pass 'fuse-ops' cannot load: ImportError"):
        driver.compile(matmul_src(8, 16, 24))
    with pytest.raises(CompileError, match="pass 'no-such-pass' is not registered"):
        run_pass("no-such-pass", load_module(matmul_src(8, 16, 24)))


# -- a form schedule that refuses a kernel: the generic schedule, and a note -----------

def _refusing_matmul_schedule(monkeypatch):
    """The matmul form's schedule refuses every kernel (a shape its steps cannot take)."""
    from dlc.lowering.schedule.core import ScheduleError

    def refuse(s, target, *config):
        raise ScheduleError("no register tile fits (test)")

    lookup = FORM_SCHEDULES.lookup
    monkeypatch.setattr(FORM_SCHEDULES, "lookup", lambda form: refuse if form == MATMUL else lookup(form))


def test_a_refused_form_schedule_is_reported_not_silent(monkeypatch):
    import numpy as np

    _refusing_matmul_schedule(monkeypatch)
    module = lowered(matmul_src(7, 5, 3))
    apply_default_schedules(module, AVX512)
    kernel = kernel_named(module, "matmul")
    assert "no register tile fits (test)" in kernel.attributes["tloop.schedule_fallback"].data  # in the IR
    compiled = driver.compile(load_module(matmul_src(7, 5, 3)))
    (line,) = compiled.schedule_report
    assert line.startswith("@main_") and "the 'matmul' schedule refused it (no register tile fits (test)): " \
                                          "generic schedule" in line
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((7, 5)).astype(np.float32), rng.standard_normal((5, 3)).astype(np.float32)
    np.testing.assert_allclose(compiled(a, b)[0], a @ b, rtol=1e-5, atol=1e-5)  # the generic schedule's
    assert driver.compile(load_module(conv_src((1, 3, 9, 9), (8, 3, 3, 3)))).schedule_report == []


def test_dlc_compile_prints_a_schedule_fallback(monkeypatch, tmp_path, capsys):
    from dlc.tools import dlc_cli

    _refusing_matmul_schedule(monkeypatch)
    src = tmp_path / "mm.mlir"
    src.write_text(matmul_src(7, 5, 3))
    assert dlc_cli.main(["compile", str(src), "-o", str(tmp_path / "mm.so")]) == 0
    err = capsys.readouterr().err
    assert "note: schedule: @main_" in err and "the 'matmul' schedule refused it" in err
