"""Calling compiled entry points with numpy arrays (numpy + ctypes only).

Shared by the JIT (``dlc.driver.CompiledModule``) and by exported libraries
(``dlc.runtime.load``). ABI of an entry point: ``void f(void* in0, ...,
void* out0, ...)`` over C-contiguous buffers; the caller allocates outputs.
Each call is one native call (ctypes releases the GIL during it). Calls from
several threads may run at once: each host function reuses one cached workspace
and a call that finds it taken runs on a fresh one (lowering/plan_workspace.py);
``dlc_release_workspaces`` frees the cache when the module is collected.

libgomp wait policy: before libgomp is first loaded into the process (by the JIT
or by loading an exported library), ``prefer_short_omp_spin`` sets
``GOMP_SPINCOUNT=1000`` unless the user set ``OMP_WAIT_POLICY`` or
``GOMP_SPINCOUNT``. libgomp reads these once, when it loads. Its default spins
idle threads for ~0.3 s: best on an idle machine, but when the cores are
oversubscribed a spinning thread burns the slice the thread it waits for needs,
and each parallel region then costs a scheduler quantum (ShuffleNet: 14 ms at 1
thread, up to 660 ms at 2). ``OMP_WAIT_POLICY=passive`` (futex sleep at once) is
robust but pays a wake-up per region (SqueezeNet, 32 regions: 6.7 ms at 2
threads). A short spin (1000 rounds, a few microseconds) catches the next region
of the same inference on an idle machine (SqueezeNet 4.5 ms) and gives the core
up almost at once on a busy one (9.0 ms against passive's 7.8 ms with the other
core busy; 3000 rounds: 11.6 ms, 10000: 18 ms). docs/architecture.md
"Runtime: threads" has the measurements.
"""

from __future__ import annotations

import ctypes
import json
import os
from collections.abc import Sequence

import numpy as np

Spec = tuple[str, tuple[int, ...], np.dtype]


def _libgomp_loaded() -> bool:
    try:
        with open("/proc/self/maps") as maps:
            return "libgomp" in maps.read()
    except OSError:
        return False  # no procfs: cannot tell, assume not yet loaded


DEFAULT_GOMP_SPINCOUNT = "1000"


def prefer_short_omp_spin() -> None:
    """Default libgomp to a short spin before sleeping (see the module docstring); a
    no-op when the user chose a policy or spin count, or when libgomp is already
    loaded (too late: it read its environment then)."""
    if "OMP_WAIT_POLICY" in os.environ or "GOMP_SPINCOUNT" in os.environ:
        return
    if _libgomp_loaded():
        return
    os.environ["GOMP_SPINCOUNT"] = DEFAULT_GOMP_SPINCOUNT


class DlcRuntimeError(Exception):
    """Bad arguments for a compiled entry point, or a library that is not a dlc model."""


def specs_from_json(items: list[dict]) -> list[Spec]:
    return [(d["name"], tuple(int(x) for x in d["shape"]), _dtype(d["dtype"])) for d in items]


def _dtype(name: str) -> np.dtype:
    """numpy dtype by name; narrow types (bfloat16, float8_*, int4...) come from
    ml_dtypes, imported only by modules that use them."""
    try:
        return np.dtype(name)
    except TypeError:
        pass
    try:
        import ml_dtypes
    except ImportError:
        raise DlcRuntimeError(f"element type {name} needs the ml_dtypes package") from None
    if not hasattr(ml_dtypes, name):
        raise DlcRuntimeError(f"unknown element type {name} in the model's specs")
    return np.dtype(getattr(ml_dtypes, name))


def specs_to_json(specs: Sequence[Spec]) -> list[dict]:
    return [{"name": n, "shape": list(s), "dtype": np.dtype(d).name} for n, s, d in specs]


class EntryPoint:
    """One exported host function: its address and its input/output specs."""

    def __init__(self, name: str, address: int, inputs: list[Spec], outputs: list[Spec]):
        self.name = name
        self.inputs = inputs
        self.outputs = outputs
        arity = len(inputs) + len(outputs)
        self._fn = ctypes.CFUNCTYPE(None, *([ctypes.c_void_p] * arity))(address)

    def __call__(self, *arrays, outputs: Sequence[np.ndarray] | None = None) -> list[np.ndarray]:
        """Run on ``arrays``; results go to fresh arrays, or to ``outputs`` (C-contiguous,
        exact shapes/dtypes) to reuse buffers between calls."""
        if len(arrays) != len(self.inputs):
            raise DlcRuntimeError(
                f"@{self.name} takes {len(self.inputs)} inputs "
                f"({', '.join(n for n, _, _ in self.inputs)}), got {len(arrays)}"
            )
        args: list[np.ndarray] = []
        for value, (name, shape, dtype) in zip(arrays, self.inputs):
            array = np.asarray(value)
            if array.shape != shape:
                raise DlcRuntimeError(
                    f"@{self.name}: input '{name}' has shape {array.shape}, expected {shape}"
                )
            if array.dtype != dtype:
                raise DlcRuntimeError(
                    f"@{self.name}: input '{name}' has dtype {array.dtype}, expected {dtype}"
                )
            args.append(np.ascontiguousarray(array))
        outs = self._outputs(outputs)
        self._fn(*(a.ctypes.data for a in args), *(o.ctypes.data for o in outs))
        return outs


    def _outputs(self, given: Sequence[np.ndarray] | None) -> list[np.ndarray]:
        if given is None:
            return [np.empty(shape, dtype) for _, shape, dtype in self.outputs]
        if len(given) != len(self.outputs):
            raise DlcRuntimeError(f"@{self.name} has {len(self.outputs)} outputs, got {len(given)} buffers")
        for out, (name, shape, dtype) in zip(given, self.outputs):
            if not isinstance(out, np.ndarray) or out.shape != shape or out.dtype != dtype \
                    or not out.flags.c_contiguous or not out.flags.writeable:
                raise DlcRuntimeError(
                    f"@{self.name}: output buffer '{name}' must be a writeable C-contiguous "
                    f"{dtype} array of shape {shape}"
                )
        return list(given)


class NativeModule:
    """Entry points of a compiled model with a numpy call interface.

    ``module(*arrays)`` runs the default entry; ``module.run(name, *arrays)`` any
    entry. ``input_specs``/``output_specs`` describe the default entry as lists
    of ``(name, shape, dtype)``.
    """

    def __init__(self, entries: dict[str, EntryPoint], default_entry: str,
                 set_num_threads_address: int | None = None, keepalive: object = None,
                 release_workspaces_address: int | None = None):
        if default_entry not in entries:
            raise DlcRuntimeError(f"no entry point named @{default_entry}")
        self.entries = entries
        self.default_entry = default_entry
        self._keepalive = keepalive
        self._set_threads = (
            ctypes.CFUNCTYPE(None, ctypes.c_int32)(set_num_threads_address)
            if set_num_threads_address else None
        )
        # frees the host functions' cached workspaces (lowering/plan_workspace.py) on unload
        self._release_workspaces = (
            ctypes.CFUNCTYPE(None)(release_workspaces_address) if release_workspaces_address else None
        )
        threads = os.environ.get("DLC_NUM_THREADS")
        if threads:
            self.set_num_threads(int(threads))

    def __del__(self):
        release = getattr(self, "_release_workspaces", None)
        if release is not None:
            release()  # no call can be running: a running call holds a reference to self

    def __call__(self, *arrays, outputs=None) -> list[np.ndarray]:
        return self.entries[self.default_entry](*arrays, outputs=outputs)

    def run(self, entry: str, *arrays, outputs=None) -> list[np.ndarray]:
        if entry not in self.entries:
            raise DlcRuntimeError(f"no entry point named @{entry} (have {', '.join(self.entries)})")
        return self.entries[entry](*arrays, outputs=outputs)

    @property
    def input_specs(self) -> list[Spec]:
        return list(self.entries[self.default_entry].inputs)

    @property
    def output_specs(self) -> list[Spec]:
        return list(self.entries[self.default_entry].outputs)

    def set_num_threads(self, n: int) -> None:
        """Threads for parallel loops (0 = libgomp's default: all cores)."""
        if n < 0:
            raise DlcRuntimeError(f"thread count must be >= 0, got {n}")
        if self._set_threads is not None:
            self._set_threads(int(n))


def metadata_json(entries: dict[str, tuple[list[Spec], list[Spec]]], default_entry: str) -> str:
    return json.dumps({
        "format": "dlc-1",
        "default_entry": default_entry,
        "entries": {
            name: {"inputs": specs_to_json(ins), "outputs": specs_to_json(outs)}
            for name, (ins, outs) in entries.items()
        },
    })


def load(path: str, num_threads: int | None = None) -> NativeModule:
    """Load a shared library written by ``CompiledModule.export``."""
    if not os.path.exists(path):
        raise DlcRuntimeError(f"{path}: no such file")
    prefer_short_omp_spin()  # before the library pulls in libgomp
    try:
        lib = ctypes.CDLL(os.path.abspath(path))
    except OSError as err:
        raise DlcRuntimeError(f"{path}: cannot load: {err}") from None
    try:
        raw = ctypes.c_char.in_dll(lib, "dlc_metadata")
    except ValueError:
        raise DlcRuntimeError(f"{path}: not a dlc model (no dlc_metadata symbol)") from None
    meta = json.loads(ctypes.string_at(ctypes.addressof(raw)).decode())
    entries = {}
    for name, spec in meta["entries"].items():
        address = ctypes.cast(getattr(lib, name), ctypes.c_void_p).value
        entries[name] = EntryPoint(name, address, specs_from_json(spec["inputs"]),
                                   specs_from_json(spec["outputs"]))
    setter = ctypes.cast(lib.dlc_set_num_threads, ctypes.c_void_p).value
    release = getattr(lib, "dlc_release_workspaces", None)  # absent in older libraries
    release = ctypes.cast(release, ctypes.c_void_p).value if release is not None else None
    module = NativeModule(entries, meta["default_entry"], setter, keepalive=lib,
                          release_workspaces_address=release)
    if num_threads is None and not os.environ.get("DLC_NUM_THREADS"):
        num_threads = meta.get("num_threads")  # the compile-time choice, if any
    if num_threads is not None:
        module.set_num_threads(num_threads)
    return module
