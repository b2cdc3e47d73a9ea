"""The compilation target: which machine the schedules plan for.

A :class:`Target` is built once at the top (``dlc.compile``, ``dlc-opt``) and passed
down: to the default schedules as a pass option in TVM's target-string syntax
(``tloop-default-schedule{target="..."}``), and as an argument below that. No schedule asks the build
machine what it is (a cross compile plans for the target, not the host)::

    Target.host()                                            # llvmlite's view of this CPU
    Target.from_string("llvm -mcpu=skylake-avx512")          # features from the CPU table
    Target.from_string("llvm -mtriple=x86_64-unknown-linux-gnu -mcpu=znver4 -mattr=+avx512f,+fma")
    Target.from_string("llvm")                               # the host
    Target.from_string("cuda -arch=sm_90")
    Target.from_string("c")                                  # portable C99 (bare metal)

``str(target)`` is the canonical target string; ``from_string(str(t)) == t``.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field

X86_64 = "x86_64-unknown-linux-gnu"
CUDA_TRIPLE = "nvptx64-nvidia-cuda"

_SSE = frozenset({"sse", "sse2", "sse3", "ssse3", "sse4.1", "sse4.2"})
_AVX2 = _SSE | {"avx", "avx2", "fma", "f16c", "bmi", "bmi2"}
_AVX512 = _AVX2 | {"avx512f", "avx512cd", "avx512bw", "avx512dq", "avx512vl"}
# -mcpu names whose features are known without -mattr (LLVM's names; the x86-64
# micro-architecture levels too). Any other CPU needs -mattr or is rejected.
CPU_FEATURES: dict[str, frozenset[str]] = {
    "generic": _SSE, "x86-64": _SSE, "x86-64-v2": _SSE, "nehalem": _SSE,
    "x86-64-v3": _AVX2, "haswell": _AVX2, "broadwell": _AVX2, "skylake": _AVX2,
    "znver1": _AVX2, "znver2": _AVX2, "znver3": _AVX2,
    "x86-64-v4": _AVX512, "skylake-avx512": _AVX512, "cascadelake": _AVX512,
    "icelake-server": _AVX512, "sapphirerapids": _AVX512, "znver4": _AVX512, "znver5": _AVX512,
}
KINDS = ("llvm", "cuda", "c")
C_TRIPLE = "c"  # portable C99 source (backends/c): no triple, no vectors, no threads


class TargetError(ValueError):
    """A target string dlc cannot read (the message says which part and what is expected)."""


@dataclass(frozen=True)
class Target:
    kind: str  # "llvm" (CPU code through LLVM), "cuda", or "c" (portable C99 source)
    triple: str
    cpu: str
    features: frozenset[str] = field(default_factory=frozenset)  # enabled ones, without "+"

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise TargetError(f"unknown target kind '{self.kind}' (expected {' or '.join(KINDS)})")
        object.__setattr__(self, "features", frozenset(self.features))

    # -- facts the schedules plan with --------------------------------------

    def has(self, feature: str) -> bool:
        return feature in self.features

    @property
    def vector_bits(self) -> int:
        """Width of one vector register (f32 lanes = vector_bits // 32)."""
        if self.kind != "llvm":
            return 32  # a GPU thread, or portable C, works on scalars
        if self.has("avx512f"):
            return 512
        if self.has("avx") or self.has("avx2"):
            return 256
        return 128

    @property
    def vector_registers(self) -> int:
        """Architectural vector registers (x86: 32 zmm with AVX-512, else 16)."""
        return 32 if self.has("avx512f") else 16

    @property
    def matmul_register_tile(self) -> tuple[int, int]:
        """(rows, columns) of the f32 GEMM accumulator tile held in vector registers:
        32 registers hold 8 x 16 (8 zmm accumulators, room for the B vectors and the A
        broadcasts), 16 registers 6 x 16 (12 ymm)."""
        return (8, 16) if self.vector_registers >= 32 else (6, 16)

    @property
    def conv_channel_block(self) -> int:
        """Output channels of the flat / grouped conv register tile (x 16 columns): 8 zmm
        accumulators with 32 registers, 4 x 2 ymm with 16."""
        return 8 if self.vector_registers >= 32 else 4

    # -- building ------------------------------------------------------------

    @staticmethod
    @functools.cache
    def host() -> Target:
        """This machine, as llvmlite's host triple, CPU name and enabled features say."""
        import llvmlite.binding as llvm

        llvm.initialize_native_target()
        flat = llvm.get_host_cpu_features().flatten()
        features = frozenset(f[1:] for f in flat.split(",") if f.startswith("+"))
        return Target("llvm", llvm.get_process_triple(), llvm.get_host_cpu_name(), features)

    @staticmethod
    def from_string(text: str) -> Target:
        """A TVM-style target string: ``KIND [-mtriple=T] [-mcpu=C] [-mattr=+f,-g]``
        (``cuda [-arch=sm_NN]``); ``llvm`` alone (or ``-mcpu=host``) is the host."""
        words = text.split()
        if not words:
            raise TargetError("empty target string (expected e.g. 'llvm -mcpu=skylake-avx512')")
        kind, options = words[0], {}
        if kind not in KINDS:
            raise TargetError(f"unknown target kind '{kind}' in '{text}' (expected {' or '.join(KINDS)})")
        if kind == "c":
            if len(words) > 1:
                raise TargetError(f"the c target takes no options, got '{' '.join(words[1:])}' in '{text}'")
            return Target("c", C_TRIPLE, "generic")
        allowed = ("-arch",) if kind == "cuda" else ("-mtriple", "-mcpu", "-mattr")
        for word in words[1:]:
            key, eq, value = word.partition("=")
            if not eq or key not in allowed or not value:
                raise TargetError(f"bad target option '{word}' in '{text}' (expected "
                                  f"{', '.join(k + '=...' for k in allowed)})")
            if key in options:
                raise TargetError(f"target option '{key}' given twice in '{text}'")
            options[key] = value
        if kind == "cuda":
            return Target("cuda", CUDA_TRIPLE, options.get("-arch", "sm_90"))
        cpu = options.get("-mcpu", "host")
        if cpu == "host" and set(options) <= {"-mcpu"}:
            return Target.host()
        host = Target.host() if cpu == "host" else None
        if "-mattr" in options:
            features = set(CPU_FEATURES.get(cpu, frozenset()) if host is None else host.features)
            for item in options["-mattr"].split(","):
                if len(item) < 2 or item[0] not in "+-":
                    raise TargetError(f"bad feature '{item}' in '{text}' (expected +name or -name, "
                                      "e.g. -mattr=+avx512f,+fma)")
                (features.add if item[0] == "+" else features.discard)(item[1:])
        elif host is not None:
            features = set(host.features)
        elif cpu in CPU_FEATURES:
            features = set(CPU_FEATURES[cpu])
        else:
            raise TargetError(f"unknown cpu '{cpu}' in '{text}': give its features with -mattr=+...,"
                              f" or use one of {', '.join(sorted(CPU_FEATURES))}")
        triple = options.get("-mtriple", host.triple if host is not None else X86_64)
        return Target("llvm", triple, host.cpu if host is not None else cpu, frozenset(features))

    def __str__(self) -> str:
        if self.kind == "cuda":
            return f"cuda -arch={self.cpu}"
        if self.kind == "c":
            return "c"
        # the CPU's table features this target lacks are listed as -f: the string round-trips
        attrs = ",".join(["+" + f for f in sorted(self.features)]
                         + ["-" + f for f in sorted(CPU_FEATURES.get(self.cpu, frozenset()) - self.features)])
        return f"llvm -mtriple={self.triple} -mcpu={self.cpu}" + (f" -mattr={attrs}" if attrs else "")


def as_target(target: Target | str | None) -> Target:
    """A Target from a Target, a target string, or None (the host)."""
    if target is None:
        return Target.host()
    if isinstance(target, Target):
        return target
    return Target.from_string(target)
