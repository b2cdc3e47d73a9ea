"""The compilation target: which machine the schedules plan for and the code is built for.

A :class:`Target` is built once at the top (``dlc.compile``, ``dlc-opt``, ``dlc compile
--target``) and passed down: to the default schedules as a pass option in TVM's
target-string syntax (``tloop-default-schedule{target="..."}``), to LLVM code generation
(backends/llvm/jit.py ``target_machine``) and to the linker (backends/llvm/toolchain.py).
Nothing below asks the build machine what it is: a cross compile plans and generates
code for the target, not the host::

    Target.host()                                            # llvmlite's view of this CPU
    Target.from_string("llvm")                               # the host
    Target.from_string("llvm -mcpu=skylake-avx512")          # features from the CPU table
    Target.from_string("llvm -mtriple=aarch64-linux-gnu -mcpu=cortex-a72 -mattr=+neon")
    Target.from_string("aarch64")                            # a preset (PRESETS)
    Target.from_string("llvm -mcpu=haswell -num-cores=4")    # default thread count 4
    Target.from_string("cuda -arch=sm_90")
    Target.from_string("c")                                  # portable C99 (bare metal)
    Target.from_string("llvm -mtriple=thumbv7em-none-eabihf -mcpu=cortex-m4")  # object code
    Target.from_string("cortex-m4")                          # the same, a preset

Each architecture (:data:`ARCHES`: x86_64, aarch64, riscv64 (Linux), thumbv7em (bare
metal: ``Target.bare_metal``, triples ``thumbv7em-none-eabi[hf]``)) has its CPU table (LLVM
CPU names -> the features dlc assumes they have), the feature names it knows and its
vector facts. An unknown triple, CPU or feature is a ``TargetError`` naming it and
listing what is known. The triple is kept as written (LLVM takes ``aarch64-linux-gnu``
and ``aarch64-unknown-linux-gnu`` alike); ``str(target)`` is the canonical target
string and ``from_string(str(t)) == t``.

No llvmlite at module level (this is the core layer): only ``Target.host()`` and
``Target.runs_on_host()`` ask llvmlite about this machine.
"""

from __future__ import annotations

import functools
import platform
from dataclasses import dataclass, field

X86_64 = "x86_64-unknown-linux-gnu"
CUDA_TRIPLE = "nvptx64-nvidia-cuda"
KINDS = ("llvm", "cuda", "c")
C_TRIPLE = "c"  # portable C99 source (backends/c): no triple, no vectors, no threads
MAX_CORES = 1024  # dlc.runtime.native.MAX_THREADS (the core layer cannot import the runtime)


class TargetError(ValueError):
    """A target string dlc cannot read (the message says which part and what is expected)."""


@dataclass(frozen=True)
class Arch:
    """What dlc knows about one CPU architecture."""

    name: str  # the triple's first component
    default_triple: str  # when -mtriple is not given
    elf_machine: int  # e_machine of its ELF files
    cpus: dict[str, frozenset[str]]  # -mcpu -> the features it implies
    features: frozenset[str]  # every feature name -mattr may name (LLVM's names)
    generic_cpu: str  # -mcpu when only -mtriple is given
    needs_mattr: frozenset[str] = frozenset()  # CPUs LLVM knows whose features need -mattr
    bare_metal: bool = False  # no OS (triple ...-none-...): no heap, no threads, no libc beyond libm


_SSE = frozenset({"sse", "sse2", "sse3", "ssse3", "sse4.1", "sse4.2"})
_AVX2 = _SSE | {"avx", "avx2", "fma", "f16c", "bmi", "bmi2"}
_AVX512 = _AVX2 | {"avx512f", "avx512cd", "avx512bw", "avx512dq", "avx512vl"}
# the x86 feature names LLVM 22 reports for a host (llvm.get_host_cpu_features())
_X86_FEATURES = frozenset("""
64bit adx aes amx-avx512 amx-bf16 amx-complex amx-fp16 amx-fp8 amx-int8 amx-movrs amx-tf32
amx-tile avx avx10.1 avx10.2 avx2 avx512bf16 avx512bitalg avx512bw avx512cd avx512dq avx512f
avx512fp16 avx512ifma avx512vbmi avx512vbmi2 avx512vl avx512vnni avx512vp2intersect
avx512vpopcntdq avxifma avxneconvert avxvnni avxvnniint16 avxvnniint8 bmi bmi2 ccmp cf cldemote
clflushopt clwb clzero cmov cmpccxadd crc32 cx16 cx8 egpr enqcmd f16c fma fma4 fsgsbase fxsr
gfni hreset invpcid kl lwp lzcnt mmx movbe movdir64b movdiri movrs mwaitx ndd nf pclmul pconfig
pku popcnt ppx prefetchi prfchw ptwrite push2pop2 raoint rdpid rdpru rdrnd rdseed rtm sahf
serialize sgx sha sha512 shstk sm3 sm4 sse sse2 sse3 sse4.1 sse4.2 sse4a ssse3 tbm tsxldtrk
uintr usermsr vaes vpclmulqdq waitpkg wbnoinvd widekl xop xsave xsavec xsaveopt xsaves zu
""".split())
# x86 CPUs LLVM knows that have no table entry here: they need -mattr
_X86_OTHER_CPUS = frozenset("""
alderlake arrowlake cannonlake cooperlake emeraldrapids graniterapids icelake-client
meteorlake raptorlake rocketlake tigerlake sierraforest grandridge clearwaterforest
lunarlake pantherlake gracemont goldmont tremont btver2 bdver4 core2 westmere sandybridge
ivybridge
""".split())

_A64 = frozenset({"neon", "fp-armv8"})
_A64_CRC = _A64 | {"crc"}
_A64_V82 = _A64_CRC | {"lse", "rdm", "rcpc", "dotprod", "fullfp16", "v8.2a"}
_A64_V84_SVE = _A64_V82 | {"fp16fml", "bf16", "i8mm", "sve", "v8.4a"}
_RV64GC = frozenset({"m", "a", "f", "d", "c"})
# Cortex-M (Armv7E-M, Thumb-2): the DSP extension and a single-precision FPU with 16
# double registers (M4: VFPv4-SP-D16; M7: FPv5, here its single-precision form)
_M4 = frozenset({"dsp", "vfp4d16sp"})
_M7 = frozenset({"dsp", "fp-armv8d16sp"})

ARCHES: dict[str, Arch] = {a.name: a for a in (
    Arch("x86_64", X86_64, 62, {
        "generic": _SSE, "x86-64": _SSE, "x86-64-v2": _SSE, "nehalem": _SSE,
        "x86-64-v3": _AVX2, "haswell": _AVX2, "broadwell": _AVX2, "skylake": _AVX2,
        "znver1": _AVX2, "znver2": _AVX2, "znver3": _AVX2,
        "x86-64-v4": _AVX512, "skylake-avx512": _AVX512, "cascadelake": _AVX512,
        "icelake-server": _AVX512, "sapphirerapids": _AVX512, "znver4": _AVX512, "znver5": _AVX512,
    }, _X86_FEATURES, "generic", _X86_OTHER_CPUS),
    Arch("aarch64", "aarch64-linux-gnu", 183, {
        "generic": _A64, "cortex-a53": _A64_CRC, "cortex-a57": _A64_CRC, "cortex-a72": _A64_CRC,
        "cortex-a55": _A64_V82, "cortex-a76": _A64_V82, "cortex-a78": _A64_V82,
        "neoverse-n1": _A64_V82, "neoverse-v1": _A64_V84_SVE,
        "neoverse-n2": _A64_V84_SVE | {"sve2", "v9a"}, "apple-m1": _A64_V82 | {"fp16fml", "v8.4a"},
    }, frozenset("""
neon fp-armv8 crc crypto aes sha2 sha3 sm4 lse rdm rcpc dotprod fullfp16 fp16fml bf16 i8mm sve
sve2 ssbs ras pauth flagm dit sb mte v8a v8.1a v8.2a v8.3a v8.4a v8.5a v8.6a v9a
""".split()), "generic"),
    Arch("riscv64", "riscv64-linux-gnu", 243, {
        # rv64gc: Linux (Debian's lp64d ABI) needs the F and D extensions
        "generic-rv64": _RV64GC, "rocket-rv64": _RV64GC, "sifive-u74": _RV64GC | {"zba", "zbb"},
        "sifive-x280": _RV64GC | {"v", "zfh", "zvfh", "zba", "zbb"},
        "spacemit-x60": _RV64GC | {"v", "zfh", "zvfh", "zba", "zbb", "zbs"},
    }, frozenset("""
m a f d c v zfh zfhmin zvfh zba zbb zbs zicsr zifencei zicond zve32f zvl128b zvl256b
""".split()), "generic-rv64"),
    Arch("thumbv7em", "thumbv7em-none-eabihf", 40, {"cortex-m4": _M4, "cortex-m7": _M7},
         frozenset("dsp vfp4d16sp vfp4d16 fp-armv8d16sp fp-armv8d16 fp64".split()),
         "cortex-m4", bare_metal=True),
)}
CPU_FEATURES = ARCHES["x86_64"].cpus  # the x86 table (older name)
_HOST_ALIASES = {"amd64": "x86_64", "arm64": "aarch64"}

# short target strings -> the full ones (``str()`` of the result is the canonical form)
PRESETS: dict[str, str] = {
    "host": "llvm",
    "x86-64-v2": "llvm -mtriple=x86_64-unknown-linux-gnu -mcpu=x86-64-v2",
    "x86-64-v3": "llvm -mtriple=x86_64-unknown-linux-gnu -mcpu=x86-64-v3",
    "x86-64-v4": "llvm -mtriple=x86_64-unknown-linux-gnu -mcpu=x86-64-v4",
    "aarch64": "llvm -mtriple=aarch64-linux-gnu -mcpu=cortex-a72",  # Raspberry Pi 4 class
    "neoverse-n1": "llvm -mtriple=aarch64-linux-gnu -mcpu=neoverse-n1",  # Graviton2, Ampere Altra
    "neoverse-v1": "llvm -mtriple=aarch64-linux-gnu -mcpu=neoverse-v1",  # Graviton3
    "riscv64": "llvm -mtriple=riscv64-linux-gnu -mcpu=generic-rv64",  # rv64gc
    "riscv64-v": "llvm -mtriple=riscv64-linux-gnu -mcpu=generic-rv64 -mattr=+v",  # rv64gcv
    "cortex-m4": "llvm -mtriple=thumbv7em-none-eabihf -mcpu=cortex-m4",  # bare metal, hard float
}


def host_arch() -> str:
    """This machine's architecture, as a triple names it (no llvmlite)."""
    machine = platform.machine().lower()
    return _HOST_ALIASES.get(machine, machine)


@dataclass(frozen=True)
class Target:
    kind: str  # "llvm" (CPU code through LLVM), "cuda", or "c" (portable C99 source)
    triple: str
    cpu: str
    features: frozenset[str] = field(default_factory=frozenset)  # enabled ones, without "+"
    num_cores: int | None = None  # -num-cores: the compiled module's default thread count

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise TargetError(f"unknown target kind '{self.kind}' (expected {' or '.join(KINDS)})")
        object.__setattr__(self, "features", frozenset(self.features))
        if self.num_cores is not None:
            _check_cores(self.num_cores, f"num_cores={self.num_cores}")

    # -- facts the schedules plan with --------------------------------------

    @property
    def arch(self) -> str:
        """The architecture: "x86_64", "aarch64", "riscv64" (llvm), "nvptx64" (cuda), "c"."""
        return self.triple.split("-", 1)[0]

    def has(self, feature: str) -> bool:
        return feature in self.features

    @property
    def vector_bits(self) -> int:
        """Width of one vector register (f32 lanes = vector_bits // 32); 32: scalar code."""
        if self.kind != "llvm" or self.arch == "thumbv7em":
            return 32  # a GPU thread, portable C or a Cortex-M works on scalars
        if self.arch == "aarch64":
            return 128 if self.has("neon") else 32  # NEON (and the SVE minimum)
        if self.arch == "riscv64":
            return 128 if self.has("v") else 32  # V: VLEN >= 128
        if self.has("avx512f"):
            return 512
        if self.has("avx") or self.has("avx2"):
            return 256
        return 128

    @property
    def f32_lanes(self) -> int:
        """f32 lanes of one vector register (1: scalar code)."""
        return max(1, self.vector_bits // 32)

    @property
    def bare_metal(self) -> bool:
        """No OS under the code (a Cortex-M triple ``...-none-eabi[hf]``, or portable C):
        no heap, no threads, no calls beyond the documented libm list. lower-to-llvm's
        bare-metal mode then takes the workspace from the caller (backends/llvm/bare_metal.py)."""
        if self.kind == "c":
            return True
        arch = ARCHES.get(self.arch)
        return self.kind == "llvm" and arch is not None and arch.bare_metal

    @property
    def llvm_triple(self) -> str:
        """The triple as LLVM's parser reads it right: ``thumbv7em-none-eabihf`` (as written,
        the GNU way) has to be ``thumbv7em-unknown-none-eabihf`` for LLVM to see the eabihf
        environment (else the object uses soft-float argument passing); others as written."""
        parts = self.triple.split("-")
        if self.bare_metal and self.kind == "llvm" and len(parts) == 3 and parts[1] == "none":
            return f"{parts[0]}-unknown-none-{parts[2]}"
        return self.triple

    @property
    def scalable_vectors(self) -> bool:
        """Whether LLVM may vectorize with scalable vectors here (aarch64 SVE, riscv64 V):
        the translation then leaves the vector width to LLVM (backends/llvm/translate.py)."""
        return (self.arch == "aarch64" and self.has("sve")) or (self.arch == "riscv64" and self.has("v"))

    @property
    def vector_registers(self) -> int:
        """Architectural vector registers (x86: 32 zmm with AVX-512, else 16; aarch64 and
        riscv64: 32 vector registers, or 32 FP registers for scalar code)."""
        if self.arch in ("aarch64", "riscv64", "thumbv7em"):
            return 32  # thumbv7em: s0-s31 of its FPU
        return 32 if self.has("avx512f") else 16

    @property
    def int8_accumulators(self) -> int:
        """16-lane i32 accumulators an int8 register tile may hold: half the vector
        registers, each accumulator taking 512 / vector_bits of them (32 zmm: 16; 16 ymm:
        4; 32 NEON q: 4); the other half holds the weight vectors and the broadcasts (the
        AVX2 dot widens each weight vector into an even and an odd half: int8_dot.py)."""
        per_accumulator = max(1, 512 // self.vector_bits)
        return max(1, self.vector_registers // 2 // per_accumulator)

    def _tile_rows(self, cap: int) -> int:
        """Rows of 16 f32 accumulator columns the registers hold: r rows of 16/lanes
        vectors each, plus one row of B vectors and one A broadcast."""
        per_row = max(1, 16 // self.f32_lanes)
        rows = cap
        while rows > 1 and rows * per_row + per_row + 1 > self.vector_registers:
            rows -= 1
        return rows

    @property
    def matmul_register_tile(self) -> tuple[int, int]:
        """(rows, columns) of the f32 GEMM accumulator tile held in vector registers: 32
        zmm hold 8 x 32 (16 accumulators, two B vectors and the A broadcasts: 10 loads per
        16 FMAs; 8 x 16 left 8 FMA chains for 2 pipes x 4 cycles of latency and ran a
        1024^3 GEMM at 70% of the FMA peak, 8 x 32 at 82%), 32 registers of 8 lanes 8 x 16,
        16 ymm 6 x 16 (12 accumulators; also with 4-lane SSE), 32 NEON q registers 6 x 16
        (24)."""
        if self.arch not in ("aarch64", "riscv64", "thumbv7em"):
            if self.vector_registers >= 32:
                return (8, 32) if self.vector_bits >= 512 else (8, 16)
            return (6, 16)
        return (self._tile_rows(8), 16)

    def nchwc_tile_outputs(self, block: int) -> tuple[int, int]:
        """(fewest, most) outputs of the blocked f32 conv's register tile (conv2d_nchwc,
        one accumulator per output pixel and channel block of ``block`` lanes, each
        ``block / lanes`` vector registers): at most 16 accumulator registers, and no more
        than leave room for the weight block and two more (a broadcast, a spare); at least
        10, or 4 fewer than the most (enough FMA chains for 2 pipes x 4-5 cycles of
        latency). A 16-lane block: 10-16 outputs with 32 zmm, 4-6 with 16 ymm (measured: tuned tiles of 3-6 outputs ran ResNet-50's,
        SqueezeNet's and MobileNet's convs 1.7-3x faster than 10-16 outputs on AVX2)."""
        per_output = max(1, -(-block // self.f32_lanes))
        most = min(16, self.vector_registers - per_output - 2)
        fewest = min(10, most - 4)
        return max(1, -(-fewest // per_output)), max(1, most // per_output)

    @property
    def conv_channel_block(self) -> int:
        """Output channels of the flat / grouped conv register tile (x 16 columns): 8 zmm
        accumulators with 32 x86 registers, 4 x 2 ymm with 16, 4 x 4 q registers with NEON."""
        if self.arch not in ("aarch64", "riscv64", "thumbv7em"):
            return 8 if self.vector_registers >= 32 else 4
        rows = self._tile_rows(8)
        return max(r for r in (8, 4, 2, 1) if r <= rows)

    # -- the machine it runs on ----------------------------------------------

    def runs_on_host(self) -> bool:
        """Whether this machine runs the target's code: an llvm target of this host's
        architecture whose features the host all has."""
        if self.kind != "llvm" or self.arch != host_arch():
            return False
        host = Target.host()
        return self == host or self.features <= host.features

    @staticmethod
    @functools.cache
    def host() -> Target:
        """This machine, as llvmlite's host triple, CPU name and enabled features say."""
        import llvmlite.binding as llvm

        llvm.initialize_native_target()
        flat = llvm.get_host_cpu_features().flatten()
        features = frozenset(f[1:] for f in flat.split(",") if f.startswith("+"))
        return Target("llvm", llvm.get_process_triple(), llvm.get_host_cpu_name(), features)

    # -- building ------------------------------------------------------------

    @staticmethod
    def from_string(text: str) -> Target:
        """A TVM-style target string: ``KIND [-mtriple=T] [-mcpu=C] [-mattr=+f,-g]
        [-num-cores=N]`` (``cuda [-arch=sm_NN]``), or a preset name (:data:`PRESETS`), which
        takes the same options (``aarch64 -mattr=+dotprod -num-cores=4``: -mattr adds to the
        preset's features, the others replace its values); ``llvm`` alone (or ``-mcpu=host``)
        is the host."""
        words = text.split()
        if not words:
            raise TargetError("empty target string (expected e.g. 'llvm -mcpu=skylake-avx512' "
                              f"or a preset: {', '.join(PRESETS)})")
        if words[0] in PRESETS:  # a preset, maybe with options: -mattr adds, the others replace
            merged = PRESETS[words[0]].split()
            for word in words[1:]:
                key, eq, value = word.partition("=")
                old = next((i for i, w in enumerate(merged) if w.startswith(key + "=")), None) if eq else None
                if old is not None and key == "-mattr" and value:
                    merged[old] += "," + value
                elif old is not None and value:
                    merged[old] = word
                else:
                    merged.append(word)  # a new option, or a bad word from_string names
            return Target.from_string(" ".join(merged))
        if len(words) == 1 and "-" in words[0] and words[0].split("-", 1)[0] in ARCHES:
            return Target.from_string(f"llvm -mtriple={words[0]}")  # a bare triple: its generic CPU
        kind, options = words[0], {}
        if kind not in KINDS:
            raise TargetError(f"unknown target '{kind}' in '{text}' (expected a kind, "
                              f"{' or '.join(KINDS)}, or a preset: {', '.join(PRESETS)})")
        if kind == "c":
            if len(words) > 1:
                raise TargetError(f"the c target takes no options, got '{' '.join(words[1:])}' in '{text}'")
            return Target("c", C_TRIPLE, "generic")
        allowed = ("-arch",) if kind == "cuda" else ("-mtriple", "-mcpu", "-mattr", "-num-cores")
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
        cores = _check_cores(options["-num-cores"], text) if "-num-cores" in options else None
        return _llvm_target(text, options, cores)

    def __str__(self) -> str:
        if self.kind == "cuda":
            return f"cuda -arch={self.cpu}"
        if self.kind == "c":
            return "c"
        # the CPU's table features this target lacks are listed as -f: the string round-trips
        arch = ARCHES.get(self.arch)
        table = arch.cpus.get(self.cpu, frozenset()) if arch is not None else frozenset()
        attrs = ",".join(["+" + f for f in sorted(self.features - table)]
                         + ["-" + f for f in sorted(table - self.features)])
        cores = f" -num-cores={self.num_cores}" if self.num_cores is not None else ""
        return (f"llvm -mtriple={self.triple} -mcpu={self.cpu}" + (f" -mattr={attrs}" if attrs else "")
                + cores)

    def llvm_features(self) -> str:
        """The feature string LLVM's target machine takes: ``+f`` for each enabled
        feature, ``-f`` for each the CPU's table implies but this target lacks."""
        arch = ARCHES.get(self.arch)
        table = arch.cpus.get(self.cpu, frozenset()) if arch is not None else frozenset()
        return ",".join(["+" + f for f in sorted(self.features)] + ["-" + f for f in sorted(table - self.features)]
                        + list(self.llvm_tuning()))

    def llvm_tuning(self) -> tuple[str, ...]:
        """LLVM tuning flags the schedules rely on. dlc's register tiles are sized for
        ``vector_bits`` (8 x 16 f32 = 8 zmm with AVX-512), but LLVM's Intel server CPU
        models (skylake-avx512 .. sapphirerapids) prefer 256-bit vectors and would split
        every 512-bit vector in two, halving the FMA peak; ``-prefer-256-bit`` keeps
        them whole (AMD's znver4 does not set it)."""
        return ("-prefer-256-bit",) if self.arch == "x86_64" and self.vector_bits == 512 else ()


def _check_cores(value, text: str) -> int:
    try:
        n = int(value)
    except (TypeError, ValueError):
        n = None
    if n is None or isinstance(value, bool) or not 1 <= n <= MAX_CORES:
        raise TargetError(f"bad -num-cores={value} in '{text}' (expected a thread count 1 to {MAX_CORES})")
    return n


def _arch_of_triple(triple: str, text: str) -> Arch:
    parts = triple.split("-")
    arch = ARCHES.get(parts[0])
    os_ok = arch is not None and ("none" in parts[1:] if arch.bare_metal else "linux" in parts[1:])
    if arch is None or len(parts) not in (3, 4) or not os_ok:
        linux = [a for a in ARCHES.values() if not a.bare_metal]
        bare = [a for a in ARCHES.values() if a.bare_metal]
        raise TargetError(f"unknown triple '{triple}' in '{text}' (dlc builds Linux code for "
                          f"{', '.join(a.name for a in linux)}: e.g. {', '.join(a.default_triple for a in linux)}) "
                          f"and bare-metal code for {', '.join(a.name for a in bare)} (e.g. "
                          f"{', '.join(a.default_triple for a in bare)})")
    return arch


def _llvm_target(text: str, options: dict[str, str], cores: int | None) -> Target:
    cpu = options.get("-mcpu", "host")
    if "-mcpu" not in options and "-mtriple" in options:
        foreign = _arch_of_triple(options["-mtriple"], text)
        if foreign.name != host_arch():
            cpu = foreign.generic_cpu  # another machine's triple alone: its generic CPU
    if cpu == "host" and set(options) <= {"-mcpu", "-num-cores"}:
        host = Target.host()
        return host if cores is None else Target("llvm", host.triple, host.cpu, host.features, cores)
    host = Target.host() if cpu == "host" else None
    if "-mtriple" in options:
        triple = options["-mtriple"]
        arch = _arch_of_triple(triple, text)
    elif host is not None:
        triple, arch = host.triple, ARCHES.get(host_arch())
    else:  # the architecture whose table names the CPU (the host's first)
        owners = sorted((a for a in ARCHES.values() if cpu in a.cpus or cpu in a.needs_mattr),
                        key=lambda a: a.name != host_arch())
        arch = owners[0] if owners else ARCHES.get(host_arch(), ARCHES["x86_64"])
        triple = X86_64 if arch.name == "x86_64" else arch.default_triple
    if host is not None and arch is not None and arch.name != host_arch():
        raise TargetError(f"-mcpu=host in '{text}' names this {host_arch()} machine's CPU, "
                          f"not one of {triple}")
    known_cpu = cpu in arch.cpus or cpu in arch.needs_mattr
    if host is None and not known_cpu and not _is_host_cpu(arch, cpu):
        raise TargetError(f"unknown cpu '{cpu}' for {arch.name} in '{text}' (known: "
                          f"{', '.join(sorted(arch.cpus))}" +
                          (f"; with -mattr=+... also {', '.join(sorted(arch.needs_mattr))}" if arch.needs_mattr else "")
                          + ")")
    if host is None and cpu not in arch.cpus and "-mattr" not in options:
        raise TargetError(f"cpu '{cpu}' in '{text}' has no feature table here: give its features "
                          f"with -mattr=+..., or use one of {', '.join(sorted(arch.cpus))}")
    features = set(host.features if host is not None else arch.cpus.get(cpu, frozenset()))
    for item in options["-mattr"].split(",") if "-mattr" in options else ():
        if len(item) < 2 or item[0] not in "+-":
            raise TargetError(f"bad feature '{item}' in '{text}' (expected +name or -name, "
                              "e.g. -mattr=+avx512f,+fma)")
        name = item[1:]
        if arch is not None and name not in arch.features and not _host_knows(arch, name):
            raise TargetError(f"unknown feature '{name}' for {arch.name} in '{text}' "
                              f"({_some_known(name, arch.features)})")
        (features.add if item[0] == "+" else features.discard)(name)
    if arch is not None and arch.name == "riscv64" and not {"f", "d"} <= features:
        raise TargetError(f"riscv64 Linux code needs the f and d extensions (the lp64d ABI of its "
                          f"C library) in '{text}'")
    return Target("llvm", triple, host.cpu if host is not None else cpu, frozenset(features), cores)


def _is_host_cpu(arch: Arch, cpu: str) -> bool:
    """``cpu`` is this host's CPU name (str(Target.host()) round-trips for any CPU)."""
    return arch.name == host_arch() and cpu == Target.host().cpu


def _host_knows(arch: Arch, name: str) -> bool:
    """A feature this host's LLVM reports (a newer LLVM's x86 names), on its own arch."""
    if arch.name != host_arch():
        return False
    import llvmlite.binding as llvm

    llvm.initialize_native_target()
    return name in llvm.get_host_cpu_features()


def as_target(target: Target | str | None) -> Target:
    """A Target from a Target, a target string (or preset), or None (the host)."""
    if target is None:
        return Target.host()
    if isinstance(target, Target):
        return target
    return Target.from_string(target)


def _some_known(name: str, known) -> str:
    """The known names to show for an unknown ``name``: all of a short list, else the
    closest ones (x86 has some 180 features: the whole list would be a page, not a line)."""
    import difflib

    names = sorted(known)
    if len(names) <= 40:
        return "known: " + ", ".join(names)
    close = difflib.get_close_matches(name, names, n=8, cutoff=0.75)
    shown = ", ".join(close) if close else ", ".join(names[:8]) + ", ..."
    return f"{len(names)} known; closest: {shown}" if close else f"{len(names)} known: {shown}"
