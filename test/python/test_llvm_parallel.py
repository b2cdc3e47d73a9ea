"""Parallel loops (outlined, run by libgomp): same results with 1 and 2 threads."""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest
from xdsl.parser import Parser

from dlc.context import make_context
from dlc.driver import CompileError, compile

RNG = np.random.default_rng(7)

# A parallel loop with lb != 0, step 3 and a trip count (ceil((37-2)/3) = 12)
# not divisible by the thread count, inside a serial loop (one GOMP_parallel per
# outer iteration), using live-ins of every kind: buffers, an index, an f32.
NESTED = """
builtin.module {
  func.func @main_0_k(%x: memref<4x37xf32>, %y: memref<4x37xf32>) attributes {tloop.kernel} {
    %scale = arith.constant 3.0 : f32
    tloop.for %r = 0 to 4 {
      %rf = arith.index_cast %r : index to i32
      %rs = arith.sitofp %rf : i32 to f32
      tloop.for %c = 2 to 37 step 3 parallel {
        %v = memref.load %x[%r, %c] : memref<4x37xf32>
        %m = arith.mulf %v, %scale : f32
        %s = arith.addf %m, %rs : f32
        tloop.for %d = 0 to 3 parallel {
          %cc = arith.addi %c, %d : index
          %n = arith.constant 37 : index
          %ok = arith.cmpi slt, %cc, %n : index
          scf.if %ok {
            memref.store %s, %y[%r, %cc] : memref<4x37xf32>
          }
        }
      }
    }
    func.return
  }
  func.func @main(%x: memref<4x37xf32>, %y: memref<4x37xf32>) attributes {tloop.host, tloop.num_inputs = 1 : i64} {
    func.call @main_0_k(%x, %y) : (memref<4x37xf32>, memref<4x37xf32>) -> ()
    func.return
  }
}
"""


def expected_nested(x: np.ndarray) -> np.ndarray:
    y = np.full_like(x, np.nan)
    for r in range(4):
        for c in range(2, 37, 3):
            for d in range(3):
                if c + d < 37:
                    y[r, c + d] = x[r, c] * np.float32(3.0) + np.float32(r)
    return y


def compile_text(text: str, **options):
    return compile(Parser(make_context(), text).parse_module(), **options)


@pytest.mark.parametrize("threads", [1, 2, 3])
def test_parallel_loop_same_result_for_each_thread_count(threads):
    m = compile_text(NESTED, num_threads=threads)
    assert "GOMP_parallel" in m.llvm_ir
    x = RNG.standard_normal((4, 37)).astype(np.float32)
    out = np.full((4, 37), np.nan, np.float32)
    m(x, outputs=[out])
    np.testing.assert_allclose(out[:, 2:], expected_nested(x)[:, 2:], rtol=1e-6)
    assert np.isnan(out[:, :2]).all()  # columns 0 and 1 are never written


def test_set_num_threads_between_calls():
    m = compile_text(NESTED)
    x = RNG.standard_normal((4, 37)).astype(np.float32)
    results = []
    for threads in (1, 2, 0):
        m.set_num_threads(threads)
        results.append(m(x)[0][:, 2:])
    for r in results:
        np.testing.assert_array_equal(r, results[0])


def _threads_used_by_a_parallel_call(env_threads: str | None) -> int:
    """Distinct OS threads that ran iterations of a parallel loop (in a fresh process)."""
    code = r"""
import threading, numpy as np
from xdsl.parser import Parser
from dlc.context import make_context
from dlc.driver import compile
text = '''
builtin.module {
  func.func @main_0_k(%y: memref<64xi32>) attributes {tloop.kernel} {
    tloop.for %i = 0 to 64 parallel {
      %t = func.call @omp_get_thread_num() : () -> i32
      memref.store %t, %y[%i] : memref<64xi32>
    }
    func.return
  }
  func.func private @omp_get_thread_num() -> i32
  func.func @main(%y: memref<64xi32>) attributes {tloop.host, tloop.num_inputs = 0 : i64} {
    func.call @main_0_k(%y) : (memref<64xi32>) -> ()
    func.return
  }
}
'''
m = compile(Parser(make_context(), text).parse_module())
print(len(set(m()[0].tolist())))
"""
    env = dict(os.environ)
    env.pop("DLC_NUM_THREADS", None)
    env.pop("OMP_NUM_THREADS", None)
    if env_threads is not None:
        env["DLC_NUM_THREADS"] = env_threads
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    assert out.returncode == 0, out.stderr
    return int(out.stdout.strip().splitlines()[-1])


def test_dlc_num_threads_env_var_sets_the_team_size():
    assert _threads_used_by_a_parallel_call("1") == 1
    assert _threads_used_by_a_parallel_call("2") == 2
    # default: libgomp uses every CPU this process may run on (64 iterations: one chunk each)
    assert _threads_used_by_a_parallel_call(None) == min(64, len(os.sched_getaffinity(0)))


def test_negative_thread_count_is_rejected():
    with pytest.raises(CompileError, match=r"num_threads: thread count -1 is out of range \(0 = all cores, or 1 to 1024\)"):
        compile_text(NESTED, num_threads=-1)
