"""Calling compiled entry points with numpy arrays (numpy + ctypes only).

Shared by the JIT (``dlc.driver.CompiledModule``) and by exported libraries
(``dlc.runtime.load``). ABI of an entry point: ``int32_t f(void* in0, ...,
void* out0, ...)`` over C-contiguous buffers; the caller allocates outputs,
which must not overlap the inputs or each other (kernel arguments are
``noalias``: an aliased output gives a wrong answer, so ``EntryPoint`` refuses
it). The result is a status: 0 = done, ``STATUS_WORKSPACE_OOM`` = the
function's workspace could not be allocated, ``STATUS_BUFFER_OOM`` = another
heap buffer could not be; on failure the exported ``int64_t
dlc_alloc_failure_bytes(void)`` returns the size asked for (a module global, so a
concurrent failing call may overwrite it: the status itself is per call) and
``EntryPoint`` raises ``DlcRuntimeError("out of memory: ...")``. Every heap
allocation of the generated code is checked (lowering/to_llvm/memory.py); a
failure returns at once, so buffers allocated earlier in that call leak.
Each call is one native call (ctypes releases the GIL during it). Calls from
several threads may run at once: each host function reuses one cached workspace
and a call that finds it taken runs on a fresh one (lowering/plan_workspace.py);
``dlc_release_workspaces`` frees the cache when the module is collected.

Run-time extents: an output whose size depends on the data (graph.nonzero,
graph.compress) is a buffer of its bound, with its true extent along one dim in
a hidden ``int64`` count output (the metadata's ``extents``: ``[bounded
output, dim, count output]``). The valid data is the buffer's row-major prefix
in the true shape, so ``EntryPoint`` returns a view of that prefix (checking
``0 <= count <= bound``) and drops the count outputs, which follow the named
ones. ``outputs=`` buffers are the raw ones (``self.outputs``, bounds and
counts included); a C caller reads the count itself.

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

Thread counts (``check_thread_count``): 0 (libgomp's default, all cores) to
``MAX_THREADS`` = 1024, from ``set_num_threads``, ``dlc.compile(num_threads=)``,
``DLC_NUM_THREADS`` and the tools' ``--threads``. libgomp starts one OS thread
per requested thread without a limit (a million threads: a segfault when thread
creation fails), and the count is a C int; 1024 is above the hardware threads
of any current machine (two 192-core sockets with SMT: 768), so a larger
request is a typo, not a wish.

fork: libgomp's thread pool does not survive ``fork()``: a child's first
parallel region waits forever for threads that exist only in the parent. After
a fork (``os.register_at_fork``) of a process that has loaded libgomp, every
module of the child, and every module it creates, runs with 1 thread, and the
generated code runs a parallel loop with a thread count of 1 as a plain call,
without entering libgomp (lowering/to_llvm/control_flow.py), so the child
computes correct results; asking for more threads there is a
``DlcRuntimeError`` (use the ``spawn`` or ``forkserver`` start method for
parallel workers).
"""

from __future__ import annotations

import ctypes
import json
import math
import numbers
import os
import weakref
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
    """Bad arguments for a compiled entry point, a library that is not a dlc model, or
    a call that ran out of memory."""


# entry-point status codes; lowering/to_llvm/function.py emits the same numbers
STATUS_OK = 0
STATUS_WORKSPACE_OOM = 1
STATUS_BUFFER_OOM = 2
# 256 + k: the k-th BYOC external kernel (metadata "external": [[symbol, target], ...])
# returned nonzero; its own value is what dlc_alloc_failure_bytes() reads then
STATUS_EXTERNAL_BASE = 256
ALLOC_FAILURE_GETTER = "dlc_alloc_failure_bytes"  # int64_t(void)
METADATA_FORMAT = "dlc-2"  # dlc-1: void entry points, no status

MAX_THREADS = 1024  # see the module docstring


def check_thread_count(n, source: str = "thread count") -> int:
    """``n`` as an int in 0..MAX_THREADS, else a DlcRuntimeError naming ``source``
    (the option or variable it came from), the value and the range."""
    if isinstance(n, bool) or not isinstance(n, numbers.Integral):
        raise DlcRuntimeError(f"{source}: expected an integer thread count, got {n!r}")
    if not 0 <= int(n) <= MAX_THREADS:
        raise DlcRuntimeError(f"{source}: thread count {int(n)} is out of range "
                              f"(0 = all cores, or 1 to {MAX_THREADS})")
    return int(n)


def env_thread_count() -> int | None:
    """``DLC_NUM_THREADS`` checked (None when unset or empty)."""
    raw = os.environ.get("DLC_NUM_THREADS", "").strip()
    if not raw:
        return None
    try:
        value = int(raw)
    except ValueError:
        raise DlcRuntimeError(f"DLC_NUM_THREADS={raw!r} is not an integer thread count "
                              f"(0 = all cores, or 1 to {MAX_THREADS})") from None
    return check_thread_count(value, "DLC_NUM_THREADS")


_fork = {"forked": False}
_modules: "weakref.WeakSet[NativeModule]" = weakref.WeakSet()


def _after_fork_in_child() -> None:
    """libgomp's pool is the parent's: pin every module of the child to 1 thread."""
    if _libgomp_loaded():
        _fork["forked"] = True
        for module in list(_modules):
            module._apply_threads(1)


os.register_at_fork(after_in_child=_after_fork_in_child)


def forked_child() -> bool:
    """True in a process forked after libgomp was loaded (parallel loops run serially)."""
    return _fork["forked"]


BUFFER_ALIGNMENT = 64  # bytes: a cache line, one zmm (the compiled code's own buffers too)


def aligned_empty(shape, dtype) -> np.ndarray:
    """An uninitialized C-contiguous array whose data starts on a BUFFER_ALIGNMENT
    boundary. numpy's allocator gives 16 mod 64 for large arrays: every 64-byte vector
    load or store of such a buffer spans two cache lines (a GEMV streaming a misaligned
    4 MiB weight from L3 measured 15% slower)."""
    dtype = np.dtype(dtype)
    count = int(np.prod(shape, dtype=np.int64))
    raw = np.empty(count * dtype.itemsize + BUFFER_ALIGNMENT, np.uint8)
    start = -raw.ctypes.data % BUFFER_ALIGNMENT
    return raw[start:start + count * dtype.itemsize].view(dtype).reshape(shape)


def aligned(array: np.ndarray) -> np.ndarray:
    """``array`` itself when C-contiguous and aligned (see aligned_empty), else an aligned copy."""
    array = np.asarray(array)
    if array.flags.c_contiguous and array.ctypes.data % BUFFER_ALIGNMENT == 0:
        return array
    copy = aligned_empty(array.shape, array.dtype)
    copy[...] = array
    return copy


def format_bytes(n: int) -> str:
    """``64.0 TiB``: binary units, one decimal."""
    for unit in ("B", "KiB", "MiB", "GiB", "TiB", "PiB"):
        if n < 1024:
            return f"{n} B" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} EiB"


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

    def __init__(self, name: str, address: int, inputs: list[Spec], outputs: list[Spec],
                 alloc_failure_address: int | None = None, extents: Sequence[Sequence[int]] = ()):
        self.name = name
        self.inputs = inputs
        self.outputs = outputs
        # (bounded output, its run-time dim, the count output): see "run-time extents"
        self.extents = [tuple(int(v) for v in e) for e in extents]
        self._check_extents()
        arity = len(inputs) + len(outputs)
        self._fn = ctypes.CFUNCTYPE(ctypes.c_int32, *([ctypes.c_void_p] * arity))(address)
        # the module's dlc_alloc_failure_bytes() (NativeModule sets it for its entries)
        self.alloc_failure_address = alloc_failure_address
        self.external_kernels: list[tuple[str, str]] = []  # (symbol, BYOC target), NativeModule sets it

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
        if outputs is not None:
            self._check_overlap(args, outs)
        status = self._fn(*(a.ctypes.data for a in args), *(o.ctypes.data for o in outs))
        if status != STATUS_OK:
            raise self._failure(status)
        return self._cut_to_extents(outs) if self.extents else outs

    def _check_extents(self) -> None:
        n = len(self.outputs)
        for result, dim, count in self.extents:
            if not (0 <= result < n and 0 <= count < n and result != count
                    and 0 <= dim < len(self.outputs[result][1]) and self.outputs[count][1] == ()):
                raise DlcRuntimeError(f"@{self.name}: bad run-time extent {[result, dim, count]} in the "
                                      f"metadata ({n} outputs)")

    def _cut_to_extents(self, outs: list[np.ndarray]) -> list[np.ndarray]:
        """Each bounded output as its true shape (a view of its buffer's prefix, where the
        kernel wrote it); the count outputs are dropped."""
        cut = list(outs)
        for result, dim, count in self.extents:
            extent, bound = int(outs[count]), self.outputs[result][1]
            if not 0 <= extent <= bound[dim]:
                raise DlcRuntimeError(f"@{self.name}: output '{self.outputs[result][0]}' reports {extent} "
                                      f"along dim {dim}, outside its bound 0..{bound[dim]}")
            shape = bound[:dim] + (extent,) + bound[dim + 1:]
            cut[result] = outs[result].reshape(-1)[:math.prod(shape)].reshape(shape)
        hidden = {count for _, _, count in self.extents}
        return [o for k, o in enumerate(cut) if k not in hidden]

    def _check_overlap(self, args: list[np.ndarray], outs: list[np.ndarray]) -> None:
        """Kernels take their buffers as noalias: an output sharing memory with an
        input (or another output) would be read after being overwritten."""
        for i, (out, (out_name, _, _)) in enumerate(zip(outs, self.outputs)):
            for arg, (in_name, _, _) in zip(args, self.inputs):
                if np.may_share_memory(out, arg):
                    raise DlcRuntimeError(
                        f"@{self.name}: output buffer '{out_name}' overlaps input '{in_name}' "
                        "(outputs must not alias inputs: pass a separate array)")
            for other, (other_name, _, _) in zip(outs[i + 1:], self.outputs[i + 1:]):
                if np.may_share_memory(out, other):
                    raise DlcRuntimeError(
                        f"@{self.name}: output buffers '{out_name}' and '{other_name}' overlap")

    def _failure(self, status: int) -> DlcRuntimeError:
        size = ctypes.CFUNCTYPE(ctypes.c_int64)(self.alloc_failure_address)() \
            if self.alloc_failure_address else 0
        if status >= STATUS_EXTERNAL_BASE:
            k = status - STATUS_EXTERNAL_BASE
            if k < len(self.external_kernels):
                symbol, target = self.external_kernels[k]
                return DlcRuntimeError(f"@{self.name}: external kernel @{symbol} (BYOC target '{target}') "
                                       f"failed with status {size}")
            return DlcRuntimeError(f"@{self.name}: external kernel #{k} failed with status {size}")
        amount = f" of {format_bytes(size)}" if size > 0 else ""
        if status == STATUS_WORKSPACE_OOM:
            return DlcRuntimeError(f"out of memory: workspace{amount} for @{self.name} could not be allocated")
        if status == STATUS_BUFFER_OOM:
            return DlcRuntimeError(f"out of memory: a buffer{amount} in @{self.name} could not be allocated")
        return DlcRuntimeError(f"@{self.name} failed with unknown status {status}")


    def _outputs(self, given: Sequence[np.ndarray] | None) -> list[np.ndarray]:
        if given is None:
            return [aligned_empty(shape, dtype) for _, shape, dtype in self.outputs]
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
                 release_workspaces_address: int | None = None, alloc_failure_address: int | None = None,
                 external_kernels: Sequence[tuple[str, str]] = ()):
        if default_entry not in entries:
            raise DlcRuntimeError(f"no entry point named @{default_entry}")
        for point in entries.values():
            if point.alloc_failure_address is None:
                point.alloc_failure_address = alloc_failure_address
            point.external_kernels = [tuple(k) for k in external_kernels]
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
        threads = env_thread_count()
        _modules.add(self)
        if forked_child():
            self._apply_threads(1)  # DLC_NUM_THREADS too: libgomp is unusable here
        elif threads is not None:
            self.set_num_threads(threads)

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
        """Threads for parallel loops (0 = libgomp's default: all cores; at most
        ``MAX_THREADS``); in a forked child only 1 (see the module docstring)."""
        n = check_thread_count(n, "set_num_threads")
        if forked_child() and n != 1:
            raise DlcRuntimeError(
                f"set_num_threads({n}): this process was forked after libgomp started, and libgomp "
                "is not fork-safe: parallel loops run on 1 thread here (use the 'spawn' or "
                "'forkserver' start method for parallel workers)")
        self._apply_threads(n)

    def _apply_threads(self, n: int) -> None:
        if self._set_threads is not None:
            self._set_threads(n)


def metadata_json(entries: dict[str, tuple[list[Spec], list[Spec]]], default_entry: str,
                  target: str | None = None, triple: str | None = None,
                  extents: dict[str, list[tuple[int, int, int]]] | None = None) -> str:
    """The ``dlc_metadata`` JSON: format, default entry, each entry's inputs and outputs
    (and ``extents``, where it has outputs with run-time extents), and (when given) the
    target string and triple the code was built for."""
    data = {
        "format": METADATA_FORMAT,
        "default_entry": default_entry,
        "entries": {
            name: {"inputs": specs_to_json(ins), "outputs": specs_to_json(outs)}
            for name, (ins, outs) in entries.items()
        },
    }
    for name, found in (extents or {}).items():
        data["entries"][name]["extents"] = [list(e) for e in found]
    if target is not None:
        data["target"] = target
    if triple is not None:
        data["triple"] = triple
    return json.dumps(data)


def load(path: str, num_threads: int | None = None) -> NativeModule:
    """Load a shared library written by ``CompiledModule.export``: checked before it
    is mapped and loaded under its content's name (runtime/library.py). A CUDA
    library (``--target cuda``) loads without a GPU; its first call checks for one
    (runtime/cuda.py)."""
    from dlc.runtime.library import LibraryError, open_library, read_library

    if num_threads is not None:
        num_threads = check_thread_count(num_threads, "num_threads")
    try:
        data, digest = read_library(path)
    except LibraryError as err:
        raise DlcRuntimeError(f"{path}: {err}") from None
    prefer_short_omp_spin()  # before the library pulls in libgomp
    try:
        lib = open_library(data, digest)
    except OSError as err:
        raise DlcRuntimeError(f"{path}: cannot load: {err}") from None
    try:
        raw = ctypes.c_char.in_dll(lib, "dlc_metadata")
    except ValueError:
        raise DlcRuntimeError(f"{path}: not a dlc model (no dlc_metadata symbol)") from None
    try:
        meta = json.loads(ctypes.string_at(ctypes.addressof(raw)).decode())
        if meta.get("format") != METADATA_FORMAT:
            raise DlcRuntimeError(f"{path}: metadata format {meta.get('format')!r}, this runtime reads "
                                  f"{METADATA_FORMAT!r} (re-export the model)")
        specs = {name: (specs_from_json(spec["inputs"]), specs_from_json(spec["outputs"]))
                 for name, spec in meta["entries"].items()}
        extents = {name: [[int(v) for v in e] for e in spec.get("extents", [])]
                   for name, spec in meta["entries"].items()}
        default = meta["default_entry"]
        external = [(str(symbol), str(target)) for symbol, target in meta.get("external", [])]
    except (ValueError, KeyError, TypeError, AttributeError) as err:
        raise DlcRuntimeError(f"{path}: corrupt dlc_metadata ({type(err).__name__}: {err})") from None

    def address(name: str) -> int:
        try:
            return ctypes.cast(getattr(lib, name), ctypes.c_void_p).value
        except AttributeError:
            raise DlcRuntimeError(f"{path}: the metadata names @{name}, which the library lacks") from None

    if meta.get("target") == "cuda":  # an exported CUDA module (runtime/cuda.py)
        from dlc.runtime.cuda import load_cuda_module

        return load_cuda_module(path, lib, meta, specs, address)
    entries = {name: EntryPoint(name, address(name), ins, outs, extents=extents[name])
               for name, (ins, outs) in specs.items()}
    module = NativeModule(entries, default, address("dlc_set_num_threads"), keepalive=lib,
                          release_workspaces_address=address("dlc_release_workspaces"),
                          alloc_failure_address=address(ALLOC_FAILURE_GETTER), external_kernels=external)
    if num_threads is None and env_thread_count() is None and not forked_child():
        num_threads = meta.get("num_threads")  # the compile-time choice, if any
    if num_threads is not None:
        module.set_num_threads(num_threads)  # in a forked child only 1 is allowed
    return module
