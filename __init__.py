"""dlc: a deep-learning compiler built on xDSL.

Layers (see docs/architecture.md):
  frontends/  -> graph dialect (dialects/graph.py)
  transforms/ graph passes (fold-constant, legalize, ...)
  lowering/   graph -> tensor-loop dialect (dialects/tloop.py) -> llvm
  backends/   llvmlite JIT / shared libraries, CUDA text
  runtime/    thin numpy + ctypes runtime for exported libraries
"""
