"""CUDA/PTX backend: ``emit_cuda`` (CUDA C text), ``emit_ptx`` (PTX via llvmlite's NVPTX
backend) and ``build`` (nvcc + CUDA runtime through ctypes).

All take a graph-level or loop-level module (the `lower-to-loops` contract) and
bring it to the GPU level in place first (`lower-to-loops`, then this backend's
own lowering pass `lower-to-gpu`, lower_to_gpu.py).
"""

from dlc.backends.cuda.cuda_c import CudaEmitError, emit_cuda

__all__ = ["CudaEmitError", "emit_cuda", "emit_ptx", "PtxEmitError", "build", "CudaBuildError", "GpuLoweringError"]


def __getattr__(name: str):
    # emit_ptx pulls in llvmlite and build pulls in ctypes/nvcc probing: load on demand.
    if name in ("emit_ptx", "PtxEmitError"):
        from dlc.backends.cuda import ptx

        return getattr(ptx, name)
    if name in ("build", "CudaBuildError"):
        import importlib

        return getattr(importlib.import_module("dlc.backends.cuda.nvcc_build"), name)
    if name == "GpuLoweringError":
        from dlc.backends.cuda.lower_to_gpu import GpuLoweringError

        return GpuLoweringError
    raise AttributeError(name)
