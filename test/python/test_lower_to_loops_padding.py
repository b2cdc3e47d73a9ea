"""Padded conv2d / pool kernels: branch-free (clamped load + select), exact results.

The padding check used to be an ``scf.if`` around the accumulation, which kept
the dense conv schedule from vectorizing; these tests pin the branch-free form
and the corner cases where "load 0 / -inf instead" could differ from skipping.
"""

from __future__ import annotations

import re

import numpy as np
import pytest
from xdsl.dialects import arith, memref, scf
from xdsl.dialects.builtin import i8, i32

from dlc.dialects import graph
from dlc.lowering.lower_to_loops import lower_module
from test_lower_to_loops import T, check, make_module, ui8


def _kernel_ops(module, source: str) -> list:
    kernel = next(op for op in module.walk() if op.attributes.get("tloop.source") is not None
                  and op.attributes["tloop.source"].data == source)
    return list(kernel.walk())


@pytest.mark.parametrize("make, source", [
    (lambda x, w: graph.Conv2DOp.make(x, w, padding=[1, 1, 1, 1]), "graph.conv2d"),
    (lambda x, w: graph.MaxPool2DOp.make(x, kernel=[3, 3], padding=[1, 1, 1, 1]), "graph.max_pool2d"),
    (lambda x, w: graph.AvgPool2DOp.make(x, kernel=[3, 3], padding=[1, 1, 1, 1]), "graph.avg_pool2d"),
])
def test_padded_window_kernels_have_no_branch(make, source):
    module = make_module([T(1, 3, 7, 5), T(2, 3, 3, 3)], lambda x, w: make(x, w))
    lower_module(module)
    ops = _kernel_ops(module, source)
    assert not any(isinstance(op, scf.IfOp) for op in ops)
    assert any(isinstance(op, arith.SelectOp) for op in ops)
    # one lower and one upper clamp per spatial dimension
    assert sum(isinstance(op, arith.MaxSIOp) for op in ops) == 2
    assert sum(isinstance(op, arith.MinSIOp) for op in ops) == 2


def test_unpadded_conv_has_no_clamp():
    module = make_module([T(1, 3, 7, 5), T(2, 3, 3, 3)], lambda x, w: graph.Conv2DOp.make(x, w))
    lower_module(module)
    ops = _kernel_ops(module, "graph.conv2d")
    assert not any(isinstance(op, (arith.SelectOp, arith.MaxSIOp, arith.MinSIOp, arith.CmpiOp)) for op in ops)


def test_conv_padding_times_inf_weight_is_nan_like_zero_padding():
    # the reference pads with zeros: 0 * inf = NaN reaches the border outputs
    x = np.ones((1, 2, 5, 3), np.float32)
    w = np.ones((3, 2, 3, 3), np.float32)
    w[1, 0, 0, 0] = np.inf
    check(make_module([T(1, 2, 5, 3), T(3, 2, 3, 3)],
                      lambda a, b: graph.Conv2DOp.make(a, b, padding=[1, 1, 1, 1])), [x, w])


@pytest.mark.parametrize("et", [i8, i32])
def test_int_conv_with_padding_is_exact(et):
    check(make_module([T(2, 3, 5, 7, et=et), T(4, 3, 3, 2, et=et)],
                      lambda a, b: graph.Conv2DOp.make(a, b, padding=[2, 1, 1, 0], strides=[2, 1])))


def test_max_pool_all_negative_and_minus_inf_inputs():
    # padding never wins a max: windows of -inf and very negative values
    x = np.full((1, 1, 3, 5), -np.inf, np.float32)
    x[0, 0, 1, 2] = -3e38
    check(make_module([T(1, 1, 3, 5)],
                      lambda a: graph.MaxPool2DOp.make(a, kernel=[3, 3], padding=[1, 1, 1, 1])), [x])


def test_max_pool_int_extremes():
    x = np.full((1, 2, 5, 3), -128, np.int8)
    x[0, 1] = np.array([[-128, -127, 5], [0, -128, -1], [7, 7, -128], [1, 2, 3], [-5, -6, -7]])
    check(make_module([T(1, 2, 5, 3, et=i8)],
                      lambda a: graph.MaxPool2DOp.make(a, kernel=[2, 3], padding=[1, 2, 1, 1], strides=[2, 1])), [x])
    # unsigned: the identity is 0 and 255 must not read as -1
    u = np.array([[[[0, 255, 0], [200, 0, 1], [0, 0, 0]]]], np.uint8)
    check(make_module([T(1, 1, 3, 3, et=ui8)],
                      lambda a: graph.MaxPool2DOp.make(a, kernel=[2, 2], padding=[1, 1, 1, 1])), [u])


@pytest.mark.parametrize("include", [False, True])
def test_avg_pool_int_with_padding(include):
    check(make_module([T(1, 3, 7, 5, et=i32)],
                      lambda a: graph.AvgPool2DOp.make(a, kernel=[3, 2], padding=[1, 1, 1, 0],
                                                       count_include_pad=include)))


def test_padded_pool_and_conv_on_a_single_pixel():
    check(make_module([T(1, 1, 1, 1)], lambda a: graph.MaxPool2DOp.make(a, kernel=[3, 3], padding=[1, 1, 1, 1])))
    check(make_module([T(1, 1, 1, 1), T(1, 1, 3, 3)],
                      lambda a, b: graph.Conv2DOp.make(a, b, padding=[1, 1, 1, 1])))


# -- the dense conv schedule on padded convs ---------------------------------------

from dlc.lowering.schedule import Schedule  # noqa: E402
from dlc.lowering.schedule.annotate import vectorize_problem  # noqa: E402
from dlc.lowering.schedule.core import loop_name  # noqa: E402
from test_dense_schedules import check_against_evaluator, conv_src, kernel_of, loop_module, schedule_dense  # noqa: E402


def _scheduled_conv(x_shape, w_shape, stride=1, pad=1):
    kernel = kernel_of(loop_module(conv_src(x_shape, w_shape, stride, pad)), "_conv2d")
    assert schedule_dense(kernel)
    return kernel, {loop_name(l): l for l in Schedule(kernel).loops()}


@pytest.mark.parametrize("x_shape, w_shape, stride, pad, middle", [
    ((1, 3, 7, 24), (8, 3, 3, 3), 1, 1, (1, 7)),    # owb 8: columns 0 and 7 of a tile may pad
    ((1, 2, 5, 28), (4, 2, 3, 3), 1, 1, (1, 13)),   # owb 14
    ((1, 2, 9, 32), (8, 2, 5, 5), 1, 2, (2, 14)),   # pad 2: two border columns each side
])
def test_padded_conv_middle_columns_vectorize(x_shape, w_shape, stride, pad, middle):
    kernel, loops = _scheduled_conv(x_shape, w_shape, stride, pad)
    assert (loops["owi_pm"].lower, loops["owi_pm"].upper) == middle
    assert loops["owi_pm"].loop_kind == "vectorized"
    assert loops["owi"].loop_kind != "vectorized"  # the padding column keeps its clamp
    # the middle loop loads the input at the plain (affine) column
    load_x = next(op for op in loops["owi_pm"].walk()
                  if isinstance(op, memref.LoadOp) and op.memref.name_hint == "x")
    assert not isinstance(load_x.indices[-1].owner, (arith.MaxSIOp, arith.MinSIOp))
    load_x = next(op for op in loops["owi"].walk()
                  if isinstance(op, memref.LoadOp) and op.memref.name_hint == "x")
    assert isinstance(load_x.indices[-1].owner, arith.MinSIOp)
    check_against_evaluator(conv_src(x_shape, w_shape, stride, pad), [x_shape, w_shape])


def test_unpadded_conv_vectorizes_whole_column_tile():
    kernel, loops = _scheduled_conv((1, 3, 6, 18), (8, 3, 3, 3), 1, 0)
    assert "owi_pm" not in loops and loops["owi"].loop_kind == "vectorized"


def test_clamped_column_is_still_a_gather():
    # before the split, the column index varies with owi through maxsi/minsi
    module = loop_module(conv_src((1, 2, 5, 9), (2, 2, 3, 3), 1, 1))
    kernel = kernel_of(module, "_conv2d")
    inner = next(l for l in Schedule(kernel).loops() if loop_name(l) == "kw")
    assert "gather" in vectorize_problem(inner) or "innermost" in vectorize_problem(inner)
    ow = next(l for l in Schedule(kernel).loops() if loop_name(l) == "ow")
    assert vectorize_problem(ow) is not None


def test_padded_conv_machine_code_uses_vector_fma():
    from dlc.driver import compile as compile_source

    compiled = compile_source(conv_src((1, 4, 9, 32), (8, 4, 3, 3), 1, 1), num_threads=1)
    jit = compiled._jit
    asm = jit.target_machine.emit_assembly(jit.module)
    assert re.search(r"vfmadd\w*ps\s[^\n]*%[yz]mm", asm)
