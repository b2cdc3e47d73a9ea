"""Timing one generated CUDA kernel, and torch.matmul next to it, with CUDA events.

Shared by ``run_gpu_checks.py`` (the f32 tiled matmul) and ``tensor_core_checks.py``
(the mma kernels): the generated module's source gets an ``extern "C"`` timer that
allocates the kernel's three buffers (sizes from its argument types), launches it once
untimed and then ``repeats`` times between two events, and returns ms per launch
(-1 on any CUDA error).
"""

from __future__ import annotations

import ctypes

TIMER = """
extern "C" float dlc_time_kernel(int repeats) {{
  float *a, *b, *c;
  if (cudaMalloc((void**)&a, {a_bytes}) || cudaMalloc((void**)&b, {b_bytes}) || cudaMalloc((void**)&c, {c_bytes}))
    return -1.0f;
  cudaMemset(a, 0, {a_bytes});
  cudaMemset(b, 0, {b_bytes});
  cudaEvent_t t0, t1;
  cudaEventCreate(&t0);
  cudaEventCreate(&t1);
  {kernel}<<<dim3({gx}, {gy}, {gz}), dim3({bx}, {by}, {bz})>>>(a, b, c);
  cudaEventRecord(t0);
  for (int r = 0; r < repeats; r++)
    {kernel}<<<dim3({gx}, {gy}, {gz}), dim3({bx}, {by}, {bz})>>>(a, b, c);
  cudaEventRecord(t1);
  cudaEventSynchronize(t1);
  float ms = 0.0f;
  cudaEventElapsedTime(&ms, t0, t1);
  cudaFree(a); cudaFree(b); cudaFree(c);
  return cudaGetLastError() == cudaSuccess ? ms / repeats : -1.0f;
}}
"""


def timed_source(source: str, kernel) -> str:
    """``source`` (emit_cuda's output for the module holding ``kernel``, a gpu.func with
    three buffer arguments) with the timer for that kernel appended."""
    from dlc.backends.c_expr import byte_size

    grid = kernel.attributes["gpu.grid"].get_values()
    block = kernel.attributes["gpu.block"].get_values()
    a, b, c = (byte_size(arg.type) for arg in kernel.body.block.args)
    return source + TIMER.format(kernel=kernel.sym_name.data, gx=grid[0], gy=grid[1], gz=grid[2],
                                 bx=block[0], by=block[1], bz=block[2], a_bytes=a, b_bytes=b, c_bytes=c)


def kernel_ms(source: str, kernel, repeats: int, what: str) -> float:
    """Build ``source`` with ``kernel``'s timer (nvcc) and return ms per launch."""
    from dlc.backends.cuda import CudaBuildError
    from dlc.backends.cuda.nvcc_build import compile_shared_library

    lib = ctypes.CDLL(compile_shared_library(timed_source(source, kernel)))
    lib.dlc_time_kernel.restype = ctypes.c_float
    ms = lib.dlc_time_kernel(repeats)
    if ms <= 0:
        raise CudaBuildError(f"timing the {what} failed")
    return ms


def torch_matmul_ms(size: int, dtype_name: str, allow_tf32: bool, repeats: int) -> float | None:
    """ms of one size^3 torch.matmul (cuBLAS) on the GPU, or None without torch or a GPU."""
    try:
        import torch
    except ImportError:
        return None
    if not torch.cuda.is_available():
        return None
    previous = torch.backends.cuda.matmul.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = allow_tf32
    try:
        dtype = getattr(torch, dtype_name)
        a = torch.randn(size, size, device="cuda", dtype=dtype)
        b = torch.randn(size, size, device="cuda", dtype=dtype)
        a @ b
        start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(repeats):
            a @ b
        stop.record()
        torch.cuda.synchronize()
        return start.elapsed_time(stop) / repeats
    finally:
        torch.backends.cuda.matmul.allow_tf32 = previous
