"""Control flow: region-carrying ops (if, loop, scan) and their terminator.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
from xdsl.dialects.builtin import i1, i64, TensorType
from xdsl.ir import Attribute
from xdsl.irdl import (
    irdl_op_definition,
    operand_def,
    region_def,
    traits_def,
    var_operand_def,
    var_result_def,
)
from xdsl.parser import Parser
from xdsl.printer import Printer
from xdsl.traits import HasParent, IsolatedFromAbove, IsTerminator, Pure
from xdsl.utils.exceptions import VerifyException

from dlc.dialects.graph_base import (
    Attrs,
    GraphOp,
    IntAttribute,
    IntsAttribute,
    normalize_axis,
    numpy_dtype,
    or_default,
    ShapeError,
)
from dlc.dialects.graph.common import _check_element, Types


# Bodies are isolated from above: every value a body reads is an operand of
# the op and an argument of the body's block, so a body is a closed function
# (the evaluator runs it on an environment of its own, and expand-control-flow
# clones it without capture analysis). The ops are not in GRAPH_OPS (the
# straight-line ops every per-op test iterates); expand-control-flow rewrites
# them into straight-line graph ops before lower-to-loops.


def _yield_types(region, what: str) -> list[TensorType]:
    block = region.blocks.first
    if block is None or len(region.blocks) != 1:
        raise ShapeError(f"{what} must have exactly one block")
    last = block.last_op
    if not isinstance(last, YieldOp):
        raise ShapeError(f"{what} must end with graph.yield")
    return [v.type for v in last.operands]


def _check_block_args(region, expected: Sequence[Attribute], what: str) -> None:
    got = [a.type for a in region.blocks.first.args] if region.blocks.first else []
    if got != list(expected):
        raise ShapeError(
            f"{what} block arguments ({', '.join(map(str, got))}) must be "
            f"({', '.join(map(str, expected))})"
        )


def _scalar_of(t: TensorType, rule: str, what: str) -> None:
    _check_element(t, rule, what)
    if math.prod(t.get_shape()) != 1:
        raise ShapeError(f"{what} must hold one element, got {t}")


class _RegionOp(GraphOp):
    """Region ops infer their results from operands, attributes and the body's
    graph.yield, so ``make`` takes the bodies and ``verify_`` checks them."""

    @classmethod
    def infer_regions(cls, operand_types: Types, attrs: Attrs, regions) -> list[TensorType]:
        raise NotImplementedError(cls.__name__)

    @classmethod
    def infer(cls, operand_types: Types, attrs: Attrs) -> list[TensorType]:
        raise ShapeError("needs its regions to infer result types (build it with make_with_regions)")

    @classmethod
    def make_with_regions(cls, operands, regions, **attributes):
        from dlc.dialects.graph_base import _operand_tensor_types, to_attribute

        values = [o.results[0] if hasattr(o, "results") else o for o in operands]
        attrs = {k: to_attribute(v) for k, v in attributes.items() if v is not None}
        try:
            cls.check_attribute_names(attrs)
            typed = Attrs(attrs, cls)
            result_types = cls.infer_regions(_operand_tensor_types(values), typed, regions)
            cls.check_attribute_kinds(typed)
        except ShapeError as err:
            raise VerifyException(f"{cls.name}: {err}") from None
        return cls.create(operands=values, result_types=result_types, attributes=attrs,
                          regions=list(regions))

    # Syntax: `graph.loop %a, %b attributes {attrs} {body} : (types) -> types`.
    # The `attributes` keyword (as in func.func) keeps the attribute dictionary
    # apart from the region that follows it; both start with `{`.
    def print(self, printer: Printer) -> None:
        if self.operands:
            printer.print_string(" ")
            printer.print_list(self.operands, printer.print_operand)
        if self.attributes:
            printer.print_string(" attributes")
            printer.print_op_attributes(self.attributes)
        self._print_regions(printer)
        printer.print_string(" : ")
        printer.print_function_type([o.type for o in self.operands], [r.type for r in self.results])

    @classmethod
    def parse(cls, parser: Parser):
        from xdsl.utils.mlir_lexer import MLIRTokenKind

        pos = parser.pos
        operands = []
        if parser._current_token.kind == MLIRTokenKind.PERCENT_IDENT:
            operands = parser.parse_comma_separated_list(
                parser.Delimiter.NONE, parser.parse_unresolved_operand)
        attributes = {}
        if parser.parse_optional_keyword("attributes") is not None:
            attributes = parser.parse_optional_attr_dict()
        regions = cls._parse_regions(parser)
        parser.parse_punctuation(":")
        func_type = parser.parse_function_type()
        values = parser.resolve_operands(operands, func_type.inputs.data, pos)
        return cls.create(operands=values, result_types=list(func_type.outputs.data),
                          attributes=attributes, regions=regions)

    def verify_(self) -> None:
        from dlc.dialects.graph_base import _operand_tensor_types

        try:
            self.check_attribute_names(self.attributes)
            inferred = self.infer_regions(_operand_tensor_types(self.operands), self.attrs,
                                          list(self.regions))
            self.check_attribute_kinds(self.attrs)
        except ShapeError as err:
            raise VerifyException(f"{self.name}: {err}") from None
        actual = [r.type for r in self.results]
        if list(inferred) != actual:
            raise VerifyException(
                f"{self.name}: result types ({', '.join(map(str, actual))}) do not match the "
                f"inferred types ({', '.join(map(str, inferred))})"
            )


@irdl_op_definition
class IfOp(_RegionOp):
    """Run the ``then`` or the ``else`` body on the operands after the condition
    (a one-element i1 tensor); the results are what the chosen body yields.
    Both bodies take the same arguments and must yield the same types.

    ```mlir
    %r = graph.if %c, %x {
    ^bb0(%a: tensor<3xf32>):
      %n = graph.neg %a : (tensor<3xf32>) -> tensor<3xf32>
      graph.yield %n : (tensor<3xf32>) -> ()
    } {
    ^bb0(%a: tensor<3xf32>):
      graph.yield %a : (tensor<3xf32>) -> ()
    } : (tensor<i1>, tensor<3xf32>) -> tensor<3xf32>
    ```
    """

    name = "graph.if"
    cond = operand_def(TensorType)
    inputs = var_operand_def(TensorType)
    outs = var_result_def(TensorType)
    then_body = region_def("single_block")
    else_body = region_def("single_block")
    traits = traits_def(IsolatedFromAbove())

    @classmethod
    def infer_regions(cls, operand_types: Types, attrs: Attrs, regions) -> list[TensorType]:
        if not operand_types:
            raise ShapeError("expects a condition operand")
        _scalar_of(operand_types[0], "bool", "condition")
        if len(regions) != 2:
            raise ShapeError(f"expects 2 regions (then, else), got {len(regions)}")
        for region, what in zip(regions, ("then body", "else body")):
            _yield_types(region, what)
            _check_block_args(region, operand_types[1:], what)
        then_types = _yield_types(regions[0], "then body")
        else_types = _yield_types(regions[1], "else body")
        if then_types != else_types:
            raise ShapeError(
                f"then body yields ({', '.join(map(str, then_types))}) but else body yields "
                f"({', '.join(map(str, else_types))}); both must yield the same types"
            )
        return then_types

    def reference_regions(self, args, evaluate_block) -> list[np.ndarray]:
        taken = self.then_body if bool(np.asarray(args[0]).reshape(-1)[0]) else self.else_body
        block = taken.blocks.first
        return evaluate_block(block, dict(zip(block.args, args[1:])))


@irdl_op_definition
class LoopOp(_RegionOp):
    """ONNX Loop with a static bound. Operands: the trip count M (one i64), the
    initial condition (one i1), ``num_carried`` loop-carried values, then values
    the body only reads. The body gets (iteration i64, condition i1, carried...,
    read-only...) and yields (next condition, next carried..., scan elements...).
    The body runs while ``i < min(M, max_iterations)`` and the condition holds.
    Results: the final carried values, then each scan element stacked into
    ``max_iterations`` rows (rows of iterations that did not run are zero; the
    static bound is what gives scan outputs a static shape).

    ```mlir
    %r, %s = graph.loop %m, %c, %x attributes {max_iterations = 4 : i64, num_carried = 1 : i64} {
    ^bb0(%i: tensor<i64>, %k: tensor<i1>, %v: tensor<3xf32>):
      %w = graph.add %v, %v : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
      graph.yield %k, %w, %w : (tensor<i1>, tensor<3xf32>, tensor<3xf32>) -> ()
    } : (tensor<i64>, tensor<i1>, tensor<3xf32>) -> (tensor<3xf32>, tensor<4x3xf32>)
    ```
    """

    name = "graph.loop"
    num_carried = IntAttribute()
    max_iterations = IntAttribute()
    operands_ = var_operand_def(TensorType)
    outs = var_result_def(TensorType)
    body = region_def("single_block")
    traits = traits_def(IsolatedFromAbove())

    @classmethod
    def infer_regions(cls, operand_types: Types, attrs: Attrs, regions) -> list[TensorType]:
        if len(operand_types) < 2:
            raise ShapeError("expects a trip count and a condition operand")
        _scalar_of(operand_types[0], "int", "trip count")
        _scalar_of(operand_types[1], "bool", "condition")
        carried = attrs.num_carried
        bound = attrs.max_iterations
        if not 0 <= carried <= len(operand_types) - 2:
            raise ShapeError(f"num_carried {carried} is out of range for {len(operand_types) - 2} values")
        if bound < 0:
            raise ShapeError(f"max_iterations {bound} must be >= 0")
        if len(regions) != 1:
            raise ShapeError(f"expects 1 region (the body), got {len(regions)}")
        scalar_i1 = TensorType(i1, [])
        _check_block_args(regions[0], [TensorType(i64, []), scalar_i1, *operand_types[2:]], "body")
        yielded = _yield_types(regions[0], "body")
        if len(yielded) < 1 + carried:
            raise ShapeError(f"body yields {len(yielded)} values, needs at least {1 + carried} "
                             "(condition, carried values)")
        _scalar_of(yielded[0], "bool", "yielded condition")
        if yielded[0] != scalar_i1:
            raise ShapeError(f"yielded condition must be {scalar_i1}, got {yielded[0]}")
        want = list(operand_types[2:2 + carried])
        if yielded[1:1 + carried] != want:
            raise ShapeError(
                f"body yields carried values ({', '.join(map(str, yielded[1:1 + carried]))}) "
                f"but they enter as ({', '.join(map(str, want))})"
            )
        scans = [TensorType(t.element_type, [bound, *t.get_shape()]) for t in yielded[1 + carried:]]
        return want + scans

    def reference_regions(self, args, evaluate_block) -> list[np.ndarray]:
        carried_n = self.num_carried
        bound = self.max_iterations
        trips = min(int(np.asarray(args[0]).reshape(-1)[0]), bound)
        cond = np.asarray(args[1]).reshape(())
        carried = list(args[2:2 + carried_n])
        readonly = list(args[2 + carried_n:])
        block = self.body.blocks.first
        scan_types = [r.type for r in self.results[carried_n:]]
        scans = [np.zeros(t.get_shape(), numpy_dtype(t.element_type)) for t in scan_types]
        i = 0
        while i < trips and bool(cond):
            inputs = [np.array(i, np.int64), cond, *carried, *readonly]
            outs = evaluate_block(block, dict(zip(block.args, inputs)))
            cond = np.asarray(outs[0]).reshape(())
            carried = outs[1:1 + carried_n]
            for row, value in zip(scans, outs[1 + carried_n:]):
                row[i] = value
            i += 1
        return [*carried, *scans]


@irdl_op_definition
class ScanOp(_RegionOp):
    """ONNX Scan (opset 9+). Operands: ``num_carried`` initial states, then
    ``num_scan_inputs`` scan inputs, then values the body only reads. Step t
    gives the body (states..., slice t of each scan input along its axis,
    read-only...); it yields (next states..., scan elements...). Results: the
    final states, then the scan elements stacked along their output axis.
    Optional per-input/output ``*_axes`` (default 0) and ``*_directions``
    (0 forward, 1 reverse) as in ONNX.

    ```mlir
    %s, %ys = graph.scan %init, %xs attributes {num_carried = 1 : i64, num_scan_inputs = 1 : i64} {
    ^bb0(%acc: tensor<2xf32>, %x: tensor<2xf32>):
      %n = graph.add %acc, %x : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
      graph.yield %n, %n : (tensor<2xf32>, tensor<2xf32>) -> ()
    } : (tensor<2xf32>, tensor<5x2xf32>) -> (tensor<2xf32>, tensor<5x2xf32>)
    ```
    """

    name = "graph.scan"
    num_carried = IntAttribute()
    num_scan_inputs = IntAttribute()
    scan_input_axes = IntsAttribute(optional=True)  # default: 0 per scan input
    scan_input_directions = IntsAttribute(optional=True)  # default: 0 per scan input
    scan_output_axes = IntsAttribute(optional=True)  # default: 0 per scan output
    scan_output_directions = IntsAttribute(optional=True)  # default: 0 per scan output
    operands_ = var_operand_def(TensorType)
    outs = var_result_def(TensorType)
    body = region_def("single_block")
    traits = traits_def(IsolatedFromAbove())

    @staticmethod
    def layout(attrs: Attrs, operand_types: Types, num_scan_outputs: int):
        """(num_carried, num_scan_inputs, input axes, input reverse flags,
        output axes, output reverse flags, sequence length), checked."""
        carried = attrs.num_carried
        n_in = attrs.num_scan_inputs
        if carried < 0 or n_in < 1 or carried + n_in > len(operand_types):
            raise ShapeError(f"num_carried {carried} + num_scan_inputs {n_in} do not fit "
                             f"{len(operand_types)} operands (at least one scan input)")
        in_types = operand_types[carried:carried + n_in]
        in_axes = or_default(attrs.scan_input_axes, [0] * n_in)
        in_dirs = or_default(attrs.scan_input_directions, [0] * n_in)
        out_axes = or_default(attrs.scan_output_axes, [0] * num_scan_outputs)
        out_dirs = or_default(attrs.scan_output_directions, [0] * num_scan_outputs)
        for name, values, n in (("scan_input_axes", in_axes, n_in), ("scan_input_directions", in_dirs, n_in),
                                ("scan_output_axes", out_axes, num_scan_outputs),
                                ("scan_output_directions", out_dirs, num_scan_outputs)):
            if len(values) != n:
                raise ShapeError(f"{name} has {len(values)} entries, expected {n}")
            if "directions" in name and any(d not in (0, 1) for d in values):
                raise ShapeError(f"{name} entries must be 0 (forward) or 1 (reverse)")
        in_axes = [normalize_axis(a, len(t.get_shape()), "scan input axis")
                   for a, t in zip(in_axes, in_types)]
        lengths = {t.get_shape()[a] for a, t in zip(in_axes, in_types)}
        if len(lengths) != 1:
            raise ShapeError(f"scan inputs have different lengths {sorted(lengths)} along their axes")
        return carried, n_in, in_axes, in_dirs, list(out_axes), out_dirs, lengths.pop()

    @classmethod
    def infer_regions(cls, operand_types: Types, attrs: Attrs, regions) -> list[TensorType]:
        if len(regions) != 1:
            raise ShapeError(f"expects 1 region (the body), got {len(regions)}")
        yielded = _yield_types(regions[0], "body")
        carried = attrs.num_carried
        num_out = len(yielded) - carried
        if num_out < 0:
            raise ShapeError(f"body yields {len(yielded)} values, fewer than num_carried {carried}")
        carried, n_in, in_axes, _, out_axes, _, length = cls.layout(attrs, operand_types, num_out)
        slices = []
        for t, a in zip(operand_types[carried:carried + n_in], in_axes):
            shape = list(t.get_shape())
            slices.append(TensorType(t.element_type, shape[:a] + shape[a + 1:]))
        _check_block_args(regions[0], [*operand_types[:carried], *slices,
                                       *operand_types[carried + n_in:]], "body")
        states = list(operand_types[:carried])
        if yielded[:carried] != states:
            raise ShapeError(
                f"body yields states ({', '.join(map(str, yielded[:carried]))}) but they enter "
                f"as ({', '.join(map(str, states))})"
            )
        outs = []
        for t, a in zip(yielded[carried:], out_axes):
            shape = list(t.get_shape())
            a = normalize_axis(a, len(shape) + 1, "scan output axis")
            outs.append(TensorType(t.element_type, shape[:a] + [length] + shape[a:]))
        return states + outs

    def reference_regions(self, args, evaluate_block) -> list[np.ndarray]:
        types = [np.asarray(a) for a in args]
        operand_types = [o.type for o in self.operands]
        num_out = len(self.results) - self.num_carried
        carried, n_in, in_axes, in_dirs, out_axes, out_dirs, length = self.layout(
            self.attrs, operand_types, num_out)
        states = types[:carried]
        scan_inputs = types[carried:carried + n_in]
        readonly = types[carried + n_in:]
        block = self.body.blocks.first
        rows: list[list[np.ndarray]] = [[] for _ in range(num_out)]
        for t in range(length):
            slices = [np.take(x, length - 1 - t if rev else t, axis=a)
                      for x, a, rev in zip(scan_inputs, in_axes, in_dirs)]
            outs = evaluate_block(block, dict(zip(block.args, [*states, *slices, *readonly])))
            states = outs[:carried]
            for k, value in enumerate(outs[carried:]):
                rows[k].append(np.asarray(value))
        results = list(states)
        for k, (a, rev) in enumerate(zip(out_axes, out_dirs)):
            stacked = np.stack(rows[k][::-1] if rev else rows[k], axis=0)
            a = normalize_axis(a, stacked.ndim, "scan output axis")
            results.append(np.moveaxis(stacked, 0, a))
        return results


@irdl_op_definition
class YieldOp(GraphOp):
    """Terminator of graph.if / graph.loop / graph.scan bodies: their results.

    ```mlir
    graph.yield %a, %b : (tensor<3xf32>, tensor<i1>) -> ()
    ```
    """

    name = "graph.yield"
    values = var_operand_def(TensorType)
    traits = traits_def(IsTerminator(), HasParent(IfOp, LoopOp, ScanOp), Pure())

    @classmethod
    def infer(cls, operand_types: Types, attrs: Attrs) -> list[TensorType]:
        return []


# Not in GRAPH_OPS (see the comment at the top of this module); the dialect adds them.
CONTROL_FLOW_OPS: list[type[GraphOp]] = [IfOp, LoopOp, ScanOp, YieldOp]
for _op in CONTROL_FLOW_OPS:
    _op.CONTROL_FLOW = True
