"""Finding oneDNN (``libdnnl.so.3`` and ``dnnl.h``) at compile time.

oneDNN comes from pip wheels that put ``lib/libdnnl.so*`` and ``include/dnnl.h`` under
the environment's prefix (``sys.prefix``), not inside site-packages. Where they are is
found through the installed distributions' file lists (``importlib.metadata``), so a
virtual environment, a ``pip install --prefix`` on ``sys.path`` or a system Python all
work and no path is written into dlc; ``DLC_DNNL_ROOT`` (a prefix holding ``lib/`` and
``include/``) overrides the search.

Which build: oneDNN's CPU engine runs on the threading runtime it was built with
(``DNNL_CPU_RUNTIME`` in ``dnnl_config.h``). The OpenMP builds (``onednn-cpu-gomp``:
libgomp, the runtime dlc's own kernels use, so both share one thread pool) need
nothing but the system's libgomp. The ``onednn`` wheel of the oneAPI 2025+ releases is
built for SYCL: its CPU engine needs a SYCL CPU device (the OpenCL CPU runtime with
Unified Runtime's OpenCL adapter) and ``dnnl_engine_create(dnnl_cpu)`` fails without
one, so a SYCL build is taken only when no OpenMP/TBB build is installed and is then
rejected with a message naming the packages to install.

Loading: the code that links libdnnl gets ``-Wl,-rpath,<its lib folder>``
(``runtime_library_dirs``), so the JIT's kernel library and the exported .so load it with
no LD_LIBRARY_PATH. The OpenMP build needs nothing else (its NEEDED libraries are the
system's libgomp, libstdc++, libm). The SYCL wheel's libdnnl has no rpath to its own
dependencies (libtbb, libsycl, libsvml... beside it), which an executable's RUNPATH does
not cover (only a DT_RPATH, ``-Wl,--disable-new-dtags``, would).
"""

from __future__ import annotations

import importlib.metadata
import os
import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

INSTALL_HINT = "pip install onednn-cpu-gomp onednn-devel-cpu-gomp"

# (runtime distribution, devel distribution), in order of preference: the OpenMP (libgomp)
# build first, the SYCL one last
_DISTRIBUTIONS = (
    ("onednn-cpu-gomp", "onednn-devel-cpu-gomp"),
    ("onednn-cpu-iomp", "onednn-devel-cpu-iomp"),
    ("onednn-cpu-tbb", "onednn-devel-cpu-tbb"),
    ("onednn", "onednn-devel"),
)
ENV_ROOT = "DLC_DNNL_ROOT"


class OneDNNMissingError(Exception):
    """No usable oneDNN: the message is one line and names the pip packages."""


@dataclass(frozen=True)
class OneDNN:
    include_dir: str
    library_dir: str
    version: str  # "3.2.0"
    cpu_runtime: str  # "OMP", "TBB", "SEQ", "THREADPOOL", "SYCL"
    origin: str  # where it was found (a distribution name or DLC_DNNL_ROOT)


def _read_config(include_dir: Path) -> tuple[str, str]:
    """(version, CPU runtime) from dnnl_version.h and dnnl_config.h."""
    inc = include_dir / "oneapi" / "dnnl"
    if not (inc / "dnnl_config.h").exists():
        inc = include_dir
    config = (inc / "dnnl_config.h").read_text()
    found = re.search(r"#define\s+DNNL_CPU_RUNTIME\s+DNNL_RUNTIME_(\w+)", config)
    runtime = found.group(1) if found else "unknown"
    version_h = (inc / "dnnl_version.h").read_text()
    parts = [re.search(rf"#define\s+DNNL_VERSION_{k}\s+(\d+)", version_h) for k in ("MAJOR", "MINOR", "PATCH")]
    version = ".".join(p.group(1) if p else "?" for p in parts)
    return version, runtime


def _candidate(lib: Path, inc: Path, origin: str) -> OneDNN | None:
    if not ((lib / "libdnnl.so.3").exists() or (lib / "libdnnl.so").exists()):
        return None
    if not (inc / "dnnl.h").exists() and not (inc / "oneapi" / "dnnl" / "dnnl.h").exists():
        return None
    version, runtime = _read_config(inc)
    return OneDNN(str(inc), str(lib), version, runtime, origin)


def _from_distribution(runtime_dist: str, devel_dist: str) -> OneDNN | None:
    try:
        run = importlib.metadata.distribution(runtime_dist)
        dev = importlib.metadata.distribution(devel_dist)
    except importlib.metadata.PackageNotFoundError:
        return None
    lib = next((Path(run.locate_file(f)).resolve().parent for f in (run.files or [])
                if f.name.startswith("libdnnl.so")), None)
    inc = next((Path(dev.locate_file(f)).resolve().parent for f in (dev.files or [])
                if f.name == "dnnl.h" and f.parent.name != "dnnl"), None)
    if lib is None or inc is None:
        return None
    return _candidate(lib, inc, runtime_dist)


@lru_cache(maxsize=None)
def find_onednn() -> OneDNN:
    """The oneDNN to compile and link against; OneDNNMissingError (one line) when none
    is installed or only a build whose CPU engine cannot run here."""
    root = os.environ.get(ENV_ROOT)
    if root:
        found = _candidate(Path(root) / "lib", Path(root) / "include", ENV_ROOT)
        if found is None:
            raise OneDNNMissingError(
                f"{ENV_ROOT}={root} holds no lib/libdnnl.so.3 and include/dnnl.h")
        candidates = [found]
    else:
        candidates = [c for c in (_from_distribution(*d) for d in _DISTRIBUTIONS) if c is not None]
    if not candidates:
        raise OneDNNMissingError(
            f"the dnnl codegen needs oneDNN (libdnnl.so.3 and dnnl.h), which is not installed: "
            f"{INSTALL_HINT}")
    usable = [c for c in candidates if c.cpu_runtime in ("OMP", "TBB", "SEQ", "THREADPOOL")]
    if not usable:
        c = candidates[0]
        raise OneDNNMissingError(
            f"oneDNN {c.version} from {c.origin} ({c.library_dir}) is built with the "
            f"{c.cpu_runtime} CPU runtime, whose CPU engine needs a SYCL CPU device this "
            f"machine lacks: {INSTALL_HINT} (the OpenMP build)")
    return usable[0]
