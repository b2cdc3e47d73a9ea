"""`cuda` dialect: the few warp-level CUDA operations xDSL's ``gpu`` dialect lacks.

xDSL 0.75's gpu dialect has ids, barriers and ``all_reduce`` but no warp shuffle,
no tensor-core ``mma.sync`` and no ``cp.async``; the CUDA schedules
(``backends/cuda/mma_schedule.py``, ``warp_reduce.py``) build these ops, the CUDA C
writer (``backends/cuda/cuda_c.py``) prints them as intrinsics / inline PTX and the
emulator (``backends/cuda/emulator.py``) runs them with a warp's 32 lanes together.

* ``cuda.shfl`` (``__shfl_xor_sync`` / ``__shfl_down_sync`` over the full warp):
  ``%r = cuda.shfl %v, 16 {mode = "xor"} : f32``.
* ``cuda.mma_sync`` (``mma.sync.aligned.m16n8k16`` f16/bf16 or ``m16n8k8`` tf32,
  f32 accumulation): ``acc += a * b`` on per-lane fragments held in private f32
  register arrays (``a``: 8 or 4 elements, ``b``: 4 or 2, ``acc``: 4), laid out as
  the PTX ISA documents (``backends/cuda/tensor_core.py``); inputs are rounded to
  ``ab_type`` by the instruction.
* ``cuda.cp_async`` (``cp.async.ca.shared.global``, one element, zero-filled when
  ``pred`` is false), ``cuda.cp_async_commit``, ``cuda.cp_async_wait {pending}``;
  offsets are flat element offsets into row-major buffers.
"""

from __future__ import annotations

from typing import ClassVar

from xdsl.dialects.builtin import I1, IndexType, IntegerAttr, MemRefType, StringAttr, i64
from xdsl.ir import Dialect
from xdsl.irdl import (
    AnyAttr,
    IRDLOperation,
    ParsePropInAttrDict,
    VarConstraint,
    irdl_op_definition,
    operand_def,
    prop_def,
    result_def,
)
from xdsl.utils.exceptions import VerifyException

SHUFFLE_MODES = ("xor", "down")
MMA_SHAPES = {"f16": "m16n8k16", "bf16": "m16n8k16", "tf32": "m16n8k8"}
# elements per lane of the A, B and C/D fragments
FRAGMENT_SIZES = {"m16n8k16": (8, 4, 4), "m16n8k8": (4, 2, 4)}


@irdl_op_definition
class ShuffleOp(IRDLOperation):
    """A full-warp shuffle: lane l gets ``value`` of lane ``l ^ offset`` (xor) or
    ``l + offset`` (down; its own value when that lane is past 31)."""

    name = "cuda.shfl"
    T: ClassVar = VarConstraint("T", AnyAttr())
    value = operand_def(T)
    offset = prop_def(IntegerAttr)
    mode = prop_def(StringAttr)
    result = result_def(T)
    assembly_format = "$value `,` $offset attr-dict `:` type($value)"
    irdl_options = (ParsePropInAttrDict(),)

    def __init__(self, value, offset: int, mode: str):
        super().__init__(operands=[value], result_types=[value.type],
                         properties={"offset": IntegerAttr(offset, i64), "mode": StringAttr(mode)})

    def verify_(self) -> None:
        if self.mode.data not in SHUFFLE_MODES:
            raise VerifyException(f"cuda.shfl: mode must be one of {', '.join(SHUFFLE_MODES)}, got '{self.mode.data}'")
        if not 0 < self.offset.value.data < 32:
            raise VerifyException(f"cuda.shfl: offset must be in 1..31, got {self.offset.value.data}")


@irdl_op_definition
class MmaSyncOp(IRDLOperation):
    """``acc += a x b`` over one warp's fragments (see the module docstring)."""

    name = "cuda.mma_sync"
    a = operand_def(MemRefType)
    b = operand_def(MemRefType)
    acc = operand_def(MemRefType)
    ab_type = prop_def(StringAttr)
    assembly_format = "$a `,` $b `,` $acc attr-dict `:` type($a) `,` type($b) `,` type($acc)"
    irdl_options = (ParsePropInAttrDict(),)

    def __init__(self, a, b, acc, ab_type: str):
        super().__init__(operands=[a, b, acc], properties={"ab_type": StringAttr(ab_type)})

    @property
    def shape(self) -> str:
        return MMA_SHAPES[self.ab_type.data]

    def verify_(self) -> None:
        kind = self.ab_type.data
        if kind not in MMA_SHAPES:
            raise VerifyException(f"cuda.mma_sync: ab_type must be one of {', '.join(MMA_SHAPES)}, got '{kind}'")
        for operand, want in zip((self.a, self.b, self.acc), FRAGMENT_SIZES[MMA_SHAPES[kind]]):
            t = operand.type
            if t.get_shape() != (want,) or str(t.element_type) != "f32":
                raise VerifyException(f"cuda.mma_sync ({kind}): fragments must be memref<{want}xf32>, got {t}")


@irdl_op_definition
class CpAsyncOp(IRDLOperation):
    """``dst[dst_offset] = pred ? src[src_offset] : 0``, asynchronously (global -> shared)."""

    name = "cuda.cp_async"
    dst = operand_def(MemRefType)
    dst_offset = operand_def(IndexType)
    src = operand_def(MemRefType)
    src_offset = operand_def(IndexType)
    pred = operand_def(I1)
    assembly_format = ("$dst `[` $dst_offset `]` `,` $src `[` $src_offset `]` `,` $pred attr-dict "
                       "`:` type($dst) `,` type($src)")

    def __init__(self, dst, dst_offset, src, src_offset, pred):
        super().__init__(operands=[dst, dst_offset, src, src_offset, pred])

    def verify_(self) -> None:
        if self.dst.type.element_type != self.src.type.element_type:
            raise VerifyException("cuda.cp_async: source and destination element types differ")


@irdl_op_definition
class CpAsyncCommitOp(IRDLOperation):
    """Close the current group of ``cuda.cp_async`` copies (``cp.async.commit_group``)."""

    name = "cuda.cp_async_commit"
    assembly_format = "attr-dict"


@irdl_op_definition
class CpAsyncWaitOp(IRDLOperation):
    """Wait until at most ``pending`` committed groups are in flight (``cp.async.wait_group``)."""

    name = "cuda.cp_async_wait"
    pending = prop_def(IntegerAttr)
    assembly_format = "$pending attr-dict"

    def __init__(self, pending: int):
        super().__init__(properties={"pending": IntegerAttr(pending, i64)})


CUDA = Dialect("cuda", [ShuffleOp, MmaSyncOp, CpAsyncOp, CpAsyncCommitOp, CpAsyncWaitOp], [])
