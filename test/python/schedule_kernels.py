"""Hand-written loop-level kernels (the lower-to-loops contract) for the schedule tests.

Odd shapes on purpose: primes, 1, broadcasting. Each entry: IR text, kernel
name, and a function making random inputs (outputs included, as the kernel
takes them).
"""

from __future__ import annotations

import numpy as np

MATMUL = """
func.func @mm(%a: memref<7x5xf32>, %b: memref<5x3xf32>, %c: memref<7x3xf32>) attributes {tloop.kernel} {
  tloop.for %i = 0 to 7 {
    tloop.for %j = 0 to 3 {
      %z = arith.constant 0.0 : f32
      memref.store %z, %c[%i, %j] : memref<7x3xf32>
      tloop.for %k = 0 to 5 {
        %x = memref.load %a[%i, %k] : memref<7x5xf32>
        %y = memref.load %b[%k, %j] : memref<5x3xf32>
        %acc = memref.load %c[%i, %j] : memref<7x3xf32>
        %m = arith.mulf %x, %y : f32
        %s = arith.addf %acc, %m : f32
        memref.store %s, %c[%i, %j] : memref<7x3xf32>
      }
    }
  }
  func.return
}
"""

# out[i, j] = relu(x[i, 0] + y[j]): broadcasting on both sides
BROADCAST_ADD = """
func.func @badd(%x: memref<7x1xf32>, %y: memref<11xf32>, %out: memref<7x11xf32>) attributes {tloop.kernel} {
  tloop.for %i = 0 to 7 {
    tloop.for %j = 0 to 11 {
      %c0 = arith.constant 0 : index
      %u = memref.load %x[%i, %c0] : memref<7x1xf32>
      %v = memref.load %y[%j] : memref<11xf32>
      %s = arith.addf %u, %v : f32
      %z = arith.constant 0.0 : f32
      %r = arith.maximumf %s, %z : f32
      memref.store %r, %out[%i, %j] : memref<7x11xf32>
    }
  }
  func.return
}
"""

# NCHW conv, 3x3, padding 1 (guards with a select-like scf.if), 2 -> 3 channels, 7x5 image
CONV2D = """
func.func @conv(%x: memref<1x2x7x5xf32>, %w: memref<3x2x3x3xf32>, %out: memref<1x3x7x5xf32>) attributes {tloop.kernel} {
  tloop.for %n = 0 to 1 {
    tloop.for %f = 0 to 3 {
      tloop.for %h = 0 to 7 {
        tloop.for %ww = 0 to 5 {
          %zero = arith.constant 0.0 : f32
          memref.store %zero, %out[%n, %f, %h, %ww] : memref<1x3x7x5xf32>
          tloop.for %c = 0 to 2 {
            tloop.for %kh = 0 to 3 {
              tloop.for %kw = 0 to 3 {
                %one = arith.constant 1 : index
                %c0 = arith.constant 0 : index
                %c7 = arith.constant 7 : index
                %c5 = arith.constant 5 : index
                %hs = arith.addi %h, %kh : index
                %hi = arith.subi %hs, %one : index
                %ws = arith.addi %ww, %kw : index
                %wi = arith.subi %ws, %one : index
                %h0 = arith.cmpi sge, %hi, %c0 : index
                %h1 = arith.cmpi slt, %hi, %c7 : index
                %w0 = arith.cmpi sge, %wi, %c0 : index
                %w1 = arith.cmpi slt, %wi, %c5 : index
                %hok = arith.andi %h0, %h1 : i1
                %wok = arith.andi %w0, %w1 : i1
                %ok = arith.andi %hok, %wok : i1
                %v = scf.if %ok -> (f32) {
                  %l = memref.load %x[%n, %c, %hi, %wi] : memref<1x2x7x5xf32>
                  scf.yield %l : f32
                } else {
                  %z2 = arith.constant 0.0 : f32
                  scf.yield %z2 : f32
                }
                %k = memref.load %w[%f, %c, %kh, %kw] : memref<3x2x3x3xf32>
                %acc = memref.load %out[%n, %f, %h, %ww] : memref<1x3x7x5xf32>
                %p = arith.mulf %v, %k : f32
                %s = arith.addf %acc, %p : f32
                memref.store %s, %out[%n, %f, %h, %ww] : memref<1x3x7x5xf32>
              }
            }
          }
        }
      }
    }
  }
  func.return
}
"""

# out[i] = sum_r x[i, r]
REDUCE_SUM = """
func.func @rsum(%x: memref<5x13xf32>, %out: memref<5xf32>) attributes {tloop.kernel} {
  tloop.for %i = 0 to 5 {
    %z = arith.constant 0.0 : f32
    memref.store %z, %out[%i] : memref<5xf32>
    tloop.for %r = 0 to 13 {
      %v = memref.load %x[%i, %r] : memref<5x13xf32>
      %acc = memref.load %out[%i] : memref<5xf32>
      %s = arith.addf %acc, %v : f32
      memref.store %s, %out[%i] : memref<5xf32>
    }
  }
  func.return
}
"""

# two sibling loops: t = exp(x) then out = t * 2 (t is kernel-local scratch)
SIBLINGS = """
func.func @sib(%x: memref<13xf32>, %out: memref<13xf32>) attributes {tloop.kernel} {
  %t = memref.alloca() : memref<13xf32>
  tloop.for %i = 0 to 13 {
    %v = memref.load %x[%i] : memref<13xf32>
    %e = math.exp %v : f32
    memref.store %e, %t[%i] : memref<13xf32>
  }
  tloop.for %j = 0 to 13 {
    %v = memref.load %t[%j] : memref<13xf32>
    %two = arith.constant 2.0 : f32
    %m = arith.mulf %v, %two : f32
    memref.store %m, %out[%j] : memref<13xf32>
  }
  func.return
}
"""

# the consumer reads t at j+1 (and t[12] from a first loop): fusing would read before writing
SIBLINGS_SHIFTED = """
func.func @sib(%x: memref<13xf32>, %out: memref<12xf32>) attributes {tloop.kernel} {
  %t = memref.alloca() : memref<13xf32>
  tloop.for %i = 0 to 12 {
    %v = memref.load %x[%i] : memref<13xf32>
    memref.store %v, %t[%i] : memref<13xf32>
  }
  tloop.for %j = 0 to 12 {
    %one = arith.constant 1 : index
    %j1 = arith.addi %j, %one : index
    %v = memref.load %t[%j1] : memref<13xf32>
    memref.store %v, %out[%j] : memref<12xf32>
  }
  func.return
}
"""

# 1-element and prime-length elementwise
SCALE_1 = """
func.func @one(%x: memref<1x13xf32>, %out: memref<1x13xf32>) attributes {tloop.kernel} {
  tloop.for %i = 0 to 1 {
    tloop.for %j = 0 to 13 {
      %v = memref.load %x[%i, %j] : memref<1x13xf32>
      %t = math.tanh %v : f32
      memref.store %t, %out[%i, %j] : memref<1x13xf32>
    }
  }
  func.return
}
"""

# host + producer (elementwise exp with broadcast) + consumer (row sum), for inline
HOST_CHAIN = """
func.func @main_0_exp(%x: memref<5x1xf32>, %t: memref<5x7xf32>) attributes {tloop.kernel, tloop.source = "graph.exp"} {
  tloop.for %i = 0 to 5 {
    tloop.for %j = 0 to 7 {
      %c0 = arith.constant 0 : index
      %v = memref.load %x[%i, %c0] : memref<5x1xf32>
      %e = math.exp %v : f32
      memref.store %e, %t[%i, %j] : memref<5x7xf32>
    }
  }
  func.return
}
func.func @main_1_add(%t: memref<5x7xf32>, %y: memref<7xf32>, %out: memref<5x7xf32>) attributes {tloop.kernel, tloop.source = "graph.add"} {
  tloop.for %i = 0 to 5 {
    tloop.for %j = 0 to 7 {
      %a = memref.load %t[%i, %j] : memref<5x7xf32>
      %b = memref.load %y[%j] : memref<7xf32>
      %s = arith.addf %a, %b : f32
      memref.store %s, %out[%i, %j] : memref<5x7xf32>
    }
  }
  func.return
}
func.func @main(%x: memref<5x1xf32>, %y: memref<7xf32>, %out: memref<5x7xf32>) attributes {tloop.host, tloop.num_inputs = 2 : i64} {
  %t = memref.alloc() : memref<5x7xf32>
  func.call @main_0_exp(%x, %t) : (memref<5x1xf32>, memref<5x7xf32>) -> ()
  func.call @main_1_add(%t, %y, %out) : (memref<5x7xf32>, memref<7xf32>, memref<5x7xf32>) -> ()
  memref.dealloc %t : memref<5x7xf32>
  func.return
}
"""


def random_args(module, name: str, seed: int = 0) -> list[np.ndarray]:
    """Random f32 arrays for every argument of @name (outputs get garbage, as in real use)."""
    from xdsl.dialects import func

    rng = np.random.default_rng(seed)
    f = next(op for op in module.ops if isinstance(op, func.FuncOp) and op.sym_name.data == name)
    return [rng.standard_normal(tuple(a.type.get_shape())).astype(np.float32) for a in f.args]

# a perfect matmul nest that accumulates into %c (no init): every loop order is legal
MATMUL_ACC = """
func.func @mma(%a: memref<6x5xf32>, %b: memref<5x11xf32>, %c: memref<6x11xf32>) attributes {tloop.kernel} {
  tloop.for %i = 0 to 6 {
    tloop.for %j = 0 to 11 {
      tloop.for %k = 0 to 5 {
        %x = memref.load %a[%i, %k] : memref<6x5xf32>
        %y = memref.load %b[%k, %j] : memref<5x11xf32>
        %acc = memref.load %c[%i, %j] : memref<6x11xf32>
        %m = arith.mulf %x, %y : f32
        %s = arith.addf %acc, %m : f32
        memref.store %s, %c[%i, %j] : memref<6x11xf32>
      }
    }
  }
  func.return
}
"""

# a 2-D stencil: t = 2x, then out[i, j] = t[i, j] + t[i + 1, j] (compute_at moves t's nest in)
STENCIL = """
func.func @stencil(%x: memref<7x5xf32>, %out: memref<6x5xf32>) attributes {tloop.kernel} {
  %t = memref.alloca() : memref<7x5xf32>
  tloop.for %p = 0 to 7 {
    tloop.for %q = 0 to 5 {
      %v = memref.load %x[%p, %q] : memref<7x5xf32>
      %two = arith.constant 2.0 : f32
      %d = arith.mulf %v, %two : f32
      memref.store %d, %t[%p, %q] : memref<7x5xf32>
    }
  }
  tloop.for %i = 0 to 6 {
    tloop.for %j = 0 to 5 {
      %one = arith.constant 1 : index
      %i1 = arith.addi %i, %one : index
      %a = memref.load %t[%i, %j] : memref<7x5xf32>
      %b = memref.load %t[%i1, %j] : memref<7x5xf32>
      %s = arith.addf %a, %b : f32
      memref.store %s, %out[%i, %j] : memref<6x5xf32>
    }
  }
  func.return
}
"""

# loops with a non-zero start and a step: out[i, j] = x[i, j] * 3 on odd rows, every 3rd column
STRIDED = """
func.func @strided(%x: memref<12x10xf32>, %out: memref<12x10xf32>) attributes {tloop.kernel} {
  tloop.for %i = 1 to 12 step 2 {
    tloop.for %j = 2 to 10 step 3 {
      %v = memref.load %x[%i, %j] : memref<12x10xf32>
      %three = arith.constant 3.0 : f32
      %m = arith.mulf %v, %three : f32
      memref.store %m, %out[%i, %j] : memref<12x10xf32>
    }
  }
  func.return
}
"""
