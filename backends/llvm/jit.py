"""Host target machine, O3 optimization and MCJIT for llvmlite modules.

Uses llvmlite's new pass manager (``create_pass_builder`` + speed level 3 with
loop/SLP vectorization and unrolling on) for the target's CPU and features
(``target_machine``: the host's own, AVX2/AVX-512/FMA where present, unless the
``dlc.target.Target`` says otherwise; another architecture's for export). libgomp is loaded into the process once so
that outlined parallel loops resolve ``GOMP_parallel``; just before, the
short libgomp spin (``GOMP_SPINCOUNT=1000``) becomes the default unless the user chose a policy
(``dlc.runtime.native.prefer_short_omp_spin`` says why).
"""

from __future__ import annotations

import ctypes
import functools
import os
from dataclasses import replace

import llvmlite.binding as llvm
import numpy as np

from dlc.backends.llvm import codegen_worker
from dlc.runtime.native import aligned
from dlc.target import Target

LIBGOMP = "/usr/lib/x86_64-linux-gnu/libgomp.so.1"


class JITError(Exception):
    """LLVM rejected the module, or a symbol is missing."""


@functools.cache
def initialize() -> None:
    codegen_worker.initialize()
    gomp = libgomp_path()
    if gomp:
        from dlc.runtime.native import prefer_short_omp_spin

        prefer_short_omp_spin()  # libgomp reads its wait policy when it loads
        llvm.load_library_permanently(gomp)


def libgomp_path() -> str | None:
    if os.path.exists(LIBGOMP):
        return LIBGOMP
    from ctypes.util import find_library

    return find_library("gomp")


def machine_spec(target: Target | None = None, pic: bool = False, opt: int = 3) -> dict:
    """The plain description of :func:`target_machine` (codegen_worker.py's spec: a
    worker process builds the same machine from it)."""
    reloc = "pic" if pic else "default"
    codemodel = "default" if pic else "jitdefault"
    if target is None or replace(target, num_cores=None) == Target.host():
        initialize()
        features = ",".join([llvm.get_host_cpu_features().flatten(), *Target.host().llvm_tuning()])
        return {"triple": llvm.get_default_triple(), "cpu": llvm.get_host_cpu_name(), "features": features,
                "opt": opt, "reloc": reloc, "codemodel": codemodel, "abiname": "", "native": True}
    if target.kind != "llvm":
        raise JITError(f"the LLVM CPU backend cannot generate code for the {target.kind} target '{target}'")
    return {"triple": target.llvm_triple, "cpu": target.cpu, "features": target.llvm_features(), "opt": opt,
            "reloc": reloc, "codemodel": codemodel, "abiname": "lp64d" if target.arch == "riscv64" else "",
            "native": False}


def host_target_machine(pic: bool = False, opt: int = 3) -> llvm.TargetMachine:
    """A fresh target machine for the host CPU (MCJIT owns one per engine: never share)."""
    return target_machine(None, pic, opt)


def target_machine(target: Target | None = None, pic: bool = False, opt: int = 3) -> llvm.TargetMachine:
    """A fresh target machine generating code for ``target`` (a ``dlc.target.Target``;
    None or the host's own: the host CPU name and its full feature list): its triple, CPU and
    features (``Target.llvm_features``), the lp64d ABI for riscv64 (Debian's)."""
    initialize()
    try:
        return codegen_worker.create_machine(machine_spec(target, pic, opt))
    except codegen_worker.CodegenError as err:
        raise JITError(str(err)) from None


def parse_and_optimize(llvm_ir: str, tm: llvm.TargetMachine, opt: int = 3) -> llvm.ModuleRef:
    """Parse textual IR, verify it and run the O``opt`` pipeline for ``tm``."""
    initialize()
    try:
        mod = codegen_worker.parse(llvm_ir)
    except codegen_worker.CodegenError as err:
        raise JITError(str(err)) from None
    return codegen_worker.optimize(mod, tm, opt)


class JITModule:
    """An MCJIT engine holding one optimized module; weights bound by address.

    ``weights`` maps symbol -> numpy array; the arrays are referenced (kept alive)
    by this object, copied only when not 64-byte aligned (``runtime.native.aligned``: the
    kernels' vector loads of a weight would each span two cache lines).
    """

    def __init__(self, llvm_ir: str, weights: dict[str, np.ndarray], opt: int = 3,
                 target: Target | None = None):
        initialize()
        self._weights = {k: aligned(v) for k, v in weights.items()}
        for symbol, array in self._weights.items():
            # zero-size arrays still need a distinct, valid address
            llvm.add_symbol(symbol, array.ctypes.data if array.size else ctypes.addressof(_EMPTY))
        self.target_machine = target_machine(target)  # one this host runs (driver.compile checks)
        self.module = parse_and_optimize(llvm_ir, self.target_machine, opt)
        self.optimized_ir = str(self.module)
        self.engine = llvm.create_mcjit_compiler(self.module, self.target_machine)
        self.engine.finalize_object()
        self.engine.run_static_constructors()

    def __del__(self):
        # free the host functions' cached workspaces (lowering/plan_workspace.py) before
        # the engine, and the globals that point at them, go away
        engine = getattr(self, "engine", None)
        address = engine.get_function_address("dlc_release_workspaces") if engine is not None else 0
        if address:
            ctypes.CFUNCTYPE(None)(address)()

    def address(self, name: str) -> int:
        addr = self.engine.get_function_address(name)
        if not addr:
            raise JITError(f"the JIT module has no function @{name}")
        return addr

    def global_address(self, name: str) -> int:
        addr = self.engine.get_global_value_address(name)
        if not addr:
            raise JITError(f"the JIT module has no global @{name}")
        return addr


_EMPTY = ctypes.c_double(0.0)
