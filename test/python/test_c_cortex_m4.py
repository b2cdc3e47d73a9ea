"""An MNIST-sized CNN through the C target on a Cortex-M4: ``arm-none-eabi-gcc
-mcpu=cortex-m4 -mthumb -mfloat-abi=hard -mfpu=fpv4-sp-d16`` links the archive with
backends/c/harness (startup, linker script, semihosting main), ``qemu-system-arm -M
mps2-an386`` runs it, and the outputs equal the host run's (and onnxruntime's within
float tolerance). Skipped, with the missing Debian packages named, without the tools.
"""

from __future__ import annotations

import numpy as np
import pytest
from m4_testing import mnist_cnn, mnist_params

import dlc
from dlc.backends.c.toolchain import missing_m4_tools, run_m4, run_on_host


def test_mnist_cnn_on_cortex_m4_matches_host(tmp_path):
    missing = missing_m4_tools()
    if missing is not None:
        pytest.skip(f"cortex-m4 test: {missing}")
    model = mnist_cnn()
    params = mnist_params(model)
    assert 10_000 <= params <= 100_000
    program = dlc.compile(model, target="c")
    x = np.random.default_rng(1).random((1, 1, 28, 28)).astype(np.float32)
    (tmp_path / "host").mkdir()
    (tmp_path / "m4").mkdir()
    host = run_on_host(program, [x], str(tmp_path / "host"))
    m4 = run_m4(program, [x], str(tmp_path / "m4"))
    np.testing.assert_allclose(m4.outputs[0], host[0], rtol=1e-5, atol=1e-7)  # bit-exact in practice
    import onnxruntime as ort

    want = ort.InferenceSession(model.SerializeToString()).run(None, {"image": x})[0]
    np.testing.assert_allclose(m4.outputs[0], want, rtol=1e-4, atol=1e-6)
    ws = program.metadata["workspace"]
    assert ws["peak_live_bytes"] <= ws["bytes"] <= ws["sum_of_buffers"]
    assert m4.model_flash >= program.constant_bytes  # the weights are in flash (text + rodata)
    assert m4.sizes[".bss"] >= ws["bytes"]  # the arena is RAM
    assert m4.sizes[".data"] < 1024  # nothing big copied from flash at reset
    print(f"\ncortex-m4 mnist cnn: {params} parameters; model flash (text+rodata of model.o + weights.o) "
          f"{m4.model_flash} bytes; ELF .text {m4.sizes['.text']} .rodata {m4.sizes['.rodata']}; "
          f"RAM .data+.bss {m4.sizes['.data'] + m4.sizes['.bss']} + stack {m4.stack_bytes} = {m4.ram} bytes; "
          f"arena {ws['bytes']} (peak live {ws['peak_live_bytes']}, sum of buffers {ws['sum_of_buffers']})")
