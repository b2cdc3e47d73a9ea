"""lower-to-loops host functions: bufferization, the memory planner, weights,
errors and lowering speed."""

from __future__ import annotations

import time

import numpy as np
import pytest
from xdsl.dialects import func, memref
from xdsl.dialects.builtin import ModuleOp

from dlc.dialects import graph, tloop
from dlc.lowering.interp import LoopProgram
from dlc.lowering.lower_to_loops import LowerToLoopsPass, LoweringError, lower_module
from dlc.lowering.memory_plan import Interval, plan
from dlc.weights import WeightStore, attach, store_of
from test_lower_to_loops import T, check, make_module, random_input


def host_of(module: ModuleOp, name: str = "main") -> func.FuncOp:
    return next(op for op in module.ops if isinstance(op, func.FuncOp) and op.sym_name.data == name)


def test_results_that_are_inputs_constants_or_duplicates():
    const = np.array([[1.5, -2.0]], np.float32)

    def body(x, y):
        c = graph.ConstantOp.from_numpy(const)
        s = graph.AddOp.make(x, y)
        return [c, s], [x, c.results[0], s.results[0], s.results[0], y]

    module = check(make_module([T(1, 2), T(3, 2)], body))
    host = host_of(module)
    assert host.attributes["tloop.num_inputs"].value.data == 2
    assert len(host.function_type.inputs) == 2 + 5
    assert [w.weight_name.data for w in host.walk() if isinstance(w, tloop.WeightOp)] == ["main.const0"]
    np.testing.assert_array_equal(store_of(module)["main.const0"], const)


def test_value_used_by_several_ops():
    def body(x):
        e = graph.ExpOp.make(x)
        a = graph.AddOp.make(e, x)
        m = graph.MulOp.make(e, a)
        s = graph.SubOp.make(m, e)
        return [e, a, m, s]

    check(make_module([T(3, 4)], body))


def test_weights_from_the_store():
    w = np.arange(12, dtype=np.float32).reshape(4, 3) / 7

    def body(x):
        wo = graph.WeightOp.make_named("fc.w", T(4, 3))
        return [wo, graph.MatmulOp.make(x, wo)]

    module = make_module([T(2, 4)], body)
    attach(module, WeightStore({"fc.w": w}))
    check(module)


def test_several_functions_share_kernels():
    def body(x):
        return graph.ExpOp.make(x)

    f1 = make_module([T(5)], body, "f").ops.first
    f2 = make_module([T(5)], body, "g").ops.first
    f1.detach()
    f2.detach()
    module = ModuleOp([f1, f2])
    x = random_input(T(5))
    lower_module(module)
    module.verify()
    kernels = [op for op in module.ops if "tloop.kernel" in op.attributes]
    assert len(kernels) == 1
    program = LoopProgram(module)
    for entry in ("f", "g"):
        np.testing.assert_allclose(program.run([x], entry)[0], np.exp(x), rtol=1e-6)


def _chain(n_ops: int):
    def body(x):
        ops, v = [], x
        for i in range(n_ops):
            op = (graph.ExpOp if i % 2 else graph.NegOp).make(v)
            ops.append(op)
            v = op.results[0]
        return ops

    return make_module([T(4, 3)], body)


def _count(module, op_type) -> int:
    return sum(1 for op in host_of(module).walk() if isinstance(op, op_type))


def test_memory_planner_reuses_dead_buffers():
    reused, fresh = _chain(8), _chain(8)
    lower_module(reused)
    LowerToLoopsPass(reuse_buffers=False).apply(None, fresh)
    assert _count(reused, memref.AllocOp) == 2  # ping-pong
    assert _count(fresh, memref.AllocOp) == 7
    for m in (reused, fresh):
        assert _count(m, memref.AllocOp) == _count(m, memref.DeallocOp)


def test_no_kernel_writes_a_buffer_it_reads():
    def body(x, y):
        a = graph.AddOp.make(x, y)
        b = graph.ExpOp.make(a)
        c = graph.MulOp.make(b, a)
        d = graph.NegOp.make(c)
        e = graph.AddOp.make(d, b)
        f = graph.ExpOp.make(e)
        return [a, b, c, d, e, f]

    module = check(make_module([T(3), T(3)], body))
    for call in host_of(module).walk():
        if isinstance(call, func.CallOp):
            args = list(call.arguments)
            assert len(set(args)) == len(args), call


def test_plan_unit():
    # a: 0..2, b: 1..1, c: 2..3 (same type as b -> reuses b's buffer), d: 3..4
    p = plan([Interval("a", "t", 0, 2), Interval("b", "t", 1, 1),
              Interval("c", "t", 2, 3), Interval("d", "u", 3, 4)])
    assert p.buffer_of["c"] == p.buffer_of["b"] != p.buffer_of["a"]
    assert p.buffer_of["d"] not in (p.buffer_of["a"], p.buffer_of["b"])
    assert p.deallocs_after(3) == [p.buffer_of["b"]]


def test_composite_op_error_names_the_op():
    module = make_module([T(3)], lambda x: graph.GeluOp.make(x))
    with pytest.raises(LoweringError, match=r"@main, op #0: 'graph.gelu' is a composite op: run legalize first"):
        lower_module(module)


def test_legalized_softmax_matches_direct_lowering():
    """Composite ops that have a kernel lower directly; legalize (if present)
    must give the same numbers."""
    pytest.importorskip("dlc.transforms.legalize")
    from dlc.transforms.legalize import LegalizePass

    module = make_module([T(3, 7)], lambda x: graph.SoftmaxOp.make(x, axis=-1))
    LegalizePass().apply(None, module)
    check(module)


def resnet50_module() -> ModuleOp:
    """ResNet-50's topology (batch norms folded into the convs) on 224x224,
    with zero weights: ~180 graph ops, the size the lowering must handle fast."""
    store: dict[str, np.ndarray] = {}
    ops: list = []

    def conv(v, c_out, k, stride=1, relu=True):
        c_in = v.type.get_shape()[1]
        name = f"w{len(store)}"
        store[name] = np.zeros((c_out, c_in, k, k), np.float32)
        w = graph.WeightOp.make_named(name, T(c_out, c_in, k, k))
        p = k // 2
        c = graph.Conv2DOp.make(v, w, strides=[stride, stride], padding=[p, p, p, p])
        ops.extend([w, c])
        if relu:
            ops.append(graph.ReluOp.make(c))
        return ops[-1].results[0]

    def body(x):
        v = conv(x, 64, 7, 2)
        ops.append(graph.MaxPool2DOp.make(v, kernel=[3, 3], strides=[2, 2], padding=[1, 1, 1, 1]))
        v = ops[-1].results[0]
        for stage, (width, blocks) in enumerate([(64, 3), (128, 4), (256, 6), (512, 3)]):
            for b in range(blocks):
                stride = 2 if b == 0 and stage > 0 else 1
                y = conv(v, width, 1)
                y = conv(y, width, 3, stride)
                y = conv(y, width * 4, 1, relu=False)
                shortcut = conv(v, width * 4, 1, stride, relu=False) if b == 0 else v
                ops.append(graph.AddOp.make(y, shortcut))
                ops.append(graph.ReluOp.make(ops[-1]))
                v = ops[-1].results[0]
        ops.append(graph.GlobalAvgPoolOp.make(v))
        ops.append(graph.ReshapeOp.make(ops[-1], shape=[1, 2048]))
        store["fc"] = np.zeros((2048, 1000), np.float32)
        ops.append(graph.WeightOp.make_named("fc", T(2048, 1000)))
        ops.append(graph.MatmulOp.make(ops[-2], ops[-1]))
        return ops

    module = make_module([T(1, 3, 224, 224)], body)
    attach(module, WeightStore(store))
    return module


def test_lowering_speed_resnet50():
    module = resnet50_module()
    n_ops = len(list(host_of(module).body.block.ops))
    assert n_ops > 170
    start = time.perf_counter()
    lower_module(module)
    elapsed = time.perf_counter() - start
    module.verify()
    # 53 convolutions share kernels by configuration; buffers are reused
    allocs = sum(1 for op in host_of(module).walk() if isinstance(op, memref.AllocOp))
    assert allocs < 40
    assert elapsed < 2.0, f"lowering {n_ops} ops took {elapsed:.2f}s"


@pytest.mark.parametrize(
    "build",
    [
        lambda: make_module([T(1, 3, 7, 5), T(4, 3, 3, 3)], lambda x, w: graph.Conv2DOp.make(
            x, w, padding=[1, 0, 2, 1], strides=[2, 1])),
        lambda: make_module([T(3, 7)], lambda x: graph.SoftmaxOp.make(x, axis=0)),
        lambda: make_module([T(3, 4)], lambda x: graph.PadOp.make(x, pads=[2, 3, 1, 3], mode="reflect")),
        lambda: make_module([T(1, 2, 3, 4)], lambda x: graph.ResizeOp.make(x, sizes=[1, 2, 7, 5], mode="linear")),
    ],
    ids=["conv2d", "softmax", "pad_reflect", "resize_linear"],
)
def test_llvm_jit_runs_the_lowered_module(build, monkeypatch):
    """The loop IR this pass emits is what the LLVM backend compiles."""
    pytest.importorskip("dlc.backends.llvm.jit")
    monkeypatch.setenv("DLC_LOOP_EXECUTOR", "llvm")
    check(build())
