"""Grouped and depthwise conv2d on the CPU (lowering/kernels/conv_grouped.py and
lowering/schedule/defaults_conv_grouped.py).

Compiled results match the reference evaluator on odd shapes (groups of 5 and 80
channels, channel counts padded to the tile, primes, 1-wide outputs, strides with
phase planes, dilation, padding, batch, bias + relu epilogue); depthwise convs
(C = 1, 3, 17, 240, multiplier 2) keep the flat form; the grouped form is chosen
only for >= 8 output channels per group, and its schedule runs the register tile
inside a group with the parallel loop over groups x tiles.
"""

from __future__ import annotations

import pytest

from conv_testing import check_against_evaluator, conv_kernel, conv_src, lowered
from dlc.lowering.kernels.forms import CONV2D_DEPTHWISE, CONV2D_FLAT, CONV2D_GROUPED, form_of
from dlc.lowering.schedule.core import loop_name
from dlc.lowering.schedule.defaults_forms import apply_form_schedule
from dlc.target import Target



def check(x_shape, w_shape, threads=2, **kw):
    shapes = [x_shape, w_shape] + ([(1, w_shape[0], 1, 1)] if kw.get("epilogue") else [])
    check_against_evaluator(conv_src(x_shape, w_shape, **kw), shapes, threads)


def scheduled_kernel(src):
    return conv_kernel(lowered(src, ("fold-constant", "legalize", "fuse-ops"), schedule=True))


GROUPED_CASES = [
    # x shape, w shape, groups, padding (t, l, b, r), dilations, strides
    ((1, 15, 7, 5), (30, 5, 3, 3), 3, (1, 1, 1, 1), (1, 1), (1, 1)),       # 10 per group: padded to 16
    ((1, 240, 11, 13), (240, 80, 1, 1), 3, (0, 0, 0, 0), (1, 1), (1, 1)),  # 3 groups of 80, 1x1, tail of P
    ((1, 240, 8, 8), (240, 80, 1, 1), 3, (0, 0, 0, 0), (1, 1), (1, 1)),    # 1x1 read in place (64 columns)
    ((1, 24, 9, 9), (112, 6, 1, 1), 4, (0, 0, 0, 0), (1, 1), (1, 1)),      # ShuffleNet-like: 28 -> 32 rows
    ((1, 136, 7, 7), (136, 34, 1, 1), 4, (0, 0, 0, 0), (1, 1), (1, 1)),    # 34 -> 40, 49 positions: copied (a 1-column tail)
    ((1, 24, 5, 3), (16, 12, 1, 1), 2, (0, 0, 0, 0), (1, 1), (1, 1)),      # 15 positions: one 15-column tile
    ((1, 24, 3, 11), (16, 12, 1, 1), 2, (0, 0, 0, 0), (1, 1), (1, 1)),     # 33 positions: copied into 3 tiles
    ((1, 24, 5, 7), (16, 12, 1, 1), 2, (0, 0, 0, 0), (1, 1), (1, 1)),      # 35 positions: 2 tiles + 3 columns, copied
    ((2, 24, 3, 13), (16, 12, 1, 1), 2, (0, 0, 0, 0), (1, 1), (1, 1)),     # batch 2, 39 positions: in place + tail of 7
    ((1, 12, 13, 11), (16, 6, 5, 5), 2, (2, 2, 2, 2), (1, 1), (1, 1)),     # AlexNet-like 5x5, group 2
    ((1, 6, 17, 9), (24, 3, 3, 3), 2, (1, 0, 2, 1), (2, 1), (2, 2)),       # stride 2 phases, dilation, asymmetric
    ((2, 9, 5, 7), (27, 3, 3, 1), 3, (1, 0, 1, 0), (1, 1), (1, 2)),        # batch 2, 9 per group
    ((1, 16, 1, 1), (16, 8, 1, 1), 2, (0, 0, 0, 0), (1, 1), (1, 1)),       # 1x1 output
]


@pytest.mark.parametrize("x_shape,w_shape,groups,pad,dil,stride", GROUPED_CASES)
def test_grouped_matches_evaluator(x_shape, w_shape, groups, pad, dil, stride):
    check(x_shape, w_shape, pad=pad, dil=dil, stride=stride, groups=groups)


@pytest.mark.parametrize("threads", [1, 2])
def test_grouped_epilogue(threads):
    check((1, 15, 9, 7), (30, 5, 3, 3), threads=threads, groups=3, epilogue=True)
    check((1, 240, 5, 5), (240, 80, 1, 1), threads=threads, pad=(0, 0, 0, 0), groups=3, epilogue=True)


DEPTHWISE_CASES = [
    # channels, multiplier, size (h, w), stride, padding, dilation
    (1, 1, (7, 5), 1, 1, 1),
    (3, 1, (11, 13), 2, 1, 1),
    (17, 1, (9, 9), 1, 2, 2),
    (240, 1, (7, 7), 1, 1, 1),
    (240, 1, (14, 14), 2, 1, 1),
    (17, 2, (6, 5), 1, 1, 1),        # channel multiplier 2 (OC = 2C)
    (3, 2, (5, 7), 2, 0, 1),
    (5, 1, (12, 10), 2, 2, 2),       # stride 2 with dilation 2: one phase plane
]


@pytest.mark.parametrize("c,mult,size,stride,pad,dil", DEPTHWISE_CASES)
def test_depthwise_matches_evaluator(c, mult, size, stride, pad, dil):
    check((1, c) + size, (c * mult, 1, 3, 3), stride=(stride, stride), pad=(pad,) * 4, dil=(dil, dil),
          groups=c, epilogue=True)


def test_small_groups_keep_flat_form():
    """3 groups of 5 output channels: no 8-channel tile within a group, the flat form."""
    check((1, 15, 7, 5), (15, 5, 3, 3), groups=3)
    kernel = scheduled_kernel(conv_src((1, 15, 7, 5), (15, 5, 3, 3), groups=3))
    assert "g" not in [loop_name(op) for op in kernel.walk() if hasattr(op, "loop_kind")]


def _loops(kernel):
    return {loop_name(op): op for op in kernel.walk() if hasattr(op, "loop_kind")}


def test_grouped_schedule_tiles_within_group():
    kernel = scheduled_kernel(conv_src((1, 136, 14, 14), (136, 34, 1, 1), pad=(0, 0, 0, 0), groups=4))
    loops = _loops(kernel)
    # 34 channels per group padded to 40: 5 tiles of 8; P = 196 (x read in place): parallel
    # over groups x channel tiles, each running its 12 column tiles, its 4-column tail tile
    # and the copy-out of its channels (defaults_conv_grouped.BLOCK_MAJOR_MIN_ITERATIONS)
    par = [l for l in loops.values() if l.loop_kind == "parallel"]
    assert [loop_name(l) for l in par] == ["g_oco"] and par[0].trip_count == 4 * 5
    assert loops["po"].trip_count == 12 and "out_n" not in loops
    assert all(loops[name] in par[0].walk() for name in ("po_t", "out_ci"))
    assert loops["oci"].loop_kind == "unrolled" and loops["oci"].trip_count == 8
    assert loops["pi"].loop_kind == "vectorized" and loops["pi"].trip_count == 16
    assert loops["oci_t"].loop_kind == "unrolled" and loops["pi_t"].trip_count == 4
    text = str(kernel)
    assert "%wgroup = memref.alloc" in text and "%xpad" not in text  # zero-padded weights, x in place
    # the tiles start at zero: no zero-fill nest of outpad is left
    assert "%n = " not in text.replace("%n = 0 to", "")
    assert not any(name == "n" for name in loops)


def test_grouped_padded_conv_copies_planes():
    kernel = scheduled_kernel(conv_src((1, 12, 13, 11), (16, 6, 5, 5), pad=(2, 2, 2, 2), groups=2))
    loops = _loops(kernel)
    assert "%xpad = memref.alloc" in str(kernel) and "%wgroup = memref.reinterpret_cast" in str(kernel)
    assert "pi_t" not in loops  # P is whole column tiles of the padded width
    assert [l.loop_kind for l in loops.values()].count("parallel") == 1


def test_grouped_1x1_reads_input_in_place():
    kernel = scheduled_kernel(conv_src((1, 240, 8, 8), (240, 80, 1, 1), pad=(0, 0, 0, 0), groups=3))
    text = str(kernel)
    assert "memref.reinterpret_cast %x" in text and "%xpad" not in text
    assert "%wgroup = memref.reinterpret_cast %w" in text  # 80 rows: a multiple of the tile, no copy


def test_depthwise_batch_and_threads():
    check((2, 17, 9, 7), (17, 1, 3, 3), threads=1, groups=17, epilogue=True)
    check((3, 240, 14, 14), (240, 1, 3, 3), threads=2, groups=240)  # parallel over n x channels


def test_depthwise_big_planes_keep_flat_form(monkeypatch):
    """Planes beyond the per-channel scratch budget (thread stacks) keep the flat form."""
    from dlc.lowering.kernels import conv_grouped

    monkeypatch.setattr(conv_grouped, "DW_SCRATCH_BYTES", 256)
    src = conv_src((1, 3, 11, 13), (3, 1, 3, 3), groups=3)
    assert "%xpad = memref.alloc" in str(scheduled_kernel(src))
    check((1, 3, 11, 13), (3, 1, 3, 3), groups=3)


def test_depthwise_schedule():
    kernel = scheduled_kernel(conv_src((1, 272, 14, 14), (272, 1, 3, 3), groups=272))
    loops = _loops(kernel)
    # WQ = 16, P = 224 -> 256: tiles of 4 vectors x 16 columns, taps outside the tile
    assert loops["dw_nc"].loop_kind == "parallel" and loops["dw_nc"].trip_count == 272
    assert loops["pu"].loop_kind == "unrolled" and loops["pu"].trip_count == 4
    assert loops["pv"].loop_kind == "vectorized" and "dlc.whole_vector" in loops["pv"].attributes
    assert [loop_name(l) for l in loops["po"].body.block.ops if hasattr(l, "loop_kind")][1] == "kh"
    assert "p" not in loops  # the tiles start at zero: no zero-fill of the row
    # a small layer stays serial: a thread-team wake-up would cost more than it
    small = _loops(scheduled_kernel(conv_src((1, 272, 14, 14), (272, 1, 3, 3), stride=(2, 2), groups=272)))
    assert small["dw_nc"].loop_kind == "serial"


def test_one_column_tail_copies_input():
    """7 x 7 = 3 x 16 + 1 positions: whole tiles over a copy of x, not a 1-lane serial tail."""
    kernel = scheduled_kernel(conv_src((1, 136, 7, 7), (136, 34, 1, 1), pad=(0, 0, 0, 0), groups=4))
    loops = _loops(kernel)
    assert "%xpad = memref.alloc" in str(kernel) and "pi_t" not in loops
    assert loops["pi"].trip_count == 16


def _unscheduled_kernel(src):
    return conv_kernel(lowered(src))


def schedule_grouped(kernel) -> bool:
    """The kernel's form schedule, for this machine."""
    return apply_form_schedule(kernel, Target.host())


@pytest.mark.parametrize("x_shape,w_shape,groups,pad,dil,stride", GROUPED_CASES)
def test_grouped_schedule_applies(x_shape, w_shape, groups, pad, dil, stride):
    """Every grouped case gets its own schedule (not the generic fallback)."""
    kernel = _unscheduled_kernel(conv_src(x_shape, w_shape, pad=pad, dil=dil, stride=stride, groups=groups))
    assert form_of(kernel) == CONV2D_GROUPED
    assert schedule_grouped(kernel)
    assert any(getattr(op, "loop_kind", None) == "unrolled" for op in kernel.walk())


@pytest.mark.parametrize("c,mult,size,stride,pad,dil", DEPTHWISE_CASES)
def test_depthwise_schedule_applies(c, mult, size, stride, pad, dil):
    src = conv_src((1, c) + size, (c * mult, 1, 3, 3), stride=(stride, stride), pad=(pad,) * 4,
                   dil=(dil, dil), groups=c)
    kernel = _unscheduled_kernel(src)
    if c == 1:  # one channel: a dense conv, the flat form
        assert form_of(kernel) == CONV2D_FLAT
    else:
        assert form_of(kernel) == CONV2D_DEPTHWISE
        assert schedule_grouped(kernel)
        assert any(getattr(op, "loop_kind", None) == "unrolled" for op in kernel.walk())
