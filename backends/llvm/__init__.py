"""LLVM CPU backend: llvm dialect -> llvmlite (translate.py), O3 + MCJIT (jit.py),
shared libraries with embedded weights (export.py), bare-metal ELF objects in
the C target's archive (bare_metal.py: ``--target cortex-m4``). Lowering a graph- or
loop-level module all the way to LLVM IR runs the pipeline, so it lives with
the driver: ``dlc.driver.translate_to_llvm_ir``."""
