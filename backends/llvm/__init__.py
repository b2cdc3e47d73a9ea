"""LLVM CPU backend: llvm dialect -> llvmlite (translate.py), O3 + MCJIT (jit.py),
shared libraries with embedded weights (export.py)."""

from __future__ import annotations


def translate_to_llvm_ir(module, entry: str | None = None) -> str:
    """LLVM IR text (unoptimized) of ``module``: graph-level, loop-level or llvm-dialect IR.

    Runs whatever part of the pipeline (fold-constant, legalize, lower-to-loops,
    default schedules, lower-to-llvm) the module still needs. Modifies ``module``.
    """
    from dlc.backends.llvm.translate import translate
    from dlc.driver import lower_to_llvm_dialect, metadata_for

    meta = metadata_for(module, entry)
    lower_to_llvm_dialect(module)
    return str(translate(module, meta).module)


__all__ = ["translate_to_llvm_ir"]
