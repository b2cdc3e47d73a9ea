"""A dnnl partition (graph ops) as oneDNN primitives: the tables the C runtime runs.

Each anchor op (conv2d, matmul, dense, max/avg pool) starts a primitive; the relu, clip
and add ops that follow it on a value used once become its post-ops (the first add of a
per-channel constant becomes a conv's or matmul's bias input, other adds binary-add
post-ops: the residual add of a ResNet block, any broadcast), so the conv + bias + add +
relu chain is one oneDNN call. A relu or add that follows nothing fusable is a primitive of
its own (eltwise, binary), and so is a concat (SqueezeNet's and Inception's channel
concats keep their convs in one partition). A primitive runs where the last op of its chain stood, so the
operands of its post-ops are computed before it. Composite functions or regions inside the
partition (merge-composite's) are looked through: only the graph ops count.

Values: the partition's arguments and results are dense row-major (plain strides); a
value made and used inside the partition takes the layout its producer's primitive picks
(oneDNN's blocked layouts), so a chain of convs reorders only at its edges.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Block, Operation, SSAValue

from dlc.backends.dnnl import checks
from dlc.dialects.graph.conv import _window_attrs

ARG, OUT, TMP = 0, 1, 2
CONV, MATMUL, POOL_MAX, POOL_AVG_INC, POOL_AVG_EXC, ELTWISE_RELU, BINARY_ADD, CONCAT = range(8)
POST_RELU, POST_ADD, POST_CLIP = 0, 1, 2
MAX_POST = 8
MAX_SRC = 16  # a concat's inputs (dnnl_runtime.c DLCD_MAX_SRC)
ANCHORS = ("graph.conv2d", "graph.matmul", "graph.dense", "graph.max_pool2d", "graph.avg_pool2d")


class PlanError(Exception):
    """The partition has something the dnnl codegen cannot take (message: one line)."""


@dataclass(frozen=True)
class Value:
    where: int
    index: int
    dims: tuple[int, ...]
    strides: tuple[int, ...]  # all 0: the producer's layout


@dataclass
class Post:
    kind: int
    value: int = -1
    alpha: float = 0.0
    beta: float = 0.0


@dataclass
class Prim:
    kind: int
    src: int
    dst: int = -1
    wei: int = -1
    bias: int = -1
    const_wei: bool = False
    strides: tuple[int, int] = (1, 1)
    kernel: tuple[int, int] = (1, 1)
    dil: tuple[int, int] = (0, 0)
    pad_l: tuple[int, int] = (0, 0)
    pad_r: tuple[int, int] = (0, 0)
    post: list[Post] = field(default_factory=list)
    srcs: list[int] = field(default_factory=list)  # a concat's inputs
    axis: int = 0
    names: list[str] = field(default_factory=list)  # the fused ops, for the report
    last: int = 0  # index of the chain's last op: where it runs


@dataclass
class Plan:
    values: list[Value]
    prims: list[Prim]
    nargs: int
    nresults: int
    last_read: list[int]  # per value: the index of the last primitive reading it (-1: none)

    def summary(self) -> str:
        """The primitives in order; past 8 of them, each kind once with its count."""
        if len(self.prims) <= 8:
            return ", ".join("+".join(p.names) for p in self.prims)
        counts: dict[str, int] = {}
        for p in self.prims:
            key = "+".join(p.names)
            counts[key] = counts.get(key, 0) + 1
        return ", ".join(k if n == 1 else f"{k} x{n}" for k, n in counts.items())


def row_major(dims) -> tuple[int, ...]:
    strides, step = [], 1
    for d in reversed(dims):
        strides.append(step)
        step *= max(d, 1)
    return tuple(reversed(strides))


def _shape(v: SSAValue) -> list[int]:
    return list(v.type.get_shape())


def _flatten(fn: func.FuncOp) -> tuple[list[Operation], dict[SSAValue, SSAValue], list[SSAValue]]:
    """The graph ops of ``fn`` in order, composites inlined; alias maps a composite's
    (call's or region op's) results and inner block arguments to the values they stand for."""
    module = fn.parent_op()
    ops: list[Operation] = []
    alias: dict[SSAValue, SSAValue] = {}

    def resolve(v: SSAValue) -> SSAValue:
        while v in alias:
            v = alias[v]
        return v

    def walk(block: Block) -> list[SSAValue]:
        for op in block.ops:
            if isinstance(op, func.ReturnOp) or op.name in ("graph.yield", "func.return"):
                return [resolve(v) for v in op.operands]
            body: Block | None = None
            if isinstance(op, func.CallOp):
                callee = None
                if isinstance(module, ModuleOp):
                    from xdsl.traits import SymbolTable
                    callee = SymbolTable.lookup_symbol(module, op.callee)
                if not isinstance(callee, func.FuncOp) or not callee.body.blocks:
                    raise PlanError(f"a call of @{op.callee.string_value()} the dnnl codegen cannot see into")
                body = callee.body.blocks[0]
            elif op.regions and op.regions[0].blocks and not op.name.startswith("graph.constant"):
                body = op.regions[0].blocks[0]
            if body is not None:
                if len(body.args) != len(op.operands):
                    raise PlanError(f"{op.name}: its region takes {len(body.args)} values for "
                                    f"{len(op.operands)} operands")
                for arg, v in zip(body.args, op.operands):
                    alias[arg] = resolve(v)
                results = walk(body)
                for r, v in zip(op.results, results):
                    alias[r] = v
                continue
            ops.append(op)
        return []

    returned = walk(fn.body.blocks[0])
    return ops, alias, returned


def _is_constant_arg(fn: func.FuncOp, index: int) -> bool:
    attrs = fn.arg_attrs
    if attrs is None:
        return False
    return "dlc.constant" in attrs.data[index].data


class _Planner:
    def __init__(self, fn: func.FuncOp):
        self.fn = fn
        self.ops, self.alias, self.returned = _flatten(fn)
        self.args = list(fn.body.blocks[0].args)
        self.values: list[Value] = []
        self.value_ids: dict[Value, int] = {}
        self.tmp: dict[SSAValue, int] = {}  # a value made inside: its one entry
        self.made_results: set[SSAValue] = set()  # results a primitive has made
        self.uses: dict[SSAValue, int] = {}
        for op in self.ops:
            for v in op.operands:
                v = self.resolve(v)
                self.uses[v] = self.uses.get(v, 0) + 1
        for v in self.returned:
            self.uses[v] = self.uses.get(v, 0) + 1
        if len(set(self.returned)) != len(self.returned):
            raise PlanError("the partition returns one value twice")
        for v in self.returned:
            if v in self.args:
                raise PlanError("the partition returns one of its arguments")

    def resolve(self, v: SSAValue) -> SSAValue:
        while v in self.alias:
            v = self.alias[v]
        return v

    def _entry(self, value: Value) -> int:
        if value not in self.value_ids:
            self.value_ids[value] = len(self.values)
            self.values.append(value)
        return self.value_ids[value]

    def view(self, v: SSAValue, dims, strides=None) -> int:
        """The entry of ``v`` seen with logical ``dims`` (and ``strides`` over its dense
        row-major memory; default: row-major of ``dims``)."""
        v = self.resolve(v)
        dims = tuple(int(d) for d in dims)
        if v in self.tmp:
            have = self.values[self.tmp[v]]
            if have.dims != dims:
                raise PlanError(f"a value made inside the partition is read as {list(dims)} "
                                f"but made as {list(have.dims)}")
            return self.tmp[v]
        strides = tuple(strides) if strides is not None else row_major(dims)
        if v in self.args:
            return self._entry(Value(ARG, self.args.index(v), dims, strides))
        if v in self.made_results:  # a result of the partition, read again inside it
            return self._entry(Value(OUT, self.returned.index(v), dims, strides))
        raise PlanError("a value is read before the primitive that makes it")

    def const_arg(self, v: SSAValue) -> bool:
        v = self.resolve(v)
        return v in self.args and _is_constant_arg(self.fn, self.args.index(v))

    def define(self, v: SSAValue, dims, strides=None) -> int:
        """The entry for the result ``v`` of a primitive."""
        v = self.resolve(v)
        dims = tuple(int(d) for d in dims)
        if v in self.returned:
            self.made_results.add(v)
            strides = tuple(strides) if strides is not None else row_major(dims)
            return self._entry(Value(OUT, self.returned.index(v), dims, strides))
        entry = Value(TMP, len(self.tmp), dims, (0,) * len(dims))
        self.values.append(entry)
        self.tmp[v] = len(self.values) - 1
        return self.tmp[v]

    # ---- anchors
    def conv(self, op) -> tuple[Prim, list[int]]:
        a = op.attrs
        nhwc = a.data_layout == "NHWC"
        x, w, y = _shape(op.operands[0]), _shape(op.operands[1]), _shape(op.results[0])
        if nhwc:
            x, y = [x[0], x[3], x[1], x[2]], [y[0], y[3], y[1], y[2]]
        g = a.groups
        if a.kernel_layout == "HWIO":
            kh, kw, i, o = w
            wdims, wstrides = (o, i, kh, kw), (1, o, kw * i * o, i * o)
        else:
            o, i, kh, kw = w
            wdims, wstrides = (o, i, kh, kw), row_major(w)
            if g > 1:
                wdims, wstrides = (g, o // g, i, kh, kw), row_major((g, o // g, i, kh, kw))
        (sh, sw), (dh, dw), (pt, pl, pb, pr) = _window_attrs(a)
        plain_x = (x[1] * x[2] * x[3], 1, x[3] * x[1], x[1]) if nhwc else None
        prim = Prim(CONV, src=self.view(op.operands[0], x, plain_x),
                    wei=self.view(op.operands[1], wdims, wstrides),
                    const_wei=self.const_arg(op.operands[1]),
                    strides=(sh, sw), dil=(dh - 1, dw - 1), pad_l=(pt, pl), pad_r=(pb, pr))
        return prim, y

    def matmul(self, op) -> tuple[Prim, list[int]]:
        x, w, y = _shape(op.operands[0]), _shape(op.operands[1]), _shape(op.results[0])
        if op.name == "graph.dense":
            n, k = w
            m = _prod(x[:-1])
            prim = Prim(MATMUL, src=self.view(op.operands[0], (m, k)),
                        wei=self.view(op.operands[1], (k, n), (1, k)),
                        const_wei=self.const_arg(op.operands[1]))
            if len(op.operands) == 3:
                prim.bias = self.view(op.operands[2], (1, n))
            return prim, [m, n]
        if len(w) == 2:
            m, k, n = _prod(x[:-1]), x[-1], w[-1]
            prim = Prim(MATMUL, src=self.view(op.operands[0], (m, k)),
                        wei=self.view(op.operands[1], (k, n)),
                        const_wei=self.const_arg(op.operands[1]))
            return prim, [m, n]
        b = _prod(x[:-2])
        prim = Prim(MATMUL, src=self.view(op.operands[0], (b, x[-2], x[-1])),
                    wei=self.view(op.operands[1], (b, w[-2], w[-1])),
                    const_wei=self.const_arg(op.operands[1]))
        return prim, [b, y[-2], y[-1]]

    def pool(self, op) -> tuple[Prim, list[int]]:
        a = op.attrs
        x, y = _shape(op.operands[0]), _shape(op.results[0])
        nhwc = a.layout == "NHWC"
        if nhwc:
            x, y = [x[0], x[3], x[1], x[2]], [y[0], y[3], y[1], y[2]]
        (sh, sw), (dh, dw), (pt, pl, pb, pr) = _window_attrs(a)
        pad_r = checks.pool_pad_end(op, (x[2], x[3]))
        if op.name == "graph.max_pool2d":
            kind = POOL_MAX
        else:
            kind = POOL_AVG_INC if a.count_include_pad else POOL_AVG_EXC
        plain_x = (x[1] * x[2] * x[3], 1, x[3] * x[1], x[1]) if nhwc else None
        prim = Prim(kind, src=self.view(op.operands[0], x, plain_x), strides=(sh, sw),
                    kernel=tuple(a.kernel), dil=(dh - 1, dw - 1), pad_l=(pt, pl), pad_r=pad_r)
        return prim, y

    # ---- post-ops
    def _other(self, other: SSAValue, out_dims, graph_out):
        """(logical dims, strides) of the second operand of an add on an output of logical
        dims ``out_dims`` (the graph's shape ``graph_out``: they differ for collapsed
        matmuls and NHWC convs)."""
        s = _shape(other)
        s = [1] * (len(graph_out) - len(s)) + s
        rm = row_major(s)
        if len(out_dims) == len(graph_out):
            if list(out_dims) != list(graph_out):  # NHWC: the logical order is NCHW
                return (s[0], s[3], s[1], s[2]), (rm[0], rm[3], rm[1], rm[2])
            return tuple(s), rm
        lead = s[:len(s) - len(out_dims) + 1]
        if all(d == 1 for d in lead):
            dims = (1, *s[len(lead):])
        elif lead == graph_out[:len(lead)]:
            dims = (_prod(lead), *s[len(lead):])
        else:
            raise PlanError(f"graph.add: an operand of shape {_shape(other)} on a matmul of shape {graph_out}")
        return dims, row_major(dims)

    def fuse(self, prim: Prim, op, current: SSAValue, out_dims, graph_out) -> bool:
        """Fold ``op`` (which reads ``current``) into ``prim``'s post-ops, if it can be."""
        if len(prim.post) >= MAX_POST or prim.kind == CONCAT:
            return False
        if op.name == "graph.relu":
            prim.post.append(Post(POST_RELU))
            return True
        if op.name == "graph.clip":
            prim.post.append(Post(POST_CLIP, alpha=float(op.min), beta=float(op.max)))
            return True
        if op.name != "graph.add" or _shape(op.results[0]) != list(graph_out):
            return False
        lhs, rhs = (self.resolve(v) for v in op.operands)
        if lhs == rhs:
            return False
        other = rhs if lhs == current else lhs
        channel_axis = (1 if len(out_dims) == len(graph_out) and list(out_dims) == list(graph_out) else 3) \
            if prim.kind == CONV else -1
        ok = checks.post_add(op, current, channel_axis)
        if ok is not True:
            raise PlanError(f"graph.add: {ok}")
        dims, strides = self._other(other, out_dims, graph_out)
        axis = 1 if prim.kind == CONV else len(out_dims) - 1
        if (prim.kind in (CONV, MATMUL) and prim.bias < 0 and not prim.post and self.const_arg(other)
                and _prod(dims) == dims[axis] == out_dims[axis]):
            c = dims[axis]
            prim.bias = self.view(other, (c,) if prim.kind == CONV else (1,) * axis + (c,))
            return True
        prim.post.append(Post(POST_ADD, value=self.view(other, dims, strides)))
        return True

    # ---- chains
    def close(self, v: SSAValue) -> None:
        """The chain ending in ``v`` is complete: ``v`` gets its entry (its primitive's dst)."""
        prim, dims, graph_out = self.open.pop(v)
        strides = None
        if len(dims) == 4 and list(dims) != list(graph_out):  # NHWC
            rm = row_major(graph_out)
            strides = (rm[0], rm[3], rm[1], rm[2])
        prim.dst = self.define(v, dims, strides)

    def read(self, v: SSAValue) -> None:
        v = self.resolve(v)
        if v in self.open:
            self.close(v)

    def plan(self) -> Plan:
        prims: list[Prim] = []
        self.open: dict[SSAValue, tuple[Prim, list[int], list[int]]] = {}  # tail -> chain
        for index, op in enumerate(self.ops):
            ok = checks.check(op)
            if ok is not True:
                raise PlanError(f"{op.name}: {ok}")
            name = op.name.removeprefix("graph.")
            tail = next((self.resolve(v) for v in op.operands if self.resolve(v) in self.open
                         and self.uses.get(self.resolve(v)) == 1 and self.resolve(v) not in self.returned
                         and op.name not in ANCHORS), None)
            if tail is not None:
                prim, dims, graph_out = self.open[tail]
                for v in op.operands:  # the other operand's chain completes first
                    if self.resolve(v) != tail:
                        self.read(v)
                if self.fuse(prim, op, tail, dims, graph_out):
                    del self.open[tail]
                    prim.names.append(name)
                    prim.last = index
                    self.open[self.resolve(op.results[0])] = (prim, dims, graph_out)
                    continue
            for v in op.operands:
                self.read(v)
            if op.name == "graph.conv2d":
                prim, dims = self.conv(op)
            elif op.name in ("graph.matmul", "graph.dense"):
                prim, dims = self.matmul(op)
            elif op.name in ANCHORS:
                prim, dims = self.pool(op)
            else:
                prim, dims = self.standalone(op)
            prim.names.append(name)
            prim.last = index
            prims.append(prim)
            self.open[self.resolve(op.results[0])] = (prim, dims, _shape(op.results[0]))
        for v in list(self.open):
            self.close(v)
        for v in self.returned:
            if not any(e.where == OUT and e.index == self.returned.index(v) for e in self.values):
                raise PlanError("the partition returns a value no primitive makes")
        prims.sort(key=lambda p: p.last)
        return Plan(self.values, prims, len(self.args), len(self.returned), _last_reads(prims, len(self.values)))

    def standalone(self, op) -> tuple[Prim, list[int]]:
        shape = _shape(op.results[0])
        if op.name == "graph.relu":
            return Prim(ELTWISE_RELU, src=self.view(op.operands[0], shape)), shape
        if op.name == "graph.concat":
            axis = op.attrs.axis % len(shape)
            return Prim(CONCAT, src=-1, srcs=[self.view(v, _shape(v)) for v in op.operands], axis=axis), shape
        if op.name == "graph.add":
            a, b = (_shape(v) for v in op.operands)
            pad_b = [1] * (len(shape) - len(b)) + b
            if a != shape:
                raise PlanError("graph.add: its first operand broadcasts (dnnl binary wants it full-size)")
            return Prim(BINARY_ADD, src=self.view(op.operands[0], shape),
                        wei=self.view(op.operands[1], pad_b)), shape
        raise PlanError(f"{op.name}: only fused after a conv or matmul")


def plan_partition(fn: func.FuncOp) -> Plan:
    """The primitives of partition ``fn``; PlanError (one line) for what they cannot do."""
    return _Planner(fn).plan()


def _last_reads(prims: list[Prim], nvalues: int) -> list[int]:
    """The last primitive (in execution order) reading each value; a value nothing reads
    is last needed by the primitive that writes it."""
    last = [-1] * nvalues
    for i, p in enumerate(prims):
        last[p.dst] = max(last[p.dst], i)
        for v in (p.src, p.wei, p.bias, *(q.value for q in p.post), *p.srcs):
            if v >= 0:
                last[v] = i
    return last


def _prod(dims) -> int:
    out = 1
    for d in dims:
        out *= d
    return out
