"""LLVM's half of a compile, with nothing but llvmlite: a target machine from a plain
spec, the O3 pipeline, IR text -> object file.

Imports no part of dlc, so that it also runs as a script in a fresh interpreter
(``python codegen_worker.py SPEC.json IN.ll OUT.o``): the export's parallel code
generation (parallel_codegen.py) runs one such process per extra part of a split
module, since llvmlite serializes every call into LLVM behind one process-wide lock
(threads would take turns). ``jit.py`` builds its machines and runs its pipeline
through the same functions, so every part of a split export gets exactly the code
the JIT would.

A spec (``jit.machine_spec``) is a JSON-able dict: ``triple``, ``cpu``, ``features``,
``opt``, ``reloc``, ``codemodel``, ``abiname``, ``native`` (the host's own target:
only the native code generator is initialized).
"""

from __future__ import annotations

import json
import sys

import llvmlite.binding as llvm


class CodegenError(Exception):
    """LLVM rejected the IR text, or has no code generator for the spec's triple."""


_initialized: set[str] = set()


def initialize(native: bool = True) -> None:
    if "native" not in _initialized:
        llvm.initialize_native_target()
        llvm.initialize_native_asmprinter()
        llvm.initialize_native_asmparser()
        _initialized.add("native")
    if not native and "all" not in _initialized:
        llvm.initialize_all_targets()
        llvm.initialize_all_asmprinters()
        _initialized.add("all")


def create_machine(spec: dict) -> llvm.TargetMachine:
    """A fresh target machine for ``spec`` (MCJIT owns one per engine: never share)."""
    initialize(spec.get("native", True))
    try:
        target = llvm.Target.from_triple(spec["triple"])
    except RuntimeError as err:
        raise CodegenError(f"LLVM has no code generator for {spec['triple']}: {str(err).strip()}") from None
    return target.create_target_machine(
        cpu=spec["cpu"], features=spec["features"], opt=spec["opt"], reloc=spec["reloc"],
        codemodel=spec["codemodel"], abiname=spec.get("abiname", ""))


def parse(text: str, context=None) -> llvm.ModuleRef:
    """Parse and verify IR text (a CodegenError with LLVM's first line if invalid)."""
    try:
        mod = llvm.parse_assembly(text, context)
        mod.verify()
    except RuntimeError as err:
        first = str(err).strip().splitlines()[0] if str(err).strip() else "invalid module"
        raise CodegenError(f"LLVM rejected the generated IR: {first}") from None
    return mod


def optimize(mod: llvm.ModuleRef, tm: llvm.TargetMachine, opt: int = 3) -> llvm.ModuleRef:
    """The O``opt`` pipeline for ``tm`` (loop and SLP vectorization, unrolling), in place."""
    mod.triple = tm.triple
    mod.data_layout = str(tm.target_data)
    if opt > 0:
        pto = llvm.create_pipeline_tuning_options(speed_level=opt)
        pto.loop_vectorization = True
        pto.slp_vectorization = True
        pto.loop_unrolling = True
        pb = llvm.create_pass_builder(tm, pto)
        pb.getModulePassManager().run(mod, pb)
    return mod


def compile_text(text: str, spec: dict, timings: dict[str, float] | None = None) -> bytes:
    """IR text -> the object file's bytes for ``spec`` (parsed, verified, optimized,
    code generated); ``timings`` gets "llvm-parse", "llvm-opt", "llvm-codegen"."""
    clock = stage_clock(timings)
    tm = create_machine(spec)
    mod = parse(text)
    clock("llvm-parse")
    optimize(mod, tm, spec["opt"])
    clock("llvm-opt")
    obj = tm.emit_object(mod)
    clock("llvm-codegen")
    return obj


def stage_clock(timings: dict[str, float] | None):
    """``clock(stage)`` adds the wall time since the last call (or this one) to
    ``timings[stage]``, and the CPU time to ``timings.cpu[stage]`` where it has one
    (dlc.driver.StageTimings)."""
    import time

    last = [time.perf_counter(), time.process_time()]

    def clock(stage: str) -> None:
        now = [time.perf_counter(), time.process_time()]
        if timings is not None:
            timings[stage] = timings.get(stage, 0.0) + now[0] - last[0]
            cpu = getattr(timings, "cpu", None)
            if cpu is not None:
                cpu[stage] = cpu.get(stage, 0.0) + now[1] - last[1]
        last[:] = now
    return clock


def main(argv: list[str]) -> int:
    """``SPEC.json IN.ll OUT.o``: writes the object; on failure one line on stderr, exit 1."""
    spec_path, ir_path, out_path = argv
    with open(spec_path) as f:
        spec = json.load(f)
    with open(ir_path) as f:
        text = f.read()
    try:
        obj = compile_text(text, spec)
    except CodegenError as err:
        print(err, file=sys.stderr)
        return 1
    with open(out_path, "wb") as f:
        f.write(obj)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
