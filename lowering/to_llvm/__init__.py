"""The walk behind the ``lower-to-llvm`` pass (lowering/lower_to_llvm.py), by op family:
``function`` (the core and the handler registry), ``scalar`` (arith/math),
``memory`` (memref, weights, workspaces), ``control_flow`` (loops, parallel
outlining, scf, calls)."""
