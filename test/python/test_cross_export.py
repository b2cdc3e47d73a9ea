"""Cross-export: the small CNN compiled on this host for aarch64 and riscv64.

Each library is an ELF shared object for the target's machine that needs only the
C library, libm and libgomp (no Python, no numpy: the C runtime and ``dlc-run``
run it on the device or under qemu-user), records its target in ``dlc_metadata``,
and is refused here with an error naming both architectures. A missing cross
toolchain is one line naming the Debian package, with nothing written.
Skipped (with the reason) where the cross gcc is not installed.
"""

from __future__ import annotations

import json
import os
import shutil
import struct
import subprocess

import numpy as np
import pytest

import dlc
from dlc.backends.llvm import toolchain
from dlc.driver import CompileError
from dlc.runtime import DlcRuntimeError, load
from dlc.target import ARCHES, Target, host_arch

EXAMPLE = os.path.join(os.path.dirname(__file__), "..", "..", "examples", "small_cnn.onnx")
CROSS = [a for a in ("aarch64", "riscv64") if a != host_arch()]
ALLOWED_NEEDED = {"libc.so.6", "libm.so.6", "libgomp.so.1"}
# weak references every gcc-linked shared object carries (crtstuff), resolved or not
ALLOWED_WEAK = {"_ITM_deregisterTMCloneTable", "_ITM_registerTMCloneTable", "__gmon_start__",
                "__cxa_finalize"}


def _need_cross_gcc(arch: str) -> str:
    gcc = f"{toolchain.CROSS_ARCHES[arch].gnu_prefix}-gcc"
    if shutil.which(gcc) is None:
        reason = f"{gcc} is not installed (Debian package {toolchain.CROSS_ARCHES[arch].cc_package})"
        print(f"skipped: {reason}")
        pytest.skip(reason)
    return gcc


@pytest.fixture(scope="module", params=CROSS)
def exported(request, tmp_path_factory):
    arch = request.param
    _need_cross_gcc(arch)
    module = dlc.compile(EXAMPLE, target=arch)
    path = str(tmp_path_factory.mktemp(f"cross-{arch}") / "small_cnn.so")
    assert module.export(path) == path
    return arch, module, path


def _tool(arch: str, name: str) -> str:
    cross = f"{toolchain.CROSS_ARCHES[arch].gnu_prefix}-{name}"
    return cross if shutil.which(cross) else name


def test_library_is_for_the_target_machine(exported):
    arch, module, path = exported
    with open(path, "rb") as f:
        header = f.read(64)
    assert header[:4] == b"\x7fELF" and header[4] == 2  # 64-bit
    assert struct.unpack_from("<H", header, 18)[0] == ARCHES[arch].elf_machine
    assert module.target == Target.from_string(arch) and not module.target.runs_on_host()


def test_library_needs_only_libc_libm_libgomp(exported):
    arch, _, path = exported
    dynamic = subprocess.run([_tool(arch, "readelf"), "-d", path], capture_output=True, text=True,
                             check=True).stdout
    needed = {line.split("[", 1)[1].rstrip("]") for line in dynamic.splitlines() if "(NEEDED)" in line}
    assert needed and needed <= ALLOWED_NEEDED, needed
    symbols = subprocess.run([_tool(arch, "nm"), "-D", "--undefined-only", "--with-symbol-versions", path],
                             capture_output=True, text=True, check=True).stdout
    undefined = [line.split() for line in symbols.splitlines() if line.strip()]
    assert any(name.startswith("GOMP_parallel@") for _, name in undefined)  # the parallel loops
    for kind, name in undefined:
        base, _, version = name.partition("@")
        if kind == "w":
            assert base in ALLOWED_WEAK, name
        else:  # every strong reference is a versioned libc/libm/libgomp symbol
            assert version.split("_", 1)[0] in ("GLIBC", "GOMP", "OMP"), name


def test_metadata_records_the_target(exported):
    arch, module, path = exported
    with open(path, "rb") as f:
        data = f.read()
    start = data.index(b'{"format": "dlc-2"')
    meta = json.loads(data[start:data.index(b"\0", start)])
    assert meta["target"] == str(module.target) and meta["triple"] == module.target.triple
    assert meta["triple"].startswith(arch + "-")
    assert meta["entries"]["main"]["inputs"][0]["shape"] == [1, 3, 32, 32]


def test_loading_it_here_names_both_architectures(exported):
    arch, _, path = exported
    with pytest.raises(DlcRuntimeError) as info:
        load(path)
    message = str(info.value)
    assert (f"built for {arch} (ELF machine {ARCHES[arch].elf_machine}), this host is" in message
            and f"run it with dlc-run under qemu-{arch}, or over RPC" in message), message


def test_calling_a_cross_module_says_where_it_runs(exported):
    arch, module, _ = exported
    assert module.input_specs == [("image", (1, 3, 32, 32), np.dtype("float32"))]
    for call in (lambda: module(np.zeros((1, 3, 32, 32), np.float32)),
                 lambda: module.run("main", np.zeros((1, 3, 32, 32), np.float32)),
                 lambda: module.set_num_threads(2)):
        with pytest.raises(CompileError) as info:
            call()
        assert str(info.value) == (
            f"compiled for {module.target.triple}; this host ({host_arch()}) cannot run it: export it "
            f"and run it with dlc-run under qemu-{arch}, or on the device over RPC")
    assert module.target.triple in module.optimized_llvm_ir  # optimized for the target, no JIT


def test_missing_cross_compiler_names_the_package(tmp_path, monkeypatch):
    arch = CROSS[0]
    module = dlc.compile(EXAMPLE, target=arch)
    real_which = shutil.which
    monkeypatch.setattr(toolchain.shutil, "which",
                        lambda name: None if name.endswith("-linux-gnu-gcc") else real_which(name))
    path = tmp_path / "m.so"
    with pytest.raises(CompileError) as info:
        module.export(str(path))
    package = toolchain.CROSS_ARCHES[arch].cc_package
    assert str(info.value) == (f"export: building for {module.target.triple} needs the cross C compiler "
                               f"{toolchain.CROSS_ARCHES[arch].gnu_prefix}-gcc (Debian package {package})")
    assert not path.exists() and not list(tmp_path.iterdir())


def test_missing_cross_libgomp_names_the_package(tmp_path, monkeypatch):
    arch = CROSS[0]
    _need_cross_gcc(arch)
    module = dlc.compile(EXAMPLE, target=arch)
    real_exists = os.path.exists
    monkeypatch.setattr(toolchain.os.path, "exists",
                        lambda p: False if str(p).endswith("/lib/libgomp.so.1") else real_exists(p))
    with pytest.raises(CompileError, match=rf"needs the cross libgomp .*\(Debian package "
                                           rf"{toolchain.CROSS_ARCHES[arch].gomp_package}\)$"):
        module.export(str(tmp_path / "m.so"))
    assert not list(tmp_path.iterdir())


def test_cli_cross_compiles_and_a_missing_toolchain_is_one_line(tmp_path, monkeypatch, capsys):
    from dlc.tools import dlc_cli

    arch = CROSS[0]
    _need_cross_gcc(arch)
    out = tmp_path / "m.so"
    assert dlc_cli.main(["compile", EXAMPLE, "--target", arch, "-o", str(out)]) == 0
    with open(out, "rb") as f:
        assert struct.unpack_from("<H", f.read(20), 18)[0] == ARCHES[arch].elf_machine
    out.unlink()
    real_which = shutil.which
    monkeypatch.setattr(toolchain.shutil, "which",
                        lambda name: None if name.endswith("-linux-gnu-gcc") else real_which(name))
    capsys.readouterr()
    assert dlc_cli.main(["compile", EXAMPLE, "--target", arch, "-o", str(out)]) == 1
    err = capsys.readouterr().err
    assert err == (f"dlc: error: exporting '{out}': export: building for {Target.from_string(arch).triple} "
                   f"needs the cross C compiler {toolchain.CROSS_ARCHES[arch].gnu_prefix}-gcc "
                   f"(Debian package {toolchain.CROSS_ARCHES[arch].cc_package})\n")
    assert not list(tmp_path.iterdir())
