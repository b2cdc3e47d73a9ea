"""One place that knows every dialect dlc speaks: `make_context()`."""

from __future__ import annotations

from xdsl.context import Context
from xdsl.dialects import affine, arith, builtin, cf, func, gpu, llvm, math, memref, scf, vector


def make_context() -> Context:
    """A Context with builtin/func/arith/math/memref/scf/cf/llvm/vector and dlc's dialects."""
    from dlc.dialects.cuda import CUDA
    from dlc.dialects.graph import Graph
    from dlc.dialects.tloop import TLoop

    ctx = Context()
    for dialect in (
        builtin.Builtin, func.Func, arith.Arith, math.Math, memref.MemRef, scf.Scf,
        cf.Cf, llvm.LLVM, vector.Vector, affine.Affine, gpu.GPU, Graph, TLoop, CUDA,
    ):
        ctx.load_dialect(dialect)
    return ctx
