"""The `tloop` (tensor-loop) dialect: TIR's role.

Kernels are `func.func`s over memrefs marked ``tloop.kernel``; their bodies are
explicit loop nests of ``tloop.for`` with scalar `arith`/`math` and
`memref.load`/`memref.store` (reused from xDSL). This dialect adds only what
those lack:

* ``tloop.for``: a loop with static bounds and a *kind* (serial, parallel,
  vectorized, unrolled) that schedule primitives set and backends honour. It
  carries no values: reductions accumulate in memory, as in TIR, so schedule
  primitives can move loops freely. Partial tiles after a non-dividing split are
  guarded with ``scf.if``. Its verifier (on an outermost loop) rejects a
  ``memref.load``/``store`` of its nest whose affine index certainly leaves a
  static extent (dialects/tloop_bounds.py), located at the access.
* ``tloop.weight``: a buffer backed by the module's weights store (never
  copied element by element into IR).

```mlir
func.func @relu(%x: memref<4x7xf32>, %y: memref<4x7xf32>) attributes {tloop.kernel} {
  tloop.for %i = 0 to 4 parallel {
    tloop.for %j = 0 to 7 vectorized {
      %v = memref.load %x[%i, %j] : memref<4x7xf32>
      %z = arith.constant 0.0 : f32
      %r = arith.maximumf %v, %z : f32
      memref.store %r, %y[%i, %j] : memref<4x7xf32>
    }
  }
  func.return
}
```
"""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.dialects.builtin import (
    IndexType,
    IntegerAttr,
    MemRefType,
    StringAttr,
    i64,
)
from xdsl.ir import Attribute, Block, Dialect, Operation, Region
from xdsl.irdl import (
    IRDLOperation,
    attr_def,
    irdl_op_definition,
    prop_def,
    region_def,
    result_def,
    traits_def,
)
from xdsl.parser import Parser
from xdsl.printer import Printer
from xdsl.traits import (
    IsTerminator,
    Pure,
    RecursiveMemoryEffect,
    SingleBlockImplicitTerminator,
    ensure_terminator,
)
from xdsl.utils.exceptions import VerifyException

from dlc.diagnostics import VerifyAtOpException
from dlc.dialects.tloop_bounds import first_out_of_bounds

LOOP_KINDS = ("serial", "parallel", "vectorized", "unrolled")
KERNEL_ATTR = "tloop.kernel"
FORM_ATTR = "tloop.form"  # a kernel's form (lowering/kernels/forms.py): picks its default schedule
# on a vectorized loop: its lanes, chosen by its schedule from the target (the LLVM lowering's
# vectorize width; without it 32 bytes). A memory-bound stream wants the full width: zmm
# loads feed an L3 stream 1.3x faster than ymm ones (defaults_dense._schedule_skinny)
VECTOR_LANES_ATTR = "dlc.vector_lanes"


@irdl_op_definition
class YieldOp(IRDLOperation):
    """Terminator of a ``tloop.for`` body (implicit in the custom syntax).

    ```mlir
    tloop.yield
    ```
    """

    name = "tloop.yield"
    traits = traits_def(IsTerminator(), Pure())
    assembly_format = "attr-dict"

    def verify_(self) -> None:
        if not isinstance(self.parent_op(), (ForOp, type(None))):
            raise VerifyException("tloop.yield: must terminate a tloop.for body")


@irdl_op_definition
class ForOp(IRDLOperation):
    """``for (i = lb; i < ub; i += step)`` with static bounds and a loop kind.

    ```mlir
    tloop.for %i = 0 to 128 step 4 parallel {
      ...
    }
    ```
    ``step 1`` and the ``serial`` kind are omitted when printing.
    """

    name = "tloop.for"
    lb = prop_def(IntegerAttr)
    ub = prop_def(IntegerAttr)
    step = prop_def(IntegerAttr)
    kind = prop_def(StringAttr)
    body = region_def("single_block")
    traits = traits_def(SingleBlockImplicitTerminator(YieldOp), RecursiveMemoryEffect())

    def __init__(
        self,
        lb: int,
        ub: int,
        step: int = 1,
        kind: str = "serial",
        body: Region | Block | Sequence[Operation] | None = None,
    ):
        if body is None:
            body = Block(arg_types=[IndexType()])
        if isinstance(body, Block):
            body = Region(body)
        elif not isinstance(body, Region):
            body = Region(Block(list(body), arg_types=[IndexType()]))
        super().__init__(
            properties={
                "lb": IntegerAttr(lb, i64),
                "ub": IntegerAttr(ub, i64),
                "step": IntegerAttr(step, i64),
                "kind": StringAttr(kind),
            },
            regions=[body],
        )
        ensure_terminator(self, SingleBlockImplicitTerminator(YieldOp))

    # convenient integer views
    @property
    def lower(self) -> int:
        return self.lb.value.data

    @property
    def upper(self) -> int:
        return self.ub.value.data

    @property
    def stride(self) -> int:
        return self.step.value.data

    @property
    def loop_kind(self) -> str:
        return self.kind.data

    @property
    def trip_count(self) -> int:
        return max(0, -(-(self.upper - self.lower) // self.stride))

    @property
    def induction_var(self):
        return self.body.block.args[0]

    def verify_(self) -> None:
        if self.loop_kind not in LOOP_KINDS:
            raise VerifyException(
                f"tloop.for: kind must be one of {', '.join(LOOP_KINDS)}, got '{self.loop_kind}'"
            )
        if self.stride < 1:
            raise VerifyException(f"tloop.for: step must be >= 1, got {self.stride}")
        block = self.body.block
        if len(block.args) != 1 or not isinstance(block.args[0].type, IndexType):
            raise VerifyException("tloop.for: body must take exactly one index argument")
        if not isinstance(self.parent_op(), ForOp):  # an outermost loop checks its nest
            found = first_out_of_bounds(self)
            if found is not None:
                raise VerifyAtOpException(*found)

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_ssa_value(self.induction_var)
        printer.print_string(f" = {self.lower} to {self.upper}")
        if self.stride != 1:
            printer.print_string(f" step {self.stride}")
        if self.loop_kind != "serial":
            printer.print_string(f" {self.loop_kind}")
        printer.print_string(" ")
        printer.print_region(self.body, print_entry_block_args=False, print_block_terminators=False)
        printer.print_op_attributes(self.attributes)

    @classmethod
    def parse(cls, parser: Parser) -> ForOp:
        arg = parser.parse_argument(expect_type=False)
        parser.parse_punctuation("=")
        lb = parser.parse_integer(allow_boolean=False, allow_negative=True)
        parser.parse_keyword("to")
        ub = parser.parse_integer(allow_boolean=False, allow_negative=True)
        step = 1
        if parser.parse_optional_keyword("step"):
            step = parser.parse_integer(allow_boolean=False, allow_negative=False)
        kind = "serial"
        for k in LOOP_KINDS:
            if parser.parse_optional_keyword(k):
                kind = k
                break
        body = parser.parse_region((arg.resolve(IndexType()),))
        attrs = parser.parse_optional_attr_dict()
        op = cls(lb, ub, step, kind, body)
        op.attributes |= attrs
        return op


@irdl_op_definition
class WeightOp(IRDLOperation):
    """A read-only buffer backed by the weights store entry ``name``.

    ```mlir
    %w = tloop.weight "conv1.weight" : memref<64x3x7x7xf32>
    ```
    """

    name = "tloop.weight"
    weight_name = attr_def(StringAttr, attr_name="name")
    buffer = result_def(MemRefType)
    traits = traits_def(Pure())
    assembly_format = "$name attr-dict `:` type($buffer)"

    def __init__(self, name: str, type_: Attribute):
        super().__init__(attributes={"name": StringAttr(name)}, result_types=[type_])


TLoop = Dialect("tloop", [ForOp, YieldOp, WeightOp], [])
