"""Run-time safety (issue 14, part 2): thread counts validated, every allocation
checked, outputs aliasing inputs refused, exported libraries checked before they
are mapped and loaded by content, fork-safe calls, huge `dlc run` inputs.

Tiny ONNX graphs made with onnx.helper; each test takes a second or two.
"""

from __future__ import annotations

import multiprocessing
import os
import shutil

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import dlc
from dlc.driver import CompileError
from dlc.runtime import MAX_THREADS, DlcRuntimeError, check_thread_count, load
from dlc.runtime.native import format_bytes
from dlc.tools import dlc_cli

RNG = np.random.default_rng(0)


def _binary(op: str, shape=(16, 16), out=None) -> onnx.ModelProto:
    graph = helper.make_graph(
        [helper.make_node(op, ["a", "b"], ["y"])], "g",
        [helper.make_tensor_value_info("a", TensorProto.FLOAT, list(shape)),
         helper.make_tensor_value_info("b", TensorProto.FLOAT, list(shape))],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, list(out or shape))])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def _expand_softmax_max(rows: int, cols: int) -> onnx.ModelProto:
    """x[1,1] -> Expand to [rows, cols] -> Softmax -> ReduceMax to a scalar: two
    intermediates of rows*cols floats, never materialized by the importer."""
    shape = numpy_helper.from_array(np.array([rows, cols], np.int64), "shape")
    graph = helper.make_graph([
        helper.make_node("Expand", ["x", "shape"], ["e"]),
        helper.make_node("Softmax", ["e"], ["s"], axis=-1),
        helper.make_node("ReduceMax", ["s"], ["y"], keepdims=0),
    ], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 1])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [])], initializer=[shape])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


@pytest.fixture(scope="module")
def matmul():
    return dlc.compile(_binary("MatMul", (64, 64)))


@pytest.fixture(scope="module")
def exported(tmp_path_factory, matmul):
    return matmul.export(str(tmp_path_factory.mktemp("so") / "matmul.so"))


def _ab():
    return RNG.standard_normal((64, 64)).astype(np.float32), RNG.standard_normal((64, 64)).astype(np.float32)


# -- 1. thread counts ------------------------------------------------------------------

@pytest.mark.parametrize("n", [2**32 + 1, 1_000_000, 2147483648, MAX_THREADS + 1, -1])
def test_out_of_range_thread_counts_are_refused(matmul, n):
    with pytest.raises(DlcRuntimeError, match=rf"set_num_threads: thread count {n} is out of range "
                                              rf"\(0 = all cores, or 1 to {MAX_THREADS}\)"):
        matmul.set_num_threads(n)
    with pytest.raises(CompileError, match=rf"num_threads: thread count {n} is out of range"):
        dlc.compile(_binary("Add", (2,)), num_threads=n)


def test_thread_count_must_be_an_integer():
    for bad in (True, 2.0, "2"):
        with pytest.raises(DlcRuntimeError, match="expected an integer thread count"):
            check_thread_count(bad, "x")
    assert check_thread_count(np.int64(3), "x") == 3
    assert check_thread_count(0) == 0 and check_thread_count(MAX_THREADS) == MAX_THREADS


def test_bad_env_thread_count_names_the_variable(monkeypatch, exported):
    monkeypatch.setenv("DLC_NUM_THREADS", "abc")
    with pytest.raises(DlcRuntimeError, match=r"DLC_NUM_THREADS='abc' is not an integer thread count"):
        load(exported)
    monkeypatch.setenv("DLC_NUM_THREADS", "4096")
    with pytest.raises(DlcRuntimeError, match="DLC_NUM_THREADS: thread count 4096 is out of range"):
        load(exported)


@pytest.mark.parametrize("value", ["1000000", "2147483648", "-1"])
def test_cli_threads_are_checked(exported, capsys, value):
    assert dlc_cli.main(["run", exported, "--threads", value]) == 1
    err = capsys.readouterr().err.strip()
    assert err == f"dlc: error: --threads: thread count {value} is out of range (0 = all cores, or 1 to 1024)"


def test_bad_env_thread_count_is_a_compile_error(monkeypatch):
    monkeypatch.setenv("DLC_NUM_THREADS", "abc")
    with pytest.raises(CompileError, match=r"DLC_NUM_THREADS='abc' is not an integer thread count"):
        dlc.compile(_binary("Add", (2,)), num_threads=1)


def test_cli_env_threads_is_one_line(exported, capsys, monkeypatch):
    monkeypatch.setenv("DLC_NUM_THREADS", "abc")
    assert dlc_cli.main(["run", exported]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "DLC_NUM_THREADS='abc'" in err[0] and "Traceback" not in err[0]


# -- 2. allocations ----------------------------------------------------------------------

def _overcommit_always() -> bool:
    try:
        with open("/proc/sys/vm/overcommit_memory") as f:
            return f.read().strip() == "1"
    except OSError:
        return False


@pytest.mark.skipif(_overcommit_always(), reason="vm.overcommit_memory=1 grants any allocation")
def test_workspace_allocation_failure_is_reported(tmp_path):
    # two live 32 TiB intermediates: a 64 TiB workspace, under the compile-time limit
    compiled = dlc.compile(_expand_softmax_max(2**33, 2**10))
    x = np.ones((1, 1), np.float32)
    message = "out of memory: workspace of 64.0 TiB for @main could not be allocated"
    with pytest.raises(DlcRuntimeError, match=message):
        compiled(x)
    path = compiled.export(str(tmp_path / "big.so"))
    with pytest.raises(DlcRuntimeError, match=message):
        load(path)(x)


# a kernel allocating inside a parallel loop (not hoisted to the workspace): the
# failure leaves the outlined body through its context's status field, the kernel
# returns it, the host passes it up; the buffer is really used (no malloc elision)
KERNEL_ALLOC = """
builtin.module {
  func.func @main_0_k(%x: memref<4xf32>, %y: memref<4xf32>) attributes {tloop.kernel} {
    tloop.for %i = 0 to 4 parallel {
      %b = memref.alloc() : memref<SIZExf32>
      tloop.for %j = 0 to 4 {
        %u = memref.load %x[%j] : memref<4xf32>
        memref.store %u, %b[%j] : memref<SIZExf32>
      }
      %k = memref.load %x[%i] : memref<4xf32>
      %ki = arith.fptosi %k : f32 to i32
      %kx = arith.index_cast %ki : i32 to index
      %w = memref.load %b[%kx] : memref<SIZExf32>
      memref.store %w, %y[%i] : memref<4xf32>
      memref.dealloc %b : memref<SIZExf32>
    }
    func.return
  }
  func.func @main(%x: memref<4xf32>, %y: memref<4xf32>) attributes {tloop.host, tloop.num_inputs = 1 : i64} {
    func.call @main_0_k(%x, %y) : (memref<4xf32>, memref<4xf32>) -> ()
    func.return
  }
}
"""


@pytest.mark.skipif(_overcommit_always(), reason="vm.overcommit_memory=1 grants any allocation")
def test_kernel_allocation_failure_in_a_parallel_loop_is_reported():
    from xdsl.parser import Parser

    from dlc.context import make_context

    x = np.array([3, 2, 1, 0], np.float32)
    for size, fails in ((64, False), (2**44, True)):
        compiled = dlc.compile(Parser(make_context(), KERNEL_ALLOC.replace("SIZE", str(size))).parse_module())
        for threads in (1, 2):  # the serial call and GOMP_parallel
            compiled.set_num_threads(threads)
            if fails:
                with pytest.raises(DlcRuntimeError, match=r"^out of memory: a buffer of 64.0 TiB in @main "
                                                          r"could not be allocated$"):
                    compiled(x)
            else:
                np.testing.assert_array_equal(compiled(x)[0], x[x.astype(int)])


def test_workspace_beyond_the_address_space_is_a_compile_error():
    with pytest.raises(CompileError, match=r"@main needs a workspace of \d+ bytes, more than the "
                                           r"address space \(281474976710656 bytes\)"):
        dlc.compile(_expand_softmax_max(2**36, 2**10))


def test_big_stack_buffers_go_to_the_heap():
    # softmax keeps per-row max/sum scratch (memref.alloca) of 2**19 floats = 2 MiB:
    # more than the 1 MiB stack-buffer limit, so a checked heap block (and still right)
    model = helper.make_model(helper.make_graph(
        [helper.make_node("Softmax", ["x"], ["y"], axis=-1)], "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2**19, 2])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2**19, 2])]),
        opset_imports=[helper.make_opsetid("", 17)])
    compiled = dlc.compile(model)
    assert "aligned_alloc" in compiled.llvm_ir
    x = RNG.standard_normal((2**19, 2)).astype(np.float32)
    e = np.exp(x - x.max(-1, keepdims=True))
    np.testing.assert_allclose(compiled(x)[0], e / e.sum(-1, keepdims=True), rtol=1e-5)


def test_format_bytes():
    assert format_bytes(2**46) == "64.0 TiB" and format_bytes(1536) == "1.5 KiB" and format_bytes(7) == "7 B"
    assert format_bytes(2**64) == "16.0 EiB"


# -- 3. outputs aliasing inputs --------------------------------------------------------

def test_output_aliasing_an_input_is_refused(matmul):
    a, b = _ab()
    with pytest.raises(DlcRuntimeError, match=r"@main: output buffer 'y' overlaps input 'a' "
                                              r"\(outputs must not alias inputs"):
        matmul(a, b, outputs=[a])
    with pytest.raises(DlcRuntimeError, match="output buffer 'y' overlaps input 'b'"):
        matmul(a, b, outputs=[b])
    whole = np.zeros((2, 64, 64), np.float32)
    with pytest.raises(DlcRuntimeError, match="overlaps input 'a'"):
        matmul(whole[0], b, outputs=[whole[0]])
    out = np.empty((64, 64), np.float32)
    np.testing.assert_allclose(matmul(a, b, outputs=[out])[0], a @ b, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(out, a @ b, rtol=1e-4, atol=1e-4)  # a separate buffer is fine


# -- 4. the .so checked before it is mapped ---------------------------------------------

def test_truncated_library_is_refused(exported, tmp_path):
    data = open(exported, "rb").read()
    for cut in range(0, len(data), max(1, len(data) // 25)):  # never reaches dlopen
        (tmp_path / "any.so").write_bytes(data[:cut])
        with pytest.raises(DlcRuntimeError, match="any.so: "):
            load(str(tmp_path / "any.so"))
    for cut in (len(data) // 2, len(data) - 100, 40):
        path = tmp_path / f"cut{cut}.so"
        path.write_bytes(data[:cut])
        with pytest.raises(DlcRuntimeError) as info:
            load(str(path))
        message = str(info.value)
        assert message.startswith(f"{path}: ") and "\n" not in message
        assert "truncated" in message or "only 40 bytes" in message


def test_corrupt_library_is_refused(exported, tmp_path):
    data = bytearray(open(exported, "rb").read())
    meta = data.find(b'"default_entry"')
    assert meta > 0
    data[meta + 1] = ord("X")  # corrupt metadata: was a JSONDecodeError
    bad = tmp_path / "bad.so"
    bad.write_bytes(bytes(data))
    with pytest.raises(DlcRuntimeError, match=r"bad.so: checksum mismatch: the file was modified"):
        load(str(bad))
    stripped = tmp_path / "stripped.so"
    stripped.write_bytes(open(exported, "rb").read()[:-48])
    with pytest.raises(DlcRuntimeError, match="no dlc checksum trailer"):
        load(str(stripped))
    wrong_class = bytearray(open(exported, "rb").read())
    wrong_class[4] = 1
    (tmp_path / "elf32.so").write_bytes(bytes(wrong_class))
    with pytest.raises(DlcRuntimeError, match="not a 64-bit little-endian ELF file"):
        load(str(tmp_path / "elf32.so"))
    bad_header = bytearray(open(exported, "rb").read())
    bad_header[54] = 8  # e_phentsize
    (tmp_path / "badhdr.so").write_bytes(bytes(bad_header))
    with pytest.raises(DlcRuntimeError, match=r"corrupt ELF header \(entry sizes 8/64"):
        load(str(tmp_path / "badhdr.so"))
    with pytest.raises(DlcRuntimeError, match=f"{tmp_path}: not a regular file"):
        load(str(tmp_path))


# -- 5. keyed by content ---------------------------------------------------------------

def test_reexport_to_the_same_path_loads_the_new_model(tmp_path):
    path = str(tmp_path / "model.so")
    a, b = np.ones(4, np.float32) * 3, np.ones(4, np.float32)
    dlc.compile(_binary("Add", (4,))).export(path)
    np.testing.assert_array_equal(load(path)(a, b)[0], a + b)
    dlc.compile(_binary("Sub", (4,))).export(path)
    np.testing.assert_array_equal(load(path)(a, b)[0], a - b)
    copy = str(tmp_path / "copy.so")
    shutil.copy(path, copy)  # same content, other path: the same model
    np.testing.assert_array_equal(load(copy)(a, b)[0], a - b)
    assert not [n for n in os.listdir(os.path.dirname(path)) if n.startswith("model-")]


# -- 6. fork -------------------------------------------------------------------------------

def _child(path, a, b, queue):
    try:
        module = load(path)
        result = module(a, b)[0]
        try:
            module.set_num_threads(2)
            refused = ""
        except DlcRuntimeError as err:
            refused = str(err)
        queue.put((result, refused))
    except BaseException as err:  # report, do not hang the parent
        queue.put((None, repr(err)))


def _child_jit(compiled, a, b, queue):
    queue.put((compiled(a, b)[0], ""))


def test_forked_child_runs_single_threaded(matmul, exported):
    a, b = _ab()
    matmul.set_num_threads(2)
    matmul(a, b)  # libgomp's pool now has a second thread, in this process only
    parent_lib = load(exported)
    parent_lib.set_num_threads(2)
    parent_lib(a, b)
    ctx = multiprocessing.get_context("fork")
    for target, arg in ((_child_jit, matmul), (_child, exported)):
        queue = ctx.Queue()
        proc = ctx.Process(target=target, args=(arg, a, b, queue))
        proc.start()
        proc.join(60)
        hung = proc.is_alive()
        if hung:
            proc.kill()
        assert not hung, "the forked child hung in libgomp"
        assert proc.exitcode == 0
        result, refused = queue.get(timeout=5)
        assert result is not None, refused
        np.testing.assert_allclose(result, a @ b, rtol=1e-4, atol=1e-4)
        if target is _child:
            assert "libgomp is not fork-safe" in refused
    np.testing.assert_allclose(matmul(a, b)[0], a @ b, rtol=1e-4, atol=1e-4)  # the parent still runs
    matmul.set_num_threads(0)


# -- 7. dlc run on huge inputs ----------------------------------------------------------

def test_cli_huge_random_input_is_one_line(tmp_path, capsys):
    model = helper.make_model(helper.make_graph(
        [helper.make_node("Relu", ["x"], ["y"])], "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2**31, 2**31])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2**31, 2**31])]),
        opset_imports=[helper.make_opsetid("", 17)])
    path = tmp_path / "huge.onnx"
    onnx.save(model, str(path))
    assert dlc_cli.main(["run", str(path), "--repeat", "1"]) == 1
    err = capsys.readouterr().err.strip()
    assert err == ("dlc: error: cannot make a random input 'x' of shape (2147483648, 2147483648) float32: "
                   "16.0 EiB do not fit in memory (pass it with --input)")
