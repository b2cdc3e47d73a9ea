"""The tensor-expression (TE) language: TVM te.compute / Tensor Comprehensions
style kernels, lowered straight to the tensor-loop dialect.

```
# matmul
input A: f32[64, 32]
input B: f32[32, 48]
C[i, j] = sum(k: A[i, k] * B[k, j])
```

Language (grammar in ``grammar.lark``; statements end at a newline or ``;``
-- a newline inside parentheses or brackets continues the statement --, ``#``
starts a comment):

* ``input X: f32[4, 8]`` declares an input (f32, f64, i32, i64); in
  ``graph.custom`` the shape comes from the operand (``input X`` or no
  declaration at all: undeclared tensors bind to the operands in order of
  first use). ``output C: f32[64, 48]`` declares an output and its shape.
* ``C[i, j] = expr`` computes a tensor, once. Later statements may read it
  (an intermediate). The outputs are the declared ones, else the tensors no
  later statement reads.
* expressions: ``+ - * /`` (usual precedence), unary ``-``, comparisons
  ``< <= > >= == !=`` with ``and``/``or`` (only as a ``select`` condition),
  ``select(c, a, b)``, ``exp log sqrt tanh abs``, ``max(a, b)``, ``min(a, b)``,
  integer and float literals, indices as numbers (``select(i == j, 1.0, 0.0)``);
* reductions ``sum prod max min`` over named axes: ``sum(k: ...)``,
  ``max(k, l: ...)``, ``sum(k in 0..32: ...)``;
* subscripts are index arithmetic: ``X[i + r]``, ``X[i*2 + k]``, ``X[i - 1]``.

Index ranges are inferred (``analysis.py`` has the rules): ``A[i, k]`` makes i
range over A's dim 0; ``X[i + r]`` with r known gives i the in-bounds
("valid") range. An access that may leave its tensor is an error, except in a
``select`` branch, where the subscripts are clamped and the select is
expected to discard the value. Padding is written that way:

```
input X: f32[32]
input W: f32[3]
output Y: f32[32]
Y[i] = sum(r: select(i + r - 1 >= 0 and i + r - 1 < 32, X[i + r - 1], 0.0) * W[r])
```

Errors (syntax and meaning) are :class:`TEError` with ``line:col``; an
expression nested more than ``syntax.MAX_DEPTH`` (1000) levels is one.

API: ``lower(text) -> ModuleOp`` (kernel ``@kernel`` + host ``@main``; loops
named after the TE indices; a name an earlier statement used gets the tensor
as suffix: ``i_E``; a reduction's init nest is ``i_init``...), ``reference(text, *arrays)`` (numpy interpreter), ``import_te(path)``
(``dlc-translate --from-te``). Compiling a program to a callable is
``dlc.te.compile`` (te.py, with the tools: it runs the whole pipeline).
"""

from __future__ import annotations

import os
from functools import lru_cache

import numpy as np
from xdsl.dialects.builtin import ModuleOp

from dlc.diagnostics import recursion_headroom
from dlc.frontends.te.analysis import DTYPES, Program, analyse
from dlc.frontends.te.syntax import RECURSION_FRAMES, TEError, parse

KERNEL = "kernel"
HOST = "main"

__all__ = ["KERNEL", "HOST", "TEError", "import_te", "lower", "program",
           "reference"]


def program(source: str, bindings=None) -> Program:
    """Parse and analyse TE text, or the .te file it names (raises TEError)."""
    if source.endswith(".te") and "\n" not in source and os.path.exists(source):
        source = _read(source)
    with recursion_headroom(RECURSION_FRAMES):  # the syntax tree is walked recursively
        return analyse(parse(source), bindings)


def _read(path: str) -> str:
    from dlc.diagnostics import DiagnosticError, read_text

    try:
        return read_text(path)[0]
    except DiagnosticError as err:  # a directory, not UTF-8...
        raise TEError(err.message, err.line, err.col, path) from None


def lower(source: str | Program, kernel: str = KERNEL, host: str = HOST) -> ModuleOp:
    """TE text -> loop-level module: ``@kernel`` (tloop.kernel) + ``@main`` (tloop.host)."""
    from dlc.frontends.te.lowering import build_module

    prog = source if isinstance(source, Program) else program(source)
    with recursion_headroom(RECURSION_FRAMES):
        module = build_module(prog, kernel, host)
        module.verify()
    return module


def reference(source: str | Program, *arrays: np.ndarray) -> list[np.ndarray]:
    """The program's outputs computed by the numpy interpreter."""
    from dlc.frontends.te.interpret import run_program

    prog = source if isinstance(source, Program) else program(source)
    with recursion_headroom(RECURSION_FRAMES):
        return run_program(prog, list(arrays))


def import_te(path: str) -> ModuleOp:
    """Read a .te file and lower it (``dlc-translate --from-te``); errors name file:line:col."""
    from dlc.diagnostics import DiagnosticError, read_text, register_source

    text, _ = read_text(path)  # missing, a directory, not UTF-8: located errors
    register_source(path, text)
    try:
        return lower(text)
    except TEError as err:
        raise DiagnosticError(err.message, path, err.line, err.col) from None


# ---------------------------------------------------------------------------
# graph.custom support: the "te" custom-op language (registered below)
# ---------------------------------------------------------------------------


def _binding_of(t) -> tuple[tuple[int, ...], str]:
    from dlc.dialects.graph_base import numpy_dtype

    dtype = numpy_dtype(t.element_type)
    names = {np.dtype(v): k for k, v in DTYPES.items()}
    if dtype not in names:
        raise TEError(f"element type {t.element_type} is not supported by the TE (f32, f64, i32, i64)")
    return tuple(int(d) for d in t.get_shape()), names[dtype]


@lru_cache(maxsize=256)
def _custom_program(text: str, bindings: tuple) -> Program:
    return program(text, list(bindings))


def custom_program(text: str, operand_types) -> Program:
    """The analysed program of a graph.custom (cached: verification re-infers often)."""
    return _custom_program(text, tuple(_binding_of(t) for t in operand_types))


def _infer_custom(text: str, operand_types) -> list:
    from dlc.dialects.graph_base import ShapeError
    from dlc.frontends.te.lowering import tensor_type_of

    try:
        program = custom_program(text, operand_types)
    except TEError as err:
        raise ShapeError(f"in te: {err}") from None
    return [tensor_type_of(t) for t in program.outputs]


def _run_custom(text: str, operand_types, inputs) -> list:
    from dlc.frontends.te.interpret import run_program

    with recursion_headroom(RECURSION_FRAMES):
        return run_program(custom_program(text, operand_types), list(inputs))


def _register_custom_language() -> None:
    """graph.custom's "te" language (the dialect holds the hook table and never
    imports a frontend) and its lower-to-loops kernel."""
    from dlc.dialects.graph.custom import CUSTOM_LANGUAGES, CustomLanguage
    from dlc.frontends.te import custom_kernel  # noqa: F401  (registers the graph.custom kernel)

    CUSTOM_LANGUAGES.add("te", CustomLanguage(infer=_infer_custom, reference=_run_custom))


_register_custom_language()
