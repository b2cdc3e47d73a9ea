"""`fold-constant`: evaluate graph ops whose operands are all constants.

``fold-constant{size-limit=N inline-limit=M}``

An op whose operands are all `graph.constant` / `graph.weight` values is run
through its numpy ``reference`` and replaced by its value:

* results with more than ``size-limit`` elements (default 2**20) are left
  alone: folding would trade a cheap op for a big stored array; unless the
  op's constant operands have no other user and are at least as big as the
  results (a transposed or reshaped weight), so folding stores nothing more;
* results with more than ``inline-limit`` elements (default 64) go to the
  module's weights store as a `graph.weight` named after their source
  (``fc.weight.transpose``); smaller ones become inline `graph.constant`s;
* constants and weights left without users by a fold are erased, and weights
  no longer referenced are dropped from the store.

It is one forward walk (xDSL's ``PatternRewriteWalker`` without re-applying):
since ops come in program order, a fold's users are visited after it and see
its constant result. Arrays stay numpy arrays throughout (dense attributes
are read zero-copy and written from raw bytes).

Ops with regions are not folded (their bodies may read non-constant values).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp, TensorType
from xdsl.ir import Operation
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import (
    PatternRewriter,
    PatternRewriteWalker,
    RewritePattern,
)

from dlc.dialects.graph import ConstantOp, WeightOp
from dlc.dialects.graph_base import GraphOp, numpy_dtype
from dlc.diagnostics import op_error
from dlc.diagnostics import describe_op
from dlc.weights import WeightStore, store_of

_CONSTANT_OPS = (ConstantOp, WeightOp)


def _element_count(t) -> int:
    return math.prod(t.get_shape()) if isinstance(t, TensorType) else -1


@dataclass
class FoldConstantOps(RewritePattern):
    """Replace one all-constant graph op by constants (see module docstring)."""

    store: WeightStore
    size_limit: int
    inline_limit: int
    created_weights: set[str] = field(default_factory=set)
    failure: Exception | None = None
    """The first op that could not be evaluated (raised after the walk, so
    that xDSL's walker does not wrap it with a dump of the module)."""

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> None:
        if not isinstance(op, GraphOp) or isinstance(op, _CONSTANT_OPS) or op.regions:
            return
        producers = [v.owner for v in op.operands]
        if not all(isinstance(p, _CONSTANT_OPS) for p in producers):
            return
        counts = [_element_count(r.type) for r in op.results]
        if not counts or min(counts) < 0:
            return
        if max(counts) > self.size_limit and not self._replaces_its_inputs(op, producers, counts):
            return
        values = self._evaluate(op, producers)
        if values is None:
            return
        new_ops, new_values = [], []
        for index, (result, value) in enumerate(zip(op.results, values)):
            if not result.uses:  # an unused result (of a split, say): nothing to keep
                new_values.append(None)
                continue
            new = self._materialize(op, producers, index, value)
            new.location = op.location  # later diagnostics point at the folded op
            new_ops.append(new)
            new_values.append(new.results[0])
        rewriter.replace(op, new_ops, new_values)
        for producer in set(producers):
            if all(not r.uses for r in producer.results):
                rewriter.erase(producer)

    @staticmethod
    def _replaces_its_inputs(op: GraphOp, producers: list[Operation], counts: list[int]) -> bool:
        """True when folding ``op`` stores no more than it frees: its constant
        operands have no other user and hold at least as many elements as the
        results (a transposed or reshaped weight: ``fc.weight.transpose``)."""
        if any(user.operation is not op for p in producers for r in p.results for user in r.uses):
            return False
        freed = sum(_element_count(p.results[0].type) for p in set(producers))
        return sum(counts) <= freed

    def _evaluate(self, op: GraphOp, producers: list[Operation]) -> list[np.ndarray] | None:
        try:
            inputs = [p.array() for p in producers]
            with np.errstate(all="ignore"):
                outputs = op.reference(*inputs)
        except NotImplementedError:
            return None  # no numpy reference: leave it to the compiled code
        except Exception as err:  # noqa: BLE001 - reported as one diagnostic line
            if self.failure is None:
                why = err.args[0] if isinstance(err, KeyError) and err.args else err
                self.failure = op_error(op, f"cannot evaluate {describe_op(op)}: {why}")
            return None
        results = []
        for result, value in zip(op.results, outputs, strict=True):
            value = np.asarray(value)
            dtype = numpy_dtype(result.type.element_type)
            if value.dtype != dtype:
                value = value.astype(dtype)
            if value.shape != tuple(result.type.get_shape()):
                if self.failure is None:
                    self.failure = op_error(
                        op,
                        f"{describe_op(op)} evaluated to shape {list(value.shape)}, "
                        f"but its type is {result.type}",
                    )
                return None
            results.append(value)
        return results

    def _materialize(
        self, op: GraphOp, producers: list[Operation], index: int, value: np.ndarray
    ) -> Operation:
        if value.size <= self.inline_limit:
            return ConstantOp.from_numpy(value)
        # contiguous: a stored array is saved and memory-mapped as it is
        array = np.ascontiguousarray(value)
        name = self.store.add(self._derived_name(op, producers, index), array)
        self.created_weights.add(name)
        return WeightOp.make_named(name, op.results[index].type)

    @staticmethod
    def _derived_name(op: GraphOp, producers: list[Operation], index: int) -> str:
        """``<first weight operand or SSA name>.<op>[.<result index>]``."""
        source = next((p.weight_name.data for p in producers if isinstance(p, WeightOp)), None)
        if source is None:
            source = op.results[index].name_hint or "const"
        name = f"{source}.{op.name.removeprefix('graph.')}"
        return name if len(op.results) == 1 else f"{name}.{index}"


def weight_names(module: ModuleOp) -> set[str]:
    """The names of the weights the module's graph.weight ops read."""
    return {op.weight_name.data for op in module.walk() if isinstance(op, WeightOp)}


@dataclass(frozen=True)
class FoldConstantPass(ModulePass):
    """Evaluate graph ops on constant operands (see module docstring)."""

    name = "fold-constant"

    size_limit: int = 1 << 20
    """Results with more elements than this are not folded."""

    inline_limit: int = 64
    """Results with more elements than this go to the weights store."""

    def __post_init__(self) -> None:
        for option, value in (("size-limit", self.size_limit), ("inline-limit", self.inline_limit)):
            if value < 0:
                raise ValueError(f"{option} must be >= 0, got {value}")

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        store = store_of(op)
        names_before = weight_names(op)
        pattern = FoldConstantOps(store, self.size_limit, self.inline_limit)
        PatternRewriteWalker(pattern, apply_recursively=False).rewrite_module(op)
        if pattern.failure is not None:
            raise pattern.failure
        for name in (names_before | pattern.created_weights) - weight_names(op):
            store.remove(name)
