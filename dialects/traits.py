"""Op traits of the graph dialect: the facts passes ask an op about.

A pass asks ``op.has_trait(Elementwise)`` (or ``op.get_trait(Composite)`` for
a trait with a parameter) instead of keeping a list of op names, so an op's
facts are declared once, on the op (``traits = traits_def(Pure(), Elementwise())``),
and a new op gets a pass's treatment by declaring the trait. They are xDSL
``OpTrait``s: frozen dataclasses, collected over the class's bases (a trait
on ``ReduceOp`` holds for every reduction), compared by value.

* ``Elementwise``: out[i] = f(operands[bcast(i)]), with a scalar body in the kernel
  library (asked by fuse-ops and ``lowering/fused.py``);
* ``FusionAnchor(dense)``: its kernel takes a fused elementwise epilogue (fuse-ops);
* ``WidenF16``: accumulates, so it is computed in f32 for f16 (widen-accumulation);
* ``LayoutFree(blocked)``: may run on NCHW{b}c values (alter-op-layout);
* ``Composite(decompose)``: rewritten into core ops by ``decompose`` (legalize;
  lower-to-loops rejects one left over that has no kernel);
* ``ViewLike``: its result is its operand's row-major data under another shape
  (bufferize makes it a view of the operand's buffer).

Constant tensors (graph.constant, graph.weight) carry xDSL's own
``xdsl.traits.ConstantLike``: lower-to-loops and bufferize ask for that.

``test/python/test_op_traits.py`` pins the set of ops holding each trait.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from xdsl.traits import OpTrait

if TYPE_CHECKING:
    from xdsl.ir import Operation, SSAValue


@dataclass(frozen=True)
class Elementwise(OpTrait):
    """Each output element is a function of the operands' elements at the same
    (numpy-broadcast) index, and the kernel library has that function as a
    scalar body (``lowering.kernels.elementwise.scalar_compute`` returns it).

    fuse-ops fuses such an op into its producer's kernel as an epilogue step and
    lets it start a group itself; ``lowering/fused.py`` rejects a group member
    without it. An op computed per element whose kernel has no scalar body
    (gelu, elu, hard_sigmoid: composite ops with their own kernels) does not
    declare it, since nothing could emit it inside another kernel."""


@dataclass(frozen=True)
class FusionAnchor(OpTrait):
    """The op's kernel finishes each output element in one place and applies a
    fused elementwise chain there (``with epilogue(...)`` in
    ``lowering/kernels/builder.py``): fuse-ops may start a group with it.
    Elementwise ops can start a group too; they need not declare this.

    ``dense``: a compute-dense kernel (conv2d, matmul); ``fuse-ops{dense=false}``
    leaves those unfused and still fuses into pools and reductions."""

    dense: bool = False


@dataclass(frozen=True)
class WidenF16(OpTrait):
    """The op accumulates over many terms (a reduction, matmul, conv, average
    pool): widen-accumulation computes it in f32 between casts when it is f16,
    so its sums are rounded to f16 once, as numpy and onnx.reference do. Ops
    that only select (max pools) or map elements keep f16."""


@dataclass(frozen=True)
class LayoutFree(OpTrait):
    """alter-op-layout may compute the op on channel-blocked NCHW{b}c values,
    whose padded channels hold zeros after a conv: the op keeps them finite
    (f(0) and 0 op 0 are finite; div, pow and mod are not free: 0/0 would
    poison the next conv, whose zero weights only cancel finite values).

    ``blocked``: ``None`` when the same op runs on the blocked operands
    (elementwise ops; a reduction over H and W becomes one over axes 2, 3 of
    the blocked tensor); otherwise the name of the op that computes it on
    blocked data: a pool's ``_nchwc`` twin, or for a reduction the blocked pool
    with an H x W window that replaces it when it reduces all of H and W."""

    blocked: str | None = None


@dataclass(frozen=True)
class Composite(OpTrait):
    """The op is not in the core set that ``lower-to-loops`` handles (unless a
    kernel is registered for it): ``legalize`` replaces it by
    ``decompose(op, emit)``, the value of the op's one result built from core
    graph ops (``emit(OpClass, *operands, **attrs)`` adds one and returns its
    result; ``emit.const(x)`` a scalar of the operand's element type).

    The decomposition lives in the dialect, next to the ops it builds
    (``dlc/dialects/graph/decompose.py``), so the trait can hold it and the
    dialect never imports a pass."""

    decompose: Callable[[Operation, Callable[..., SSAValue]], SSAValue]

    def __post_init__(self) -> None:
        if not callable(self.decompose):
            raise TypeError(f"Composite needs a decomposition function, got {self.decompose!r}")


@dataclass(frozen=True)
class ViewLike(OpTrait):
    """The op's one result is its one operand's data, in the same row-major
    order, under another static shape (reshape, squeeze, unsqueeze): no element
    moves. bufferize gives such a result a view of the operand's buffer (or
    computes the operand straight into the reshape's destination) instead of a
    copy kernel."""


def is_composite(op_type: type[Operation]) -> bool:
    """Whether legalize rewrites ops of ``op_type`` (it declares ``Composite``)."""
    return op_type.has_trait(Composite)
