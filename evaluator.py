"""Reference evaluator: runs a graph-dialect `func.func` on numpy arrays.

It walks the function's ops in order and calls each op's numpy ``reference``.
It is the test oracle and the engine of fold-constant; it is never the
execution path of a compiled model.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Block, Operation, SSAValue

from dlc.dialects.graph.data_dependent import function_extents, true_shaped
from dlc.dialects.graph_base import GraphOp, numpy_dtype


class EvaluationError(Exception):
    """An op cannot be evaluated (unknown op, bad input)."""


def find_function(module: ModuleOp | func.FuncOp, entry: str | None = None) -> func.FuncOp:
    if isinstance(module, func.FuncOp):
        return module
    funcs = [op for op in module.ops if isinstance(op, func.FuncOp) and not op.is_declaration]
    if entry is not None:
        for f in funcs:
            if f.sym_name.data == entry:
                return f
        raise EvaluationError(f"no function named @{entry} in the module")
    if not funcs:
        raise EvaluationError("the module has no function")
    for f in funcs:
        if f.sym_name.data == "main":
            return f
    return funcs[0]


def evaluate(
    module: ModuleOp | func.FuncOp, inputs: Sequence[np.ndarray], entry: str | None = None
) -> list[np.ndarray]:
    """Evaluate ``entry`` (default: @main or the first function) on ``inputs``; results
    with a run-time extent (``dlc.extent_of``) come back in their true shape, as from
    the compiled module."""
    fn = find_function(module, entry)
    block = fn.body.block
    if len(inputs) != len(block.args):
        raise EvaluationError(
            f"@{fn.sym_name.data} takes {len(block.args)} inputs, got {len(inputs)}"
        )
    env: dict[SSAValue, np.ndarray] = {}
    for arg, value in zip(block.args, inputs):
        shape = tuple(arg.type.get_shape())
        value = np.asarray(value)
        if value.shape != shape:
            raise EvaluationError(
                f"@{fn.sym_name.data}: input #{arg.index} has shape {value.shape}, expected {shape}"
            )
        dtype = numpy_dtype(arg.type.element_type)
        # f64 -> f32 or i64 -> i32 is fine; float -> int would silently truncate
        if not np.can_cast(value.dtype, dtype, casting="same_kind"):
            raise EvaluationError(
                f"@{fn.sym_name.data}: input #{arg.index} has dtype {value.dtype}, "
                f"expected {dtype} ({arg.type})"
            )
        env[arg] = value.astype(dtype, copy=False)
    return true_shaped(evaluate_block(block, env), function_extents(fn))


def evaluate_block(block: Block, env: dict[SSAValue, np.ndarray]) -> list[np.ndarray]:
    """Run ``block``'s ops; returns the values of its terminator's operands."""
    for op in block.ops:
        if _is_terminator(op):
            return [env[v] for v in op.operands]
        evaluate_op(op, env)
    return []


def _is_terminator(op: Operation) -> bool:
    from xdsl.traits import IsTerminator

    return op.has_trait(IsTerminator)


def evaluate_op(op: Operation, env: dict[SSAValue, np.ndarray]) -> list[np.ndarray]:
    if not isinstance(op, GraphOp):
        raise EvaluationError(f"cannot evaluate '{op.name}': not a graph-dialect op")
    try:
        args = [env[v] for v in op.operands]
    except KeyError:
        raise EvaluationError(f"{op.name}: an operand has no value (defined outside the function?)") from None
    try:
        with np.errstate(all="ignore"):
            outs = op.reference(*args) if not op.regions else op.reference_regions(args, evaluate_block)
    except EvaluationError:
        raise
    except Exception as err:  # e.g. gather index out of range, weight missing
        raise EvaluationError(f"{op.name}: {err}") from err
    for result, value in zip(op.results, outs, strict=True):
        expected = numpy_dtype(result.type.element_type)
        value = np.asarray(value)
        if value.dtype != expected:
            value = value.astype(expected)
        env[result] = value
    return outs
