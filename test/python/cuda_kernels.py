"""Hand-written loop-level kernels (the `lower-to-loops` contract) for the CUDA tests,
with numpy references. Shapes are parameters so tests can use primes, 1 and broadcasting."""

from __future__ import annotations

import numpy as np
from xdsl.dialects.builtin import ModuleOp
from xdsl.parser import Parser

from dlc.context import make_context


def memref(shape) -> str:
    return f"memref<{'x'.join(map(str, shape))}xf32>"


def module(kernel: str, host: str) -> ModuleOp:
    ctx = make_context()
    from xdsl.dialects.gpu import GPU

    if ctx.get_optional_dialect("gpu") is None:
        ctx.load_dialect(GPU)
    return Parser(ctx, f"builtin.module {{\n{kernel}\n{host}\n}}").parse_module()


def host(kernel: str, inputs, output, weights=()) -> str:
    """@main(inputs..., output) calling ``kernel(inputs..., weights..., output)``."""
    args = [f"%in{k}: {memref(s)}" for k, s in enumerate(inputs)] + [f"%out: {memref(output)}"]
    body = [f'    %w{k} = tloop.weight "{n}" : {memref(s)}' for k, (n, s) in enumerate(weights)]
    operands = [f"%in{k}" for k in range(len(inputs))] + [f"%w{k}" for k in range(len(weights))] + ["%out"]
    types = [memref(s) for s in inputs] + [memref(s) for _, s in weights] + [memref(output)]
    body.append(f"    func.call @{kernel}({', '.join(operands)}) : ({', '.join(types)}) -> ()")
    return (f"  func.func @main({', '.join(args)}) attributes {{tloop.host, tloop.num_inputs = {len(inputs)} : i64}} {{\n"
            + "\n".join(body) + "\n    func.return\n  }")


def broadcast_add(shape_a, shape_b):
    """out = a + b with numpy broadcasting of b (same rank, dims 1 broadcast)."""
    out = tuple(max(x, y) for x, y in zip(shape_a, shape_b))
    names = [f"%i{d}" for d in range(len(out))]
    b_idx = []
    lines = []
    for d, size in enumerate(shape_b):
        if size == 1 and out[d] != 1:
            lines.append(f"%z{d} = arith.constant 0 : index")
            b_idx.append(f"%z{d}")
        else:
            b_idx.append(names[d])
    loops_open = "".join(f"{'  ' * d}    tloop.for {names[d]} = 0 to {n} parallel {{\n" for d, n in enumerate(out))
    pad = "  " * len(out) + "    "
    body = "".join(f"{pad}{ln}\n" for ln in lines + [
        f"%x = memref.load %a[{', '.join(names)}] : {memref(shape_a)}",
        f"%y = memref.load %b[{', '.join(b_idx)}] : {memref(shape_b)}",
        "%s = arith.addf %x, %y : f32",
        f"memref.store %s, %o[{', '.join(names)}] : {memref(out)}",
    ])
    close = "".join(f"{'  ' * d}    }}\n" for d in reversed(range(len(out))))
    kernel = (f"  func.func @main_0_add(%a: {memref(shape_a)}, %b: {memref(shape_b)}, %o: {memref(out)}) "
              f"attributes {{tloop.kernel, tloop.source = \"graph.add\"}} {{\n{loops_open}{body}{close}    func.return\n  }}")
    return module(kernel, host("main_0_add", [shape_a, shape_b], out)), (lambda a, b: a + b)


def row_sum(rows, cols):
    """out[r] = sum_k x[r, k]."""
    kernel = f"""  func.func @main_0_sum(%x: {memref((rows, cols))}, %o: {memref((rows,))}) attributes {{tloop.kernel, tloop.source = "graph.reduce_sum"}} {{
    tloop.for %r = 0 to {rows} parallel {{
      %zero = arith.constant 0.0 : f32
      memref.store %zero, %o[%r] : {memref((rows,))}
      tloop.for %k = 0 to {cols} {{
        %v = memref.load %x[%r, %k] : {memref((rows, cols))}
        %a = memref.load %o[%r] : {memref((rows,))}
        %s = arith.addf %a, %v : f32
        memref.store %s, %o[%r] : {memref((rows,))}
      }}
    }}
    func.return
  }}"""
    return module(kernel, host("main_0_sum", [(rows, cols)], (rows,))), (lambda x: x.sum(1))


def matmul(batch, m, k, n, weight=False):
    """c[b, i, j] = sum_k a[b, i, k] * w[k, j] (w a weight when ``weight``)."""
    a, b, c = (batch, m, k), (k, n), (batch, m, n)
    kernel = f"""  func.func @main_0_matmul(%a: {memref(a)}, %b: {memref(b)}, %c: {memref(c)}) attributes {{tloop.kernel, tloop.source = "graph.matmul"}} {{
    %zero = arith.constant 0.0 : f32
    tloop.for %n = 0 to {batch} parallel {{
      tloop.for %i = 0 to {m} parallel {{
        tloop.for %j = 0 to {n} parallel {{
          memref.store %zero, %c[%n, %i, %j] : {memref(c)}
          tloop.for %k = 0 to {k} {{
            %x = memref.load %a[%n, %i, %k] : {memref(a)}
            %y = memref.load %b[%k, %j] : {memref(b)}
            %p = arith.mulf %x, %y : f32
            %s = memref.load %c[%n, %i, %j] : {memref(c)}
            %t = arith.addf %s, %p : f32
            memref.store %t, %c[%n, %i, %j] : {memref(c)}
          }}
        }}
      }}
    }}
    func.return
  }}"""
    if weight:
        return module(kernel, host("main_0_matmul", [a], c, [("fc.weight", b)])), (lambda x, w: x @ w)
    return module(kernel, host("main_0_matmul", [a, b], c)), (lambda x, w: x @ w)


def conv2d(cin, cout, h, w, pad=1):
    """3x3 conv, stride 1, zero padding ``pad`` (output same size when pad=1)."""
    ho, wo = h + 2 * pad - 2, w + 2 * pad - 2
    x, f, y = (1, cin, h, w), (cout, cin, 3, 3), (1, cout, ho, wo)
    kernel = f"""  func.func @main_0_conv2d(%x: {memref(x)}, %w: {memref(f)}, %y: {memref(y)}) attributes {{tloop.kernel, tloop.source = "graph.conv2d"}} {{
    %zero = arith.constant 0.0 : f32
    tloop.for %n = 0 to 1 parallel {{
      tloop.for %k = 0 to {cout} parallel {{
        tloop.for %p = 0 to {ho} parallel {{
          tloop.for %q = 0 to {wo} parallel {{
            memref.store %zero, %y[%n, %k, %p, %q] : {memref(y)}
            tloop.for %c = 0 to {cin} {{
              tloop.for %r = 0 to 3 {{
                tloop.for %s = 0 to 3 {{
                  %pad = arith.constant {pad} : index
                  %hr = arith.addi %p, %r : index
                  %hi = arith.subi %hr, %pad : index
                  %qs = arith.addi %q, %s : index
                  %wi = arith.subi %qs, %pad : index
                  %ch = arith.constant {h} : index
                  %cw = arith.constant {w} : index
                  %okh = arith.cmpi ult, %hi, %ch : index
                  %okw = arith.cmpi ult, %wi, %cw : index
                  %ok = arith.andi %okh, %okw : i1
                  %in = scf.if %ok -> (f32) {{
                    %l = memref.load %x[%n, %c, %hi, %wi] : {memref(x)}
                    scf.yield %l : f32
                  }} else {{
                    scf.yield %zero : f32
                  }}
                  %wv = memref.load %w[%k, %c, %r, %s] : {memref(f)}
                  %m = arith.mulf %in, %wv : f32
                  %acc = memref.load %y[%n, %k, %p, %q] : {memref(y)}
                  %sum = arith.addf %acc, %m : f32
                  memref.store %sum, %y[%n, %k, %p, %q] : {memref(y)}
                }}
              }}
            }}
          }}
        }}
      }}
    }}
    func.return
  }}"""

    def reference(xv, fv):
        xp = np.pad(xv, ((0, 0), (0, 0), (pad, pad), (pad, pad)))
        out = np.zeros(y, np.float32)
        for r in range(3):
            for s in range(3):
                out += np.einsum("nchw,kc->nkhw", xp[:, :, r:r + ho, s:s + wo], fv[:, :, r, s])
        return out

    return module(kernel, host("main_0_conv2d", [x], y, [("conv.weight", f)])), reference, f


def softmax(rows, cols):
    text = open(__file__.replace("cuda_kernels.py", "../lit/cuda/softmax.mlir")).read()
    text = text.replace("5x37", f"{rows}x{cols}").replace("to 5 ", f"to {rows} ").replace("to 37 ", f"to {cols} ")
    ctx = make_context()
    mod = Parser(ctx, text).parse_module()

    def reference(x):
        e = np.exp(x - x.max(1, keepdims=True))
        return e / e.sum(1, keepdims=True)

    return mod, reference


def two_nests(n):
    """A kernel with two dependent nests: t = x * 2; o[i] = t[n-1-i] (reversed)."""
    s = memref((n,))
    kernel = f"""  func.func @main_0_fused(%x: {s}, %o: {s}) attributes {{tloop.kernel, tloop.source = "graph.reverse"}} {{
    %t = memref.alloca() : {s}
    tloop.for %i = 0 to {n} parallel {{
      %v = memref.load %x[%i] : {s}
      %two = arith.constant 2.0 : f32
      %d = arith.mulf %v, %two : f32
      memref.store %d, %t[%i] : {s}
    }}
    tloop.for %j = 0 to {n} parallel {{
      %last = arith.constant {n - 1} : index
      %r = arith.subi %last, %j : index
      %v = memref.load %t[%r] : {s}
      memref.store %v, %o[%j] : {s}
    }}
    func.return
  }}"""
    return module(kernel, host("main_0_fused", [(n,)], (n,))), (lambda x: (x * 2)[::-1])
