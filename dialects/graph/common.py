"""Operand checks and small helpers shared by the graph op families.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from xdsl.dialects.builtin import TensorType
from xdsl.ir import Attribute

from dlc.dialects.graph_base import broadcast_shapes, is_bool, is_float, is_int, ShapeError


Types = Sequence[TensorType]


def _expect_count(types: Types, n: int | tuple[int, int]) -> None:
    lo, hi = (n, n) if isinstance(n, int) else n
    if not lo <= len(types) <= hi:
        want = str(lo) if lo == hi else f"{lo} to {hi}"
        raise ShapeError(f"expects {want} operands, got {len(types)}")


def _check_element(t: TensorType, rule: str, what: str = "operand") -> None:
    et = t.element_type
    ok = {
        "float": is_float(et),
        "int": is_int(et),
        "bool": is_bool(et),
        "numeric": is_float(et) or is_int(et),
        "any": True,
    }[rule]
    if not ok:
        kinds = {"numeric": "float or integer"}.get(rule, rule)
        raise ShapeError(f"{what} element type {et} is not {kinds} (op takes {kinds} tensors)")


def _contiguous(x: np.ndarray) -> np.ndarray:
    """C-contiguous ``x``; unlike np.ascontiguousarray, keeps a 0-d array 0-d."""
    return np.asarray(x, order="C")


def _broadcasts_to(shape: Sequence[int], target: Sequence[int]) -> bool:
    """Does ``shape`` broadcast to exactly ``target`` (numpy rules)?"""
    try:
        return broadcast_shapes(shape, target) == tuple(target)
    except ShapeError:
        return False


def _same_element(types: Types) -> Attribute:
    ets = {t.element_type for t in types}
    if len(ets) > 1:
        raise ShapeError(
            "operands must have the same element type, got "
            + ", ".join(str(t.element_type) for t in types)
        )
    return types[0].element_type
