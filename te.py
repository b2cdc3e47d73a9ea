"""``dlc.te``: the tensor-expression language (see ``dlc/frontends/te/__init__.py``).

```python
import dlc.te
f = dlc.te.compile('''
input A: f32[64, 32]
input B: f32[32, 48]
C[i, j] = sum(k: A[i, k] * B[k, j])
''', schedule=lambda s: s.parallel("i"))
C = f(A, B)
```

``compile`` lives here, with the tools, because it runs the whole pipeline
(``dlc.driver``); the language itself is ``dlc.frontends.te``.
"""

from __future__ import annotations

from collections.abc import Callable

from xdsl.dialects.builtin import ModuleOp

from dlc.frontends.te import (  # noqa: F401  (re-exports)
    HOST,
    KERNEL,
    TEError,
    import_te,
    lower,
    program,
    reference,
)


class TEFunction:
    """A compiled TE program: ``f(*inputs)`` returns the output array (a tuple
    of arrays when the program has several outputs). ``module``: the loop-level
    module as compiled (after scheduling); ``compiled``: the driver's
    CompiledModule (``llvm_ir``, ``timings``, ``export``)."""

    def __init__(self, compiled, module: ModuleOp):
        self.compiled = compiled
        self.module = module

    def __call__(self, *arrays):
        outs = self.compiled(*arrays)
        return outs[0] if len(outs) == 1 else tuple(outs)

    @property
    def llvm_ir(self) -> str:
        return self.compiled.llvm_ir


def compile(source: str | ModuleOp, schedule: Callable | str | None = None,
            num_threads: int | None = None, kernel: str = KERNEL) -> TEFunction:
    """Compile TE text (or a module from :func:`lower`, perhaps scheduled) for the CPU.

    ``schedule``: None -> the default schedules for text, the module as it is
    for a module; ``"default"`` / ``"none"``; or a callable given the
    kernel's :class:`~dlc.lowering.schedule.Schedule` (``lambda s: s.split("i", 8)``).
    """
    from dlc.driver import compile as compile_module
    from dlc.lowering.schedule import Schedule, apply_default_schedules

    if isinstance(source, ModuleOp):
        module = source.clone()
        default = "none"
    else:
        module = lower(source, kernel)
        default = "default"
    choice = default if schedule is None else schedule
    if callable(choice):
        choice(Schedule.of(module, kernel))
    elif choice == "default":
        apply_default_schedules(module)
    elif choice != "none":
        raise ValueError(f"schedule must be None, 'default', 'none' or a callable, got {choice!r}")
    module.verify()
    return TEFunction(compile_module(module, num_threads=num_threads), module)


__all__ = ["HOST", "KERNEL", "TEError", "TEFunction", "compile", "import_te", "lower", "program", "reference"]
