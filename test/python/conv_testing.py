"""What the conv2d tests share (test_conv_flat_schedule.py, test_conv_grouped.py,
test_conv_flat_overheads.py, test_kernel_forms.py): graph sources, lowering with the
CPU kernel forms, the conv kernel of a module, a check against the evaluator."""

from __future__ import annotations

import numpy as np

from dlc.driver import compile, load_module, run_pass
from dlc.evaluator import evaluate

RNG = np.random.default_rng(5)


def tensor_type(shape) -> str:
    return "tensor<" + "x".join(map(str, shape)) + "xf32>"


def conv_src(x_shape, w_shape, stride=(1, 1), pad=(1, 1, 1, 1), dil=(1, 1), groups=1, epilogue=False):
    """conv2d (padding: top, left, bottom, right); with `epilogue`: + bias, relu."""
    _t = tensor_type
    n, _, h, w = x_shape
    o, _, kh, kw = w_shape
    oh = (h + pad[0] + pad[2] - dil[0] * (kh - 1) - 1) // stride[0] + 1
    ow = (w + pad[1] + pad[3] - dil[1] * (kw - 1) - 1) // stride[1] + 1
    y = (n, o, oh, ow)
    attrs = (f"strides = array<i64: {stride[0]}, {stride[1]}>, padding = array<i64: {', '.join(map(str, pad))}>, "
             f"dilations = array<i64: {dil[0]}, {dil[1]}>, groups = {groups} : i64")
    args = f"%x: {_t(x_shape)}, %w: {_t(w_shape)}" + (f", %b: {_t((1, o, 1, 1))}" if epilogue else "")
    body = f"  %y = graph.conv2d %x, %w {{{attrs}}} : ({_t(x_shape)}, {_t(w_shape)}) -> {_t(y)}\n"
    result = "%y"
    if epilogue:
        body += (f"  %s = graph.add %y, %b : ({_t(y)}, {_t((1, o, 1, 1))}) -> {_t(y)}\n"
                 f"  %r = graph.relu %s : ({_t(y)}) -> {_t(y)}\n")
        result = "%r"
    return f"func.func @main({args}) -> {_t(y)} {{\n{body}  func.return {result} : {_t(y)}\n}}"


SCHEDULE_TARGET = "x86-64-v4"


def lowered(src, passes=("fold-constant", "legalize"), flat=True, schedule=False):
    """`src` through `passes` and lower-to-loops (the CPU kernel forms unless not `flat`),
    then the default schedules if `schedule`."""
    module = load_module(src)
    for name in passes:
        run_pass(name, module)
    run_pass(f"lower-to-loops{{flat-conv={'true' if flat else 'false'}}}", module)
    if schedule:  # the tests' expected tiles are AVX-512's (32 zmm), whatever this host has
        run_pass(f'tloop-default-schedule{{target="{SCHEDULE_TARGET}"}}', module)
    return module


def conv_kernel(module):
    """The module's conv2d kernel."""
    return next(op for op in module.ops if getattr(op, "sym_name", None) is not None
                and "conv2d" in op.sym_name.data)


def check_against_evaluator(src, shapes, threads=2):
    """dlc.compile(src) on random inputs of `shapes` matches the reference evaluator."""
    inputs = [RNG.standard_normal(s).astype(np.float32) for s in shapes]
    expected = evaluate(load_module(src), inputs)[0]
    got = compile(src, num_threads=threads)(*inputs)[0]
    scale = max(1.0, float(np.abs(expected).max()))
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-5 * scale)
