"""The portable C target (bare metal): a model as readable C99 source with no runtime
dependencies, every intermediate in one caller-provided arena, the weights as ``const``
arrays for flash (``build.py``, ``emit_c.py``; ``harness/`` holds a host harness and a
Cortex-M4 startup, linker script and semihosting ``main``, ``cortex_m.py`` builds and
runs that under qemu).

    program = dlc.backends.c.build(module)          # or dlc.compile(model, target="c")
    program.source, program.header, program.metadata
    program.export("model.tar")                     # src/, include/, metadata.json
"""

from dlc.backends.c.build import ARCHIVE_FORMAT, CBuildError, CProgram, build, emit_c_source
from dlc.backends.c.emit_c import LIBM_FUNCTIONS, CEmitError

__all__ = ["ARCHIVE_FORMAT", "CBuildError", "CEmitError", "CProgram", "LIBM_FUNCTIONS", "build", "emit_c_source"]
