"""`lower-to-loops`: graph dialect -> tensor-loop kernels + host functions.

Every graph function ``@f`` becomes

* kernels ``@f_<index>_<op>`` (``tloop.kernel``; one per graph op, identical
  ops share one kernel) built by the generators in ``lowering/kernels``, and
* a host function ``@f`` (``tloop.host``) that calls them on buffers, built by
  ``lowering/bufferize.py`` with the planner of ``lowering/memory_plan.py``.

See the loop-IR contract in the module docstrings of ``dialects/tloop.py``
and ``lowering/bufferize.py``. Composite ops without a kernel (gelu, dense,
batch_norm, layer_norm...) must be rewritten by ``legalize`` first; the pass
stops with one line naming the op. Composite ops that do have a kernel
(softmax, global pools, squeeze...) lower directly, so running legalize or not
gives the same results.
graph.if / graph.loop / graph.scan stay control flow: scf.if / scf.while /
scf.for in the host function around the kernel calls of their bodies (see
``lowering/bufferize.py``); ``expand-control-flow`` (unrolling) is optional.
IR is built directly with xDSL constructors (no text parsing), so a ~200-op
model lowers in well under a second.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import FileLineColLoc, IntegerAttr, ModuleOp, TensorType, i64
from xdsl.ir import Operation, Region
from xdsl.passes import ModulePass
from xdsl.traits import ConstantLike

from dlc.byoc.targets import CODEGEN_ATTR, EXTERNAL_ATTR
from dlc.dialects.graph import IfOp, LoopOp, ScanOp, YieldOp, is_composite
from dlc.dialects.graph_base import GraphOp
from dlc.lowering.bufferize import bufferize_function
from dlc.lowering.kernels.builder import memref_of
from dlc.lowering.kernels import generate, generator_for
from dlc.lowering.kernels.forms import KernelOptions
from dlc.lowering.kernels.control_flow import read_row_kernel, write_row_kernel, zero_kernel
from dlc.lowering.kernels.movement import copy_kernel
from dlc.diagnostics import OpError
from dlc.weights import store_of


class LoweringError(OpError):
    """A graph function cannot be lowered. ``dlc-opt`` reports it at the op's
    source line; ``str()`` names the place itself (file:line:col or @fn, op #i)."""

    def __init__(self, op: Operation, message: str):
        super().__init__(op, message)
        self.place = describe_place(op)

    def __str__(self) -> str:
        return f"lower-to-loops: {self.place}: {self.message}"


def describe_place(op: Operation) -> str:
    """'file:line:col' when the op has a location, else '@fn, op #i'."""
    loc = op.location
    if isinstance(loc, FileLineColLoc):
        return f"{loc.filename.data}:{loc.line.data}:{loc.column.data}"
    fn = op.parent_op()
    where = f"@{fn.sym_name.data}" if isinstance(fn, func.FuncOp) else "module"
    index = 0
    if op.parent_block() is not None:
        index = list(op.parent_block().ops).index(op)
    return f"{where}, op #{index}"


def check_lowerable(fn: func.FuncOp, externals: frozenset[str] = frozenset()) -> None:
    if len(fn.body.blocks) != 1:
        raise LoweringError(fn, "expected a single-block function")
    _check_block(fn.body.block, externals)


def _check_block(block, externals: frozenset[str] = frozenset()) -> None:
    """Every op of ``block`` (and of the bodies of its region ops) has a kernel; a
    ``func.call`` at the top level must call a BYOC partition (``externals``)."""
    for op in block.ops:
        if isinstance(op, (func.ReturnOp, YieldOp)):
            continue
        if isinstance(op, func.CallOp) and op.callee.string_value() in externals:
            continue
        if not isinstance(op, GraphOp):
            raise LoweringError(op, f"'{op.name}' is not a graph op and cannot be lowered")
        if isinstance(op, (IfOp, LoopOp, ScanOp)):  # host-level control flow
            for region in op.regions:
                _check_block(region.blocks.first)
            continue
        if op.has_trait(ConstantLike) or generator_for(op.name) is not None:
            continue  # composite ops with a kernel (softmax...) lower directly too
        if is_composite(type(op)):
            raise LoweringError(op, f"'{op.name}' is a composite op: run legalize first")
        raise LoweringError(op, f"no kernel for '{op.name}'")


class KernelCache:
    """Generates kernels, sharing one kernel between identical ops."""

    def __init__(self, options: KernelOptions = KernelOptions(), profile: bool = False) -> None:
        self.options = options
        self.profile = profile  # stamp each kernel with its ops' cost (lowering/cost.py)
        self.kernels: list[func.FuncOp] = []
        self._by_key: dict[tuple, str] = {}
        self._names: set[str] = set()

    def reserve(self, name: str) -> None:
        """Keep ``name`` (a host function's symbol) free of kernels."""
        self._names.add(name)

    def _unique(self, name: str) -> str:
        base, n = name, 1
        while name in self._names:
            name = f"{base}_{n}"
            n += 1
        self._names.add(name)
        return name

    def _cached(self, key: tuple, name: str, build, culprit: Operation | None = None,
                what: str = "", ops: list[Operation] | None = None) -> str:
        """The symbol of the kernel cached under ``key``; the first time, ``build(symbol)``
        generates it under a fresh symbol from ``name``. With ``culprit``, a generator bug
        (any error but a LoweringError) is reported on that op as "cannot lower <what>"."""
        symbol = self._by_key.get(key)
        if symbol is None:
            symbol = self._unique(name)
            try:
                self.kernels.append(build(symbol))
            except LoweringError:
                raise
            except Exception as err:  # a generator bug must still name the op
                if culprit is None:
                    raise
                raise LoweringError(culprit, f"cannot lower {what}: {err}") from err
            self._by_key[key] = symbol
            if self.profile and ops:
                stamp_cost(self.kernels[-1], ops)
        return symbol

    def kernel_for(self, op: GraphOp | list[GraphOp], name: str) -> str:
        if isinstance(op, list):  # a fused group (lowering/fused.py)
            return self._fused_kernel_for(op, name)
        key = (
            op.name,
            tuple(sorted((k, str(v)) for k, v in op.attributes.items())),
            tuple(o.type for o in op.operands),
            tuple(r.type for r in op.results),
        )
        return self._cached(key, name, lambda symbol: generate(op, symbol, self.options),
                            op, f"'{op.name}'", [op])

    def _fused_kernel_for(self, group: list[GraphOp], name: str) -> str:
        from dlc.lowering.fused import check_group, fused_kernel, group_key

        key = group_key(group)
        if key not in self._by_key and (problem := check_group(group)) is not None:
            raise LoweringError(group[-1], f"fused group: {problem}")
        return self._cached(key, name, lambda symbol: fused_kernel(group, symbol, self.options),
                            group[-1], "the fused group", group)

    def helper_kernel_for(self, kind: str, t: TensorType, axis: int, name: str) -> str:
        """Row read/write and zero-fill kernels of host-level loops
        (lowering/kernels/control_flow.py)."""
        def build(symbol: str) -> func.FuncOp:
            if kind == "read_row":
                return read_row_kernel(t, axis, symbol)
            if kind == "write_row":
                return write_row_kernel(t, axis, symbol)
            return zero_kernel(t, symbol)

        return self._cached((kind, t, axis), name, build)

    def copy_kernel_for(self, t: TensorType, name: str) -> str:
        return self._cached(("copy", t), name, lambda symbol: copy_kernel(t, symbol))


def is_graph_function(op: Operation) -> bool:
    return (
        isinstance(op, func.FuncOp)
        and not op.is_declaration
        and "tloop.kernel" not in op.attributes
        and "tloop.host" not in op.attributes
        and CODEGEN_ATTR not in op.attributes
    )


def _external_declarations(module: ModuleOp) -> dict[str, func.FuncOp]:
    """BYOC partitions (``dlc.codegen``, transforms/partition_graph.py) -> the declaration
    of their external C symbol over buffers: ``(inputs..., outputs...)``, tagged
    ``dlc.external = "<target>"`` (lower-to-llvm gives it the i32 status ABI)."""
    out = {}
    for op in list(module.ops):
        if isinstance(op, func.FuncOp) and CODEGEN_ATTR in op.attributes:
            ins = [memref_of(t) for t in op.function_type.inputs.data]
            outs = [memref_of(t) for t in op.function_type.outputs.data]
            decl = func.FuncOp(op.sym_name.data, (ins + outs, []), Region(), visibility="private")
            decl.attributes[EXTERNAL_ATTR] = op.attributes[CODEGEN_ATTR]
            module.body.block.insert_op_before(decl, op)
            op.detach()
            op.erase()
            out[decl.sym_name.data] = decl
    return out


def stamp_cost(kernel: func.FuncOp, ops: list[Operation]) -> None:
    """``tloop.flops`` (where counted) and ``tloop.bytes`` of the ops ``kernel`` computes,
    for the profile (lowering/cost.py)."""
    from dlc.lowering.cost import group_cost

    cost = group_cost(ops)
    if cost.flops is not None:
        kernel.attributes["tloop.flops"] = IntegerAttr(cost.flops, i64)
    kernel.attributes["tloop.bytes"] = IntegerAttr(cost.bytes, i64)


def lower_module(module: ModuleOp, reuse_buffers: bool = True, flat_conv: bool = False,
                 profile: bool = False, int8_accumulators: int = 16) -> None:
    """Replace every graph function of ``module`` by kernels + a host function.
    ``flat_conv``, ``int8_accumulators``: the CPU kernel forms (kernels/forms.py:
    KernelOptions); ``profile``: kernels carry their ops' cost (:func:`stamp_cost`)."""
    store = store_of(module)
    cache = KernelCache(KernelOptions(flat_conv=flat_conv, int8_accumulators=int8_accumulators), profile)
    graph_fns = [op for op in module.ops if is_graph_function(op)]
    externals = frozenset(_external_declarations(module))
    for fn in graph_fns:
        check_lowerable(fn, externals)
    for fn in graph_fns:
        cache.reserve(fn.sym_name.data)
    hosts = []
    for fn in graph_fns:
        hosts.append(
            bufferize_function(fn, store, cache.kernel_for, cache.copy_kernel_for, reuse_buffers,
                               cache.helper_kernel_for, external_for=lambda call: call.callee.string_value())
        )
    # kernels first, then hosts in place of the graph functions
    first = graph_fns[0] if graph_fns else None
    for k in cache.kernels:
        if first is not None:
            module.body.block.insert_op_before(k, first)
        else:
            module.body.block.add_op(k)
    for fn, host in zip(graph_fns, hosts):
        module.body.block.insert_op_before(host, fn)
        fn.detach()
        fn.erase()


@dataclass(frozen=True)
class LowerToLoopsPass(ModulePass):
    """Graph functions -> tloop kernels + host functions (see module docstring)."""

    name = "lower-to-loops"

    reuse_buffers: bool = True
    # the CPU kernel forms: the flat conv2d of kernels/conv.py (and its grouped / depthwise
    # forms) and the row-vectorized pools; dlc.compile turns it on, the GPU lowering not
    flat_conv: bool = False
    # each kernel stamped with its graph ops' FLOPs and bytes (tloop.flops, tloop.bytes),
    # which lower-to-llvm{profile=true} puts in the profile's record table
    profile: bool = False
    # 16-lane i32 accumulators of the int8 convs' register tiles: the target's
    # (Target.int8_accumulators; dlc.compile passes it: 16 with AVX-512, 4 with AVX2)
    int8_accumulators: int = 16

    def __post_init__(self) -> None:
        if not 1 <= self.int8_accumulators <= 64:
            raise ValueError(f"int8-accumulators must be in 1..64, got {self.int8_accumulators}")

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        lower_module(op, self.reuse_buffers, self.flat_conv, self.profile, self.int8_accumulators)
