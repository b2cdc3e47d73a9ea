"""Targets as data (dlc/target.py): TVM-style strings, presets, per-architecture CPU and
feature tables, the facts the schedules plan with, and every error message.

``str(target)`` is the canonical string and ``from_string(str(t)) == t`` for every
target; an unknown triple, CPU or feature is one TargetError naming it and listing
what is known. target.py is the core layer: importing it loads no llvmlite.
"""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

from dlc import driver
from dlc.driver import CompileError
from dlc.target import ARCHES, PRESETS, Target, TargetError, as_target, host_arch

ADD = """
func.func @main(%a: tensor<4x8xf32>, %b: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %c = graph.add %a, %b : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  func.return %c : tensor<4x8xf32>
}
"""


def t(text: str) -> Target:
    return Target.from_string(text)


def test_strings_round_trip():
    host = Target.host()
    assert t("llvm") == host and t("host") == host and t(str(host)) == host
    for text in ["llvm -mcpu=skylake-avx512", "llvm -mcpu=haswell", "llvm -mcpu=haswell -mattr=+avx512f,-fma",
                 "cuda -arch=sm_80", "c", "llvm -num-cores=3", "llvm -mcpu=alderlake -mattr=+avx2,+fma",
                 "llvm -mtriple=aarch64-unknown-linux-gnu -mcpu=cortex-a72 -mattr=+neon,+dotprod -num-cores=4",
                 "llvm -mtriple=riscv64-linux-gnu -mcpu=sifive-u74 -mattr=-c,+v", "aarch64-linux-gnu",
                 *PRESETS]:
        target = t(text)
        assert t(str(target)) == target, text
        assert str(t(str(target))) == str(target)


def test_canonical_strings():
    assert str(t("llvm -mcpu=haswell -mattr=+avx512f,-fma")) == \
        "llvm -mtriple=x86_64-unknown-linux-gnu -mcpu=haswell -mattr=+avx512f,-fma"
    # the table's features are implied by -mcpu, only the differences are listed
    assert str(t("llvm -mtriple=aarch64-linux-gnu -mcpu=cortex-a72 -mattr=+neon,+dotprod -num-cores=4")) == \
        "llvm -mtriple=aarch64-linux-gnu -mcpu=cortex-a72 -mattr=+dotprod -num-cores=4"
    # a triple is kept as written; alone (or as a bare word) it takes the arch's generic CPU
    assert str(t("aarch64-unknown-linux-gnu")) == "llvm -mtriple=aarch64-unknown-linux-gnu -mcpu=generic"
    assert t("llvm -mtriple=riscv64-linux-gnu") == t("riscv64-linux-gnu") == t("riscv64")
    # -mcpu alone: the architecture whose table names it
    assert t("llvm -mcpu=cortex-a76").triple == "aarch64-linux-gnu"
    assert t("llvm -mcpu=sifive-u74").triple == "riscv64-linux-gnu"
    assert t("llvm -mcpu=znver3").triple == "x86_64-unknown-linux-gnu"


def test_presets():
    assert str(t("aarch64")) == "llvm -mtriple=aarch64-linux-gnu -mcpu=cortex-a72"
    assert t("aarch64").features == {"neon", "fp-armv8", "crc"}
    assert str(t("riscv64")) == "llvm -mtriple=riscv64-linux-gnu -mcpu=generic-rv64"
    assert t("riscv64").features == {"m", "a", "f", "d", "c"}  # rv64gc
    assert str(t("riscv64-v")) == "llvm -mtriple=riscv64-linux-gnu -mcpu=generic-rv64 -mattr=+v"
    assert str(t("x86-64-v3")) == "llvm -mtriple=x86_64-unknown-linux-gnu -mcpu=x86-64-v3"
    assert t("x86-64-v4").has("avx512f") and not t("x86-64-v3").has("avx512f")
    assert t("neoverse-v1").has("sve") and t("neoverse-n1").has("dotprod")
    for name, text in PRESETS.items():
        assert t(name) == t(text)
    assert as_target("aarch64") == t("aarch64") and as_target(None) == Target.host()


@pytest.mark.parametrize("text, arch, bits, registers, tile, block", [
    ("llvm -mcpu=skylake-avx512", "x86_64", 512, 32, (8, 32), 8),
    ("llvm -mcpu=haswell", "x86_64", 256, 16, (6, 16), 4),
    ("llvm -mcpu=nehalem", "x86_64", 128, 16, (6, 16), 4),  # x86: the tiles of today
    ("aarch64", "aarch64", 128, 32, (6, 16), 4),  # NEON: 32 q registers
    ("neoverse-v1", "aarch64", 128, 32, (6, 16), 4),  # SVE code is NEON-sized here
    ("riscv64", "riscv64", 32, 32, (1, 16), 1),  # no V: scalar code
    ("riscv64-v", "riscv64", 128, 32, (6, 16), 4),  # V: VLEN >= 128
    ("cuda -arch=sm_80", "nvptx64", 32, 16, (6, 16), 4),
])
def test_per_arch_facts(text, arch, bits, registers, tile, block):
    target = t(text)
    assert (target.arch, target.vector_bits, target.vector_registers) == (arch, bits, registers)
    assert (target.matmul_register_tile, target.conv_channel_block) == (tile, block)


@pytest.mark.parametrize("text, block, outputs", [
    ("llvm -mcpu=skylake-avx512", 16, (10, 16)),  # one zmm per 16-lane block
    ("llvm -mcpu=haswell", 16, (4, 6)),           # two ymm per block: 8-12 accumulator registers
    ("llvm -mcpu=haswell", 8, (9, 13)),
    ("llvm -mcpu=nehalem", 16, (2, 2)),           # four xmm per block
    ("aarch64", 16, (3, 4)),                      # four q registers per block, 32 of them
])
def test_nchwc_tile_outputs_fit_the_registers(text, block, outputs):
    target = t(text)
    fewest, most = target.nchwc_tile_outputs(block)
    assert (fewest, most) == outputs
    per_output = -(-block // (target.vector_bits // 32))
    assert most * per_output + per_output <= target.vector_registers - 2  # weights and a broadcast fit


def test_runs_on_host():
    host = Target.host()
    assert host.runs_on_host() and t("llvm -num-cores=2").runs_on_host()
    foreign = "riscv64" if host_arch() != "riscv64" else "aarch64"
    assert not t(foreign).runs_on_host()
    assert not t("cuda").runs_on_host() and not t("c").runs_on_host()
    arch = ARCHES.get(host_arch())
    if arch is not None:
        lacking = sorted(arch.features - host.features)
        if lacking:  # a CPU feature this host lacks
            assert not t(f"llvm -mtriple={host.triple} -mcpu={arch.generic_cpu} -mattr=+{lacking[0]}").runs_on_host()
        assert t(f"llvm -mtriple={host.triple} -mcpu={arch.generic_cpu}").runs_on_host() == \
            (arch.cpus[arch.generic_cpu] <= host.features)


KNOWN = ", ".join(PRESETS)


@pytest.mark.parametrize("bad, message", [
    ("", f"empty target string (expected e.g. 'llvm -mcpu=skylake-avx512' or a preset: {KNOWN})"),
    ("tpu", f"unknown target 'tpu' in 'tpu' (expected a kind, llvm or cuda or c, or a preset: {KNOWN})"),
    ("aarch64 -mattr=+avx2", "unknown feature 'avx2' for aarch64 in 'llvm -mtriple=aarch64-linux-gnu "
     "-mcpu=cortex-a72 -mattr=+avx2'"),
    ("x86-64-v3 -foo", "bad target option '-foo' in 'llvm -mtriple=x86_64-unknown-linux-gnu -mcpu=x86-64-v3 -foo'"),
    ("llvm -O3", "bad target option '-O3' in 'llvm -O3' (expected -mtriple=..., -mcpu=..., -mattr=..., "
                 "-num-cores=...)"),
    ("llvm -mcpu=a -mcpu=b", "target option '-mcpu' given twice in 'llvm -mcpu=a -mcpu=b'"),
    ("cuda -mcpu=x", "bad target option '-mcpu=x' in 'cuda -mcpu=x' (expected -arch=...)"),
    ("c -O2", "the c target takes no options, got '-O2' in 'c -O2'"),
    ("llvm -mcpu=nosuchcpu", "unknown cpu 'nosuchcpu' for x86_64 in 'llvm -mcpu=nosuchcpu' (known: broadwell, "
                             "cascadelake, generic, haswell,"),
    ("llvm -mtriple=aarch64-linux-gnu -mcpu=haswell",
     "unknown cpu 'haswell' for aarch64 in 'llvm -mtriple=aarch64-linux-gnu -mcpu=haswell' (known: apple-m1, "
     "cortex-a53, cortex-a55, cortex-a57, cortex-a72, cortex-a76, cortex-a78, generic, neoverse-n1, "
     "neoverse-n2, neoverse-v1)"),
    ("llvm -mtriple=riscv64-linux-gnu -mcpu=cortex-a72",
     "unknown cpu 'cortex-a72' for riscv64 in 'llvm -mtriple=riscv64-linux-gnu -mcpu=cortex-a72' (known: "
     "generic-rv64, rocket-rv64, sifive-u74, sifive-x280, spacemit-x60)"),
    ("llvm -mcpu=alderlake", "cpu 'alderlake' in 'llvm -mcpu=alderlake' has no feature table here: give its "
                             "features with -mattr=+..., or use one of broadwell,"),
    ("llvm -mattr=avx512f", "bad feature 'avx512f' in 'llvm -mattr=avx512f' (expected +name or -name, "
                            "e.g. -mattr=+avx512f,+fma)"),
    ("llvm -mcpu=haswell -mattr=+neon", "unknown feature 'neon' for x86_64 in 'llvm -mcpu=haswell -mattr=+neon' "
                                        "(114 known: 64bit, adx,"),
    ("llvm -mtriple=aarch64-linux-gnu -mattr=+avx2",
     "unknown feature 'avx2' for aarch64 in 'llvm -mtriple=aarch64-linux-gnu -mattr=+avx2' (known: aes, bf16,"),
    ("llvm -mtriple=riscv64-linux-gnu -mattr=+sve",
     "unknown feature 'sve' for riscv64 in 'llvm -mtriple=riscv64-linux-gnu -mattr=+sve' (known: a, c, d, f, m,"),
    ("llvm -mtriple=mips64-linux-gnu", "unknown triple 'mips64-linux-gnu' in 'llvm -mtriple=mips64-linux-gnu' "
     "(dlc builds Linux code for x86_64, aarch64, riscv64: e.g. x86_64-unknown-linux-gnu, aarch64-linux-gnu, "
     "riscv64-linux-gnu)"),
    ("aarch64-none-elf", "unknown triple 'aarch64-none-elf' in 'llvm -mtriple=aarch64-none-elf' (dlc builds Linux"),
    ("llvm -mtriple=aarch64", "unknown triple 'aarch64' in 'llvm -mtriple=aarch64'"),
    ("llvm -num-cores=0", "bad -num-cores=0 in 'llvm -num-cores=0' (expected a thread count 1 to 1024)"),
    ("llvm -num-cores=1025", "bad -num-cores=1025 in 'llvm -num-cores=1025' (expected a thread count 1 to 1024)"),
    ("llvm -num-cores=two", "bad -num-cores=two in 'llvm -num-cores=two' (expected a thread count 1 to 1024)"),
    ("llvm -mtriple=riscv64-linux-gnu -mattr=-d", "riscv64 Linux code needs the f and d extensions (the lp64d "
     "ABI of its C library) in 'llvm -mtriple=riscv64-linux-gnu -mattr=-d'"),
])
def test_errors_name_the_part(bad, message):
    with pytest.raises(TargetError) as info:
        t(bad)
    assert str(info.value).startswith(message), str(info.value)
    assert "\n" not in str(info.value)


def test_host_cpu_of_another_arch_is_an_error():
    foreign = "riscv64-linux-gnu" if host_arch() != "riscv64" else "aarch64-linux-gnu"
    with pytest.raises(TargetError, match=rf"-mcpu=host in 'llvm -mtriple={foreign} -mcpu=host' names this "
                                          rf"{host_arch()} machine's CPU, not one of {foreign}"):
        t(f"llvm -mtriple={foreign} -mcpu=host")


def test_direct_construction_checks_kind_and_cores():
    with pytest.raises(TargetError, match="unknown target kind 'tpu'"):
        Target("tpu", "x", "y")
    with pytest.raises(TargetError, match=r"bad -num-cores=0 in 'num_cores=0'"):
        Target("llvm", "x86_64-unknown-linux-gnu", "generic", num_cores=0)


def test_llvm_features_disable_what_the_table_implies():
    assert t("llvm -mcpu=haswell -mattr=-fma").llvm_features().endswith(",-fma")
    assert "+neon" in t("aarch64").llvm_features().split(",")


MATMUL = """
func.func @main(%a: tensor<64x64xf32>, %b: tensor<64x64xf32>) -> tensor<64x64xf32> {
  %c = graph.matmul %a, %b : (tensor<64x64xf32>, tensor<64x64xf32>) -> tensor<64x64xf32>
  func.return %c : tensor<64x64xf32>
}
"""


@pytest.mark.parametrize("cpu", ["skylake-avx512", "sapphirerapids", "znver4"])
def test_avx512_targets_compute_on_zmm(cpu):
    """LLVM's Intel AVX-512 CPU models prefer 256-bit vectors; the GEMM's 8 x 32 register
    tile is sized for 512-bit ones, so its FMAs must be on zmm (half the peak on ymm)."""
    import re

    import llvmlite.binding as llvm

    from dlc.backends.llvm.jit import target_machine

    target = t(f"llvm -mcpu={cpu}")
    assert "-prefer-256-bit" in target.llvm_features().split(",")
    compiled = driver.compile(MATMUL, target=target)
    asm = target_machine(target).emit_assembly(llvm.parse_assembly(compiled.optimized_llvm_ir))
    fmas = re.findall(r"vfmadd\w+\s+[^\n]*", asm)
    assert fmas and all("zmm" in f for f in fmas), fmas[:4]


def test_avx2_targets_keep_their_tuning():
    assert t("llvm -mcpu=haswell").llvm_tuning() == () and t("aarch64").llvm_tuning() == ()


def test_target_module_loads_no_llvmlite():
    code = "import sys, dlc.target; assert 'llvmlite' not in sys.modules, 'llvmlite loaded'"
    subprocess.run([sys.executable, "-c", code], check=True)


def test_compile_reads_presets_and_num_cores():
    a = np.arange(32, dtype=np.float32).reshape(4, 8)
    module = driver.compile(ADD, target="llvm -num-cores=2")
    assert module._num_threads == 2 and module.target.num_cores == 2
    np.testing.assert_array_equal(module(a, a)[0], a + a)
    assert driver.compile(ADD, target="llvm -num-cores=2", num_threads=1)._num_threads == 1
    with pytest.raises(CompileError, match="^unknown cpu 'nosuchcpu' for x86_64"):
        driver.compile(ADD, target="llvm -mcpu=nosuchcpu")
    from dlc.backends.c import CProgram

    assert isinstance(driver.compile(ADD, target=Target.from_string("c")), CProgram)  # the C target's build
    cross = driver.compile(ADD, target="riscv64" if host_arch() != "riscv64" else "aarch64")
    assert f'target triple = "{cross.target.triple}"' in cross.llvm_ir
    with pytest.raises(CompileError, match="^profile=True needs a target this host runs: compiled for"):
        driver.compile(ADD, target=cross.target, profile=True)


def test_scalable_vector_targets_get_no_width_hints(capfd):
    assert t("neoverse-v1").scalable_vectors and t("riscv64-v").scalable_vectors
    assert not t("aarch64").scalable_vectors and not t("riscv64").scalable_vectors
    assert not t("x86-64-v4").scalable_vectors
    wide = "\n".join(f"%{c} = graph.add %{p}, %{p} : (tensor<64x256xf32>, tensor<64x256xf32>) -> tensor<64x256xf32>"
                     for p, c in zip("abcd", "bcde"))
    src = (f"func.func @main(%a: tensor<64x256xf32>) -> tensor<64x256xf32> {{\n{wide}\n"
           "  func.return %e : tensor<64x256xf32>\n}")
    assert "llvm.loop.vectorize.width" in driver.compile(src, target="aarch64").llvm_ir
    for name in ("neoverse-v1", "riscv64-v"):
        capfd.readouterr()
        module = driver.compile(src, target=name)
        assert "llvm.loop.vectorize.width" not in module.llvm_ir
        assert "vscale" in module.optimized_llvm_ir  # LLVM chose scalable vectors itself
        # a fixed width hint made LLVM print "Scalable vectorization is explicitly disabled"
        assert capfd.readouterr().err == ""


def test_a_feature_the_host_lacks_compiles_without_jit():
    host = Target.host()
    arch = ARCHES.get(host_arch())
    lacking = sorted(arch.features - host.features) if arch is not None else []
    if not lacking:
        pytest.skip("this host has every feature dlc knows for its architecture")
    target = Target("llvm", host.triple, host.cpu, host.features | {lacking[0]})
    assert t(str(target)) == target
    assert lacking[0] in target.features and not target.runs_on_host()
    module = driver.compile(ADD, target=target)
    with pytest.raises(CompileError) as info:
        module(np.ones((4, 8), np.float32), np.ones((4, 8), np.float32))
    assert str(info.value) == (f"compiled for '{target}', which needs CPU features this host lacks "
                               f"(+{lacking[0]}): export it and run it on such a machine, or over RPC")


def test_bare_metal_cortex_m():
    """thumbv7em (Cortex-M4/M7): no OS (bare_metal), scalar f32 code, the preset, and the
    triple LLVM must see as 'none' OS + eabihf environment (else soft-float arguments)."""
    m4 = Target.from_string("cortex-m4")
    assert m4 == Target.from_string("llvm -mtriple=thumbv7em-none-eabihf -mcpu=cortex-m4")
    assert m4 == Target.from_string("thumbv7em-none-eabihf")  # a bare triple: its generic CPU
    assert str(m4) == "llvm -mtriple=thumbv7em-none-eabihf -mcpu=cortex-m4"
    assert m4.bare_metal and m4.vector_bits == 32 and not m4.scalable_vectors and not m4.runs_on_host()
    assert m4.features == {"dsp", "vfp4d16sp"} and m4.llvm_features() == "+dsp,+vfp4d16sp"
    assert m4.llvm_triple == "thumbv7em-unknown-none-eabihf"
    m7 = Target.from_string("llvm -mtriple=thumbv7em-none-eabi -mcpu=cortex-m7 -mattr=-dsp")
    assert m7.features == {"fp-armv8d16sp"} and Target.from_string(str(m7)) == m7
    assert Target.from_string("c").bare_metal
    assert not Target.from_string("aarch64").bare_metal and not Target.from_string("x86-64-v3").bare_metal
    assert Target.from_string("aarch64").llvm_triple == "aarch64-linux-gnu"
    with pytest.raises(TargetError, match="unknown triple 'thumbv7em-linux-gnu'.* and bare-metal code for thumbv7em"):
        Target.from_string("llvm -mtriple=thumbv7em-linux-gnu")


def test_cortex_m_features_are_llvm_names(capfd):
    """Every thumbv7em CPU and feature here is one LLVM's ARM backend takes: it warns
    "is not a recognized feature/processor" on stderr otherwise (a bogus one shows it)."""
    import llvmlite.binding as llvm

    llvm.initialize_all_targets()
    llvm.initialize_all_asmprinters()
    arch = ARCHES["thumbv7em"]
    target = llvm.Target.from_triple(Target.from_string("cortex-m4").llvm_triple)
    for cpu, features in arch.cpus.items():
        target.create_target_machine(cpu=cpu, features=",".join("+" + f for f in sorted(arch.features | features)))
    assert "not a recognized" not in capfd.readouterr().err
    target.create_target_machine(cpu="cortex-m4", features="+bogus")
    assert "'+bogus' is not a recognized feature" in capfd.readouterr().err


def test_presets_take_options():
    """-mattr adds to the preset's features, -mcpu/-mtriple/-num-cores replace its values."""
    t = Target.from_string("aarch64 -mattr=+dotprod -num-cores=4")
    assert t == Target.from_string("llvm -mtriple=aarch64-linux-gnu -mcpu=cortex-a72 -mattr=+dotprod -num-cores=4")
    assert t.has("neon") and t.has("dotprod") and t.num_cores == 4
    assert Target.from_string("aarch64 -mcpu=neoverse-n1").cpu == "neoverse-n1"
    assert not Target.from_string("x86-64-v4 -mattr=-avx512f").has("avx512f")

