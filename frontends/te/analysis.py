"""Semantic analysis of a TE program: names, types, index ranges, bounds.

Produces a :class:`Program` of typed expression trees that both the loop
lowering (``lowering.py``) and the numpy interpreter (``reference.py``) walk.

Rules (documented for users in ``frontends/te/__init__.py``):

* every index of a statement is an output index (left-hand side) or a
  reduction axis (``sum(k: ...)``); any other name is an error;
* a range comes from, in order: an ``output`` declaration or ``k in lo..hi``;
  a subscript that is exactly the index (``A[i, k]``: i ranges over A's dim 0);
  a subscript ``c*i + rest`` with ``rest``'s range known (the largest range
  that stays in bounds: ``X[i + r]`` gives the "valid" conv range);
  accesses inside ``select`` branches are used last;
* two whole-subscript uses that disagree are a shape conflict;
* an access that can leave its tensor's bounds is an error, unless it is in a
  ``select`` branch: there the subscripts are clamped into range (so the
  access is safe) and the select is expected to discard the value — this is
  how padding is written. Bounds are interval arithmetic over the ranges; a
  ``select`` inside a subscript counts both branches (clamp with ``max``/``min``
  instead: ``X[max(i - 1, 0)]``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import numpy as np

from dlc.frontends.te import syntax as S
from dlc.frontends.te.syntax import TEError

DTYPES = {"f32": np.float32, "f64": np.float64, "i32": np.int32, "i64": np.int64}
REDUCERS = ("sum", "prod", "max", "min")
UNARY_FUNCS = ("exp", "log", "sqrt", "tanh", "abs")
FLOAT_ONLY = ("exp", "log", "sqrt", "tanh")
CMP_OPS = ("<", "<=", ">", ">=", "==", "!=")


@dataclass(eq=False)
class Tensor:
    name: str
    dtype: str  # f32 f64 i32 i64
    shape: tuple[int, ...]
    role: str  # input | intermediate | output
    line: int = 0
    col: int = 0

    @property
    def is_float(self) -> bool:
        return self.dtype.startswith("f")

    def type_str(self) -> str:
        return f"{self.dtype}[{', '.join(map(str, self.shape))}]"


@dataclass(eq=False)
class IndexVar:
    name: str
    role: str  # output | reduction
    line: int
    col: int
    lower: int | None = None
    upper: int | None = None  # exclusive
    declared: bool = False

    @property
    def extent(self) -> int:
        return (self.upper or 0) - (self.lower or 0)

    @property
    def known(self) -> bool:
        return self.upper is not None


# ---------------------------------------------------------------------------
# typed expressions: kind is "index" (integer index arithmetic), "value" (the
# statement's element type) or "bool"
# ---------------------------------------------------------------------------


@dataclass(eq=False)
class Expr:
    kind: str


@dataclass(eq=False)
class Const(Expr):
    value: int | float


@dataclass(eq=False)
class Var(Expr):
    var: IndexVar


@dataclass(eq=False)
class Cast(Expr):
    """index -> value."""

    operand: Expr


@dataclass(eq=False)
class Load(Expr):
    tensor: Tensor
    subscripts: list[Expr]
    guarded: bool  # inside a select branch
    line: int = 0
    col: int = 0
    clamp: list[bool] = field(default_factory=list)


@dataclass(eq=False)
class Unary(Expr):
    op: str  # neg exp log sqrt tanh abs
    operand: Expr


@dataclass(eq=False)
class Binary(Expr):
    op: str  # + - * / max min and or < <= > >= == !=
    lhs: Expr
    rhs: Expr


@dataclass(eq=False)
class Select(Expr):
    cond: Expr
    then: Expr
    other: Expr


@dataclass(eq=False)
class Reduce(Expr):
    op: str  # sum prod max min
    axes: list[IndexVar]
    body: Expr
    enclosing: list[IndexVar]  # the indices bound around it (its scratch is indexed by them)


@dataclass(eq=False)
class Statement:
    tensor: Tensor
    indices: list[IndexVar]
    value: Expr
    variables: list[IndexVar]  # output indices, then reduction axes in order
    loads: list[Load]
    line: int
    col: int


@dataclass(eq=False)
class Program:
    inputs: list[Tensor]
    outputs: list[Tensor]
    intermediates: list[Tensor]
    statements: list[Statement]


def render(e: Expr) -> str:
    """Readable source-like text of an expression (for messages)."""
    if isinstance(e, Const):
        return repr(e.value)
    if isinstance(e, Var):
        return e.var.name
    if isinstance(e, Cast):
        return render(e.operand)
    if isinstance(e, Load):
        return f"{e.tensor.name}[{', '.join(render(s) for s in e.subscripts)}]"
    if isinstance(e, Unary):
        return f"-{render(e.operand)}" if e.op == "neg" else f"{e.op}({render(e.operand)})"
    if isinstance(e, Binary):
        if e.op in ("max", "min"):
            return f"{e.op}({render(e.lhs)}, {render(e.rhs)})"
        return f"{render(e.lhs)} {e.op} {render(e.rhs)}"
    if isinstance(e, Select):
        return f"select({render(e.cond)}, {render(e.then)}, {render(e.other)})"
    if isinstance(e, Reduce):
        return f"{e.op}({', '.join(a.name for a in e.axes)}: {render(e.body)})"
    return "?"


# ---------------------------------------------------------------------------
# analysis
# ---------------------------------------------------------------------------


Binding = tuple[tuple[int, ...], str]  # (shape, dtype) given from outside


def analyse(module: S.Module, bindings: list[Binding] | None = None) -> Program:
    """Check ``module`` and resolve names, types and ranges (raises TEError).

    ``bindings``: shapes/dtypes of the inputs given from outside (graph.custom
    operands): they bind to the ``input`` declarations in order or, when there
    are none, to the tensors read before being computed, in order of first use.
    """
    return _Analyser(module, bindings).run()


class _Analyser:
    def __init__(self, module: S.Module, bindings: list[Binding] | None):
        self.module = module
        self.bindings = bindings
        self.tensors: dict[str, Tensor] = {}
        self.inputs: list[Tensor] = []
        self.output_decls: dict[str, S.OutputDecl] = {}

    def run(self) -> Program:
        stmts = self.module.statements
        input_decls = [s for s in stmts if isinstance(s, S.InputDecl)]
        for decl in stmts:
            if isinstance(decl, S.OutputDecl):
                if decl.name in self.output_decls:
                    raise TEError(f"output '{decl.name}' is declared twice", decl.line, decl.col)
                self.output_decls[decl.name] = decl
        self._declare_inputs(input_decls)
        computes = [s for s in stmts if isinstance(s, S.Compute)]
        if not computes:
            raise TEError("the program computes nothing (no statement like C[i] = ...)", 1, 1)
        statements = [self._statement(c) for c in computes]
        if self.bindings is not None and len(self.bindings) != len(self.inputs):
            raise TEError(f"{len(self.bindings)} operands given but the program has "
                          f"{len(self.inputs)} inputs ({', '.join(t.name for t in self.inputs) or 'none'})", 1, 1)
        computed = [s.tensor for s in statements]
        for name, decl in self.output_decls.items():
            if name not in {t.name for t in computed}:
                raise TEError(f"output '{name}' is declared but never computed", decl.line, decl.col)
        if self.output_decls:
            by_name = {t.name: t for t in computed}
            outputs = [by_name[name] for name in self.output_decls]  # declaration order
        else:
            read = {id(load.tensor) for s in statements for load in s.loads}
            outputs = [t for t in computed if id(t) not in read] or [computed[-1]]
        for t in computed:
            t.role = "output" if t in outputs else "intermediate"
        return Program(self.inputs, outputs, [t for t in computed if t not in outputs], statements)

    # -- tensors ------------------------------------------------------------------
    def _declare_inputs(self, decls: list[S.InputDecl]) -> None:
        if self.bindings is not None and decls and len(decls) != len(self.bindings):
            raise TEError(f"{len(self.bindings)} operands given but the program declares "
                          f"{len(decls)} inputs", decls[0].line, decls[0].col)
        for k, decl in enumerate(decls):
            if decl.name in self.tensors:
                raise TEError(f"tensor '{decl.name}' is declared twice", decl.line, decl.col)
            if decl.name in self.output_decls:
                raise TEError(f"'{decl.name}' is declared both input and output", decl.line, decl.col)
            if self.bindings is not None:
                shape, dtype = self.bindings[k]
                if decl.dtype is not None and (tuple(decl.shape), decl.dtype) != (tuple(shape), dtype):
                    raise TEError(f"input '{decl.name}' is declared {decl.dtype}{list(decl.shape)} but operand "
                                  f"#{k} is {dtype}{list(shape)}", decl.line, decl.col)
            elif decl.dtype is None:
                raise TEError(f"input '{decl.name}' needs a type and shape, like `input {decl.name}: f32[4, 8]`",
                              decl.line, decl.col)
            else:
                shape, dtype = tuple(decl.shape), decl.dtype
            self._add_input(decl.name, tuple(shape), dtype, decl)

    def _add_input(self, name, shape, dtype, node) -> Tensor:
        t = Tensor(name, dtype, tuple(int(d) for d in shape), "input", node.line, node.col)
        if any(d < 0 for d in t.shape):
            raise TEError(f"tensor '{name}' has a negative dimension", node.line, node.col)
        self.tensors[name] = t
        self.inputs.append(t)
        return t

    def _tensor(self, name: str, node: S.Node) -> Tensor:
        t = self.tensors.get(name)
        if t is not None:
            return t
        implicit = self.bindings is not None and not any(
            isinstance(s, S.InputDecl) for s in self.module.statements)
        if implicit and len(self.inputs) < len(self.bindings):
            shape, dtype = self.bindings[len(self.inputs)]
            return self._add_input(name, shape, dtype, node)
        later = [s for s in self.module.statements if isinstance(s, S.Compute) and s.tensor == name]
        if later:
            raise TEError(f"tensor '{name}' is used before it is computed (line {later[0].line})",
                          node.line, node.col)
        if self.bindings is not None:
            bound = ", ".join(t.name for t in self.inputs) or "none"
            raise TEError(f"unknown tensor '{name}' ({len(self.bindings)} operands, bound to {bound})",
                          node.line, node.col)
        raise TEError(f"unknown tensor '{name}'", node.line, node.col)

    # -- statements ---------------------------------------------------------------
    def _statement(self, c: S.Compute) -> Statement:
        if c.tensor in self.tensors:
            what = "an input" if self.tensors[c.tensor].role == "input" else "already computed"
            raise TEError(f"tensor '{c.tensor}' is {what}; each tensor is computed once", c.line, c.col)
        indices: list[IndexVar] = []
        for n in c.indices:
            if any(v.name == n.name for v in indices):
                raise TEError(f"index '{n.name}' appears twice on the left-hand side", n.line, n.col)
            if n.name in self.tensors:
                raise TEError(f"'{n.name}' is a tensor, not an index", n.line, n.col)
            _check_index_name(n)
            indices.append(IndexVar(n.name, "output", n.line, n.col))
        decl = self.output_decls.get(c.tensor)
        if decl is not None:
            if len(decl.shape) != len(indices):
                raise TEError(f"rank mismatch: output '{c.tensor}' is declared with rank {len(decl.shape)} "
                              f"but computed with {len(indices)} ind{'ices' if len(indices) != 1 else 'ex'}", c.line, c.col)
            for v, d in zip(indices, decl.shape):
                v.lower, v.upper, v.declared = 0, d, True
        self.scope = {v.name: v for v in indices}
        self.variables = list(indices)
        self.loads: list[Load] = []
        self.stmt_dtype = decl.dtype if decl is not None else None
        self.read_dtypes: list[tuple[str, S.Node]] = []
        value = self._expr(c.value, guarded=False, enclosing=list(indices))
        dtype = self._statement_dtype(c)
        if value.kind == "bool":
            raise TEError("a comparison cannot be a tensor's value (use select(cond, a, b))",
                          c.value.line, c.value.col)
        value = _as_value(value)
        stmt = Statement(None, indices, value, self.variables, self.loads, c.line, c.col)  # type: ignore[arg-type]
        self._check_types(stmt, dtype)
        _infer_ranges(stmt)
        _check_bounds(stmt)
        tensor = Tensor(c.tensor, dtype, tuple(v.extent for v in indices), "intermediate", c.line, c.col)
        stmt.tensor = tensor
        self.tensors[c.tensor] = tensor
        return stmt

    def _statement_dtype(self, c: S.Compute) -> str:
        dtypes = {d for d, _ in self.read_dtypes}
        if self.stmt_dtype is not None:
            dtypes.add(self.stmt_dtype)
        if len(dtypes) > 1:
            ordered = [self.stmt_dtype] if self.stmt_dtype else []
            ordered += [d for d, _ in self.read_dtypes if d not in ordered]
            bad = next(n for d, n in self.read_dtypes if d != ordered[0])
            raise TEError(f"mixed element types {ordered[0]} and {next(d for d in ordered if d != ordered[0])} "
                          f"(a statement computes in one element type)", bad.line, bad.col)
        return dtypes.pop() if dtypes else "f32"

    def _check_types(self, stmt: Statement, dtype: str) -> None:
        if dtype.startswith("f"):
            return
        for e in _walk(stmt.value):
            if isinstance(e, Unary) and e.op in FLOAT_ONLY:
                raise TEError(f"{e.op} needs a float element type, but the statement computes {dtype}",
                              stmt.line, stmt.col)
            if isinstance(e, Const) and e.kind == "value" and isinstance(e.value, float) \
                    and not float(e.value).is_integer():
                raise TEError(f"literal {e.value} is not an integer, but the statement computes {dtype}",
                              stmt.line, stmt.col)

    # -- expressions --------------------------------------------------------------
    def _expr(self, n: S.Node, guarded: bool, enclosing: list[IndexVar]) -> Expr:
        if isinstance(n, S.IntLit):
            return Const("index", n.value)
        if isinstance(n, S.FloatLit):
            return Const("value", n.value)
        if isinstance(n, S.Name):
            var = self.scope.get(n.name)
            if var is not None:
                return Var("index", var)
            if n.name in self.tensors or self.bindings is not None:
                t = self._tensor(n.name, n)
                return self._load(t, [], guarded, n)
            raise TEError(f"unbound index '{n.name}' (not an output index, a reduction axis or a tensor)",
                          n.line, n.col)
        if isinstance(n, S.Access):
            t = self._tensor(n.tensor, n)
            subs = []
            for s in n.subscripts:
                e = self._expr(s, guarded, enclosing)
                if e.kind != "index":
                    raise TEError(f"subscript of '{n.tensor}' must be index arithmetic (indices, integers, + - *), "
                                  f"got {render(e)}", s.line, s.col)
                subs.append(e)
            return self._load(t, subs, guarded, n)
        if isinstance(n, S.Unary):
            x = self._expr(n.operand, guarded, enclosing)
            if x.kind == "bool":
                raise TEError("cannot negate a comparison", n.line, n.col)
            return Unary(x.kind, "neg", x)
        if isinstance(n, S.Binary):
            return self._binary(n, guarded, enclosing)
        if isinstance(n, S.Call):
            return self._call(n, guarded, enclosing)
        if isinstance(n, S.Axis):
            raise TEError(f"`{n.name} in {n.lower}..{n.upper}` only names a reduction axis, like sum({n.name} in "
                          f"{n.lower}..{n.upper}: ...)", n.line, n.col)
        raise TEError(f"unexpected {type(n).__name__}", n.line, n.col)

    def _load(self, t: Tensor, subs: list[Expr], guarded: bool, n: S.Node) -> Load:
        if len(subs) != len(t.shape):
            raise TEError(f"rank mismatch: '{t.name}' has rank {len(t.shape)} ({t.type_str()}) but is indexed "
                          f"with {len(subs)} subscript{'s' if len(subs) != 1 else ''}", n.line, n.col)
        if 0 in t.shape:  # even a clamped (select-guarded) subscript would read outside it
            raise TEError(f"'{t.name}' ({t.type_str()}) has no elements to read", n.line, n.col)
        load = Load("value", t, subs, guarded, n.line, n.col)
        self.loads.append(load)
        self.read_dtypes.append((t.dtype, n))
        return load

    def _binary(self, n: S.Binary, guarded, enclosing) -> Expr:
        a, b = self._expr(n.lhs, guarded, enclosing), self._expr(n.rhs, guarded, enclosing)
        if n.op in ("and", "or"):
            for x, node in ((a, n.lhs), (b, n.rhs)):
                if x.kind != "bool":
                    raise TEError(f"'{n.op}' needs comparisons on both sides, got {render(x)}", node.line, node.col)
            return Binary("bool", n.op, a, b)
        for x, node in ((a, n.lhs), (b, n.rhs)):
            if x.kind == "bool":
                raise TEError(f"a comparison can only be a select condition or an and/or operand, "
                              f"not an operand of '{n.op}'", node.line, node.col)
        if n.op in CMP_OPS:
            if a.kind == b.kind == "index":
                return Binary("bool", n.op, a, b)
            return Binary("bool", n.op, _as_value(a), _as_value(b))
        if n.op == "/" or a.kind == "value" or b.kind == "value":
            return Binary("value", n.op, _as_value(a), _as_value(b))
        return Binary("index", n.op, a, b)

    def _call(self, n: S.Call, guarded, enclosing) -> Expr:
        f = n.func
        if n.body is not None:
            return self._reduce(n, guarded, enclosing)
        if f in REDUCERS and f not in ("max", "min") or (f in ("max", "min") and len(n.args) == 1):
            raise TEError(f"{f} is a reduction: write {f}(k: expression) with its axis before ':'", n.line, n.col)
        arity = {"select": 3, "max": 2, "min": 2, **{u: 1 for u in UNARY_FUNCS}}
        if f not in arity:
            known = ", ".join(sorted(arity)) + ", sum, prod"
            raise TEError(f"unknown function '{f}' (known: {known})", n.line, n.col)
        if len(n.args) != arity[f]:
            raise TEError(f"{f} takes {arity[f]} argument{'s' if arity[f] > 1 else ''}, got {len(n.args)}",
                          n.line, n.col)
        if f == "select":
            cond = self._expr(n.args[0], guarded, enclosing)
            if cond.kind != "bool":
                raise TEError(f"select's condition must be a comparison, got {render(cond)}",
                              n.args[0].line, n.args[0].col)
            a, b = (self._expr(x, True, enclosing) for x in n.args[1:])
            for x, node in ((a, n.args[1]), (b, n.args[2])):
                if x.kind == "bool":
                    raise TEError("select's branches must be values, not comparisons", node.line, node.col)
            if a.kind == b.kind == "index":
                return Select("index", cond, a, b)
            return Select("value", cond, _as_value(a), _as_value(b))
        args = [self._expr(x, guarded, enclosing) for x in n.args]
        for x, node in zip(args, n.args):
            if x.kind == "bool":
                raise TEError(f"{f} takes a value, not a comparison", node.line, node.col)
        if f in ("max", "min"):
            a, b = args
            kind = "index" if a.kind == b.kind == "index" else "value"
            if kind == "value":
                a, b = _as_value(a), _as_value(b)
            return Binary(kind, f, a, b)
        x = args[0]
        if f == "abs" and x.kind == "index":
            return Binary("index", "max", x, Unary("index", "neg", x))
        return Unary("value", f, _as_value(x))

    def _reduce(self, n: S.Call, guarded, enclosing) -> Expr:
        if n.func not in REDUCERS:
            raise TEError(f"'{n.func}' is not a reduction (reductions: {', '.join(REDUCERS)})", n.line, n.col)
        if not n.args:
            raise TEError(f"{n.func} needs at least one axis before ':'", n.line, n.col)
        axes = []
        for a in n.args:
            if not isinstance(a, (S.Name, S.Axis)):
                raise TEError(f"a reduction axis must be a name or `name in lo..hi`", a.line, a.col)
            if a.name in self.scope or any(v.name == a.name for v in axes):
                raise TEError(f"index '{a.name}' is already bound in this statement "
                              f"(a reduction needs a new axis name)", a.line, a.col)
            if a.name in self.tensors:
                raise TEError(f"'{a.name}' is a tensor, not an axis name", a.line, a.col)
            _check_index_name(a)
            var = IndexVar(a.name, "reduction", a.line, a.col)
            if isinstance(a, S.Axis):
                if a.upper <= a.lower:
                    raise TEError(f"empty range {a.lower}..{a.upper} for axis '{a.name}'", a.line, a.col)
                var.lower, var.upper, var.declared = a.lower, a.upper, True
            axes.append(var)
            self.variables.append(var)
        for v in axes:
            self.scope[v.name] = v
        body = self._expr(n.body, guarded, enclosing + axes)
        for v in axes:
            del self.scope[v.name]
        if body.kind == "bool":
            raise TEError(f"{n.func} reduces values, not comparisons", n.body.line, n.body.col)
        return Reduce("value", n.func, axes, _as_value(body), list(enclosing))


def _check_index_name(n: S.Node) -> None:
    # Loops are named after indices, and xDSL drops a `_<digits>` suffix from SSA
    # names, so `i_2` would silently become loop `i`.
    if re.search(r"_[0-9]+$", n.name):
        raise TEError(f"index name '{n.name}' may not end in _<digits> (loops are named after indices "
                      f"and such suffixes are dropped); try '{n.name.replace('_', '')}'", n.line, n.col)


def _as_value(e: Expr) -> Expr:
    if e.kind != "index":
        return e
    if isinstance(e, Const):
        return Const("value", e.value)
    return Cast("value", e)


def _walk(e: Expr):
    yield e
    for child in _children(e):
        yield from _walk(child)


def _children(e: Expr) -> list[Expr]:
    if isinstance(e, (Cast, Unary)):
        return [e.operand]
    if isinstance(e, Load):
        return list(e.subscripts)
    if isinstance(e, Binary):
        return [e.lhs, e.rhs]
    if isinstance(e, Select):
        return [e.cond, e.then, e.other]
    if isinstance(e, Reduce):
        return [e.body]
    return []


# ---------------------------------------------------------------------------
# ranges
# ---------------------------------------------------------------------------


def affine(e: Expr) -> dict | None:
    """``{IndexVar: coeff, None: const}`` when ``e`` is affine, else None."""
    if isinstance(e, Const) and isinstance(e.value, int):
        return {None: e.value}
    if isinstance(e, Var):
        return {e.var: 1, None: 0}
    if isinstance(e, Unary) and e.op == "neg":
        a = affine(e.operand)
        return None if a is None else {k: -v for k, v in a.items()}
    if isinstance(e, Binary) and e.op in ("+", "-"):
        a, b = affine(e.lhs), affine(e.rhs)
        if a is None or b is None:
            return None
        sign = 1 if e.op == "+" else -1
        out = dict(a)
        for k, v in b.items():
            out[k] = out.get(k, 0) + sign * v
        return out
    if isinstance(e, Binary) and e.op == "*":
        a, b = affine(e.lhs), affine(e.rhs)
        if a is None or b is None:
            return None
        if set(a) == {None}:
            a, b = b, a
        if set(b) != {None}:
            return None
        return {k: v * b[None] for k, v in a.items()}
    return None


def interval(e: Expr) -> tuple[int, int]:
    """Inclusive bounds of an index expression (all its indices have ranges)."""
    if isinstance(e, Const):
        return int(e.value), int(e.value)
    if isinstance(e, Var):
        return e.var.lower, e.var.upper - 1
    if isinstance(e, Unary):
        lo, hi = interval(e.operand)
        return -hi, -lo
    if isinstance(e, Select):
        (a, b), (c, d) = interval(e.then), interval(e.other)
        return min(a, c), max(b, d)
    if isinstance(e, Binary):
        (a, b), (c, d) = interval(e.lhs), interval(e.rhs)
        if e.op == "+":
            return a + c, b + d
        if e.op == "-":
            return a - d, b - c
        if e.op == "*":
            products = (a * c, a * d, b * c, b * d)
            return min(products), max(products)
        if e.op == "max":
            return max(a, c), max(b, d)
        if e.op == "min":
            return min(a, c), min(b, d)
    raise AssertionError(f"not an index expression: {render(e)}")


def _infer_ranges(stmt: Statement) -> None:
    inferred_from: dict[IndexVar, tuple[Load, int]] = {}
    for guarded_too in (False, True):
        loads = [ld for ld in stmt.loads if guarded_too or not ld.guarded]
        while True:
            progress = False
            for ld in loads:  # whole-subscript uses first
                for d, s in enumerate(ld.subscripts):
                    if isinstance(s, Var) and not s.var.known:
                        s.var.lower, s.var.upper = 0, ld.tensor.shape[d]
                        inferred_from[s.var] = (ld, d)
                        progress = True
            if progress:
                continue
            bounds: dict[IndexVar, int] = {}
            for ld in loads:  # then `c*i + rest` with rest known: the in-bounds range of i
                for d, s in enumerate(ld.subscripts):
                    form = affine(s)
                    if form is None:
                        continue
                    unknown = [v for v in form if v is not None and not v.known and form[v] != 0]
                    if len(unknown) != 1 or form[unknown[0]] <= 0:
                        continue
                    v, c = unknown[0], form[unknown[0]]
                    rest_hi = form[None] + sum(
                        k * (w.upper - 1 if k > 0 else w.lower) for w, k in form.items() if w is not None and w is not v)
                    extent = (ld.tensor.shape[d] - 1 - rest_hi) // c + 1
                    if extent <= 0:
                        raise TEError(f"index '{v.name}' has no valid range: {ld.tensor.name}[...] subscript "
                                      f"{render(s)} leaves dim {d} (size {ld.tensor.shape[d]}) for every value",
                                      ld.line, ld.col)
                    bounds[v] = min(bounds.get(v, extent), extent)
            for v, extent in bounds.items():
                v.lower, v.upper = 0, extent
            if not bounds:
                break
    for v in stmt.variables:
        if not v.known:
            hint = ("declare the output shape with `output ...`" if v.role == "output"
                    else f"give it as `{v.name} in lo..hi`")
            raise TEError(f"cannot infer the range of index '{v.name}': use it as a whole subscript "
                          f"somewhere, or {hint}", v.line, v.col)
    for ld in stmt.loads:  # whole-subscript uses of an inferred index must agree
        if ld.guarded:
            continue
        for d, s in enumerate(ld.subscripts):
            if isinstance(s, Var) and not s.var.declared and s.var.extent != ld.tensor.shape[d]:
                src, sd = inferred_from.get(s.var, (None, 0))
                origin = (f"from {src.tensor.name}[...] dim {sd} at {src.line}:{src.col}" if src is not None
                          else "inferred")
                raise TEError(f"shape conflict: index '{s.var.name}' ranges over {s.var.extent} ({origin}) but "
                              f"dim {d} of '{ld.tensor.name}' has size {ld.tensor.shape[d]}", ld.line, ld.col)


def _check_bounds(stmt: Statement) -> None:
    for ld in stmt.loads:
        ld.clamp = []
        for d, s in enumerate(ld.subscripts):
            lo, hi = interval(s)
            size = ld.tensor.shape[d]
            outside = lo < 0 or hi > size - 1
            if outside and not ld.guarded:
                raise TEError(f"out of bounds: subscript {render(s)} of '{ld.tensor.name}' ranges over "
                              f"{lo}..{hi} but dim {d} has size {size} (guard the access with select, "
                              f"or narrow the ranges)", ld.line, ld.col)
            ld.clamp.append(outside)
