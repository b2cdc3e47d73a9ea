"""``CudaProgram.export(path)`` / ``dlc compile --target cuda -o m.so``: a shared library
that ``dlc.runtime.load`` runs like a CPU export.

The library is the module's CUDA C (kernels and the host entries of host_code.py)
plus a generated tail, built by ``nvcc -shared -Xcompiler -fPIC`` with the CUDA
runtime linked statically (so it loads on machines without the toolkit):

* the weights as ``.incbin`` symbols (one raw file assembled with ``cc -c``, the CPU
  export's ``weights_assembly``), never C array text, uploaded to the device on the
  first call (under a mutex) and kept there until ``dlc_release_workspaces``;
* for each host function ``f``, the CPU library's packed ABI ``int32_t f(void* in0,
  ..., void* out0, ...)`` on host buffers (copied in and out by ``dlc_f__copying``)
  and ``f__device`` on device pointers; a failure returns ``STATUS_CUDA_BASE +
  cudaError_t``;
* ``dlc_metadata`` (format ``dlc-2``, ``"target": "cuda"``, ``"device_entries"``,
  ``"cuda_arch"``), ``dlc_set_num_threads`` (a no-op), ``dlc_alloc_failure_bytes``,
  ``dlc_release_workspaces``, ``dlc_cuda_device_count`` and ``dlc_cuda_error_string``
  (runtime/cuda.py reads them);
* the checksum trailer every dlc export has (runtime/library.py).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile

import numpy as np

from dlc.backends.cuda.cuda_c import ctype
from dlc.runtime.cuda import STATUS_CUDA_BASE
from dlc.runtime.library import append_trailer
from dlc.runtime.native import METADATA_FORMAT, specs_to_json


class CudaExportError(Exception):
    """nvcc or the assembler failed, or nvcc is missing (one line)."""


def _first_error(stderr: str) -> str:
    lines = [ln.strip() for ln in stderr.splitlines() if ln.strip()]
    errors = [ln for ln in lines if "error" in ln.lower()]
    return (errors or lines or ["(no output)"])[0]


def _run(cmd: list[str], what: str) -> None:
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        raise CudaExportError(f"cuda export: {what} failed: {_first_error(proc.stderr or proc.stdout)}")


def metadata(programs: dict, default_entry: str, arch: str) -> str:
    data = {
        "format": METADATA_FORMAT,
        "default_entry": default_entry,
        "entries": {name: {"inputs": specs_to_json(p.input_specs), "outputs": specs_to_json(p.output_specs)}
                    for name, p in programs.items()},
        "device_entries": {name: f"{name}__device" for name in programs},
        "target": "cuda",
        "cuda_arch": arch,
    }
    return json.dumps(data)


def _c_string(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def export_tail(programs: dict, default_entry: str, arch: str, symbols: dict[str, str]) -> str:
    """The C++ appended to the module's CUDA C: embedded weights, packed entries, metadata."""
    out = ["// ---- exported library (dlc.backends.cuda.export) ----", "#include <pthread.h>",
           f"extern \"C\" const char dlc_metadata[] = {_c_string(metadata(programs, default_entry, arch))};",
           "static pthread_mutex_t dlc_upload_lock = PTHREAD_MUTEX_INITIALIZER;"]
    out += [f"extern \"C\" const unsigned char {sym}[];  // \"{name}\"" for name, sym in symbols.items()]
    releases = []
    for name, p in programs.items():
        n = max(1, len(p.weight_names))
        table = ", ".join(symbols[w] for w in p.weight_names) or "nullptr"
        sizes = ", ".join(str(max(1, w.nbytes)) for w in p.weights) or "0"
        out += [
            f"static const void* const dlc_host_weights_{name}[{n}] = {{{table}}};",
            f"static const size_t dlc_weight_bytes_{name}[{n}] = {{{sizes}}};",
            f"static void* dlc_device_weights_{name}[{n}] = {{nullptr}};",
            f"static int dlc_uploaded_{name} = 0;",
            f"static int dlc_upload_{name}(void) {{",
            "  pthread_mutex_lock(&dlc_upload_lock);",
            "  int status = 0;",
            f"  for (int k = 0; k < {len(p.weights)} && !dlc_uploaded_{name} && status == 0; k++) {{",
            f"    status = (int)cudaMalloc(&dlc_device_weights_{name}[k], dlc_weight_bytes_{name}[k]);",
            f"    if (status == 0) status = (int)cudaMemcpy(dlc_device_weights_{name}[k], dlc_host_weights_{name}[k], "
            f"dlc_weight_bytes_{name}[k], cudaMemcpyHostToDevice);",
            "  }",
            f"  if (status == 0) dlc_uploaded_{name} = 1;",
            "  pthread_mutex_unlock(&dlc_upload_lock);",
            "  return status;",
            "}",
        ]
        releases += [f"  for (int k = 0; k < {n}; k++) {{ if (dlc_device_weights_{name}[k]) "
                     f"cudaFree(dlc_device_weights_{name}[k]); dlc_device_weights_{name}[k] = nullptr; }}",
                     f"  dlc_uploaded_{name} = 0;"]
        types = p.input_types + p.output_types
        params = ", ".join(f"void* p{k}" for k in range(len(types)))
        args = ", ".join(
            f"({'const ' if k < len(p.input_types) else ''}{ctype(t.element_type)}*)p{k}" for k, t in enumerate(types))
        for suffix, core in (("", f"dlc_{name}__copying"), ("__device", f"dlc_{name}__device")):
            symbol = f"{name}{suffix}"
            out += [
                f"extern \"C\" int dlc_export_{symbol}({params}) __asm__(\"{symbol}\");",
                f"extern \"C\" int dlc_export_{symbol}({params}) {{",
                f"  int status = dlc_upload_{name}();",
                f"  if (status == 0) status = {core}({args}, (const void* const*)dlc_device_weights_{name});",
                f"  return status == 0 ? 0 : {STATUS_CUDA_BASE} + status;",
                "}",
            ]
    out += [
        "extern \"C\" void dlc_set_num_threads(int n) { (void)n; }  // kernels run on the GPU",
        "extern \"C\" int64_t dlc_alloc_failure_bytes(void) { return 0; }",
        "// the device copies of the weights (NativeModule.__del__)",
        "extern \"C\" void dlc_release_workspaces(void) {",
        "  pthread_mutex_lock(&dlc_upload_lock);",
        *releases,
        "  pthread_mutex_unlock(&dlc_upload_lock);",
        "}",
    ]
    return "\n".join(out) + "\n"


def export_library(programs: dict, default_entry: str, source: str, path: str, arch: str = "sm_90") -> None:
    """Build the library of ``programs`` (entry name -> CudaProgram of one nvcc build of
    ``source``) at ``path`` (a temporary path; the caller publishes it)."""
    from dlc.backends.cuda.nvcc_build import find_nvcc
    from dlc.backends.llvm.export import weights_assembly

    nvcc = find_nvcc()
    if nvcc is None:
        raise CudaExportError("cuda export: nvcc not found (install the CUDA toolkit or put nvcc on PATH)")
    cc = shutil.which("cc") or shutil.which("gcc")
    weights: dict[str, np.ndarray] = {}
    symbols: dict[str, str] = {}
    for p in programs.values():
        for name, array in zip(p.weight_names, p.weights):
            if name not in symbols:
                symbols[name] = f"dlc_weight_{len(symbols)}"
                weights[symbols[name]] = array
    with tempfile.TemporaryDirectory(prefix="dlc-cuda-export-") as tmp:
        cu = os.path.join(tmp, "model.cu")
        with open(cu, "w") as f:
            f.write(source + "\n" + export_tail(programs, default_entry, arch, symbols))
        objects = []
        if weights:
            if cc is None:
                raise CudaExportError("cuda export: no C compiler (cc) to assemble the weights")
            asm = os.path.join(tmp, "weights.s")
            with open(asm, "w") as f:
                f.write(weights_assembly(weights, os.path.join(tmp, "weights.bin")))
            objects.append(os.path.join(tmp, "weights.o"))
            _run([cc, "-c", asm, "-o", objects[0]], "assembling the weights")
        _run([nvcc, "-O3", f"-arch={arch}", "-shared", "-Xcompiler", "-fPIC", "-o", path, cu, *objects,
              "-Xlinker", "-Bsymbolic", "-lpthread"], f"nvcc -shared on {os.path.basename(cu)}")
    append_trailer(path)
