"""The flat conv form without its overheads (lowering/kernels/conv.py, schedule/defaults_conv.py).

* the register tiles start at zero: no zero-fill nest of the accumulator;
* an unpadded stride-1 conv whose window has one column (1x1) reads ``x`` in place
  (a view, no phase copy, no scratch);
* when the padded width is the output width (1-column windows) the tiles write
  ``out`` through a ``[n, c, OH * OW]`` view with the fused epilogue applied at the
  write-back (no ``outpad``, no copy-out); ``P = OH * OW`` that is not a multiple of
  16 gets a narrower tail tile.

Compiled results match the reference evaluator on odd shapes: P = 1, 7, 49, 13 * 17,
channels that are not multiples of 8, strides, padding, batch, both tile orders
(input-major when the input outweighs the weights), bias / relu / residual epilogues
and extras broadcast over the plane, one of its axes (which keeps the copy-out) or none.
"""

from __future__ import annotations

import pytest

from conv_testing import check_against_evaluator, conv_kernel, lowered
from conv_testing import tensor_type as _t
from dlc.lowering.schedule import Schedule
from dlc.lowering.schedule.core import loop_name


def conv_src(x_shape, w_shape, stride=(1, 1), pad=(0, 0, 0, 0), extras=()):
    """conv2d, then one op per ``(op, extra shape or None)`` in `extras` (add/mul with an
    extra input of that shape, relu with None)."""
    n, _, h, w = x_shape
    o, _, kh, kw = w_shape
    oh = (h + pad[0] + pad[2] - kh) // stride[0] + 1
    ow = (w + pad[1] + pad[3] - kw) // stride[1] + 1
    y = (n, o, oh, ow)
    attrs = f"strides = array<i64: {stride[0]}, {stride[1]}>, padding = array<i64: {', '.join(map(str, pad))}>"
    args = [f"%x: {_t(x_shape)}", f"%w: {_t(w_shape)}"]
    body = [f"  %v0 = graph.conv2d %x, %w {{{attrs}}} : ({_t(x_shape)}, {_t(w_shape)}) -> {_t(y)}"]
    for i, (op, shape) in enumerate(extras):
        if shape is None:
            body.append(f"  %v{i + 1} = graph.{op} %v{i} : ({_t(y)}) -> {_t(y)}")
        else:
            args.append(f"%e{i}: {_t(shape)}")
            body.append(f"  %v{i + 1} = graph.{op} %v{i}, %e{i} : ({_t(y)}, {_t(shape)}) -> {_t(y)}")
    shapes = [x_shape, w_shape] + [s for _, s in extras if s is not None]
    src = (f"func.func @main({', '.join(args)}) -> {_t(y)} {{\n" + "\n".join(body)
           + f"\n  func.return %v{len(extras)} : {_t(y)}\n}}")
    return src, shapes


def scheduled_kernel(src):
    return conv_kernel(lowered(src, ("fold-constant", "legalize", "fuse-ops"), schedule=True))


def check(src, shapes, threads=2):
    check_against_evaluator(src, shapes, threads)


BIAS_RELU = (("add", (1, "O", 1, 1)), ("relu", None))


def _extras(extras, o, oh, ow):
    return tuple((op, None if s is None else tuple({"O": o, "H": oh, "W": ow}.get(d, d) for d in s))
                 for op, s in extras)


CASES = [
    # x shape, w shape, stride, padding (t, l, b, r), epilogue (O/H/W: the output's sizes)
    ((1, 5, 1, 1), (8, 5, 1, 1), (1, 1), (0, 0, 0, 0), BIAS_RELU),                  # P = 1
    ((1, 3, 1, 7), (13, 3, 1, 1), (1, 1), (0, 0, 0, 0), ()),                        # P = 7, prime oc
    ((1, 64, 7, 7), (24, 64, 1, 1), (1, 1), (0, 0, 0, 0), BIAS_RELU),               # P = 49: tail 1, weight-major
    ((1, 3, 7, 7), (16, 3, 1, 1), (1, 1), (0, 0, 0, 0), BIAS_RELU),                 # P = 49, input-major
    ((1, 7, 13, 17), (12, 7, 1, 1), (1, 1), (0, 0, 0, 0), BIAS_RELU),               # P = 221: tail 13, oc by 4
    ((2, 9, 13, 17), (10, 9, 1, 1), (1, 1), (0, 0, 0, 0), (("add", (2, "O", "H", "W")), ("relu", None))),  # residual, batch 2
    ((1, 40, 14, 14), (32, 40, 1, 1), (1, 1), (0, 0, 0, 0), (("add", ("O", "H", "W")),)),  # rank-3 residual, P = 196
    ((1, 6, 5, 11), (8, 6, 1, 1), (1, 1), (0, 0, 0, 0), (("mul", ("H", "W")), ("add", (1, "O", 1, 1)))),  # plane-only extra
    ((1, 6, 5, 11), (8, 6, 1, 1), (1, 1), (0, 0, 0, 0), (("add", (1, 1, 1, "W")),)),  # one axis: copy-out kept
    ((1, 6, 5, 11), (8, 6, 1, 1), (1, 1), (0, 0, 0, 0), (("add", ("H", 1)),)),         # the other axis
    ((1, 5, 9, 10), (8, 5, 1, 1), (2, 2), (0, 0, 0, 0), BIAS_RELU),                 # 1x1 stride 2: P = 25
    ((1, 64, 14, 14), (48, 64, 1, 1), (2, 2), (0, 0, 0, 0), BIAS_RELU),             # ResNet downsample, P = 49
    ((1, 3, 4, 4), (8, 3, 1, 1), (1, 1), (1, 0, 2, 1), BIAS_RELU),                  # padded 1x1: a phase copy
    ((1, 4, 6, 9), (8, 4, 3, 1), (1, 1), (0, 0, 0, 0), BIAS_RELU),                  # 3x1 unpadded: x in place
    ((1, 4, 6, 9), (8, 4, 3, 1), (1, 1), (1, 0, 1, 0), BIAS_RELU),                  # 3x1 padded rows
    ((1, 4, 6, 9), (8, 4, 1, 3), (1, 1), (0, 1, 0, 1), BIAS_RELU),                  # 1x3: outpad and copy-out
    ((1, 5, 11, 13), (7, 5, 3, 3), (1, 1), (1, 1, 1, 1), (("add", (1, "O", "H", "W")), ("relu", None))),  # 3x3
]


@pytest.mark.parametrize("x_shape,w_shape,stride,pad,extras", CASES)
def test_flat_conv_without_overheads_matches_evaluator(x_shape, w_shape, stride, pad, extras):
    oh = (x_shape[2] + pad[0] + pad[2] - w_shape[2]) // stride[0] + 1
    ow = (x_shape[3] + pad[1] + pad[3] - w_shape[3]) // stride[1] + 1
    src, shapes = conv_src(x_shape, w_shape, stride, pad, _extras(extras, w_shape[0], oh, ow))
    assert "acc_out_d0" in _loop_names(scheduled_kernel(src)), "the register-tiled schedule did not apply"
    check(src, shapes)


def test_one_thread_matches_evaluator():
    src, shapes = conv_src((1, 7, 13, 17), (16, 7, 1, 1), extras=_extras(BIAS_RELU, 16, 13, 17))
    check(src, shapes, threads=1)


def _loop_names(kernel) -> list[str]:
    return [loop_name(l) for l in Schedule(kernel).loops()]


def test_1x1_reads_and_writes_in_place_in_one_parallel_nest():
    src, _ = conv_src((1, 64, 7, 7), (64, 64, 1, 1), extras=_extras(BIAS_RELU, 64, 7, 7))
    kernel = scheduled_kernel(src)
    text = str(kernel)
    assert "memref.alloc(" not in text, "a 1x1 stride-1 conv needs no heap scratch"
    assert "%xflat" in text and "%outflat" in text
    top = [op for op in kernel.body.block.ops if op.name == "tloop.for"]
    # weight-major: one parallel nest over channel blocks, each doing its 16-column tiles
    # and then its tail tile (columns 33..48, writing back 48 only): nothing else
    assert [loop_name(l) for l in top] == ["n_s1_oco"], [loop_name(l) for l in top]
    assert top[0].loop_kind == "parallel"
    po_t = next(l for l in Schedule(kernel).loops() if loop_name(l) == "po_t")
    assert (po_t.lower, po_t.upper) == (33, 34)
    names = _loop_names(kernel)
    assert "pi" in names and "pi_t" in names and "acc_out_d2" in names and "acc_t_out_d2" in names
    assert not any(n.startswith(("pad_", "out_")) for n in names), names
    # the tiles start at zero (no load of the output before the reduction) ...
    first_copy = next(l for l in Schedule(kernel).loops() if loop_name(l) == "acc_d2")
    assert not any(op.name == "memref.load" for op in first_copy.walk())
    # ... and the bias + relu run at the write-backs of the main and the tail tiles
    for name in ("acc_out_d2", "acc_t_out_d2"):
        write_back = next(l for l in Schedule(kernel).loops() if loop_name(l) == name)
        assert any(op.name == "arith.maximumf" for op in write_back.walk()), name


def test_input_major_tail_is_a_nest_of_its_own():
    # the input (3 x 49) outweighs the weights (16 x 3): parallel over column tiles, then the
    # tail tiles per channel block
    src, _ = conv_src((1, 3, 7, 7), (16, 3, 1, 1), extras=_extras(BIAS_RELU, 16, 7, 7))
    kernel = scheduled_kernel(src)
    top = [op for op in kernel.body.block.ops if op.name == "tloop.for"]
    assert [loop_name(l) for l in top] == ["n_s1_po", "n_s1_t"]
    assert top[0].loop_kind == "parallel" and top[1].loop_kind == "serial"


@pytest.mark.parametrize("x_shape,w_shape,copy_out_in_parallel_loop", [
    ((1, 8, 9, 9), (16, 8, 3, 3), True),      # weight-major: each thread copies out its channels
    ((1, 8, 30, 30), (16, 8, 3, 3), False),   # input-major (parallel over columns): a nest of its own
])
def test_padded_3x3_keeps_its_copies_but_not_the_zero_fill(x_shape, w_shape, copy_out_in_parallel_loop):
    src, _ = conv_src(x_shape, w_shape, pad=(1, 1, 1, 1))
    kernel = scheduled_kernel(src)
    names = _loop_names(kernel)
    assert "pad_n" in names and "out_w" in names and "%outpad" in str(kernel)
    top = [op for op in kernel.body.block.ops if op.name == "tloop.for"]
    # phase copy, the parallel tiles (+ copy-out): no zero-fill nest
    expected = ["pad_n", "n_s1_oco"] if copy_out_in_parallel_loop else ["pad_n", "n_s1_po", "out_n"]
    assert [loop_name(l) for l in top] == expected
    assert top[1].loop_kind == "parallel"
    if copy_out_in_parallel_loop:
        assert "out_ci" in [loop_name(l) for l in top[1].walk() if l.name == "tloop.for"]


@pytest.mark.parametrize("x_shape,w_shape,pad", [
    ((1, 8, 9, 9), (16, 8, 3, 3), (1, 1, 1, 1)),   # copy-out in the parallel loop, prime plane
    ((2, 5, 7, 11), (12, 5, 3, 3), (1, 0, 2, 1)),  # batch 2, asymmetric padding, oc by 4
    ((1, 3, 6, 6), (7, 3, 3, 3), (1, 1, 1, 1)),    # prime oc: one channel per block
])
def test_copy_out_in_the_parallel_loop_matches_evaluator(x_shape, w_shape, pad):
    oh = x_shape[2] + pad[0] + pad[2] - w_shape[2] + 1
    ow = x_shape[3] + pad[1] + pad[3] - w_shape[3] + 1
    extras = _extras((("add", (x_shape[0], "O", "H", "W")), ("relu", None)), w_shape[0], oh, ow)
    src, shapes = conv_src(x_shape, w_shape, pad=pad, extras=extras)
    assert "out_ci" in _loop_names(scheduled_kernel(src))
    check(src, shapes)


def test_a_store_through_a_view_marks_the_argument_written():
    """lower-to-llvm drops ``noalias`` from kernels called with overlapping buffers that they
    write: a kernel writing its output only through a view still writes it."""
    from dlc.lowering.lower_to_llvm import _written_arguments

    src, _ = conv_src((1, 8, 7, 7), (8, 8, 1, 1), extras=_extras((("add", (1, "O", "H", "W")),), 8, 7, 7))
    kernel = scheduled_kernel(src)
    assert "%outflat" in str(kernel)
    assert _written_arguments(kernel) == {len(kernel.body.block.args) - 1}
