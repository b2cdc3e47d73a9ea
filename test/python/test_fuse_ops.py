"""fuse-ops: grouping (which ops join which producer) and execution of the fused
kernels against the numpy evaluator, on odd shapes with broadcasting."""

from __future__ import annotations

import collections
import re

import numpy as np
import pytest
from xdsl.parser import Parser

import dlc
from dlc.context import make_context
from dlc.driver import load_module
from dlc.evaluator import evaluate
from dlc.lowering.fused import GROUP_ATTR
from dlc.lowering.lower_to_loops import lower_module
from dlc.transforms.fuse_ops import FuseOpsPass

RNG = np.random.default_rng(11)


def _groups(text: str, dense: bool = True) -> dict[int, list[str]]:
    module = Parser(make_context(), text).parse_module()
    FuseOpsPass(dense=dense).apply(make_context(), module)
    out: dict[int, list[str]] = collections.defaultdict(list)
    for op in module.walk():
        if GROUP_ATTR in op.attributes:
            out[op.attributes[GROUP_ATTR].value.data].append(op.name.removeprefix("graph."))
    return dict(out)


def _kernels(text: str) -> list[str]:
    module = Parser(make_context(), text).parse_module()
    FuseOpsPass().apply(make_context(), module)
    lower_module(module)
    return [op.sym_name.data for op in module.ops if "tloop.kernel" in op.attributes]


def _run(text: str, inputs: list[np.ndarray], rtol=1e-5, atol=1e-5):
    expected = evaluate(load_module(text), inputs)
    compiled = dlc.compile(text)
    for got, want in zip(compiled(*inputs), expected, strict=True):
        np.testing.assert_allclose(got, want, rtol=rtol, atol=atol)
    return compiled


CONV_CHAIN = """
func.func @main(%x: tensor<1x3x11x7xf32>, %w: tensor<5x3x3x3xf32>, %b: tensor<5x1x1xf32>, %r: tensor<1x5x9x5xf32>) -> tensor<1x5x9x5xf32> {
  %y = graph.conv2d %x, %w : (tensor<1x3x11x7xf32>, tensor<5x3x3x3xf32>) -> tensor<1x5x9x5xf32>
  %a = graph.add %y, %b : (tensor<1x5x9x5xf32>, tensor<5x1x1xf32>) -> tensor<1x5x9x5xf32>
  %s = graph.add %r, %a : (tensor<1x5x9x5xf32>, tensor<1x5x9x5xf32>) -> tensor<1x5x9x5xf32>
  %z = graph.relu %s : (tensor<1x5x9x5xf32>) -> tensor<1x5x9x5xf32>
  func.return %z : tensor<1x5x9x5xf32>
}"""


def test_conv_bias_residual_relu_is_one_group_and_one_kernel():
    assert _groups(CONV_CHAIN) == {0: ["conv2d", "add", "add", "relu"]}
    assert _groups(CONV_CHAIN, dense=False) == {0: ["add", "add", "relu"]}
    assert _kernels(CONV_CHAIN) == ["main_3_conv2d_add_add_relu"]


def test_conv_chain_executes_like_the_evaluator():
    inputs = [RNG.normal(size=s).astype(np.float32) for s in [(1, 3, 11, 7), (5, 3, 3, 3), (5, 1, 1), (1, 5, 9, 5)]]
    _run(CONV_CHAIN, inputs)


def test_shared_intermediate_and_shape_change_stop_fusion():
    text = """
func.func @main(%x: tensor<7x3xf32>, %y: tensor<3xf32>) -> (tensor<7x3xf32>, tensor<7x3xf32>, tensor<7x1xf32>) {
  %e = graph.exp %x : (tensor<7x3xf32>) -> tensor<7x3xf32>
  %n = graph.neg %e : (tensor<7x3xf32>) -> tensor<7x3xf32>
  %m = graph.mul %e, %y : (tensor<7x3xf32>, tensor<3xf32>) -> tensor<7x3xf32>
  %s = graph.reduce_sum %m {axes = array<i64: 1>, keepdims = true} : (tensor<7x3xf32>) -> tensor<7x1xf32>
  %t = graph.tanh %s : (tensor<7x1xf32>) -> tensor<7x1xf32>
  %c = graph.greater %n, %m : (tensor<7x3xf32>, tensor<7x3xf32>) -> tensor<7x3xi1>
  %w = graph.where %c, %n, %x : (tensor<7x3xi1>, tensor<7x3xf32>, tensor<7x3xf32>) -> tensor<7x3xf32>
  func.return %w, %m, %t : tensor<7x3xf32>, tensor<7x3xf32>, tensor<7x1xf32>
}"""
    # %e has two users: it stays a kernel of its own; the reduction takes tanh;
    # greater changes the element type (f32 -> i1): it is not chained
    assert _groups(text) == {0: ["reduce_sum", "tanh"]}
    inputs = [RNG.normal(size=(7, 3)).astype(np.float32), RNG.normal(size=3).astype(np.float32)]
    _run(text, inputs)


@pytest.mark.parametrize("producer", ["matmul", "max_pool2d", "reduce_mean", "sub"])
def test_epilogue_after_each_producer_kind(producer):
    if producer == "matmul":
        head = "%p = graph.matmul %x, %k : (tensor<13x1xf32>, tensor<1x7xf32>) -> tensor<13x7xf32>"
        args, shapes, out = "%x: tensor<13x1xf32>, %k: tensor<1x7xf32>", [(13, 1), (1, 7)], "13x7"
    elif producer == "max_pool2d":
        head = ("%p = graph.max_pool2d %x {kernel = array<i64: 2, 3>, strides = array<i64: 1, 2>} : "
                "(tensor<1x2x5x7xf32>) -> tensor<1x2x4x3xf32>")
        args, shapes, out = "%x: tensor<1x2x5x7xf32>", [(1, 2, 5, 7)], "1x2x4x3"
    elif producer == "reduce_mean":
        head = ("%p = graph.reduce_mean %x {axes = array<i64: 0>, keepdims = false} : "
                "(tensor<3x5x7xf32>) -> tensor<5x7xf32>")
        args, shapes, out = "%x: tensor<3x5x7xf32>", [(3, 5, 7)], "5x7"
    else:
        head = "%p = graph.sub %x, %x : (tensor<5x7xf32>, tensor<5x7xf32>) -> tensor<5x7xf32>"
        args, shapes, out = "%x: tensor<5x7xf32>", [(5, 7)], "5x7"
    t = f"tensor<{out}xf32>"
    text = f"""
func.func @main({args}, %c: tensor<7xf32>) -> {t} {{
  {head}
  %a = graph.mul %p, %c : ({t}, tensor<7xf32>) -> {t}
  %e = graph.sigmoid %a : ({t}) -> {t}
  %z = graph.clip %e {{min = 0.25 : f32, max = 0.75 : f32}} : ({t}) -> {t}
  func.return %z : {t}
}}""" if producer != "max_pool2d" else f"""
func.func @main({args}, %c: tensor<3xf32>) -> {t} {{
  {head}
  %a = graph.mul %p, %c : ({t}, tensor<3xf32>) -> {t}
  %e = graph.sigmoid %a : ({t}) -> {t}
  %z = graph.clip %e {{min = 0.25 : f32, max = 0.75 : f32}} : ({t}) -> {t}
  func.return %z : {t}
}}"""
    groups = _groups(text)
    assert list(groups.values()) == [[producer, "mul", "sigmoid", "clip"]]
    c = 7 if producer != "max_pool2d" else 3
    inputs = [RNG.normal(size=s).astype(np.float32) for s in shapes] + [RNG.normal(size=c).astype(np.float32)]
    compiled = _run(text, inputs)
    assert sum(1 for line in compiled.llvm_ir.splitlines()
               if line.startswith("define") and "_par" not in line
               and "dlc_release_workspaces" not in line
               and "dlc_alloc_failure_bytes" not in line
               and "__packed" not in line) == 3  # kernel, host, thread-count setter (not the C runtime's wrapper)


def test_fused_softmax_pieces_match_numpy():
    text = """
func.func @main(%x: tensor<3x1031xf32>) -> tensor<3x1031xf32> {
  %y = graph.softmax %x {axis = -1 : i64} : (tensor<3x1031xf32>) -> tensor<3x1031xf32>
  func.return %y : tensor<3x1031xf32>
}"""
    x = (RNG.normal(size=(3, 1031)) * 10).astype(np.float32)
    compiled = dlc.compile(text)
    e = np.exp(x - x.max(-1, keepdims=True))
    np.testing.assert_allclose(compiled(x)[0], e / e.sum(-1, keepdims=True), rtol=1e-5, atol=1e-7)


# -- the epilogue inside the register tile's write-back (lowering/schedule/epilogue.py) ------

def _scheduled_kernel(text: str) -> str:
    """The fused kernel after lower-to-loops and the default schedules, as text."""
    from dlc.lowering.schedule.defaults import apply_default_schedules

    module = Parser(make_context(), text).parse_module()
    FuseOpsPass().apply(make_context(), module)
    lower_module(module)
    apply_default_schedules(module, "x86-64-v4")  # the expected tiles are AVX-512's, not the host's
    (kernel,) = [op for op in module.ops if "tloop.fused" in op.attributes]
    return str(kernel)


def _dense_chain(batch: tuple[int, ...], m: int, n: int, k: int) -> str:
    a, b = tuple(batch) + (m, k), (k, n)
    o = tuple(batch) + (m, n)
    t = lambda s: "tensor<" + "x".join(map(str, s)) + "xf32>"  # noqa: E731
    return f"""
func.func @main(%a: {t(a)}, %b: {t(b)}, %bias: {t((n,))}, %r: {t(o)}) -> {t(o)} {{
  %c = graph.matmul %a, %b : ({t(a)}, {t(b)}) -> {t(o)}
  %d = graph.add %c, %bias : ({t(o)}, {t((n,))}) -> {t(o)}
  %e = graph.add %r, %d : ({t(o)}, {t(o)}) -> {t(o)}
  %f = graph.clip %e {{min = -1.5 : f32, max = 2.5 : f32}} : ({t(o)}) -> {t(o)}
  func.return %f : {t(o)}
}}"""


# primes, 1, exact tiles, K split into blocks (k=600 with n > 512: the last-block guard),
# tails in both M and N, a batch dimension, the skinny (matrix-vector) schedule, batch dims
# of extent 1 (no loop: index 0)
@pytest.mark.parametrize("batch,m,n,k", [((), 1, 1, 1), ((), 1, 67, 13), ((), 8, 16, 1), ((), 37, 1029, 600),
                                         ((), 67, 53, 31), ((), 3, 200, 1031), ((2,), 9, 17, 5),
                                         ((1,), 37, 1029, 600), ((1, 3), 9, 17, 5)])
def test_dense_epilogue_in_write_back_executes_like_the_evaluator(batch, m, n, k):
    text = _dense_chain(batch, m, n, k)
    shapes = [tuple(batch) + (m, k), (k, n), (n,), tuple(batch) + (m, n)]
    inputs = [RNG.normal(size=s).astype(np.float32) for s in shapes]
    _run(text, inputs, rtol=1e-4, atol=2e-6 * k)  # sums of k products: rounding grows with k


@pytest.mark.parametrize("batch,m,n,k", [((), 197, 768, 64), ((1,), 197, 768, 600), ((), 37, 1029, 600),
                                         ((1,), 9, 64, 5)])
def test_dense_row_tail_reads_the_packed_panel(batch, m, n, k):
    """M % MR rows (a ViT's 197 = 24 x 8 + 5) up to MC_CAP rows: one row block whose tail
    tile is split off inside the K block loop, reading the same packed B panel; the column
    blocks stay parallel (also under a batch dim of extent 1) and the schedule never falls
    back to the generic one."""
    kernel = _scheduled_kernel(_dense_chain(batch, m, n, k))
    assert "tloop.schedule_fallback" not in kernel
    assert re.search(r"tloop.for %no = 0 to \d+ step \d+ parallel", kernel)
    tail = kernel[kernel.index("tloop.for %ni_mt"):]
    assert "%b_pack" in tail and f"tloop.for %m_s1_mt = {m - m % 8} to {m} unrolled" in tail


@pytest.mark.parametrize("batch,m,n,k", [((), 197, 768, 600), ((), 64, 64, 64), ((2,), 9, 64, 5)])
def test_dense_tiles_start_from_zeros_without_a_fill_nest(batch, m, n, k):
    """No zero-fill nest of C (zero_first_k_block): the tiles start from zeros in the first
    K block (ko at 0) and copy C in only in the later ones; results do not depend on what
    the output buffer held (NaN here)."""
    kernel = _scheduled_kernel(_dense_chain(batch, m, n, k))
    lines = kernel.splitlines()
    top = [i for i, line in enumerate(lines) if line.startswith("  tloop.for")]
    assert "parallel" in lines[top[0]] and "memref.alloca" in lines[top[0] + 1]  # the tiles come first
    assert ("acc_d0_z" in kernel) == ("scf.if" in kernel) == (k > 256)  # a branch only with K blocks
    shapes = [tuple(batch) + (m, k), (k, n)]
    a, b = (RNG.normal(size=s).astype(np.float32) for s in shapes)
    mm = f"""
func.func @main(%a: tensor<{"x".join(map(str, shapes[0]))}xf32>, %b: tensor<{k}x{n}xf32>) -> tensor<{"x".join(map(str, tuple(batch) + (m, n)))}xf32> {{
  %c = graph.matmul %a, %b : (tensor<{"x".join(map(str, shapes[0]))}xf32>, tensor<{k}x{n}xf32>) -> tensor<{"x".join(map(str, tuple(batch) + (m, n)))}xf32>
  func.return %c : tensor<{"x".join(map(str, tuple(batch) + (m, n)))}xf32>
}}"""
    out = np.full(tuple(batch) + (m, n), np.nan, np.float32)
    dlc.compile(mm)(a, b, outputs=[out])
    np.testing.assert_allclose(out, a @ b, rtol=1e-4, atol=1e-4 * k)


@pytest.mark.parametrize("m,n,k,nr", [(1021, 997, 509, 16), (1021, 96, 64, 32)])
def test_dense_blocks_keep_both_threads_busy_on_awkward_sizes(m, n, k, nr):
    """1021 x 997 x 509: 127 row tiles and 31 column tiles of 32, both odd. The columns take
    16-wide tiles (992 = 2 x 496: a block that fits the B panel) and the C blocks still
    number at least two, so neither thread idles (one block of all of C ran 30% slower).
    1021 x 96: 127 row tiles, 3 column tiles: two row blocks that do not divide."""
    kernel = _scheduled_kernel(_dense_chain((), m, n, k))
    assert f"tloop.for %nr = 0 to {nr} vectorized" in kernel
    blocks = re.search(r"tloop.for %mo_no = 0 to (\d+) parallel", kernel)
    assert blocks and int(blocks.group(1)) >= 2


def test_dense_epilogue_with_k_blocks_keeps_its_own_nest():
    # K in blocks (600 > KC): an `if last K block` write-back halved the GEMM's speed, so the
    # matmul schedule leaves the chain in one epilogue nest over the whole output
    kernel = _scheduled_kernel(_dense_chain((), 37, 1029, 600))
    assert "scf.if" not in kernel and kernel.count("arith.minimumf") == 1
    assert "tloop.for %m_s2 = 0 to 37" in kernel and "tloop.for %n_s2 = 0 to 1029 vectorized" in kernel


def test_epilogue_under_a_revisiting_loop_is_fused_when_allowed():
    """fuse_epilogue's default (the conv schedules) still fuses under `if last`."""
    from dlc.lowering.schedule.defaults_dense import schedule_matmul
    from dlc.lowering.schedule.epilogue import fuse_epilogue

    text = _dense_chain((), 37, 1029, 600)
    module = Parser(make_context(), text).parse_module()
    FuseOpsPass().apply(make_context(), module)
    lower_module(module)
    (kernel,) = [op for op in module.ops if "tloop.fused" in op.attributes]
    from dlc.lowering.schedule.core import Schedule
    from dlc.target import Target

    assert schedule_matmul.__wrapped__(Schedule(kernel), Target.host())  # without the epilogue step
    assert fuse_epilogue(kernel)
    text = str(kernel)
    write_back = text[text.index("scf.if"):text.index("} else {")]
    assert "acc_out_d1" in write_back and "arith.minimumf" in write_back and "%extra1" in write_back
    assert text.count("arith.minimumf") == 3  # write-back, column tail, row tail


def test_dense_epilogue_without_k_blocks_has_no_guard_and_no_epilogue_nest():
    kernel = _scheduled_kernel(_dense_chain((), 64, 48, 64))
    assert "scf.if" not in kernel and kernel.count("arith.minimumf") == 1
    assert "%m_s2" not in kernel


def _gelu_chain(m: int, n: int, k: int, returned: str = "%y") -> str:
    """matmul -> add(bias) -> erf-GELU as torch exports it: x * (1 + erf(x / sqrt 2)) * 0.5."""
    t = lambda *s: "tensor<" + "x".join(map(str, s)) + "xf32>"  # noqa: E731
    o = t(m, n)
    extra = f", {o}" if returned != "%y" else ""
    return f"""
func.func @main(%a: {t(m, k)}, %b: {t(k, n)}, %bias: {t(n)}) -> ({o}{extra}) {{
  %c = graph.matmul %a, %b : ({t(m, k)}, {t(k, n)}) -> {o}
  %x = graph.add %c, %bias : ({o}, {t(n)}) -> {o}
  %r2 = graph.constant dense<1.4142135> : tensor<f32>
  %one = graph.constant dense<1.0> : tensor<f32>
  %half = graph.constant dense<0.5> : tensor<f32>
  %d = graph.div %x, %r2 : ({o}, tensor<f32>) -> {o}
  %e = graph.erf %d : ({o}) -> {o}
  %p = graph.add %e, %one : ({o}, tensor<f32>) -> {o}
  %q = graph.mul %x, %p : ({o}, {o}) -> {o}
  %y = graph.mul %q, %half : ({o}, tensor<f32>) -> {o}
  func.return %y{", " + returned if extra else ""} : {o}{extra}
}}"""


def test_gelu_dag_joins_the_dense_group():
    # %x is read twice (div and the final mul): the single-exit region closes at %q
    assert _groups(_gelu_chain(7, 13, 5)) == {0: ["matmul", "add", "div", "erf", "add", "mul", "mul"]}
    assert _kernels(_gelu_chain(7, 13, 5)) == ["main_9_matmul_add_div_erf_add_mul_mul"]


def test_gelu_dag_with_an_intermediate_used_outside_is_not_one_group():
    # %e is returned too: the region never closes into one result, the old chains stay
    groups = _groups(_gelu_chain(7, 13, 5, returned="%e"))
    assert ["matmul", "add", "div", "erf", "add", "mul", "mul"] not in groups.values()
    assert groups[0] == ["matmul", "add"]


@pytest.mark.parametrize("m,n,k", [(1, 13, 5), (7, 31, 600), (128, 67, 37)])
def test_gelu_dag_executes_like_the_evaluator(m, n, k):
    inputs = [RNG.normal(size=s).astype(np.float32) for s in [(m, k), (k, n), (n,)]]
    _run(_gelu_chain(m, n, k), inputs, rtol=1e-4, atol=2e-6 * k)


# layer_norm as one kernel (raise_layer_norm + kernels/layer_norm.py): odd sizes, a row of
# 1, two normalized axes, scale / bias broadcast from size-1 and lower-rank shapes, rows
# enough for the parallel row loop (128 x 257)
@pytest.mark.parametrize("shape,axis,scale,bias", [
    ((3, 5), -1, (5,), (5,)), ((1, 1), -1, (1,), (1,)), ((2, 3, 7), 1, (3, 7), (7,)),
    ((4, 13), 1, (1,), (13,)), ((128, 257), -1, (257,), (257,)), ((17,), 0, (17,), (1,))])
def test_layer_norm_is_one_kernel_matching_the_evaluator(shape, axis, scale, bias):
    t = lambda s: "tensor<" + "x".join(map(str, s)) + "xf32>"  # noqa: E731
    text = f"""
func.func @main(%x: {t(shape)}, %g: {t(scale)}, %b: {t(bias)}) -> {t(shape)} {{
  %y = graph.layer_norm %x, %g, %b {{axis = {axis} : i64, epsilon = 1.0e-03 : f32}} : ({t(shape)}, {t(scale)}, {t(bias)}) -> {t(shape)}
  func.return %y : {t(shape)}
}}"""
    inputs = [(RNG.normal(size=s) * 3 + 1).astype(np.float32) for s in (shape, scale, bias)]
    _run(text, inputs, rtol=1e-4, atol=1e-4)
    # through the whole pipeline: legalize expands the op, fuse-ops raises it back
    table = dlc.compile(text, profile=True).profile(*inputs, repeat=1).table().splitlines()
    kernels = [line.split()[:2] for line in table[1:] if line.startswith("main_")]
    assert [source for _, source in kernels] == ["layer_norm"], table


LSTM_CELL = """
func.func @main(%f: tensor<1x37xf32>, %i: tensor<1x37xf32>, %g: tensor<1x37xf32>, %o: tensor<1x37xf32>, %c: tensor<1x37xf32>, %cb: tensor<37xf32>) -> (tensor<1x37xf32>, tensor<1x37xf32>) {
  %si = graph.sigmoid %i : (tensor<1x37xf32>) -> tensor<1x37xf32>
  %sf = graph.sigmoid %f : (tensor<1x37xf32>) -> tensor<1x37xf32>
  %gb = graph.add %g, %cb : (tensor<1x37xf32>, tensor<37xf32>) -> tensor<1x37xf32>
  %tg = graph.tanh %gb : (tensor<1x37xf32>) -> tensor<1x37xf32>
  %fc = graph.mul %sf, %c : (tensor<1x37xf32>, tensor<1x37xf32>) -> tensor<1x37xf32>
  %ig = graph.mul %si, %tg : (tensor<1x37xf32>, tensor<1x37xf32>) -> tensor<1x37xf32>
  %c2 = graph.add %fc, %ig : (tensor<1x37xf32>, tensor<1x37xf32>) -> tensor<1x37xf32>
  %so = graph.sigmoid %o : (tensor<1x37xf32>) -> tensor<1x37xf32>
  %tc = graph.tanh %c2 : (tensor<1x37xf32>) -> tensor<1x37xf32>
  %h = graph.mul %so, %tc : (tensor<1x37xf32>, tensor<1x37xf32>) -> tensor<1x37xf32>
  func.return %h, %c2 : tensor<1x37xf32>, tensor<1x37xf32>
}"""


def test_elementwise_producers_of_a_group_are_absorbed():
    """The LSTM cell: tanh(g + b) (a group of its own) and sigmoid(i) * tanh(...) feed the
    c' add's group through values with one user: one kernel for c', one for h'; the
    results match the evaluator (a broadcast bias among the absorbed operands)."""
    groups = _groups(LSTM_CELL)
    assert sorted(groups.values(), key=len) == [["sigmoid", "tanh", "mul"],
                                                ["sigmoid", "sigmoid", "add", "tanh", "mul", "mul", "add"]]
    assert len(_kernels(LSTM_CELL)) == 2
    inputs = [RNG.normal(size=(1, 37)).astype(np.float32) for _ in range(5)] + [RNG.normal(size=37).astype(np.float32)]
    _run(LSTM_CELL, inputs, rtol=1e-5, atol=1e-6)
