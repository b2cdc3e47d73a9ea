"""Row-major (identity-layout) strides of a static shape: the one definition the
bufferizer, the LLVM lowering and the CUDA emitters share."""

from __future__ import annotations

from collections.abc import Sequence


def row_major(shape: Sequence[int]) -> list[int]:
    """Element strides of a C-contiguous array of ``shape`` (the last dim has stride 1)."""
    strides, acc = [], 1
    for dim in reversed(list(shape)):
        strides.append(acc)
        acc *= dim
    return strides[::-1]
