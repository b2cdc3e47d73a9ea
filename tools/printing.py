"""Printing IR for the tools: custom or generic form, large constants elided.

``print_module(module, stream, generic=..., elide_constants=N)`` prints a dense
elements attribute with more than N elements as ``dense_resource<__elided__>``
(like MLIR's ``--mlir-elide-elementsattrs-if-larger``), so that IR holding big
constants stays readable.

Why our own: xDSL 0.75's Printer has no eliding option. Ops print their dense
value either through ``Printer.print_attribute`` (handled by
:class:`ElidingPrinter`) or by calling ``DenseIntOrFPElementsAttr.print_without_type``
directly (e.g. ``graph.constant``); for the latter, ``print_without_type`` is
wrapped once, and the wrapper elides only when the printer is an
:class:`ElidingPrinter` -- every other printer gets xDSL's behaviour.
"""

from __future__ import annotations

import sys
from typing import IO

from xdsl.dialects.builtin import DenseIntOrFPElementsAttr
from xdsl.ir import Attribute, Operation
from xdsl.printer import Printer

ELIDED = "dense_resource<__elided__>"


class ElidingPrinter(Printer):
    """A Printer that elides dense elements attributes larger than ``elide_limit``."""

    def __init__(self, *args, elide_limit: int | None = None, **kwargs):
        super().__init__(*args, **kwargs)
        self.elide_limit = elide_limit

    def should_elide(self, attr: Attribute) -> bool:
        return (
            self.elide_limit is not None
            and isinstance(attr, DenseIntOrFPElementsAttr)
            and _element_count(attr) > self.elide_limit
        )

    def print_attribute(self, attribute: Attribute) -> None:
        if self.should_elide(attribute):
            self.print_string(ELIDED + " : ")
            super().print_attribute(attribute.get_type())
            return
        super().print_attribute(attribute)


def _element_count(attr: DenseIntOrFPElementsAttr) -> int:
    count = 1
    for dim in attr.get_shape():
        count *= max(dim, 0)
    return count


_xdsl_print_without_type = DenseIntOrFPElementsAttr.print_without_type


def _print_without_type(self: DenseIntOrFPElementsAttr, printer: Printer) -> None:
    if isinstance(printer, ElidingPrinter) and printer.should_elide(self):
        printer.print_string(ELIDED)
        return
    _xdsl_print_without_type(self, printer)


if getattr(DenseIntOrFPElementsAttr.print_without_type, "__name__", "") != "_print_without_type":
    DenseIntOrFPElementsAttr.print_without_type = _print_without_type  # type: ignore[method-assign]


def print_module(
    module: Operation,
    stream: IO[str] | None = None,
    *,
    generic: bool = False,
    elide_constants: int | None = None,
    ctx=None,
) -> None:
    """Print ``module`` followed by a newline (and, given ``ctx``, the
    ``dense_resource`` blobs the module refers to, like xdsl-opt)."""
    stream = sys.stdout if stream is None else stream
    printer = ElidingPrinter(
        stream=stream, print_generic_format=generic, elide_limit=elide_constants
    )
    printer.print_op(module)
    stream.write("\n")
    if ctx is not None:
        printer.print_metadata(ctx.loaded_dialects)


def module_to_str(module: Operation, *, generic: bool = False, elide_constants: int | None = None) -> str:
    from io import StringIO

    buffer = StringIO()
    print_module(module, buffer, generic=generic, elide_constants=elide_constants)
    return buffer.getvalue()
