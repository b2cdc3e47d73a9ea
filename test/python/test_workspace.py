"""plan-workspace (lowering/plan_workspace.py): host buffers and kernel scratch packed
into one workspace reused across calls (no malloc, no page faults per call)."""

from __future__ import annotations

import gc
import resource
import threading

import numpy as np
import pytest

import dlc
from dlc.context import make_context
from dlc.evaluator import evaluate
from dlc.lowering.plan_workspace import WORKSPACE_ATTR, _Live, pack, plan_workspaces
from dlc.runtime import load


def _conv_chain(n: int, c: int, h: int, w: int, o: int) -> str:
    """conv -> relu -> conv (3x3, pad 1): intermediates plus flat-conv scratch."""
    x, y = f"tensor<{n}x{c}x{h}x{w}xf32>", f"tensor<{n}x{o}x{h}x{w}xf32>"
    return f"""
func.func @main(%x: {x}, %w: tensor<{o}x{c}x3x3xf32>, %w2: tensor<{o}x{o}x3x3xf32>) -> {y} {{
  %y = graph.conv2d %x, %w {{padding = array<i64: 1, 1, 1, 1>}} : ({x}, tensor<{o}x{c}x3x3xf32>) -> {y}
  %z = graph.relu %y : ({y}) -> {y}
  %a = graph.conv2d %z, %w2 {{padding = array<i64: 1, 1, 1, 1>}} : ({y}, tensor<{o}x{o}x3x3xf32>) -> {y}
  %b = graph.sigmoid %a : ({y}) -> {y}
  func.return %b : {y}
}}
"""


def _inputs(module, seed=0):
    rng = np.random.default_rng(seed)
    return [rng.standard_normal(shape).astype(dtype) for _, shape, dtype in module.input_specs]


# -- packing ------------------------------------------------------------------------


def _overlap(a: _Live, b: _Live) -> bool:
    in_time = a.start <= b.end and b.start <= a.end
    in_space = a.offset < b.offset + b.size and b.offset < a.offset + a.size
    return in_time and in_space


def test_pack_never_overlaps_live_buffers_and_reuses_dead_ones():
    rng = np.random.default_rng(3)
    lives = []
    for i in range(60):
        start = int(rng.integers(0, 50))
        lives.append(_Live(None, None, start, start + int(rng.integers(0, 8)), 64 * int(rng.integers(1, 97))))
    total = pack(lives)
    assert all(l.offset % 64 == 0 and l.offset + l.size <= total for l in lives)
    assert not any(_overlap(a, b) for i, a in enumerate(lives) for b in lives[i + 1:])
    peak = max(sum(l.size for l in lives if l.start <= t <= l.end) for t in range(60))
    assert peak <= total < sum(l.size for l in lives)  # shares memory between lifetimes


def test_pack_sequential_buffers_share_offset_zero():
    lives = [_Live(None, None, 0, 1, 128), _Live(None, None, 2, 3, 192), _Live(None, None, 4, 5, 64)]
    assert pack(lives) == 192
    assert [l.offset for l in lives] == [0, 0, 0]


# -- IR -----------------------------------------------------------------------------


def _loop_module(text: str):
    from dlc import driver
    module = driver._parse(text, None)
    for name in driver.graph_passes(None):
        driver.run_pass(name, module)
    driver.run_pass("lower-to-loops{flat-conv=true}", module)
    return module


def test_plan_workspace_hoists_scratch_and_packs_host_buffers():
    from xdsl.dialects import func, memref

    module = _loop_module(_conv_chain(1, 3, 7, 5, 4))
    arity_before = {}  # kernel -> (arguments, scratch allocations)
    for fn in module.ops:
        if isinstance(fn, func.FuncOp) and "tloop.kernel" in fn.attributes:
            scratch = sum(isinstance(op, memref.AllocOp) for op in fn.body.block.ops)
            arity_before[fn.sym_name.data] = (len(fn.function_type.inputs.data), scratch)
    sizes = plan_workspaces(module)
    module.verify()
    assert sizes["main"] > 0
    host = next(op for op in module.ops if isinstance(op, func.FuncOp) and op.sym_name.data == "main")
    allocs = [op for op in module.walk() if isinstance(op, memref.AllocOp)]
    # every allocation left is the host's workspace; kernels allocate nothing
    assert [op.parent_op() for op in allocs] == [host]
    assert WORKSPACE_ATTR in allocs[0].attributes
    assert allocs[0].results[0].type.get_shape() == (sizes["main"],)
    assert any(isinstance(op, memref.ViewOp) for op in host.walk())
    deallocs = [op for op in module.walk() if isinstance(op, memref.DeallocOp)]
    assert len(deallocs) == 1 and WORKSPACE_ATTR in deallocs[0].attributes
    for fn in module.ops:  # scratch became trailing arguments
        if isinstance(fn, func.FuncOp) and fn.sym_name.data in arity_before:
            arguments, scratch = arity_before[fn.sym_name.data]
            assert len(fn.function_type.inputs.data) == arguments + scratch


def test_plan_workspace_is_a_registered_pass():
    from dlc.passes import PASSES

    module = _loop_module(_conv_chain(1, 2, 3, 3, 2))
    PASSES["plan-workspace"]()().apply(make_context(), module)
    assert any(WORKSPACE_ATTR in op.attributes for op in module.walk())


# -- execution ----------------------------------------------------------------------


@pytest.mark.parametrize("shape", [(1, 3, 17, 13, 5), (2, 1, 1, 1, 1), (1, 7, 11, 2, 3)])
def test_compiled_matches_evaluator_on_repeated_calls(shape):
    text = _conv_chain(*shape)
    module = dlc.compile(text)
    assert "dlc_workspace_acquire" in module.llvm_ir
    xs = _inputs(module)
    expected = evaluate(dlc.driver._parse(text, None), xs)[0]
    first = module(*xs)[0]
    np.testing.assert_allclose(first, expected, rtol=1e-5, atol=1e-5)
    for seed in (1, 2):  # other inputs through the same (cached, dirty) workspace
        other = _inputs(module, seed)
        module(*other)
    np.testing.assert_array_equal(module(*xs)[0], first)


def test_concurrent_calls_from_two_threads_are_independent():
    module = dlc.compile(_conv_chain(1, 5, 23, 19, 7))
    module.set_num_threads(1)
    cases = [_inputs(module, seed) for seed in (0, 1)]
    expected = [module(*xs)[0] for xs in cases]
    errors = []

    def worker(i):
        for _ in range(40):
            got = module(*cases[i])[0]
            if not np.array_equal(got, expected[i]):
                errors.append(i)
                return

    threads = [threading.Thread(target=worker, args=(i,)) for i in (0, 1)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors


def test_exported_library_steady_state_has_no_page_faults(tmp_path):
    # ~1 MB intermediates: served by mmap, they faulted in fresh pages on every call
    module = dlc.compile(_conv_chain(1, 8, 67, 61, 16))
    path = str(tmp_path / "m.so")
    module.export(path)
    lib = load(path, num_threads=1)
    xs = _inputs(lib)
    outs = [np.empty(shape, dtype) for _, shape, dtype in lib.output_specs]
    expected = module(*xs)[0]
    for _ in range(3):
        lib(*xs, outputs=outs)
    before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    for _ in range(10):
        lib(*xs, outputs=outs)
    faults = (resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before) / 10
    assert faults < 20, f"{faults} page faults per call"
    np.testing.assert_array_equal(outs[0], expected)
    del lib
    gc.collect()  # dlc_release_workspaces frees the cached block; the process goes on


def test_modules_free_their_workspace_when_collected():
    import ctypes

    module = dlc.compile(_conv_chain(1, 2, 5, 5, 3))
    xs = _inputs(module)
    module(*xs)
    jit = module._jit
    slot = jit.global_address("main_workspace")
    assert ctypes.c_int64.from_address(slot).value != 0  # cached after the call
    jit.__del__()  # what collection runs (a second run frees nothing: the slot is 0)
    assert ctypes.c_int64.from_address(slot).value == 0
    np.testing.assert_array_equal(module(*xs)[0], module(*xs)[0])  # still usable


def _poison_workspace(module) -> int:
    """Fill ``main``'s cached workspace with NaN bytes; returns its size."""
    import ctypes
    import re

    size = int(re.search(r'dlc_workspace_acquire"\(i64\* @"main_workspace", i64 (\d+)\)', module.llvm_ir).group(1))
    address = ctypes.c_int64.from_address(module._jit.global_address("main_workspace")).value
    assert address, "no workspace cached after a call"
    ctypes.memset(address, 0xFF, size)
    return size


@pytest.mark.parametrize("conv", [
    "strides = array<i64: 1, 1>, padding = array<i64: 1, 1, 1, 1>",
    "strides = array<i64: 2, 2>, padding = array<i64: 1, 1, 1, 1>",
    "strides = array<i64: 1, 1>, padding = array<i64: 0, 0, 0, 0>",
    "strides = array<i64: 2, 2>, padding = array<i64: 0, 1, 2, 0>",
])
def test_no_kernel_reads_stale_workspace_bytes(conv):
    """A reused workspace holds the previous call's data (malloc'd memory may too): a
    kernel that relied on fresh, zeroed pages (unwritten padding, accumulators) would
    change its result after the workspace is filled with NaNs."""
    k = 1 if "0, 0, 0, 0" in conv else 3
    text = f"""
func.func @main(%x: tensor<1x3x13x11xf32>, %w: tensor<5x3x{k}x{k}xf32>) -> tensor<1x5x?x?xf32> {{
  %r = graph.relu %x : (tensor<1x3x13x11xf32>) -> tensor<1x3x13x11xf32>
  %y = graph.conv2d %r, %w {{{conv}}} : (tensor<1x3x13x11xf32>, tensor<5x3x{k}x{k}xf32>) -> tensor<1x5x?x?xf32>
  %z = graph.tanh %y : (tensor<1x5x?x?xf32>) -> tensor<1x5x?x?xf32>
  func.return %z : tensor<1x5x?x?xf32>
}}"""
    from dlc.dialects import graph

    x = np.abs(np.random.default_rng(0).standard_normal((1, 3, 13, 11))).astype(np.float32)
    w = np.random.default_rng(1).standard_normal((5, 3, k, k)).astype(np.float32)
    stride = 2 if "2, 2" in conv else 1
    pads = [int(v) for v in conv.split("padding = array<i64: ")[1].rstrip(">").split(",")]
    oh = (13 + pads[0] + pads[2] - k) // stride + 1
    ow = (11 + pads[1] + pads[3] - k) // stride + 1
    module = dlc.compile(text.replace("?x?", f"{oh}x{ow}"))
    expected = module(x, w)[0]
    _poison_workspace(module)
    np.testing.assert_array_equal(module(x, w)[0], expected)
    reference = evaluate(dlc.driver._parse(text.replace("?x?", f"{oh}x{ow}"), None), [x, w])[0]
    np.testing.assert_allclose(expected, reference, rtol=1e-5, atol=1e-5)


@pytest.mark.slow
@pytest.mark.parametrize("model", ["squeezenet", "shufflenet"])
def test_light_model_ignores_stale_workspace(model):
    """Whole CNNs (every conv form, pools, concats): same output after the cached
    workspace is filled with NaN bytes."""
    import os

    import onnx

    path = os.path.join(os.path.dirname(onnx.__file__), "backend", "test", "data", "light", f"light_{model}.onnx")
    module = dlc.compile(path, num_threads=1)
    xs = _inputs(module)
    expected = module(*xs)[0]
    _poison_workspace(module)
    np.testing.assert_array_equal(module(*xs)[0], expected)
