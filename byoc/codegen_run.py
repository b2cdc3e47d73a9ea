"""Run the registered codegens over a partitioned module (TVM's RunCodegen).

``run_codegens(module, target)`` calls, once per partition function (``dlc.codegen =
"<T>"``), target T's codegen with a :class:`CodegenContext` (the constants' values
come from the call site's ``graph.constant`` / ``graph.weight``), checks what it
returns, and leaves the module as it was: lower-to-loops later turns each partition
into the declaration of its external symbol. The returned ExternalKernels are what
the driver compiles and links (backends/llvm/external.py).
"""

from __future__ import annotations

import re

import numpy as np
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp, StringAttr

from dlc.byoc.targets import (
    CODEGEN_ATTR,
    CONSTANT_ARG_ATTR,
    CodegenContext,
    CodegenError,
    ExternalKernel,
    codegen_of,
)
from dlc.dialects import graph
from dlc.weights import store_of


def partitions(module: ModuleOp) -> list[func.FuncOp]:
    return [op for op in module.ops if isinstance(op, func.FuncOp) and isinstance(
        op.attributes.get(CODEGEN_ATTR), StringAttr) and not op.is_declaration]


def _constants(module: ModuleOp, fn: func.FuncOp) -> dict[int, np.ndarray]:
    name = fn.sym_name.data
    calls = [op for op in module.walk() if isinstance(op, func.CallOp) and op.callee.string_value() == name]
    marked = [i for i, attrs in enumerate(fn.arg_attrs.data if fn.arg_attrs else ())
              if CONSTANT_ARG_ATTR in attrs.data]
    if not calls:
        return {}
    store = store_of(module, create=False)
    out = {}
    for i in marked:
        owner = calls[0].operands[i].owner
        if isinstance(owner, graph.ConstantOp):
            out[i] = owner.array()
        elif isinstance(owner, graph.WeightOp) and store is not None and owner.weight_name.data in store:
            out[i] = np.asarray(store[owner.weight_name.data])
    return out


def run_codegens(module: ModuleOp, target) -> list[ExternalKernel]:
    """One ExternalKernel per partition of ``module`` (CodegenError names a refusal)."""
    kernels = []
    for fn in partitions(module):
        byoc_target = fn.attributes[CODEGEN_ATTR].data
        symbol = fn.sym_name.data
        ctx = CodegenContext(target, symbol, fn, _constants(module, fn), byoc_target)
        try:
            kernel = codegen_of(byoc_target)(fn, ctx)
        except CodegenError:
            raise
        except Exception as err:  # a codegen bug still names the target and the partition
            raise CodegenError(f"BYOC codegen '{byoc_target}' failed on @{symbol}: "
                               f"{type(err).__name__}: {err}") from err
        if not isinstance(kernel, ExternalKernel):
            raise CodegenError(f"BYOC codegen '{byoc_target}' returned {type(kernel).__name__} "
                               f"for @{symbol}, expected a dlc.byoc.ExternalKernel")
        if kernel.symbol != symbol or not re.fullmatch(r"[A-Za-z_]\w*", symbol):
            raise CodegenError(f"BYOC codegen '{byoc_target}' defined symbol '{kernel.symbol}' "
                               f"for @{symbol}; it must define '{symbol}'")
        kernel.target_name = byoc_target
        kernels.append(kernel)
    return kernels
