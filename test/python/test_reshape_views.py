"""Zero-copy reshape (lowering/bufferize.py): graph.reshape/squeeze/unsqueeze
become ``memref.reinterpret_cast`` views of their operand's buffer, with no
kernel call, and run correctly (loop-IR interpreter and compiled) on odd shapes."""

from __future__ import annotations

import numpy as np
import pytest
from xdsl.dialects import func, memref
from xdsl.dialects.builtin import ModuleOp
from xdsl.parser import Parser

import dlc
from dlc.context import make_context
from dlc.evaluator import evaluate
from dlc.lowering.interp import LoopProgram
from dlc.lowering.lower_to_loops import lower_module

RNG = np.random.default_rng(7)


def parse(text: str) -> ModuleOp:
    module = Parser(make_context(), text).parse_module()
    module.verify()
    return module


def host_of(module: ModuleOp) -> func.FuncOp:
    return next(op for op in module.ops if isinstance(op, func.FuncOp) and "tloop.host" in op.attributes)


def kernel_sources(module: ModuleOp, host: func.FuncOp) -> list[str]:
    """The graph op each kernel call of ``host`` computes (its tloop.source)."""
    kernels = {op.sym_name.data: op for op in module.ops if isinstance(op, func.FuncOp)}
    return [kernels[call.callee.string_value()].attributes["tloop.source"].data
            for call in host.walk() if isinstance(call, func.CallOp)]


def views_in(host: func.FuncOp) -> list[memref.ReinterpretCastOp]:
    return [op for op in host.walk() if isinstance(op, memref.ReinterpretCastOp)]


def run_all(text: str, inputs: list[np.ndarray], interp: bool = True) -> ModuleOp:
    """Evaluator vs loop-IR interpreter (which has no scf.while/for: skipped for
    loops) vs compiled code; returns the loop-level module."""
    expected = evaluate(parse(text), inputs)
    lowered = parse(text)
    lower_module(lowered)
    lowered.verify()
    runs = [dlc.compile(text)(*inputs)] + ([LoopProgram(lowered).run(inputs)] if interp else [])
    for got in runs:
        assert len(got) == len(expected)
        for g, w in zip(got, expected):
            np.testing.assert_allclose(g, w, rtol=1e-6, atol=1e-6)
    return lowered


def rand(*shape) -> np.ndarray:
    return RNG.uniform(-2, 2, shape).astype(np.float32)


CHAIN = """
func.func @main(%x: tensor<2x3x5xf32>, %w: tensor<6x5xf32>) -> tensor<6x5xf32> {
  %r = graph.reshape %x {shape = array<i64: 6, 5>} : (tensor<2x3x5xf32>) -> tensor<6x5xf32>
  %e = graph.exp %r : (tensor<6x5xf32>) -> tensor<6x5xf32>
  %r2 = graph.reshape %e {shape = array<i64: 30>} : (tensor<6x5xf32>) -> tensor<30xf32>
  %r3 = graph.reshape %r2 {shape = array<i64: 1, 30, 1>} : (tensor<30xf32>) -> tensor<1x30x1xf32>
  %n = graph.neg %r3 : (tensor<1x30x1xf32>) -> tensor<1x30x1xf32>
  %r4 = graph.reshape %n {shape = array<i64: 6, 5>} : (tensor<1x30x1xf32>) -> tensor<6x5xf32>
  %s = graph.add %r4, %w : (tensor<6x5xf32>, tensor<6x5xf32>) -> tensor<6x5xf32>
  func.return %s : tensor<6x5xf32>
}
"""


def test_reshape_chain_and_reshape_of_an_input_are_views():
    lowered = run_all(CHAIN, [rand(2, 3, 5), rand(6, 5)])
    host = host_of(lowered)
    assert kernel_sources(lowered, host) == ["graph.exp", "graph.neg", "graph.add"]
    views = views_in(host)
    assert len(views) == 4
    assert views[0].source is host.body.block.args[0]  # the input itself, read-only
    assert isinstance(views[2].source.owner, memref.ReinterpretCastOp)  # a view of a view
    # two buffers (exp's and neg's), never more
    assert len([op for op in host.walk() if isinstance(op, memref.AllocOp)]) == 2


def test_reshape_as_a_function_result_is_written_into_the_output():
    # %r: exp computes straight into result0 seen as 7x3 (no reshape kernel);
    # %q reshapes an input and %s a value also read elsewhere: those are copied
    text = """
func.func @main(%x: tensor<7x3xf32>) -> (tensor<21xf32>, tensor<3x7xf32>, tensor<21x1xf32>, tensor<7x3xf32>) {
  %e = graph.exp %x : (tensor<7x3xf32>) -> tensor<7x3xf32>
  %f = graph.reshape %e {shape = array<i64: 3, 7>} : (tensor<7x3xf32>) -> tensor<3x7xf32>
  %r = graph.reshape %f {shape = array<i64: 21>} : (tensor<3x7xf32>) -> tensor<21xf32>
  %q = graph.reshape %x {shape = array<i64: 3, 7>} : (tensor<7x3xf32>) -> tensor<3x7xf32>
  %n = graph.neg %x : (tensor<7x3xf32>) -> tensor<7x3xf32>
  %s = graph.reshape %n {shape = array<i64: 21, 1>} : (tensor<7x3xf32>) -> tensor<21x1xf32>
  %t = graph.sin %n : (tensor<7x3xf32>) -> tensor<7x3xf32>
  func.return %r, %q, %s, %t : tensor<21xf32>, tensor<3x7xf32>, tensor<21x1xf32>, tensor<7x3xf32>
}
"""
    lowered = run_all(text, [rand(7, 3)])
    host = host_of(lowered)
    assert kernel_sources(lowered, host) == ["graph.exp", "graph.reshape", "graph.neg", "graph.reshape",
                                             "graph.sin"]
    views = views_in(host)
    assert len(views) == 1 and views[0].source is host.body.block.args[1]  # result0 as 7x3
    exp_call = next(op for op in host.walk() if isinstance(op, func.CallOp))
    assert exp_call.arguments[-1] is views[0].result


def test_reshape_of_a_reshaped_result_inside_an_if():
    # each branch computes into the if's result buffer through a view
    text = """
func.func @main(%p: tensor<1xi1>, %x: tensor<5x3xf32>) -> tensor<15xf32> {
  %r = graph.if %p, %x {
  ^bb0(%a: tensor<5x3xf32>):
    %n = graph.neg %a : (tensor<5x3xf32>) -> tensor<5x3xf32>
    %f = graph.reshape %n {shape = array<i64: 15>} : (tensor<5x3xf32>) -> tensor<15xf32>
    graph.yield %f : (tensor<15xf32>) -> ()
  } {
  ^bb0(%a: tensor<5x3xf32>):
    %e = graph.exp %a : (tensor<5x3xf32>) -> tensor<5x3xf32>
    %f = graph.reshape %e {shape = array<i64: 15>} : (tensor<5x3xf32>) -> tensor<15xf32>
    graph.yield %f : (tensor<15xf32>) -> ()
  } : (tensor<1xi1>, tensor<5x3xf32>) -> tensor<15xf32>
  %y = graph.sin %r : (tensor<15xf32>) -> tensor<15xf32>
  func.return %y : tensor<15xf32>
}
"""
    x = rand(5, 3)
    for p in (True, False):
        lowered = run_all(text, [np.array([p]), x])
    host = host_of(lowered)
    assert kernel_sources(lowered, host) == ["graph.neg", "graph.exp", "graph.sin"]
    assert len(views_in(host)) == 2


def test_reshape_of_a_weight_and_feeding_two_consumers():
    text = """
func.func @main(%x: tensor<5x1x3xf32>) -> (tensor<5x3xf32>, tensor<15xf32>) {
  %c = graph.constant dense<[[1.0, 2.0, 3.0, 4.0, 5.0], [6.0, 7.0, 8.0, 9.0, 10.0], [11.0, 12.0, 13.0, 14.0, 15.0]]> : tensor<3x5xf32>
  %cv = graph.reshape %c {shape = array<i64: 5, 3>} : (tensor<3x5xf32>) -> tensor<5x3xf32>
  %e = graph.exp %x : (tensor<5x1x3xf32>) -> tensor<5x1x3xf32>
  %r = graph.reshape %e {shape = array<i64: 5, 3>} : (tensor<5x1x3xf32>) -> tensor<5x3xf32>
  %a = graph.mul %r, %cv : (tensor<5x3xf32>, tensor<5x3xf32>) -> tensor<5x3xf32>
  %f = graph.reshape %r {shape = array<i64: 15>} : (tensor<5x3xf32>) -> tensor<15xf32>
  %s = graph.sin %f : (tensor<15xf32>) -> tensor<15xf32>
  func.return %a, %s : tensor<5x3xf32>, tensor<15xf32>
}
"""
    lowered = run_all(text, [rand(5, 1, 3)])
    host = host_of(lowered)
    assert "graph.reshape" not in kernel_sources(lowered, host)
    assert len(views_in(host)) == 3


def test_operand_buffer_is_not_reused_while_a_view_is_alive():
    # %a's own last read is the reshape; its view %v is read at the end. %b has
    # the same type: without merged lifetimes it would take %a's buffer and
    # overwrite it before %v is read.
    text = """
func.func @main(%x: tensor<3x5xf32>) -> tensor<15xf32> {
  %a = graph.exp %x : (tensor<3x5xf32>) -> tensor<3x5xf32>
  %v = graph.reshape %a {shape = array<i64: 15>} : (tensor<3x5xf32>) -> tensor<15xf32>
  %b = graph.sin %x : (tensor<3x5xf32>) -> tensor<3x5xf32>
  %c = graph.cos %b : (tensor<3x5xf32>) -> tensor<3x5xf32>
  %r = graph.reshape %c {shape = array<i64: 15>} : (tensor<3x5xf32>) -> tensor<15xf32>
  %s = graph.sub %v, %r : (tensor<15xf32>, tensor<15xf32>) -> tensor<15xf32>
  func.return %s : tensor<15xf32>
}
"""
    lowered = run_all(text, [rand(3, 5)])
    host = host_of(lowered)
    ops = list(host.body.block.ops)
    exp_buffer = next(c for c in ops if isinstance(c, func.CallOp)).arguments[-1]
    freed_at = next(i for i, op in enumerate(ops) if isinstance(op, memref.DeallocOp) and op.memref is exp_buffer)
    sub_at = max(i for i, op in enumerate(ops) if isinstance(op, func.CallOp))
    assert freed_at > sub_at
    writes = [c.arguments[-1] for c in ops if isinstance(c, func.CallOp)]
    assert writes.count(exp_buffer) == 1


def test_channel_shuffle():
    text = """
func.func @main(%x: tensor<1x6x5x3xf32>) -> tensor<1x6x5x3xf32> {
  %e = graph.relu %x : (tensor<1x6x5x3xf32>) -> tensor<1x6x5x3xf32>
  %g = graph.reshape %e {shape = array<i64: 1, 2, 3, 5, 3>} : (tensor<1x6x5x3xf32>) -> tensor<1x2x3x5x3xf32>
  %t = graph.transpose %g {perm = array<i64: 0, 2, 1, 3, 4>} : (tensor<1x2x3x5x3xf32>) -> tensor<1x3x2x5x3xf32>
  %m = graph.reshape %t {shape = array<i64: 1, 6, 5, 3>} : (tensor<1x3x2x5x3xf32>) -> tensor<1x6x5x3xf32>
  %y = graph.sigmoid %m : (tensor<1x6x5x3xf32>) -> tensor<1x6x5x3xf32>
  func.return %y : tensor<1x6x5x3xf32>
}
"""
    x = rand(1, 6, 5, 3)
    lowered = run_all(text, [x])
    host = host_of(lowered)
    assert kernel_sources(lowered, host) == ["graph.relu", "graph.transpose", "graph.sigmoid"]
    want = 1 / (1 + np.exp(-np.maximum(x, 0).reshape(1, 2, 3, 5, 3).transpose(0, 2, 1, 3, 4).reshape(1, 6, 5, 3)))
    np.testing.assert_allclose(dlc.compile(text)(x)[0], want, rtol=1e-6, atol=1e-6)


def test_views_inside_a_loop_body():
    # the body reshapes its carried value (a view of the loop state), computes on
    # it and yields a reshape: a view the state update copies from. The loop's
    # state lives in result0 (seen as 3x5): the function returns its reshape.
    text = """
func.func @main(%m: tensor<i64>, %c: tensor<i1>, %x: tensor<3x5xf32>) -> (tensor<15xf32>, tensor<4x15xf32>) {
  %r, %s = graph.loop %m, %c, %x attributes {max_iterations = 4 : i64, num_carried = 1 : i64} {
  ^bb0(%i: tensor<i64>, %k: tensor<i1>, %v: tensor<3x5xf32>):
    %f = graph.reshape %v {shape = array<i64: 15>} : (tensor<3x5xf32>) -> tensor<15xf32>
    %h = graph.sin %f : (tensor<15xf32>) -> tensor<15xf32>
    %b = graph.reshape %h {shape = array<i64: 3, 5>} : (tensor<15xf32>) -> tensor<3x5xf32>
    graph.yield %k, %b, %f : (tensor<i1>, tensor<3x5xf32>, tensor<15xf32>) -> ()
  } : (tensor<i64>, tensor<i1>, tensor<3x5xf32>) -> (tensor<3x5xf32>, tensor<4x15xf32>)
  %rf = graph.reshape %r {shape = array<i64: 15>} : (tensor<3x5xf32>) -> tensor<15xf32>
  func.return %rf, %s : tensor<15xf32>, tensor<4x15xf32>
}
"""
    for trips in (0, 3, 9):
        lowered = run_all(text, [np.array(trips, np.int64), np.array(True), rand(3, 5)], interp=False)
    host = host_of(lowered)
    assert "graph.reshape" not in kernel_sources(lowered, host)
    assert len(views_in(host)) == 3


def test_loop_swapping_states_through_views():
    # yields (view of b, view of a): the update must stage one of them, as for a
    # plain swap, even though the yielded values are views, not the state buffers
    text = """
func.func @main(%m: tensor<i64>, %c: tensor<i1>, %x: tensor<2x3xf32>, %y: tensor<6xf32>) -> (tensor<2x3xf32>, tensor<6xf32>) {
  %r0, %r1 = graph.loop %m, %c, %x, %y attributes {max_iterations = 5 : i64, num_carried = 2 : i64} {
  ^bb0(%i: tensor<i64>, %k: tensor<i1>, %a: tensor<2x3xf32>, %b: tensor<6xf32>):
    %bv = graph.reshape %b {shape = array<i64: 2, 3>} : (tensor<6xf32>) -> tensor<2x3xf32>
    %av = graph.reshape %a {shape = array<i64: 6>} : (tensor<2x3xf32>) -> tensor<6xf32>
    graph.yield %k, %bv, %av : (tensor<i1>, tensor<2x3xf32>, tensor<6xf32>) -> ()
  } : (tensor<i64>, tensor<i1>, tensor<2x3xf32>, tensor<6xf32>) -> (tensor<2x3xf32>, tensor<6xf32>)
  func.return %r0, %r1 : tensor<2x3xf32>, tensor<6xf32>
}
"""
    x, y = rand(2, 3), rand(6)
    for trips in (1, 2, 5):
        lowered = run_all(text, [np.array(trips, np.int64), np.array(True), x, y], interp=False)
    assert len(views_in(host_of(lowered))) == 2


def test_views_inside_if_branches():
    text = """
func.func @main(%p: tensor<1xi1>, %x: tensor<2x7xf32>) -> tensor<14xf32> {
  %r = graph.if %p, %x {
  ^bb0(%a: tensor<2x7xf32>):
    %f = graph.reshape %a {shape = array<i64: 14>} : (tensor<2x7xf32>) -> tensor<14xf32>
    %n = graph.neg %f : (tensor<14xf32>) -> tensor<14xf32>
    graph.yield %n : (tensor<14xf32>) -> ()
  } {
  ^bb0(%a: tensor<2x7xf32>):
    %f = graph.reshape %a {shape = array<i64: 14>} : (tensor<2x7xf32>) -> tensor<14xf32>
    graph.yield %f : (tensor<14xf32>) -> ()
  } : (tensor<1xi1>, tensor<2x7xf32>) -> tensor<14xf32>
  func.return %r : tensor<14xf32>
}
"""
    x = rand(2, 7)
    for p in (True, False):
        lowered = run_all(text, [np.array([p]), x])
    # then: a view feeding neg; else: the yielded reshape writes the result
    assert kernel_sources(lowered, host_of(lowered)) == ["graph.neg", "graph.reshape"]


@pytest.mark.parametrize("shape,target", [((1,), ()), ((), (1, 1)), ((7, 1, 11), (77,)), ((13,), (13, 1))])
def test_rank_changes_and_scalars(shape, target):
    src = "x".join(map(str, shape)) + "x" if shape else ""
    dst = "x".join(map(str, target)) + "x" if target else ""
    text = f"""
func.func @main(%x: tensor<{src}f32>) -> tensor<{dst}f32> {{
  %e = graph.exp %x : (tensor<{src}f32>) -> tensor<{src}f32>
  %r = graph.reshape %e {{shape = array<i64{": " if target else ""}{", ".join(map(str, target))}>}} : (tensor<{src}f32>) -> tensor<{dst}f32>
  %n = graph.neg %r : (tensor<{dst}f32>) -> tensor<{dst}f32>
  func.return %n : tensor<{dst}f32>
}}
"""
    lowered = run_all(text, [rand(*shape)])
    assert len(views_in(host_of(lowered))) == 1
