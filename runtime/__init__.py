"""Thin runtime for exported dlc models: ``dlc.runtime.load("model.so")``.

Imports only numpy and ctypes (no xDSL, no llvmlite), so a deployed model needs
nothing else.
"""

from dlc.runtime.native import (
    MAX_THREADS,
    DlcRuntimeError,
    EntryPoint,
    NativeModule,
    check_thread_count,
    load,
)

__all__ = ["EntryPoint", "NativeModule", "DlcRuntimeError", "load", "check_thread_count", "MAX_THREADS"]
