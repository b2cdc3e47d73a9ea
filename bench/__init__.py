"""Benchmarks (not run by CI): ``python -m dlc.bench.models``, ``python -m dlc.bench.kernels``."""
