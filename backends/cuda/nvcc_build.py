"""``build(module) -> callable``: compile the CUDA C of a module with nvcc into a shared
library and run its host entry through ctypes (the CUDA runtime is linked statically).

Errors name what is missing: nvcc, the CUDA driver, or a GPU. The callable takes
the host function's inputs as numpy arrays and returns its outputs; weights come
from the module's weights store (``dlc.weights``).
"""

from __future__ import annotations

import ctypes
import hashlib
import os
import shutil
import subprocess
import tempfile
from collections.abc import Sequence

import numpy as np
from xdsl.dialects import func
from xdsl.dialects.builtin import MemRefType, ModuleOp
from xdsl.utils.exceptions import DiagnosticException

from dlc.backends.cuda.cuda_c import emit_cuda
from dlc.dialects.graph_base import numpy_dtype

NVCC_CANDIDATES = ("nvcc", "/usr/local/cuda/bin/nvcc", "/usr/local/bin/nvcc")


class CudaBuildError(DiagnosticException):
    """nvcc, the driver or the GPU is missing, or compiling/running failed (one line)."""


def find_nvcc() -> str | None:
    for candidate in NVCC_CANDIDATES:
        path = shutil.which(candidate)
        if path:
            return path
    return None


CUDA_ERRORS = {100: "CUDA_ERROR_NO_DEVICE", 999: "CUDA_ERROR_UNKNOWN", 3: "CUDA_ERROR_NOT_INITIALIZED",
               35: "CUDA_ERROR_INSUFFICIENT_DRIVER", 34: "CUDA_ERROR_STUB_LIBRARY"}


def missing_cuda_piece(require_device: bool = True) -> str | None:
    """Why CUDA programs cannot be built/run here (one line naming nvcc, the driver
    or the GPU), or None. Probes the driver library directly (``cuInit`` and
    ``cuDeviceGetCount``), so this answers before nvcc spends seconds compiling."""
    if find_nvcc() is None:
        return "cuda build: nvcc not found (install the CUDA toolkit or put nvcc on PATH)"
    if not require_device:
        return None
    try:
        driver = ctypes.CDLL("libcuda.so.1")
    except OSError:
        return "cuda build: no CUDA driver (libcuda.so.1 cannot be loaded: no NVIDIA driver on this machine)"
    code = driver.cuInit(0)
    if code != 0:
        return f"cuda build: no usable GPU: cuInit failed with {CUDA_ERRORS.get(code, code)}"
    count = ctypes.c_int(0)
    code = driver.cuDeviceGetCount(ctypes.byref(count))
    if code != 0 or count.value == 0:
        return "cuda build: no CUDA GPU found (cuDeviceGetCount returned 0)"
    return None


def compile_shared_library(source: str, arch: str = "sm_90", cache_dir: str | None = None) -> str:
    nvcc = find_nvcc()
    if nvcc is None:
        raise CudaBuildError("cuda build: nvcc not found (install the CUDA toolkit or put nvcc on PATH)")
    cache_dir = cache_dir or os.path.join(tempfile.gettempdir(), "dlc-cuda-cache")
    os.makedirs(cache_dir, exist_ok=True)
    digest = hashlib.sha256(f"{arch}\n{source}".encode()).hexdigest()[:20]
    lib = os.path.join(cache_dir, f"dlc_{digest}.so")
    if os.path.exists(lib):
        return lib
    src = os.path.join(cache_dir, f"dlc_{digest}.cu")
    with open(src, "w") as f:
        f.write(source)
    cmd = [nvcc, "-O3", f"-arch={arch}", "-shared", "-Xcompiler", "-fPIC", "-o", lib + ".tmp", src]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        errors = [ln for ln in proc.stderr.splitlines() if "error" in ln] or proc.stderr.splitlines()
        raise CudaBuildError(f"cuda build: nvcc failed on {src}: {errors[0] if errors else proc.returncode}")
    os.replace(lib + ".tmp", lib)
    return lib


class CudaProgram:
    """A compiled host function: ``program(*inputs) -> list of outputs``."""

    def __init__(self, lib_path: str, host: func.FuncOp, weights: list[np.ndarray], source: str = "",
                 arch: str = "sm_90"):
        self.lib_path = lib_path
        self.cuda_source = source  # the .cu text nvcc compiled
        self.arch = arch
        # (input names, output names) of the graph function (ONNX tensor names), set by
        # dlc.compile; None: input0.., output0..
        self.names: tuple[list[str], list[str]] | None = None
        self.timings: dict[str, float] = {}
        self.name = host.sym_name.data
        self.entries: dict[str, CudaProgram] = {self.name: self}
        self.lib, self.load_error = None, ""
        try:
            self.lib = ctypes.CDLL(lib_path)
        except OSError as err:  # a build for export only, on a machine without the CUDA runtime
            self.load_error = str(err).splitlines()[0]
        if self.lib is not None:
            self.entry = getattr(self.lib, f"dlc_{self.name}")
            self.entry.restype = ctypes.c_int
            self.lib.dlc_cuda_error_string.restype = ctypes.c_char_p
        num_inputs = host.attributes["tloop.num_inputs"].value.data  # type: ignore[union-attr]
        types = [arg.type for arg in host.body.block.args]
        assert all(isinstance(t, MemRefType) for t in types)
        self.input_types = types[:num_inputs]
        self.output_types = types[num_inputs:]
        self.weights = weights
        self.weight_names = [a.data for a in host.attributes["gpu.weights"].data]  # type: ignore[union-attr]
        self.weight_table = (ctypes.c_void_p * max(1, len(weights)))(
            *[w.ctypes.data for w in weights] or [None]
        )

    @property
    def input_specs(self) -> list[tuple[str, tuple[int, ...], np.dtype]]:
        """(name, shape, dtype) of each input, like ``dlc.compile``'s CPU modules."""
        names = self.names[0] if self.names else [f"input{k}" for k in range(len(self.input_types))]
        return [(n, tuple(t.get_shape()), numpy_dtype(t.element_type)) for n, t in zip(names, self.input_types)]

    @property
    def output_specs(self) -> list[tuple[str, tuple[int, ...], np.dtype]]:
        names = self.names[1] if self.names else [f"output{k}" for k in range(len(self.output_types))]
        return [(n, tuple(t.get_shape()), numpy_dtype(t.element_type)) for n, t in zip(names, self.output_types)]

    def run(self, entry: str, *inputs: np.ndarray) -> list[np.ndarray]:
        """Call another host function compiled into the same library."""
        if entry not in self.entries:
            raise CudaBuildError(f"no host function @{entry} (have {', '.join(self.entries)})")
        return self.entries[entry](*inputs)

    def export(self, path: str) -> str:
        """A library ``dlc.runtime.load`` runs (backends/cuda/export.py): every host
        function of the module, weights embedded, this one the default entry."""
        from dlc.backends.cuda.export import CudaExportError, export_library
        from dlc.output_files import publish_file

        def produce(tmp: str) -> None:
            try:
                export_library(self.entries, self.name, self.cuda_source, tmp, self.arch)
            except CudaExportError as err:
                raise CudaBuildError(str(err)) from None

        publish_file(produce, path)
        return path

    def device_count(self) -> int:
        return int(self.lib.dlc_cuda_device_count())

    def check_device(self) -> None:
        count = self.device_count()
        if count > 0:
            return
        if count == 0:
            raise CudaBuildError("cuda build: no CUDA GPU found (cudaGetDeviceCount returned 0)")
        reason = self.lib.dlc_cuda_error_string(-count).decode()
        what = "CUDA driver" if -count in (35, 34) else "GPU"
        raise CudaBuildError(f"cuda build: no usable {what}: {reason}")

    def __call__(self, *inputs: np.ndarray) -> list[np.ndarray]:
        if self.lib is None:
            raise CudaBuildError(f"@{self.name}: {self.lib_path} was not loaded ({self.load_error})")
        if len(inputs) != len(self.input_types):
            raise CudaBuildError(f"@{self.name} takes {len(self.input_types)} inputs, got {len(inputs)}")
        self.check_device()
        args: list[np.ndarray] = []
        for k, (value, type_) in enumerate(zip(inputs, self.input_types)):
            shape = tuple(type_.get_shape())
            value = np.ascontiguousarray(value, dtype=numpy_dtype(type_.element_type))
            if value.shape != shape:
                raise CudaBuildError(f"@{self.name}: input #{k} has shape {value.shape}, expected {shape}")
            args.append(value)
        outputs = [
            np.empty(tuple(t.get_shape()), dtype=numpy_dtype(t.element_type)) for t in self.output_types
        ]
        pointers = [ctypes.c_void_p(a.ctypes.data) for a in args + outputs]
        code = self.entry(*pointers, self.weight_table)
        if code != 0:
            reason = self.lib.dlc_cuda_error_string(code).decode()
            raise CudaBuildError(f"@{self.name}: CUDA error {code}: {reason}")
        return outputs


def host_weights(host: func.FuncOp, store) -> list[np.ndarray]:
    """The arrays of the host entry's weights table, in its order, checked against the IR."""
    from dlc.dialects.tloop import WeightOp

    weights = []
    for op in host.body.block.ops:
        if not isinstance(op, WeightOp):
            continue
        name, type_ = op.weight_name.data, op.buffer.type
        if store is None or name not in store:
            raise CudaBuildError(f"cuda build: weight \"{name}\" is not in the module's weights store")
        array = np.ascontiguousarray(store[name], dtype=numpy_dtype(type_.element_type))
        shape = tuple(type_.get_shape())
        if array.shape != shape and array.size == int(np.prod(shape)):
            array = array.reshape(shape)  # a scalar stored as shape (1,): same bytes
        if array.shape != shape:
            raise CudaBuildError(f"cuda build: weight \"{name}\" has shape {array.shape}, expected {type_}")
        weights.append(array)
    return weights


def build(
    module: ModuleOp,
    entry: str | None = None,
    arch: str = "sm_90",
    cache_dir: str | None = None,
    require_device: bool = True,
) -> CudaProgram:
    """Compile ``module`` (any level) and return its host function ``entry`` as a callable;
    every host function of the module shares the one library (``program.run(name, ...)``).

    With ``require_device`` (default) a missing driver/GPU is reported here;
    otherwise only when the program is called.
    """
    import time

    from dlc.backends.cuda.lower_to_gpu import is_host
    from dlc.weights import store_of

    missing = missing_cuda_piece(require_device)
    if missing is not None:  # before the slow parts: one line naming what is absent
        raise CudaBuildError(missing)
    start = time.perf_counter()
    source = emit_cuda(module)
    emitted = time.perf_counter()
    hosts = [op for op in module.ops if is_host(op)]
    if not hosts:
        raise CudaBuildError("cuda build: the module has no host function (tloop.host)")
    host = next((h for h in hosts if h.sym_name.data == (entry or "main")), None)
    if host is None:
        if entry is not None:
            raise CudaBuildError(f"cuda build: no host function @{entry}")
        host = hosts[0]
    store = store_of(module, create=False)
    lib = compile_shared_library(source, arch, cache_dir)
    entries = {h.sym_name.data: CudaProgram(lib, h, host_weights(h, store), source, arch) for h in hosts}
    program = entries[host.sym_name.data]
    program.entries = entries
    program.timings.update({"lower-and-emit-cuda": emitted - start, "nvcc": time.perf_counter() - emitted})
    if require_device:
        program.check_device()
    return program


def run(module: ModuleOp, inputs: Sequence[np.ndarray], **kwargs) -> list[np.ndarray]:
    return build(module, **kwargs)(*inputs)
