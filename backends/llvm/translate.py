"""llvm dialect (xDSL) -> llvmlite IR module.

Why a wrapper around xDSL's ``xdsl.backend.llvm.convert``: its per-op
``convert_op`` covers every op `lower-to-llvm` emits, so it is reused as is; but
its module/function drivers drop what we need: ``llvm.loop`` metadata on latch
branches (vectorize/unroll hints), function linkage (outlined parallel bodies
are internal), and renaming of weight symbols (each compiled model binds its
own arrays in the process-wide JIT symbol table, so the names must be unique).
Weight globals stay external for the JIT and the exported library (which bind
or embed the arrays: no copy into the IR); with ``define_weights`` (the LLVM IR
text of ``dlc-translate --to-llvm``) each becomes an internal constant holding
the bytes of its weights-store array, so the text stands alone.
This module is that driver (~100 lines); xDSL's `_declare_func` and
`_convert_global` are reused for declarations and globals.
"""

from __future__ import annotations

import itertools
import json
from dataclasses import dataclass, field

import llvmlite.ir as ir
from xdsl.backend.llvm.convert import _convert_global, _declare_func
from xdsl.backend.llvm.convert_op import convert_op
from xdsl.backend.llvm.convert_type import convert_type
from xdsl.dialects import llvm
from xdsl.dialects.builtin import IntegerAttr, ModuleOp, StringAttr
from xdsl.ir import Block, SSAValue
from xdsl.utils.exceptions import DiagnosticException

from dlc.lowering.to_llvm.function import LOOP_ATTR, VECTOR_WIDTH_ATTR, WEIGHT_ATTR
from dlc.weights import WeightLookupError, lookup_weight, store_of

_UNIQUE = itertools.count()


class TranslationError(DiagnosticException):
    """An llvm-dialect construct the translator cannot express in llvmlite."""


@dataclass
class Translation:
    """The llvmlite module plus what the JIT/exporter must know about it."""

    module: ir.Module
    # weight name -> symbol of the external global holding it
    weight_symbols: dict[str, str] = field(default_factory=dict)
    # host functions: name -> number of inputs (the rest of the arguments are outputs)
    hosts: dict[str, int] = field(default_factory=dict)


def translate(module: ModuleOp, metadata_json: str | None = None, triple: str | None = None,
              data_layout: str = "", define_weights: bool = False,
              width_hints: bool = True) -> Translation:
    """Translate a module of llvm-dialect ops to llvmlite.

    Weight globals are renamed ``__dlc_w<unique>_<i>`` so that several compiled
    modules can live in one process; they are external unless ``define_weights``
    and the module has a weights store (then internal constants with the store's
    bytes; a weight the store lacks or that was elided from the text is a
    TranslationError naming it). IR with no store at all (hand-written loop IR
    naming weights) keeps external declarations, to be linked against.
    ``metadata_json`` (if given) becomes the exported constant ``dlc_metadata``
    (a NUL-terminated string). ``triple``: the target's (default: LLVM's default triple).
    ``width_hints=False`` (targets with scalable vectors, ``Target.scalable_vectors``:
    SVE, RVV) leaves vectorized loops to LLVM's cost model: there a fixed width hint makes
    LLVM print "Scalable vectorization is explicitly disabled" for every loop.
    """
    from llvmlite import binding

    llmod = ir.Module()
    llmod.triple = triple or binding.get_default_triple()
    if data_layout:
        llmod.data_layout = data_layout
    out = Translation(llmod)
    prefix = f"__dlc_w{next(_UNIQUE)}_"
    renames: dict[str, str] = {}

    globals_, funcs = [], []
    for op in module.ops:
        if isinstance(op, llvm.GlobalOp):
            globals_.append(op)
        elif isinstance(op, llvm.FuncOp):
            funcs.append(op)
        else:
            raise TranslationError(
                f"llvm translation: '{op.name}' at module level is not an llvm op; "
                "run lower-to-llvm first"
            )
    for op in globals_:
        name = op.sym_name.data
        if WEIGHT_ATTR in op.attributes:
            weight = op.attributes[WEIGHT_ATTR]
            assert isinstance(weight, StringAttr)
            new_name = prefix + name.rsplit("_", 1)[-1]
            renames[name] = new_name
            out.weight_symbols[weight.data] = new_name
            if define_weights and store_of(module, create=False) is not None:
                _define_weight(llmod, module, weight.data, new_name)
                continue
            gvar = ir.GlobalVariable(llmod, convert_type(op.global_type), name=new_name)
            gvar.linkage = "external"
            continue
        _convert_global(op, llmod)
    for op in funcs:
        _declare_func(op, llmod)
        fn = llmod.get_global(op.sym_name.data)
        linkage = op.linkage.linkage.data if op.linkage is not None else "external"
        if linkage != "external":
            fn.linkage = linkage
        if "tloop.host" in op.attributes:
            out.hosts[op.sym_name.data] = op.attributes["tloop.num_inputs"].value.data
    for op in funcs:
        if op.body.blocks:
            _convert_function(op, llmod, renames, width_hints)
    if metadata_json is not None:
        for name in json.loads(metadata_json)["entries"]:
            _packed_wrapper(llmod, name)
        raw = bytearray(metadata_json.encode() + b"\0")
        array_type = ir.ArrayType(ir.IntType(8), len(raw))
        gvar = ir.GlobalVariable(llmod, array_type, name="dlc_metadata")
        gvar.global_constant = True
        gvar.initializer = ir.Constant(array_type, raw)
    return out


PACKED_SUFFIX = "__packed"  # runtime/c/dlc_runtime.c looks the wrapper up by this name


def _packed_wrapper(llmod: ir.Module, entry: str) -> None:
    """``int32_t <entry>__packed(void **args)``: calls ``entry(args[0], args[1], ...)``.

    Why: C cannot call a function of arbitrary arity through a pointer without a
    switch over every arity (or libffi); with this one signature per entry the C
    runtime (runtime/c/) calls any entry. The call is ``noinline``, so the entry's
    own code is unchanged and not duplicated; the ctypes runtime ignores the wrapper.
    """
    fn = llmod.globals.get(entry)
    if not isinstance(fn, ir.Function):
        raise TranslationError(f"llvm translation: the metadata names @{entry}, which the module lacks")
    ptr = ir.PointerType()
    ftype = fn.function_type
    if ftype.return_type != ir.IntType(32) or any(a != ptr for a in ftype.args):
        raise TranslationError(f"llvm translation: entry @{entry} is not int32_t(void*, ...): {ftype}")
    name = entry + PACKED_SUFFIX
    if name in llmod.globals:
        raise TranslationError(f"llvm translation: @{name} (the packed wrapper of @{entry}) is already defined")
    wrapper = ir.Function(llmod, ir.FunctionType(ir.IntType(32), [ptr]), name=name)
    builder = ir.IRBuilder(wrapper.append_basic_block("entry"))
    args = [builder.load(builder.gep(wrapper.args[0], [ir.Constant(ir.IntType(64), i)], source_etype=ptr),
                         typ=ptr)
            for i in range(len(ftype.args))]
    builder.ret(builder.call(fn, args, attrs=("noinline",)))


def _define_weight(llmod: ir.Module, module: ModuleOp, name: str, symbol: str) -> None:
    """``@symbol = internal constant [N x i8] c"..."``: the raw bytes of weight ``name``
    (the layout the JIT binds and the exported library embeds), 64-byte aligned."""
    try:
        array = lookup_weight(module, name)
    except WeightLookupError as err:
        raise TranslationError(f"llvm translation: {err}") from None
    raw = bytearray(array.tobytes()) or bytearray(1)  # (an empty weight: one unread byte)
    array_type = ir.ArrayType(ir.IntType(8), len(raw))
    gvar = ir.GlobalVariable(llmod, array_type, name=symbol)
    gvar.linkage = "internal"
    gvar.global_constant = True
    gvar.align = 64
    gvar.initializer = ir.Constant(array_type, raw)


def _loop_metadata(llmod: ir.Module, kind: str, width: int, width_hints: bool = True) -> ir.values.MDValue | None:
    """A fresh, self-referential ``llvm.loop`` node (one per loop: loop IDs must be distinct);
    None when there is nothing to say (a vectorized loop without ``width_hints``)."""
    if kind in ("vectorized", "vectorized-whole", "vectorized-forced") and not width_hints:
        if kind != "vectorized-whole":
            return None
        props = [llmod.add_metadata([ir.MetaDataString(llmod, "llvm.loop.unroll.disable")])]
    elif kind in ("vectorized", "vectorized-whole", "vectorized-forced"):
        # a width hint, not vectorize.enable: LLVM uses the width when vectorizing is legal,
        # and a loop it cannot vectorize (a libm call, an in-order float reduction) stays
        # scalar without a "transformation not performed" warning on every compile
        props = [llmod.add_metadata([ir.MetaDataString(llmod, "llvm.loop.vectorize.width"),
                                     ir.Constant(ir.IntType(32), width)])]
        if kind in ("vectorized-forced", "vectorized-whole"):
            # also below 16 iterations (runtime alias checks allowed): a whole vector of 8
            # or 4 lanes (an int8 depthwise block on AVX2) was left scalar without it
            props.append(llmod.add_metadata([ir.MetaDataString(llmod, "llvm.loop.vectorize.enable"),
                                             ir.Constant(ir.IntType(1), 1)]))
        if kind == "vectorized-whole":  # one vector: LLVM's full unroll would scalarize it first
            props.append(llmod.add_metadata([ir.MetaDataString(llmod, "llvm.loop.unroll.disable")]))
    elif kind == "unrolled":
        props = [llmod.add_metadata([ir.MetaDataString(llmod, "llvm.loop.unroll.full")])]
    elif kind == "rolled":  # a serial loop LLVM must not unroll (control_flow.ROLLED_ATTR)
        props = [llmod.add_metadata([ir.MetaDataString(llmod, "llvm.loop.unroll.disable")])]
    else:
        raise TranslationError(f"llvm translation: unknown loop kind '{kind}' on a latch branch")
    node = ir.values.MDValue(llmod, [], name=str(len(llmod.metadata)))
    node.operands = (node, *props)
    return node


def _convert_function(op: llvm.FuncOp, llmod: ir.Module, renames: dict[str, str],
                      width_hints: bool = True) -> None:
    fn = llmod.get_global(op.sym_name.data)
    block_map: dict[Block, ir.Block] = {}
    val_map: dict[SSAValue, ir.Value] = {}
    for i, block in enumerate(op.body.blocks):
        block_map[block] = fn.append_basic_block(name=f"bb{i}")
        if i == 0:
            val_map.update(zip(block.args, fn.args))
    for i, block in enumerate(op.body.blocks):
        if i and block.args:
            builder = ir.IRBuilder(block_map[block])
            for arg in block.args:
                val_map[arg] = builder.phi(convert_type(arg.type))
    for block in op.body.blocks:
        builder = ir.IRBuilder(block_map[block])
        if block_map[block].instructions:
            builder.position_after(block_map[block].instructions[-1])
        for inner in block.ops:
            if isinstance(inner, llvm.AddressOfOp):
                name = inner.global_name.root_reference.data
                val_map[inner.result] = llmod.get_global(renames.get(name, name))
                continue
            if isinstance(inner, llvm.StoreOp):
                _store(builder, val_map[inner.value], val_map[inner.ptr])
                continue
            try:
                convert_op(inner, builder, val_map, block_map)
            except NotImplementedError as err:
                raise TranslationError(
                    f"llvm translation: '{inner.name}' in @{op.sym_name.data}: {err}"
                ) from None
            kind = inner.attributes.get(LOOP_ATTR)
            if isinstance(inner, llvm.BrOp) and isinstance(kind, StringAttr):
                width = inner.attributes.get(VECTOR_WIDTH_ATTR)
                lanes = width.value.data if isinstance(width, IntegerAttr) else 8
                node = _loop_metadata(llmod, kind.data, lanes, width_hints)
                if node is not None:
                    builder.block.instructions[-1].set_metadata("llvm.loop", node)


def _store(builder: ir.IRBuilder, value: ir.Value, ptr: ir.Value) -> None:
    """A store through any pointer: llvmlite still type-checks its typed pointers
    (e.g. a GEP into a struct keeps the struct's pointer type), LLVM itself does not."""
    store = ir.instructions.StoreInstr(builder.block, value, ptr)
    store.align = None
    builder._insert(store)
