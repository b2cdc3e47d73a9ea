"""GPU schedules + lower-to-gpu, checked by running the lowered kernels in the emulator
(every thread, barriers, race detection) against numpy on odd shapes."""

from __future__ import annotations

import os

import numpy as np
import pytest

from dlc.backends.cuda.emulator import EmulationError, emulate, emulate_kernel
from dlc.backends.cuda.gpu_schedule import apply_default_schedule, bind
from dlc.backends.cuda.lower_to_gpu import GpuLoweringError, lower_to_gpu
from dlc.weights import WeightStore, attach

import cuda_kernels as K

RNG = np.random.default_rng(7)


def rand(*shape):
    return RNG.standard_normal(shape).astype(np.float32)


def kernel_of(module, name):
    return next(op for op in module.ops if op.sym_name.data == name)


@pytest.mark.parametrize("a,b", [((3, 7, 5), (3, 1, 5)), ((1,), (1,)), ((13, 1), (13, 1))])
def test_elementwise_broadcast(a, b):
    module, ref = K.broadcast_add(a, b)
    lower_to_gpu(module)
    module.verify()
    x, y = rand(*a), rand(*b)
    (out,) = emulate(module, [x, y])
    np.testing.assert_allclose(out, ref(x, y), rtol=1e-6)


def test_elementwise_grid_stride_when_grid_is_capped(monkeypatch):
    import dlc.backends.cuda.gpu_schedule as S

    monkeypatch.setattr(S, "MAX_GRID_BLOCKS", 2)
    monkeypatch.setattr(S, "THREADS", 32)
    module, ref = K.broadcast_add((5, 29), (1, 29))
    lower_to_gpu(module)
    k = kernel_of(module, "main_0_add")
    assert k.attributes["gpu.grid"].get_values() == (2, 1, 1)
    x, y = rand(5, 29), rand(1, 29)
    (out,) = emulate(module, [x, y])
    np.testing.assert_allclose(out, ref(x, y), rtol=1e-6)


@pytest.mark.parametrize("rows,cols", [(3, 37), (1, 300), (2, 32)])
def test_row_sum_is_a_block_reduction(rows, cols):
    module, ref = K.row_sum(rows, cols)
    lower_to_gpu(module)
    k = kernel_of(module, "main_0_sum")
    assert k.attributes["gpu.grid"].get_values() == (rows, 1, 1)
    assert "gpu.barrier" in str(k)
    x = rand(rows, cols)
    (out,) = emulate(module, [x])
    np.testing.assert_allclose(out, ref(x), rtol=1e-5, atol=1e-5)


def test_short_reduction_stays_in_one_thread():
    module, ref = K.row_sum(7, 3)
    assert apply_default_schedule(kernel_of(module, "main_0_sum")) == "generic"


def test_softmax_row_schedule():
    module, ref = K.softmax(3, 41)
    lower_to_gpu(module)
    x = rand(3, 41)
    (out,) = emulate(module, [x])
    np.testing.assert_allclose(out, ref(x), rtol=1e-5, atol=1e-6)


@pytest.fixture
def small_tiles(monkeypatch):
    """Same schedule code with 8x8 tiles, 4x4 threads and 2x2 register blocks (fast to emulate)."""
    import dlc.backends.cuda.matmul_schedule as S

    for name, value in dict(TILE_M=8, TILE_N=8, TILE_K=4, THREADS_Y=4, THREADS_X=4, REG_M=2, REG_N=2).items():
        monkeypatch.setattr(S, name, value)


@pytest.mark.parametrize("batch,m,k,n", [(2, 5, 3, 7), (1, 1, 17, 1), (1, 19, 9, 11)])
def test_tiled_matmul(small_tiles, batch, m, k, n):
    check_matmul(batch, m, k, n)


@pytest.mark.slow
@pytest.mark.skipif(not os.environ.get("DLC_SLOW"), reason="slow (~60 s emulation); set DLC_SLOW=1")
def test_tiled_matmul_default_tiles():
    check_matmul(2, 67, 19, 5)


def check_matmul(batch, m, k, n):
    module, ref = K.matmul(batch, m, k, n, weight=True)
    w = rand(k, n)
    attach(module, WeightStore({"fc.weight": w}))
    assert apply_default_schedule(kernel_of(module, "main_0_matmul")) == "matmul"
    lower_to_gpu(module)
    x = rand(batch, m, k)
    (out,) = emulate(module, [x])
    np.testing.assert_allclose(out, ref(x, w), rtol=1e-5, atol=1e-5)


def test_conv2d_direct():
    module, ref, fshape = K.conv2d(2, 3, 5, 7)
    f = rand(*fshape)
    attach(module, WeightStore({"conv.weight": f}))
    lower_to_gpu(module)
    x = rand(1, 2, 5, 7)
    (out,) = emulate(module, [x])
    np.testing.assert_allclose(out, ref(x, f), rtol=1e-5, atol=1e-5)


def test_dependent_nests_share_a_block_with_barriers():
    module, ref = K.two_nests(37)
    lower_to_gpu(module)
    k = kernel_of(module, "main_0_fused")
    assert k.attributes["gpu.grid"].get_values() == (1, 1, 1)
    x = rand(37)
    (out,) = emulate(module, [x])
    np.testing.assert_allclose(out, ref(x))


def test_user_binding_is_kept_and_guarded():
    module, ref = K.broadcast_add((3, 5), (3, 5))
    k = kernel_of(module, "main_0_add")
    outer = next(iter(k.body.block.ops))
    inner = next(iter(outer.body.block.ops))
    bind(outer, "blockIdx.x")
    bind(inner, "threadIdx.x")
    lower_to_gpu(module)
    assert k.attributes["gpu.block"].get_values() == (5, 1, 1)
    x, y = rand(3, 5), rand(3, 5)
    (out,) = emulate(module, [x, y])
    np.testing.assert_allclose(out, ref(x, y))


def test_bind_rejects_unknown_axis():
    module, _ = K.broadcast_add((3,), (3,))
    loop = next(iter(kernel_of(module, "main_0_add").body.block.ops))
    with pytest.raises(Exception, match="bind: axis must be one of"):
        bind(loop, "warp.x")


def test_too_many_threads_is_a_clear_error():
    module, _ = K.broadcast_add((2, 2000), (2, 2000))
    k = kernel_of(module, "main_0_add")
    outer = next(iter(k.body.block.ops))
    bind(next(iter(outer.body.block.ops)), "threadIdx.x")
    with pytest.raises(GpuLoweringError, match="2000 threads per block exceed the CUDA limit of 1024"):
        lower_to_gpu(module)


def test_emulator_detects_a_missing_barrier():
    module, _ = K.two_nests(8)
    lower_to_gpu(module)
    k = kernel_of(module, "main_0_fused")
    from xdsl.dialects import gpu

    for op in list(k.walk()):
        if isinstance(op, gpu.BarrierOp):
            op.detach()
            op.erase()
    with pytest.raises(EmulationError, match="race"):
        emulate_kernel(k, [rand(8), np.zeros(8, np.float32)])


def test_host_function_uses_device_buffers():
    module, _ = K.matmul(1, 3, 2, 5, weight=True)
    lower_to_gpu(module)
    text = str(kernel_of(module, "main"))
    # arguments and weights are device pointers (host_code.py's entries copy host buffers)
    assert text.count('"gpu.alloc"') == 0 and text.count('"gpu.memcpy"') == 0
    assert text.count('"gpu.launch_func"') == 1
    assert 'gpu.weights = ["fc.weight"]' in text


GEMV = """
  func.func @main_0_gemv(%a: memref<{m}x{k}xf32>, %w: memref<{k}xf32>, %y: memref<{m}xf32>) attributes {{tloop.kernel, tloop.source = "graph.matmul"}} {{
    %zero = arith.constant 0.0 : f32
    tloop.for %i = 0 to {m} {{
      memref.store %zero, %y[%i] : memref<{m}xf32>
      tloop.for %k = 0 to {k} {{
        %x = memref.load %a[%i, %k] : memref<{m}x{k}xf32>
        %v = memref.load %w[%k] : memref<{k}xf32>
        %p = arith.mulf %x, %v : f32
        %s = memref.load %y[%i] : memref<{m}xf32>
        %t = arith.addf %s, %p : f32
        memref.store %t, %y[%i] : memref<{m}xf32>
      }}
    }}
    func.return
  }}"""


def gemv_module(m, k):
    return K.module(GEMV.format(m=m, k=k), K.host("main_0_gemv", [(m, k), (k,)], (m,)))


def test_cache_read_staged_in_shared_memory():
    """TVM-style: split, bind, cache_read at the block loop, then stage in shared memory."""
    from dlc.backends.cuda.cuda_c import emit_cuda
    from dlc.backends.cuda.gpu_schedule import stage_in_shared
    from dlc.lowering.schedule import Schedule

    module = gemv_module(29, 13)
    kernel = kernel_of(module, "main_0_gemv")
    s = Schedule(kernel)
    io, ii = s.split("i", 8)
    bind(io, "blockIdx.x")
    bind(ii, "threadIdx.x")
    tile = s.cache_read("w", io)
    stage_in_shared(kernel, tile)
    lower_to_gpu(module)
    a, w = rand(29, 13), rand(13)
    (out,) = emulate(module, [a, w])
    np.testing.assert_allclose(out, a @ w, rtol=1e-5, atol=1e-5)
    text = emit_cuda(module)
    assert "__shared__ float w_i_outer_cache[13];" in text and text.count("__syncthreads();") == 2


def test_stage_in_shared_refuses_a_per_thread_copy():
    from dlc.backends.cuda.gpu_schedule import stage_in_shared
    from dlc.lowering.schedule import Schedule

    module = gemv_module(16, 5)
    kernel = kernel_of(module, "main_0_gemv")
    s = Schedule(kernel)
    io, ii = s.split("i", 8)
    bind(io, "blockIdx.x")
    bind(ii, "threadIdx.x")
    tile = s.cache_read("w", ii)
    with pytest.raises(Exception, match="the copy runs inside a thread loop or a guard"):
        stage_in_shared(kernel, tile)
