"""dlc: a deep-learning compiler built on xDSL.

Layers (see docs/architecture.md):
  frontends/  -> graph dialect (dialects/graph/)
  transforms/ graph passes (fold-constant, legalize, ...)
  lowering/   graph -> tensor-loop dialect (dialects/tloop.py) -> llvm
  backends/   llvmlite JIT / shared libraries, CUDA text
  runtime/    thin numpy + ctypes runtime for exported libraries
"""


def __getattr__(name: str):
    # `dlc.compile` and `dlc.te` without importing xDSL/llvmlite on `import dlc`
    # (the runtime must stay light): loaded on first use.
    if name == "compile":
        from dlc.driver import compile

        return compile
    if name == "quantize":  # dlc.quantize(model, calibration, ...): dlc.quantization
        from dlc.quantization import quantize

        return quantize
    if name == "te":  # `dlc.te.compile(...)` after a plain `import dlc`, as the README shows
        import importlib

        return importlib.import_module("dlc.te")
    if name == "tune":  # `dlc.tune(model, trials=...)`: the package is callable (tune/__init__.py)
        import importlib

        return importlib.import_module("dlc.tune")
    raise AttributeError(f"module 'dlc' has no attribute {name!r}")
