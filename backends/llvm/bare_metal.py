"""``build(module, target) -> ObjectProgram``: a model as an ELF relocatable object for a
bare-metal LLVM target (``Target.bare_metal``: ``cortex-m4``, ``llvm
-mtriple=thumbv7em-none-eabihf -mcpu=cortex-m4``), in the C target's archive format.

Pipeline: the C target's (backends/c/build.py ``lower_for_c``: graph passes,
lower-to-loops, expand-math, plan-workspace; no schedules, so no vectorization and no
parallel loops: the target has ``vector_bits`` 32 and one core), whose plan also gives
the header and metadata; then ``lower-to-llvm{bare-metal=true}`` (the workspace is the
caller's pointer, no heap, no threads, no globals), llvmlite's translation with the
weights defined as constants in section ``.rodata.dlc_weights``, and llvmlite's code
generator for the target. The entry keeps the C target's ABI (include/dlc_model.h):
``int dlc_model_run(const float *in, float *out, void *workspace)`` checking NULL and
alignment the same way, and ``dlc_model_run_array``; kernels are internal symbols.

Archive: ``include/dlc_model.h``, ``metadata.json`` (``"object": "lib/model.o"``),
``lib/model.o``. Undefined symbols of the object: at most the C target's libm list
(``LIBM_FUNCTIONS``); test/python/test_cortex_m4_llvm.py checks it with ``nm -u``.
"""

from __future__ import annotations

import time

import numpy as np
from xdsl.dialects import llvm
from xdsl.dialects.builtin import ModuleOp, StringAttr
from xdsl.utils.exceptions import DiagnosticException

from dlc.backends.c.build import CBuildError, CProgram
from dlc.backends.c.build import build as build_c
from dlc.backends.c.emit_c import STATUS, WEIGHTS_SECTION
from dlc.target import Target

OBJECT_PATH = "lib/{name}.o"
BODY_SUFFIX = "__body"  # the lowered host function; the entry wraps it with the checks


class ObjectProgram(CProgram):
    """A :class:`CProgram` whose code is ``object_bytes`` (``lib/<name>.o``) instead of C
    source: ``files()`` holds the header, metadata.json and the object."""

    def __init__(self, c_program: CProgram, object_bytes: bytes, llvm_ir: str, target: Target):
        meta = dict(c_program.metadata, target=str(target), object=OBJECT_PATH.format(name=c_program.name))
        super().__init__(c_program.name, c_program.source, c_program.weights_source, c_program.header, meta,
                         c_program.timings)
        self.object_bytes = object_bytes
        self.llvm_ir = llvm_ir  # the optimized module's text
        self.target = target

    def files(self) -> dict[str, bytes]:
        c_files = super().files()
        header = f"include/dlc_{self.name}.h"
        return {header: c_files[header], "metadata.json": c_files["metadata.json"],
                self.metadata["object"]: self.object_bytes}


def _entry_wrappers(meta: dict, body: str, ptr_int: str) -> str:
    """LLVM IR text of ``<entry>`` (the C target's NULL and alignment checks, then the
    body) and ``<entry>_array`` (pointer tables), as backends/c/build.py writes them in C."""
    entry = meta["entry"]
    ios = meta["inputs"] + meta["outputs"]
    n = len(ios)
    params = ", ".join([f"ptr %a{k}" for k in range(n)] + ["ptr %ws"])
    lines = [f"define i32 @{entry}({params}) {{", "entry:"]
    checks = [f"%a{k}" for k in range(n)]
    align = meta["workspace"]["alignment"]
    tests = []
    for k, v in enumerate(checks):
        lines.append(f"  %null{k} = icmp eq ptr {v}, null")
        tests.append(f"%null{k}")
    if meta["workspace"]["bytes"]:
        lines.append("  %nullws = icmp eq ptr %ws, null")
        tests.append("%nullws")
    null = "false"
    for k, t in enumerate(tests):
        lines.append(f"  %anynull{k} = or i1 {null}, {t}")
        null = f"%anynull{k}"
    lines.append(f"  br i1 {null}, label %isnull, label %checkalign")
    lines += ["isnull:", f"  ret i32 {STATUS['DLC_STATUS_NULL_ARGUMENT']}", "checkalign:"]
    misaligned = "false"
    sizes = [(v, np.dtype(io["dtype"]).itemsize) for v, io in zip(checks, ios)]  # element alignment
    if meta["workspace"]["bytes"]:
        sizes.append(("%ws", align))
    for k, (v, size) in enumerate(sizes):
        if size <= 1:
            continue
        lines += [f"  %int{k} = ptrtoint ptr {v} to {ptr_int}",
                  f"  %rem{k} = urem {ptr_int} %int{k}, {size}",
                  f"  %bad{k} = icmp ne {ptr_int} %rem{k}, 0",
                  f"  %anybad{k} = or i1 {misaligned}, %bad{k}"]
        misaligned = f"%anybad{k}"
    lines += [f"  br i1 {misaligned}, label %isbad, label %run", "isbad:",
              f"  ret i32 {STATUS['DLC_STATUS_MISALIGNED']}", "run:",
              f"  %status = call i32 @{body}({', '.join(f'ptr %a{k}' for k in range(n))}, ptr %ws)",
              "  ret i32 %status", "}", ""]
    lines += [f"define i32 @{entry}_array(ptr %ins, ptr %outs, ptr %ws) {{", "entry:"]
    tables = [("%ins", k) for k in range(len(meta["inputs"]))] + [("%outs", k) for k in range(len(meta["outputs"]))]
    test = "false"
    for name in (["%ins"] if meta["inputs"] else []) + ["%outs"]:
        lines += [f"  %n{name[1:]} = icmp eq ptr {name}, null", f"  %t{name[1:]} = or i1 {test}, %n{name[1:]}"]
        test = f"%t{name[1:]}"
    lines += [f"  br i1 {test}, label %isnull, label %run", "isnull:",
              f"  ret i32 {STATUS['DLC_STATUS_NULL_ARGUMENT']}", "run:"]
    for k, (table, index) in enumerate(tables):
        lines += [f"  %p{k} = getelementptr ptr, ptr {table}, i32 {index}", f"  %v{k} = load ptr, ptr %p{k}"]
    args = ", ".join([f"ptr %v{k}" for k in range(n)] + ["ptr %ws"])
    lines += [f"  %status = call i32 @{entry}({args})", "  ret i32 %status", "}", ""]
    return "\n".join(lines)


def build(module: ModuleOp, target: Target, name: str = "model", entry: str | None = None,
          opt: int = 2) -> ObjectProgram:
    """``module`` (graph- or loop-level IR with its weights store; modified in place) as an
    :class:`ObjectProgram` for the bare-metal ``target``."""
    from dlc.backends.llvm.jit import JITError, parse_and_optimize, target_machine
    from dlc.backends.llvm.translate import TranslationError, translate
    from dlc.context import make_context
    from dlc.passes import load_pass

    if not target.bare_metal or target.kind != "llvm":
        raise CBuildError(f"bare-metal object code needs a bare-metal llvm target, not '{target}'")
    program = build_c(module, name=name, entry=entry)  # the plan, header and metadata
    meta = program.metadata
    start = time.perf_counter()
    try:
        load_pass("lower-to-llvm")(bare_metal=True).apply(make_context(), module)
        module.verify()
    except DiagnosticException as err:
        text = (str(err).strip().splitlines() or [type(err).__name__])[0]
        raise CBuildError(f"{target.arch} target: lower-to-llvm: {text}") from None
    host = meta["graph_function"]
    body = f"{meta['entry']}{BODY_SUFFIX}"
    for op in module.ops:
        if isinstance(op, llvm.FuncOp) and op.body.blocks:
            if op.sym_name.data == host:
                op.sym_name = StringAttr(body)
            op.linkage = llvm.LinkageAttr("internal")  # only the entries are global symbols
    try:
        tm = target_machine(target, pic=False, opt=opt)
        translation = translate(module, None, triple=target.llvm_triple, data_layout=str(tm.target_data),
                                define_weights=True, width_hints=False)
    except (JITError, TranslationError, NotImplementedError) as err:
        raise CBuildError(f"{target.arch} target: {str(err).strip().splitlines()[0]}") from None
    for symbol in translation.weight_symbols.values():
        gvar = translation.module.get_global(symbol)
        gvar.section = WEIGHTS_SECTION  # flash, as the C target's src/weights.c
        gvar.align = 16
    # thumbv7em (the only bare-metal arch so far) has 32-bit pointers
    llvm_ir = str(translation.module) + "\n" + _entry_wrappers(meta, body, "i32")
    try:
        optimized = parse_and_optimize(llvm_ir, tm, opt)
        object_bytes = tm.emit_object(optimized)
    except JITError as err:
        raise CBuildError(f"{target.arch} target: {str(err).strip().splitlines()[0]}") from None
    program.timings["llvm-object"] = time.perf_counter() - start
    return ObjectProgram(program, object_bytes, str(optimized), target)
