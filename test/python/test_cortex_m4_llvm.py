"""The llvm bare-metal target (``cortex-m4`` = ``llvm -mtriple=thumbv7em-none-eabihf
-mcpu=cortex-m4``, backends/llvm/bare_metal.py): the archive holds ``lib/model.o``, an
ELF object for Thumb-2 from llvmlite, whose undefined symbols are within the C target's
libm list (no malloc, no libgomp, nothing of an OS); linked with backends/c/harness it
runs under ``qemu-system-arm -M mps2-an386`` and matches the ``--target c`` build and
onnxruntime. The lowering's bare-metal mode is checked on its own too. The tool tests
are skipped, with the missing Debian packages named, without the tools.
"""

from __future__ import annotations

import io
import json
import subprocess
import tarfile

import numpy as np
import pytest
from m4_testing import mnist_cnn, mnist_params

import dlc
from dlc.backends.c import LIBM_FUNCTIONS
from dlc.backends.c.toolchain import missing_m4_tools, run_m4
from dlc.driver import CompileError, load_module
from dlc.target import Target

M4 = "llvm -mtriple=thumbv7em-none-eabihf -mcpu=cortex-m4"


def _members(program) -> dict[str, bytes]:
    with tarfile.open(fileobj=io.BytesIO(program.archive_bytes())) as tar:
        return {m.name: tar.extractfile(m).read() for m in tar.getmembers()}


def test_archive_holds_the_object_header_and_metadata():
    program = dlc.compile(mnist_cnn(), target="cortex-m4")
    files = _members(program)
    assert sorted(files) == ["include/dlc_model.h", "lib/model.o", "metadata.json"]
    assert files["lib/model.o"][:4] == b"\x7fELF" and files["lib/model.o"][18] == 40  # EM_ARM
    meta = json.loads(files["metadata.json"])
    assert meta["target"] == M4 and meta["object"] == "lib/model.o"
    c_program = dlc.compile(mnist_cnn(), target="c")  # the same plan, header and entry
    assert files["include/dlc_model.h"] == c_program.header.encode()
    assert meta["workspace"] == c_program.metadata["workspace"]
    assert meta["buffer_plan"] == c_program.metadata["buffer_plan"]
    assert "int dlc_model_run(const float *in_image, float *out_probs, void *workspace);" in program.header
    assert program.summary().startswith(f"dlc: {M4} target: workspace (arena) {meta['workspace']['bytes']} bytes")


def test_bare_metal_lowering_has_no_os_symbols():
    """lower-to-llvm{bare-metal=true}: the workspace is the host function's last argument;
    no allocation, libgomp or thread-count/workspace-cache globals."""
    from dlc.backends.c.build import lower_for_c
    from dlc.context import make_context
    from dlc.passes import load_pass

    module = load_module(mnist_cnn())
    lower_for_c(module)
    load_pass("lower-to-llvm")(bare_metal=True).apply(make_context(), module)
    text = str(module)
    for name in ("aligned_alloc", "malloc", "free", "GOMP_", "omp_", "dlc_set_num_threads", "dlc_num_threads",
                 "_workspace", "dlc_alloc_failure", "dlc_release_workspaces"):
        assert name not in text, name
    host = next(op for op in module.ops if op.sym_name.data == "main")
    assert len(host.body.block.args) == 3  # image, probs, workspace


def test_buffer_outside_the_plan_is_an_error():
    """A buffer plan-workspace did not plan (here: no plan at all) would need the heap."""
    from dlc.backends.c.build import C_GRAPH_PASSES, _run
    from dlc.context import make_context
    from dlc.lowering.to_llvm.function import LoweringError
    from dlc.passes import load_pass

    module = load_module(mnist_cnn())
    for name in (*C_GRAPH_PASSES, "lower-to-loops"):
        _run(name, module)
    with pytest.raises(LoweringError, match=r"the buffer '%\w+' \(memref<.*>\) would need the heap, which a "
                                            "bare-metal target has not"):
        load_pass("lower-to-llvm")(bare_metal=True).apply(make_context(), module)


def test_options_of_hosted_targets_are_refused():
    with pytest.raises(CompileError, match="num_threads is for the llvm target of a hosted machine"):
        dlc.compile(mnist_cnn(), target="cortex-m4", num_threads=2)
    with pytest.raises(CompileError, match="profile=True is for the llvm target of a hosted machine"):
        dlc.compile(mnist_cnn(), target=Target.from_string(M4), profile=True)
    with pytest.raises(CompileError, match="byoc= is for hosted llvm targets .*, not 'llvm -mtriple=thumbv7em"):
        dlc.compile(mnist_cnn(), target="cortex-m4", byoc=["c"])


def test_object_runs_on_cortex_m4_and_matches_the_c_target(tmp_path):
    missing = missing_m4_tools()
    if missing is not None:
        pytest.skip(f"cortex-m4 llvm test: {missing}")
    model = mnist_cnn()
    program = dlc.compile(model, target=M4)
    c_program = dlc.compile(model, target="c")
    (tmp_path / "obj").mkdir()
    (tmp_path / "c").mkdir()
    x = np.random.default_rng(1).random((1, 1, 28, 28)).astype(np.float32)
    m4 = run_m4(program, [x], str(tmp_path / "obj"))
    undefined = subprocess.run(["arm-none-eabi-nm", "-u", str(tmp_path / "obj" / "lib" / "model.o")],
                               capture_output=True, text=True, check=True).stdout.split()[1::2]
    allowed = {*LIBM_FUNCTIONS, *(f[:-1] for f in LIBM_FUNCTIONS)}
    assert set(undefined) <= allowed, sorted(set(undefined) - allowed)
    c_m4 = run_m4(c_program, [x], str(tmp_path / "c"))
    np.testing.assert_allclose(m4.outputs[0], c_m4.outputs[0], rtol=1e-5, atol=1e-7)
    import onnxruntime as ort

    want = ort.InferenceSession(model.SerializeToString()).run(None, {"image": x})[0]
    np.testing.assert_allclose(m4.outputs[0], want, rtol=1e-4, atol=1e-6)
    ws = program.metadata["workspace"]
    assert m4.model_flash >= program.constant_bytes  # the weights are in the object's flash
    assert m4.sizes[".bss"] >= ws["bytes"] and m4.sizes[".data"] < 1024
    print(f"\ncortex-m4 mnist cnn ({mnist_params(model)} parameters), arena {ws['bytes']} bytes both: "
          f"llvm object flash {m4.model_flash} bytes, stack {m4.stack_bytes}; "
          f"C target (arm-none-eabi-gcc -O2) flash {c_m4.model_flash} bytes, stack {c_m4.stack_bytes}")
