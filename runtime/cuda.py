"""Exported CUDA modules (``dlc compile --target cuda -o m.so``) under ``dlc.runtime.load``.

The library (backends/cuda/export.py) has the CPU library's ABI and metadata
(format ``dlc-2``, ``"target": "cuda"``): each entry ``int32_t f(void* in0, ...,
void* out0, ...)`` takes host buffers (copied to the device and back by the
entry itself, the weights embedded and uploaded once), and a second entry named
in the metadata's ``device_entries`` (``f__device``) takes device pointers (from
torch's ``tensor.data_ptr()``, cupy...), already on the GPU. A nonzero status is
``STATUS_CUDA_BASE + cudaError_t``; the library's ``dlc_cuda_error_string`` names it.

The CUDA runtime is linked statically into the library (nvcc's default), so the
library loads on a machine without an NVIDIA driver; the first call checks for
the driver (``libcuda.so.1``) and a GPU (the library's ``dlc_cuda_device_count``,
cudaGetDeviceCount) and raises one ``DlcRuntimeError`` line naming what is missing.
numpy + ctypes only, like the rest of ``dlc.runtime``.
"""

from __future__ import annotations

import ctypes

from dlc.runtime.native import DlcRuntimeError, EntryPoint, NativeModule, Spec

STATUS_CUDA_BASE = 1024  # status = STATUS_CUDA_BASE + cudaError_t (the export's wrappers)
DRIVER_LIBRARY = "libcuda.so.1"


def driver_missing() -> str | None:
    """Why no CUDA driver can be used here (one line), or None."""
    try:
        ctypes.CDLL(DRIVER_LIBRARY)
    except OSError as err:
        return (f"no CUDA driver: {DRIVER_LIBRARY} not found ({str(err).splitlines()[0]}); this model "
                "was compiled for --target cuda and needs an NVIDIA GPU and its driver")
    return None


class CudaDevice:
    """The library's view of the GPU: checked once, on the first call."""

    def __init__(self, lib: ctypes.CDLL, path: str):
        self.path = path
        self._count = lib.dlc_cuda_device_count
        self._count.restype = ctypes.c_int
        self._error_string = lib.dlc_cuda_error_string
        self._error_string.restype = ctypes.c_char_p
        self._error_string.argtypes = [ctypes.c_int]
        self.ready = False

    def check(self) -> None:
        if self.ready:
            return
        missing = driver_missing()
        if missing is not None:
            raise DlcRuntimeError(f"{self.path}: {missing}")
        count = int(self._count())
        if count < 0:
            raise DlcRuntimeError(f"{self.path}: no usable GPU: cudaGetDeviceCount failed: "
                                  f"{self.error_string(-count)}")
        if count == 0:
            raise DlcRuntimeError(f"{self.path}: no CUDA GPU found (cudaGetDeviceCount returned 0)")
        self.ready = True

    def error_string(self, code: int) -> str:
        return self._error_string(code).decode(errors="replace")


class CudaEntryPoint(EntryPoint):
    """A host-buffer entry: the device is checked first; CUDA statuses are named."""

    def __init__(self, name: str, address: int, inputs: list[Spec], outputs: list[Spec], device: CudaDevice):
        super().__init__(name, address, inputs, outputs)
        self.device = device

    def __call__(self, *arrays, outputs=None):
        self.device.check()
        return super().__call__(*arrays, outputs=outputs)

    def _failure(self, status: int) -> DlcRuntimeError:
        if status >= STATUS_CUDA_BASE:
            code = status - STATUS_CUDA_BASE
            return DlcRuntimeError(f"@{self.name}: CUDA error {code}: {self.device.error_string(code)}")
        return super()._failure(status)


class DeviceEntryPoint:
    """``f__device(*pointers)``: inputs then outputs as device addresses (ints), shapes
    and dtypes as ``inputs``/``outputs`` say; the caller owns the memory."""

    def __init__(self, name: str, address: int, inputs: list[Spec], outputs: list[Spec], device: CudaDevice):
        self.name, self.inputs, self.outputs, self.device = name, inputs, outputs, device
        arity = len(inputs) + len(outputs)
        self._fn = ctypes.CFUNCTYPE(ctypes.c_int32, *([ctypes.c_void_p] * arity))(address)

    def __call__(self, *pointers: int) -> None:
        arity = len(self.inputs) + len(self.outputs)
        if len(pointers) != arity:
            raise DlcRuntimeError(f"@{self.name} takes {arity} device pointers "
                                  f"({len(self.inputs)} inputs, {len(self.outputs)} outputs), got {len(pointers)}")
        self.device.check()
        status = self._fn(*pointers)
        if status != 0:
            code = status - STATUS_CUDA_BASE
            raise DlcRuntimeError(f"@{self.name}: CUDA error {code}: {self.device.error_string(code)}")


class CudaModule(NativeModule):
    """A loaded CUDA library: ``module(*arrays)`` on host buffers like a CPU library,
    ``module.device_entry(name)`` for device pointers."""

    def __init__(self, entries, default_entry, device_entries: dict[str, DeviceEntryPoint], **kwargs):
        super().__init__(entries, default_entry, **kwargs)
        self.device_entries = device_entries

    def device_entry(self, name: str | None = None) -> DeviceEntryPoint:
        name = name or self.default_entry
        if name not in self.device_entries:
            raise DlcRuntimeError(f"no device entry for @{name} (have {', '.join(self.device_entries)})")
        return self.device_entries[name]


def load_cuda_module(path: str, lib: ctypes.CDLL, meta: dict, specs: dict, address) -> CudaModule:
    """The module of a library whose metadata says ``"target": "cuda"``."""
    try:
        device = CudaDevice(lib, path)
    except AttributeError:
        raise DlcRuntimeError(f"{path}: a cuda model without dlc_cuda_device_count (re-export it)") from None
    try:
        device_names = {str(k): str(v) for k, v in meta["device_entries"].items()}
    except (KeyError, AttributeError) as err:
        raise DlcRuntimeError(f"{path}: corrupt dlc_metadata (device_entries: {err})") from None
    entries = {name: CudaEntryPoint(name, address(name), ins, outs, device) for name, (ins, outs) in specs.items()}
    device_entries = {name: DeviceEntryPoint(symbol, address(symbol), *specs[name], device)
                      for name, symbol in device_names.items() if name in specs}
    return CudaModule(entries, meta["default_entry"], device_entries, keepalive=lib,
                      release_workspaces_address=address("dlc_release_workspaces"),
                      alloc_failure_address=address("dlc_alloc_failure_bytes"))
