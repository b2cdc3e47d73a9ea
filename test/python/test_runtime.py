"""Exported shared libraries + the thin runtime (numpy + ctypes only)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pytest
from xdsl.parser import Parser

from dlc.context import make_context
from dlc.driver import compile
from dlc.runtime import DlcRuntimeError, load
from dlc.weights import WeightStore, attach

RNG = np.random.default_rng(3)

# two entry points; @main uses a weight and an intermediate buffer, a parallel loop
MODEL = """
builtin.module {
  func.func @main_0_affine(%x: memref<3x257xf32>, %w: memref<257xf32>, %y: memref<3x257xf32>) attributes {tloop.kernel} {
    tloop.for %i = 0 to 3 parallel {
      tloop.for %j = 0 to 257 vectorized {
        %v = memref.load %x[%i, %j] : memref<3x257xf32>
        %s = memref.load %w[%j] : memref<257xf32>
        %m = arith.mulf %v, %s : f32
        memref.store %m, %y[%i, %j] : memref<3x257xf32>
      }
    }
    func.return
  }
  func.func @main_1_neg(%x: memref<3x257xf32>, %y: memref<3x257xf32>) attributes {tloop.kernel} {
    tloop.for %i = 0 to 3 {
      tloop.for %j = 0 to 257 {
        %v = memref.load %x[%i, %j] : memref<3x257xf32>
        %n = arith.negf %v : f32
        memref.store %n, %y[%i, %j] : memref<3x257xf32>
      }
    }
    func.return
  }
  func.func @main(%input: memref<3x257xf32>, %scaled: memref<3x257xf32>, %negated: memref<3x257xf32>) attributes {tloop.host, tloop.num_inputs = 1 : i64} {
    %w = tloop.weight "scale" : memref<257xf32>
    %t = memref.alloc() : memref<3x257xf32>
    func.call @main_0_affine(%input, %w, %t) : (memref<3x257xf32>, memref<257xf32>, memref<3x257xf32>) -> ()
    func.call @main_1_neg(%t, %negated) : (memref<3x257xf32>, memref<3x257xf32>) -> ()
    func.call @main_0_affine(%input, %w, %scaled) : (memref<3x257xf32>, memref<257xf32>, memref<3x257xf32>) -> ()
    memref.dealloc %t : memref<3x257xf32>
    func.return
  }
  func.func @negate(%a: memref<3x257xf32>, %b: memref<3x257xf32>) attributes {tloop.host, tloop.num_inputs = 1 : i64} {
    func.call @main_1_neg(%a, %b) : (memref<3x257xf32>, memref<3x257xf32>) -> ()
    func.return
  }
}
"""


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    scale = RNG.standard_normal(257).astype(np.float32)
    module = Parser(make_context(), MODEL).parse_module()
    attach(module, WeightStore({"scale": scale}))
    compiled = compile(module, num_threads=2)
    path = str(tmp_path_factory.mktemp("so") / "model.so")
    compiled.export(path)
    return compiled, path, scale.copy()


RUNNER = r"""
import sys, json
import numpy as np
import dlc.runtime as rt
x = np.load(sys.argv[2])
m = rt.load(sys.argv[1])
outs = m(x)
neg = m.run("negate", x)[0]
np.savez(sys.argv[3], scaled=outs[0], negated=outs[1], negate=neg)
assert "xdsl" not in sys.modules and "llvmlite" not in sys.modules, "runtime imported a compiler module"
print(json.dumps({"specs": [[n, list(s), d.name] for n, s, d in m.input_specs + m.output_specs],
                  "modules": sorted(k for k in sys.modules if k.split(".")[0] in ("xdsl", "llvmlite"))}))
"""


def test_export_then_load_in_a_fresh_process(exported, tmp_path):
    compiled, path, scale = exported
    x = RNG.standard_normal((3, 257)).astype(np.float32)
    np.save(tmp_path / "x.npy", x)
    out = subprocess.run(
        [sys.executable, "-c", RUNNER, path, str(tmp_path / "x.npy"), str(tmp_path / "out.npz")],
        capture_output=True, text=True, cwd=str(tmp_path),
    )
    assert out.returncode == 0, out.stderr
    info = json.loads(out.stdout.strip().splitlines()[-1])
    assert info["modules"] == []
    assert info["specs"] == [["input", [3, 257], "float32"], ["scaled", [3, 257], "float32"],
                             ["negated", [3, 257], "float32"]]
    got = np.load(tmp_path / "out.npz")
    jit_scaled, jit_negated = compiled(x)
    np.testing.assert_array_equal(got["scaled"], jit_scaled)
    np.testing.assert_array_equal(got["negated"], jit_negated)
    np.testing.assert_allclose(got["scaled"], x * scale, rtol=1e-6)
    np.testing.assert_array_equal(got["negate"], -x)


def test_loaded_library_in_process_matches_jit_and_embeds_weights(exported):
    compiled, path, scale = exported
    lib = load(path)
    x = RNG.standard_normal((3, 257)).astype(np.float32)
    for a, b in zip(lib(x), compiled(x)):
        np.testing.assert_array_equal(a, b)
    assert lib.input_specs == compiled.input_specs
    assert lib.output_specs == compiled.output_specs
    with pytest.raises(DlcRuntimeError, match="input 'input' has shape"):
        lib(np.zeros((257, 3), np.float32))
    with pytest.raises(DlcRuntimeError, match="no entry point named @nope"):
        lib.run("nope", x)


def test_library_threads_follow_env_var(exported, tmp_path):
    _, path, _ = exported
    code = (
        "import numpy as np, dlc.runtime as rt; m = rt.load(__import__('sys').argv[1]);"
        "x = np.ones((3, 257), np.float32); print(float(m(x)[1].sum()))"
    )
    for threads in ("1", "2"):
        env = dict(os.environ, DLC_NUM_THREADS=threads)
        out = subprocess.run([sys.executable, "-c", code, path], capture_output=True, text=True, env=env)
        assert out.returncode == 0, out.stderr


def test_large_weights_are_embedded_without_ir_text(tmp_path):
    """A 4M-float weight goes through .incbin: export stays fast, the IR stays small."""
    n = 4 * 1024 * 1024
    text = f"""
builtin.module {{
  func.func @main_0_add(%x: memref<{n}xf32>, %w: memref<{n}xf32>, %y: memref<{n}xf32>) attributes {{tloop.kernel}} {{
    tloop.for %i = 0 to {n} vectorized {{
      %a = memref.load %x[%i] : memref<{n}xf32>
      %b = memref.load %w[%i] : memref<{n}xf32>
      %s = arith.addf %a, %b : f32
      memref.store %s, %y[%i] : memref<{n}xf32>
    }}
    func.return
  }}
  func.func @main(%x: memref<{n}xf32>, %y: memref<{n}xf32>) attributes {{tloop.host, tloop.num_inputs = 1 : i64}} {{
    %w = tloop.weight "big" : memref<{n}xf32>
    func.call @main_0_add(%x, %w, %y) : (memref<{n}xf32>, memref<{n}xf32>, memref<{n}xf32>) -> ()
    func.return
  }}
}}
"""
    big = RNG.standard_normal(n).astype(np.float32)
    module = Parser(make_context(), text).parse_module()
    attach(module, WeightStore({"big": big}))
    compiled = compile(module)
    assert len(compiled.llvm_ir) < 20_000
    path = compiled.export(str(tmp_path / "big.so"))
    assert os.path.getsize(path) > big.nbytes
    x = RNG.standard_normal(n).astype(np.float32)
    np.testing.assert_array_equal(load(path)(x)[0], x + big)


def test_load_errors_are_one_line(tmp_path):
    with pytest.raises(DlcRuntimeError, match="no such file"):
        load(str(tmp_path / "missing.so"))
    bogus = tmp_path / "bogus.so"
    bogus.write_bytes(b"not an elf file")
    with pytest.raises(DlcRuntimeError, match="not an ELF shared library"):
        load(str(bogus))
    from dlc.backends.llvm.jit import libgomp_path

    with pytest.raises(DlcRuntimeError, match="no dlc checksum trailer"):
        load(libgomp_path())


def test_outputs_and_bound_weights_are_64_byte_aligned():
    """numpy puts a large array 16 bytes past a 64-byte boundary: every zmm access of such
    a buffer spans two cache lines. The runtime allocates outputs aligned and the JIT binds
    an aligned copy of a misaligned weight (the weight's values, not its address)."""
    from dlc.runtime.native import aligned, aligned_empty

    for shape, dtype in (((3, 257), np.float32), ((0,), np.float32), ((5,), np.int8), ((), np.float64)):
        out = aligned_empty(shape, dtype)
        assert out.shape == shape and out.dtype == dtype and out.flags.c_contiguous and out.flags.writeable
        assert out.ctypes.data % 64 == 0 or out.size == 0  # (no data to align)
    raw = np.arange(1 << 20, dtype=np.float32)
    misaligned = raw[4:4 + 1000]  # 16 bytes past wherever raw starts
    copy = aligned(misaligned)
    assert copy.ctypes.data % 64 == 0 and np.array_equal(copy, misaligned)
    ok = aligned_empty((8,), np.float32)
    assert aligned(ok) is ok
    module = Parser(make_context(), MODEL).parse_module()
    w = np.arange(4 + 257, dtype=np.float32)[4:]  # a misaligned view: bound as a copy
    attach(module, WeightStore({"scale": w}))
    m = compile(module)
    x = RNG.standard_normal((3, 257)).astype(np.float32)
    scaled, negated = m(x)
    assert scaled.ctypes.data % 64 == 0 and negated.ctypes.data % 64 == 0
    np.testing.assert_allclose(scaled, x * w, rtol=1e-6)
