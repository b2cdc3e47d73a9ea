"""Printing IR for the tools: custom or generic form, weights inline, large constants elided.

``print_module(module, stream, generic=..., elide_constants=N)`` prints the
module's weights store inline: the ``dlc.weights`` dictionary of
``dense_resource``s and the file's ``{-# dialect_resources #-}`` section with
their blobs (dlc/weights.py describes the format), so that the text stands
alone; ``inline_weights=False`` leaves the ``dlc.weights`` attribute as it is
(a ``.npz`` sidecar path the caller wrote). It prints a dense elements
attribute, and a weight, with more than N elements as
``dense_resource<__elided__>`` (like MLIR's
``--mlir-elide-elementsattrs-if-larger``), so that IR holding big constants
stays readable; ``elide_resource_chars=N`` elides the weights whose blob is
longer than N characters (MLIR's ``--mlir-elide-resource-strings-if-larger``).

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

from xdsl.dialects import llvm
from xdsl.dialects.builtin import DenseIntOrFPElementsAttr, IntegerAttr
from xdsl.ir import Attribute, Operation
from xdsl.printer import Printer

from dlc.weights import WEIGHTS_ATTR, parsed_blobs, resource_section, resources_attr, store_of

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

    def _print_op_properties(self, properties: dict[str, Attribute]) -> None:
        # llvm.add/sub/mul/shl hold their overflow flags as an i32 in xDSL 0.75; upstream
        # MLIR's generic form spells them #llvm.overflow<...> (LocatingParser reads both)
        flags = properties.get("overflowFlags")
        if isinstance(flags, IntegerAttr):
            properties = {**properties, "overflowFlags": llvm.OverflowAttr.from_int(flags.value.data)}
        super()._print_op_properties(properties)

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
    inline_weights: bool = True,
    elide_resource_chars: int | None = None,
) -> None:
    """Print ``module`` followed by a newline and the ``{-# dialect_resources #-}``
    section of the ``dense_resource`` blobs it refers to: its weights (unless
    ``inline_weights`` is false) and those its text was parsed with (given
    ``ctx``, other dialects' resources too, like xdsl-opt)."""
    stream = sys.stdout if stream is None else stream
    printer = ElidingPrinter(
        stream=stream, print_generic_format=generic, elide_limit=elide_constants
    )
    blobs: dict = {}
    store = store_of(module, create=False) if module.parent_op() is None else None
    had, saved = WEIGHTS_ATTR in module.attributes, module.attributes.get(WEIGHTS_ATTR)
    if inline_weights and store is not None and (len(store) or store.elided):
        attr, blobs = resources_attr(store, elide_constants, elide_resource_chars)
        module.attributes[WEIGHTS_ATTR] = attr
    try:
        printer.print_op(module)
    finally:
        if had:
            module.attributes[WEIGHTS_ATTR] = saved  # type: ignore[assignment]
        else:
            module.attributes.pop(WEIGHTS_ATTR, None)
    stream.write("\n")
    referenced = printer._dialect_resources.pop("builtin", set())  # (xDSL's record of printed handles)
    known = {**parsed_blobs(module), **blobs}
    stream.write(resource_section({key: known[key] for key in referenced if key in known}))
    if ctx is not None:
        printer.print_metadata(ctx.loaded_dialects)


def module_to_str(module: Operation, *, generic: bool = False, elide_constants: int | None = None,
                  inline_weights: bool = True) -> str:
    from io import StringIO

    buffer = StringIO()
    print_module(module, buffer, generic=generic, elide_constants=elide_constants,
                 inline_weights=inline_weights)
    return buffer.getvalue()
