"""User-facing errors of dlc's tools: one line `file:line:col: error: msg`,
the offending source line and a caret, exit status 1, never a traceback.

The core layer of diagnostics, below every pass and tool (dlc-opt,
dlc-translate, dlc and the passes raise and print through it). What lives here:

* :class:`DiagnosticError` -- the one exception a tool prints and exits 1 on;
* :class:`LocatingParser` -- xDSL's ``Parser``, plus a ``FileLineColLoc`` set
  on every op it parses (xDSL 0.75 keeps ``op.location`` but its parser only
  fills it from an explicit ``loc(...)``), so that verifier and pass failures
  point at the op's source line; ``Operation.clone`` keeps the location;
* :func:`parse_module`, :func:`verify_module` -- parse / verify turning xDSL's
  exceptions into located :class:`DiagnosticError`\\ s;
* :func:`op_error` -- what a pass raises to fail at an op;
* :func:`describe_op` -- an op named as a reader finds it in printed IR;
* :func:`run_tool` -- the ``main`` wrapper: prints diagnostics, turns any other
  exception into one ``internal error`` line (``DLC_TRACEBACK=1`` shows it).

Why not xDSL's ``xDSLOptMain``/``Diagnostic``: they print a Python traceback and
the whole module in generic form, and do not say where a verifier failure is.
"""

from __future__ import annotations

import os
import re
import sys
import traceback
from collections.abc import Callable
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import llvm
from xdsl.dialects.builtin import FileLineColLoc, IntAttr, IntegerAttr, ModuleOp, StringAttr, UnknownLoc
from xdsl.ir import Block, Operation
from xdsl.utils.lexer import Span
from xdsl.traits import NoTerminator
from xdsl.utils.exceptions import ArgSpecParseError, DiagnosticException, ParseError, VerifyException

from dlc.weights import ResourceParser, WeightResourceError

# Text of every source the tools read, by the name used in locations, so that a
# diagnostic can show the offending line (ops only keep file:line:col).
_SOURCES: dict[str, list[str]] = {}


def register_source(name: str, text: str) -> None:
    _SOURCES[name] = text.split("\n")


def source_line(name: str, line: int) -> str | None:
    lines = _SOURCES.get(name)
    if lines is None or not 1 <= line <= len(lines):
        return None
    return lines[line - 1].rstrip("\r")


@dataclass
class DiagnosticError(Exception):
    """An error for the user, with an optional source location."""

    message: str
    file: str | None = None
    line: int | None = None
    col: int | None = None
    caret_len: int = 1
    # The source line; looked up from the registered sources when not given.
    text: str | None = None

    def __str__(self) -> str:
        return self.format()

    def format(self, tool: str = "dlc") -> str:
        if self.file is None:
            return f"{tool}: error: {self.message}"
        where = self.file
        if self.line is not None:
            where += f":{self.line}"
            if self.col is not None:
                where += f":{self.col}"
        out = f"{where}: error: {self.message}"
        text = self.text
        if text is None and self.line is not None:
            text = source_line(self.file, self.line)
        if text is not None and self.col is not None:
            start = max(self.col - 1, 0)
            width = max(1, min(self.caret_len, len(text) - start))
            out += f"\n{text}\n{' ' * start}{'^' * width}"
        return out


# ---------------------------------------------------------------------------
# locations of ops
# ---------------------------------------------------------------------------


def location_of(op: Operation) -> tuple[str, int, int] | None:
    """(file, line, col) of ``op`` or of its nearest located ancestor."""
    current: Operation | None = op
    while current is not None:
        loc = current.location
        if isinstance(loc, FileLineColLoc):
            return loc.filename.data, loc.line.data, loc.column.data
        current = current.parent_op()
    return None


def error_at_op(op: Operation, message: str) -> DiagnosticError:
    where = location_of(op)
    if where is None:
        return DiagnosticError(message)
    file, line, col = where
    # underline from the op's start (its results) to the end of its name
    text = source_line(file, line) or ""
    name_at = text.find(op.name, col - 1)
    caret_len = name_at + len(op.name) - (col - 1) if name_at >= 0 else 1
    return DiagnosticError(message, file, line, col, caret_len=caret_len)


class VerifyAtOpException(VerifyException):
    """A verifier's failure at another op than its own: an op it contains
    (``tloop.for`` checking the loads and stores of its nest). verify_module
    locates the diagnostic at ``op``."""

    def __init__(self, op: Operation, message: str):
        super().__init__(message)
        self.op = op


class OpError(DiagnosticException):
    """A pass failure at an op: ``raise op_error(op, "why")`` inside a pass."""

    def __init__(self, op: Operation, message: str):
        super().__init__(message)
        self.op = op
        self.message = message


def op_error(op: Operation, message: str) -> OpError:
    return OpError(op, message)


class LocatingParser(ResourceParser):
    """xDSL's Parser that sets a FileLineColLoc on every op it parses and names
    the op (and its column) in unknown-operation errors (and reads the text's
    resource blobs: dlc.weights.ResourceParser)."""

    def __init__(self, ctx: Context, text: str, name: str):
        super().__init__(ctx, text, name)
        self._file_attr = StringAttr(name)
        self._text = self.lexer.input.content  # (the resource section blanked)
        self._counted_pos = 0  # newlines before _counted_pos: _counted_lines
        self._counted_lines = 0

    def parse_module(self, allow_implicit_module: bool = True) -> ModuleOp:
        try:
            return super().parse_module(allow_implicit_module)
        except ParseError as err:
            raise self._better_undefined_value(err) from None

    def _better_undefined_value(self, err: ParseError) -> ParseError:
        # xDSL reports undefined values at the end of the input; point at the first use.
        match = re.fullmatch(r"values used but not defined: \[(%[^\],]+).*\]", err.msg)
        if match is None:
            return err
        name = match.group(1)
        use = next((
            m for m in re.finditer(re.escape(name) + r"(?![\w$.-])", self._text)
            if "//" not in self._text[self._text.rfind("\n", 0, m.start()) + 1 : m.start()]
        ), None)  # the first use outside a comment
        if use is None:
            return err
        span = type(err.span)(use.start(), use.end(), err.span.input)
        return ParseError(span, f"use of undefined value '{name}'")

    def _line_col(self, pos: int) -> tuple[int, int]:
        # Ops start at increasing positions: count newlines incrementally
        # (a count from 0 per op would be quadratic in the file size).
        if pos < self._counted_pos:
            self._counted_pos, self._counted_lines = 0, 0
        self._counted_lines += self._text.count("\n", self._counted_pos, pos)
        self._counted_pos = pos
        return self._counted_lines + 1, pos - (self._text.rfind("\n", 0, pos) + 1) + 1

    def parse_operation(self) -> Operation:
        start = self._current_token.span.start
        line, col = self._line_col(start)
        try:
            op = super().parse_operation()
        except ParseError as err:
            raise self._better_unknown_op(err, start) from None
        except DiagnosticException as err:
            # a custom op parser that checks what it builds: locate its complaint
            first = (str(err).strip().split("\n") or [""])[0]
            raise ParseError(Span(start, max(start + 1, self.pos), self.lexer.input), first) from None
        if isinstance(op.location, UnknownLoc):
            op.location = FileLineColLoc(self._file_attr, IntAttr(line), IntAttr(col))
        return op

    def _parse_generic_operation(self, op_type):
        op = super()._parse_generic_operation(op_type)
        # upstream's #llvm.overflow<...> on llvm.add/sub/mul/shl, an i32 in xDSL 0.75
        # (tools/printing.py prints it upstream's way)
        flags = op.properties.get("overflowFlags")
        if isinstance(op, llvm.ArithmeticBinOpOverflow) and isinstance(flags, llvm.OverflowAttr):
            op.properties["overflowFlags"] = IntegerAttr(flags.to_int(), 32)
        return op

    def _better_unknown_op(self, err: ParseError, start: int) -> ParseError:
        match = re.fullmatch(r"Operation (\S+) is not registered", err.msg)
        if match is None:
            return err
        name = match.group(1)
        dialect = name.split(".")[0]
        if "." in name and self.ctx.get_optional_dialect(dialect) is None:
            msg = f"unknown operation '{name}': no dialect '{dialect}' is loaded"
        else:
            msg = f"unknown operation '{name}'"
        at = self._text.find(name, start)
        if at < 0:
            return ParseError(err.span, msg)
        span = type(err.span)(at, at + len(name), err.span.input)
        return ParseError(span, msg)


def _parse_error(err: ParseError) -> DiagnosticError:
    loc = err.span.get_location()
    text = err.span.input.content
    if isinstance(text, bytes):
        text = text.decode("utf-8", "replace")
    line_start = text.rfind("\n", 0, err.span.start) + 1
    line_end = text.find("\n", err.span.start)
    line = text[line_start : line_end if line_end >= 0 else len(text)]
    message = err.msg.strip()
    if not text[err.span.start :].strip():
        message = f"unexpected end of input ({message})"
    return DiagnosticError(
        message, loc.file, loc.line, loc.col,
        caret_len=max(1, err.span.end - err.span.start), text=line.rstrip("\r"),
    )


def parse_module(ctx: Context, text: str, name: str) -> ModuleOp:
    """Parse ``text`` (registered under ``name`` for diagnostics) into a module."""
    register_source(name, text)
    try:
        return LocatingParser(ctx, text, name).parse_module()
    except ParseError as err:
        raise _parse_error(err) from None
    except WeightResourceError as err:
        raise DiagnosticError(str(err), name) from None


# ---------------------------------------------------------------------------
# verification
# ---------------------------------------------------------------------------

_XDSL_PREFIX = "Operation does not verify: "


def verify_module(module: Operation, context: str = "") -> None:
    """Verify ``module``; a failure becomes a DiagnosticError at the failing op.

    ``context`` (e.g. "after pass 'cse'") is added to the message.
    """
    try:
        module.verify()
        return
    except (VerifyException, ValueError) as err:
        first_error = err
    op, err = _find_failing_op(module) or (module, first_error)
    if isinstance(err, VerifyAtOpException):
        op = err.op
    message = str(err).split("\n")[0].removeprefix(_XDSL_PREFIX)
    message = message.removeprefix(f"Operation {op.name} ")
    if not message.startswith(op.name):
        message = f"'{op.name}' op {message}"
    if context:
        message = f"{message} ({context})"
    raise error_at_op(op, message) from None


def _find_failing_op(op: Operation) -> tuple[Operation, Exception] | None:
    """The op whose verifier fails, in xDSL's order (nested ops first)."""
    for region in op.regions:
        for block in region.blocks:
            for child in block.ops:
                found = _find_failing_op(child)
                if found is not None:
                    return found
            if _is_empty_needing_terminator(block, op):
                return op, VerifyException(
                    "contains an empty block in a single-block region that expects a terminator"
                )
    try:
        op.verify(verify_nested_ops=False)
    except (VerifyException, ValueError) as err:
        return op, err
    return None


def _is_empty_needing_terminator(block: Block, parent: Operation) -> bool:
    region = block.parent
    return (
        not block.ops and region is not None and len(region.blocks) == 1
        and not parent.has_trait(NoTerminator)
    )


# ---------------------------------------------------------------------------
# the main wrapper
# ---------------------------------------------------------------------------


def pipeline_error(err: ArgSpecParseError, spec: str) -> DiagnosticError:
    """A bad --pipeline string, with a caret under the offending token."""
    lines = str(err).split("\n")
    # lines: header, "<unknown>:1:COL", spec, carets, message
    col = None
    match = re.search(r":(\d+):(\d+)$", lines[1]) if len(lines) > 1 else None
    if match:
        col = int(match.group(2))
    message = lines[4].strip() if len(lines) > 4 else lines[-1].strip()
    return DiagnosticError(
        f"invalid pass pipeline: {message}", "<pipeline>", 1, col, text=spec
    )


def run_tool(tool: str, main: Callable[[list[str]], int], argv: list[str] | None = None) -> int:
    """Run ``main(argv)``; print diagnostics as one message and return the exit code."""
    argv = sys.argv[1:] if argv is None else argv
    try:
        return main(argv)
    except DiagnosticError as err:
        print(err.format(tool), file=sys.stderr)
        return 1
    except (KeyboardInterrupt, SystemExit):
        raise
    except BrokenPipeError:
        return 1
    except BaseException as err:  # a bug: one line, traceback on request
        if os.environ.get("DLC_TRACEBACK"):
            traceback.print_exc()
        first = (str(err).strip().split("\n") or [""])[0]
        print(f"{tool}: internal error: {type(err).__name__}: {first}", file=sys.stderr)
        if not os.environ.get("DLC_TRACEBACK"):
            print(f"{tool}: note: rerun with DLC_TRACEBACK=1 to see the traceback", file=sys.stderr)
        return 1


# ---------------------------------------------------------------------------
# files: clear errors on read (writes: output_files.py)
# ---------------------------------------------------------------------------


def read_text(path: str | None) -> tuple[str, str]:
    """(text, name for locations) of ``path``; stdin for None or '-'."""
    if path is None or path == "-":
        return sys.stdin.read(), "<stdin>"
    try:
        with open(path, encoding="utf-8") as f:
            return f.read(), path
    except FileNotFoundError:
        raise DiagnosticError(f"cannot open '{path}': no such file") from None
    except IsADirectoryError:
        raise DiagnosticError(f"cannot read '{path}': is a directory") from None
    except UnicodeDecodeError:
        raise DiagnosticError(f"cannot read '{path}': not UTF-8 text") from None
    except OSError as err:
        raise DiagnosticError(f"cannot read '{path}': {err.strerror or err}") from None


def write_atomically(path: str, data: str | bytes) -> None:
    """Moved to :func:`dlc.output_files.write_atomically` (this name stays for its
    callers): outputs are written by that module's rule."""
    from dlc.output_files import write_atomically as write

    write(path, data)


def describe_op(op: Operation) -> str:
    """Name an op in a pass's one-line error as a reader finds it in the printed
    IR (ops built in Python carry no source location): its name, its result's
    SSA name when it has one, and its position in the enclosing function, e.g.
    ``'graph.add' %sum (op #3 of @main)``."""
    from xdsl.dialects import func

    text = f"'{op.name}'"
    hint = op.results[0].name_hint if op.results else None
    if hint:
        text += f" %{hint}"
    fn = op.parent_op()
    while fn is not None and not isinstance(fn, func.FuncOp):
        fn = fn.parent_op()
    if fn is None:
        return text
    index = next((i for i, o in enumerate(fn.body.walk()) if o is op), None)
    return text + f" (op #{index} of @{fn.sym_name.data})"
