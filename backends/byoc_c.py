"""BYOC target ``c``: readable C99 for partitions of elementwise ops and 2-D matmuls
(TVM's ccompiler example), built with the system C compiler.

Each op becomes one loop nest over its output (numpy broadcasting through zero
strides), f32 only; intermediates live in heap buffers (a failed malloc returns 1).
The pattern table has one composite, ``c.add_relu`` (relu(add(a, b)), emitted as
one loop: see ``_Emitter``). Registered for dlc.byoc as target "c" (dlc.byoc.targets names this module).
"""

from __future__ import annotations

from xdsl.dialects import func
from xdsl.dialects.builtin import Float32Type, IntegerAttr, StringAttr, TensorType
from xdsl.ir import Operation, SSAValue

from dlc.byoc import (
    COMPOSITE_ID_ATTR,
    CodegenContext,
    CodegenError,
    ExternalKernel,
    codegen,
    is_op,
    pattern_table,
    supports,
    wildcard,
)

# op name -> C expression of its scalar operands
UNARY = {
    "graph.relu": "({0} > 0.0f ? {0} : 0.0f)", "graph.neg": "(-{0})", "graph.abs": "fabsf({0})",
    "graph.exp": "expf({0})", "graph.tanh": "tanhf({0})", "graph.sqrt": "sqrtf({0})",
    "graph.sigmoid": "(1.0f / (1.0f + expf(-{0})))", "graph.log": "logf({0})",
    "graph.rsqrt": "(1.0f / sqrtf({0}))", "graph.erf": "erff({0})",
}
BINARY = {
    "graph.add": "({0} + {1})", "graph.sub": "({0} - {1})", "graph.mul": "({0} * {1})",
    "graph.div": "({0} / {1})", "graph.max": "fmaxf({0}, {1})", "graph.min": "fminf({0}, {1})",
}


def _f32(op: Operation) -> bool | str:
    for v in (*op.operands, *op.results):
        if not isinstance(v.type, TensorType) or not isinstance(v.type.element_type, Float32Type):
            return f"element type {getattr(v.type, 'element_type', v.type)} (the c codegen emits float only)"
    return True


@supports("c", *UNARY, *BINARY, "graph.clip")
def _elementwise(op: Operation) -> bool | str:
    return _f32(op)


@supports("c", "graph.matmul")
def _matmul(op: Operation) -> bool | str:
    ok = _f32(op)
    if ok is not True:
        return ok
    if any(len(v.type.get_shape()) != 2 for v in op.operands):
        return "matmul of rank other than 2 x 2"
    return True


def _f32_match(m) -> bool | str:
    """The composite's check: every absorbed op on f32 (a reason string otherwise)."""
    for op in m.ops:
        if (ok := _f32(op)) is not True:
            return ok
    return True


pattern_table("c", [("add_relu", is_op("graph.relu")(is_op("graph.add")(wildcard(), wildcard())), _f32_match)])


def _shape(t: TensorType) -> list[int]:
    return [int(d) for d in t.get_shape()]


def _index(shape: list[int], out_shape: list[int]) -> str:
    """The flat row-major index into a tensor of ``shape`` broadcast to ``out_shape``,
    in terms of the loop variables i0..i{n-1} of the output."""
    rank, terms, stride = len(out_shape), [], 1
    for k in range(len(shape) - 1, -1, -1):
        axis = rank - len(shape) + k
        if shape[k] != 1:
            terms.append(f"i{axis}" if stride == 1 else f"i{axis} * {stride}")
        stride *= shape[k]
    return " + ".join(reversed(terms)) or "0"


def _composite_id(op: Operation) -> int | None:
    cid = op.attributes.get(COMPOSITE_ID_ATTR)
    return cid.value.data if isinstance(cid, IntegerAttr) else None


class _Emitter:
    """One C function per partition: every buffer is allocated up front (all NULL first,
    so a failed malloc frees what was allocated and returns 1), then one loop nest per
    op. Inside a composite, an elementwise value read only by the next op of the same
    composite, at the same shape, is no buffer: its expression is inlined there
    (``c.add_relu`` is one loop)."""

    def __init__(self, partition: func.FuncOp, symbol: str):
        self.fn = partition
        self.symbol = symbol
        self.lines: list[str] = []
        self.name: dict[SSAValue, str] = {}
        self.inlined: set[SSAValue] = set()

    def loop_nest(self, out_shape: list[int], body: str) -> None:
        indent = "  "
        for axis, n in enumerate(out_shape):
            self.lines.append(f"{indent}for (int64_t i{axis} = 0; i{axis} < {n}; ++i{axis})")
            indent += "  "
        self.lines.append(f"{indent}{body}")

    def load(self, value: SSAValue, out_shape: list[int]) -> str:
        if value in self.inlined:
            return self.expression(value.owner, out_shape)
        return f"{self.name[value]}[{_index(_shape(value.type), out_shape)}]"

    def expression(self, op: Operation, out_shape: list[int]) -> str:
        if op.name in UNARY:
            return UNARY[op.name].format(self.load(op.operands[0], out_shape))
        if op.name in BINARY:
            return BINARY[op.name].format(*(self.load(v, out_shape) for v in op.operands))
        if op.name == "graph.clip":  # bounds as float literals; an absent one is infinite
            expr = self.load(op.operands[0], out_shape)
            if op.min != float("-inf"):
                expr = f"fmaxf({expr}, {float(op.min)!r}f)"
            if op.max != float("inf"):
                expr = f"fminf({expr}, {float(op.max)!r}f)"
            return expr
        raise CodegenError(f"BYOC target 'c' cannot emit '{op.name}' (in partition @{self.symbol})")

    def _inlinable(self, res: SSAValue, outputs: list[SSAValue]) -> bool:
        op = res.owner
        users = [use.operation for use in res.uses]
        if res in outputs or len(users) != 1 or op.name == "graph.matmul":
            return False
        user = users[0]
        cid = _composite_id(op)
        return cid is not None and _composite_id(user) == cid and user.name != "graph.matmul" \
            and _shape(user.results[0].type) == _shape(res.type)

    def emit(self) -> str:
        block = self.fn.body.block
        ret = block.last_op
        outs = list(ret.operands)
        params = [f"void *arg{i}" for i in range(len(block.args))] + [f"void *out{i}" for i in range(len(outs))]
        head = [f"/* partition @{self.symbol}: generated by dlc's BYOC target 'c' */",
                "#include <math.h>", "#include <stdint.h>", "#include <stdlib.h>", "#include <string.h>", "",
                f"int32_t {self.symbol}({', '.join(params) or 'void'}) {{", "  int32_t status = 0;"]
        for i, a in enumerate(block.args):
            self.name[a] = f"a{i}"
            head.append(f"  const float *a{i} = (const float *)arg{i};")
        out_name: dict[SSAValue, str] = {}
        for i, v in enumerate(outs):
            if v not in out_name and v not in self.name:
                out_name[v] = f"o{i}"
                head.append(f"  float *o{i} = (float *)out{i};")
        ops = [op for op in block.ops if op is not ret]
        temps: list[tuple[str, int]] = []
        for op in ops:
            res = op.results[0]
            if res in out_name:
                self.name[res] = out_name[res]
            elif self._inlinable(res, outs):
                self.inlined.add(res)
            else:
                self.name[res] = f"t{len(temps)}"
                temps.append((self.name[res], max(1, _count(res.type))))
        if temps:
            head.append("  float " + ", ".join(f"*{t} = NULL" for t, _ in temps) + ";")
        for t, n in temps:
            head.append(f"  if (!({t} = (float *)malloc({n} * sizeof(float)))) {{ status = 1; goto done; }}")
        for op in ops:
            if op.results[0] in self.inlined:
                continue
            self.lines.append(f"  /* {op.name}{self._tag(op)} */")
            self.op(op)
        for i, v in enumerate(outs):  # a result that is an argument or an earlier result: copy
            if out_name.get(v) != f"o{i}":
                self.lines.append(f"  memcpy(out{i}, {self.name[v]}, {_count(v.type)} * sizeof(float));")
        tail = ["done:" if temps else "", *(f"  free({t});" for t, _ in temps), "  return status;", "}"]
        return "\n".join(head + self.lines + [line for line in tail if line]) + "\n"

    @staticmethod
    def _tag(op: Operation) -> str:
        composite = op.attributes.get("dlc.composite")
        if isinstance(composite, StringAttr):
            return f" (composite {composite.data} #{_composite_id(op)})"
        return ""

    def op(self, op: Operation) -> None:
        res = op.results[0]
        out_shape = _shape(res.type)
        if op.name == "graph.matmul":
            (m, k), (_, n) = (_shape(v.type) for v in op.operands)
            a, b, c = self.name[op.operands[0]], self.name[op.operands[1]], self.name[res]
            self.lines += [
                f"  for (int64_t i = 0; i < {m}; ++i)",
                f"    for (int64_t j = 0; j < {n}; ++j) {{",
                "      float acc = 0.0f;",
                f"      for (int64_t p = 0; p < {k}; ++p) acc += {a}[i * {k} + p] * {b}[p * {n} + j];",
                f"      {c}[i * {n} + j] = acc;",
                "    }",
            ]
            return
        dest = f"{self.name[res]}[{_index(out_shape, out_shape)}]"
        self.loop_nest(out_shape, f"{dest} = {self.expression(op, out_shape)};")


def _count(t: TensorType) -> int:
    n = 1
    for d in _shape(t):
        n *= d
    return n


@codegen("c")
def generate(partition: func.FuncOp, ctx: CodegenContext) -> ExternalKernel:
    source = _Emitter(partition, ctx.symbol).emit()
    ops = [op.name for op in partition.body.block.ops if op is not partition.body.block.last_op]
    return ExternalKernel(symbol=ctx.symbol, sources=[(f"{ctx.symbol}.c", source)], libraries=["m"],
                          report=f"c: {len(ops)} ops as C loops in {ctx.symbol}.c")
