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
  exception into one ``internal error`` line (``DLC_TRACEBACK=1`` shows it);
  it runs the tool on a thread with a deep stack (:data:`TOOL_RECURSION_LIMIT`);
* the limits every tool enforces, each a located error: :data:`MAX_NESTING`
  (bracket levels in IR text), :data:`MAX_CONSTANT_BYTES` (a dense literal the
  parser would materialize), and the excerpt of a long source line is cut to
  :data:`EXCERPT_CHARS` either side of the column.

Why not xDSL's ``xDSLOptMain``/``Diagnostic``: they print a Python traceback and
the whole module in generic form, and do not say where a verifier failure is.
"""

from __future__ import annotations

import math
import os
import re
import sys
import threading
import traceback
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import llvm
from xdsl.dialects.builtin import (
    ContainerType,
    FileLineColLoc,
    IntAttr,
    IntegerAttr,
    ModuleOp,
    ShapedType,
    StringAttr,
    UnknownLoc,
)
from xdsl.ir import Block, Operation
from xdsl.utils.lexer import Span
from xdsl.traits import NoTerminator
from xdsl.utils.exceptions import ArgSpecParseError, DiagnosticException, ParseError, VerifyException

from dlc.weights import ResourceParser, WeightResourceError
# ---------------------------------------------------------------------------
# limits (each reported as a located error, never a crash)
# ---------------------------------------------------------------------------

# Bracket nesting ({ ( [ <) allowed in IR text: 5,000 nested modules or tuple
# types would exhaust Python's stack in xDSL's recursive parser, verifier and
# printer. 1,000 is far beyond any real model and parses, verifies, prints and
# runs passes within TOOL_RECURSION_LIMIT (about 7 frames a level).
MAX_NESTING = 1000
# run_tool runs a tool on a thread with this much stack and this recursion
# limit (Python's default 1000 frames is ~140 nested regions in xDSL).
TOOL_RECURSION_LIMIT = 50_000
TOOL_STACK_BYTES = 256 << 20
# A dense literal whose type holds more bytes than this is refused where the
# parser would build it (a splat `dense<1.0> : tensor<10000000000xf32>` is 40 GB).
MAX_CONSTANT_BYTES = 1 << 31
# A diagnostic quotes at most this many characters of the source line either
# side of the column (an error inside a 10 MB line stays one screen line).
EXCERPT_CHARS = 80
MAX_MESSAGE_CHARS = 1000

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
        message = _visible(self.message)
        if self.file is None:
            return f"{tool}: error: {message}"
        where = self.file
        if self.line is not None:
            where += f":{self.line}"
            if self.col is not None:
                where += f":{self.col}"
        out = f"{where}: error: {_clip(message, MAX_MESSAGE_CHARS)}"
        text = self.text
        if text is None and self.line is not None:
            text = source_line(self.file, self.line)
        if text is not None and self.col is not None:
            out += "\n" + excerpt(text, self.col, self.caret_len)
        return out


def _visible(message: str) -> str:
    """Control characters of a message (a NUL quoted from the input) as ``\\xNN``."""
    return _CONTROL_CHARS.sub(lambda m: m.group() if m.group() == "\n" else f"\\x{ord(m.group()):02x}", message)


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[:limit] + "..."


# Characters a terminal would not show as one column (NUL, escapes, DEL):
# shown as '?' in a quoted source line.
_CONTROL_CHARS = re.compile(r"[\x00-\x08\x0a-\x1f\x7f]")


def excerpt(text: str, col: int, caret_len: int = 1, context: int = EXCERPT_CHARS) -> str:
    """The source line and a caret line under column ``col`` (1-based), cut
    to ``context`` characters either side (``...`` marks a cut)."""
    start = max(col - 1, 0)
    width = max(1, min(caret_len, len(text) - start, context))
    lo, hi = max(0, start - context), min(len(text), start + width + context)
    head, tail = ("..." if lo > 0 else ""), ("..." if hi < len(text) else "")
    shown = _CONTROL_CHARS.sub("?", text[lo:hi])  # one column each, so the caret stays aligned
    return f"{head}{shown}{tail}\n{' ' * (len(head) + start - lo)}{'^' * width}"


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


# After a value name: it is being defined (`%a = `, `%a, %b = `, `%a: type` of a
# block argument, printed without a space), not used.
_DEFINES = re.compile(r"(?:\s*(?:,\s*%[\w$.-]+\s*)*=(?!=)|:(?!:))")


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
        except RecursionError:  # nesting that check_nesting does not count (a backstop)
            at = self._current_token.span.start
            raise ParseError(Span(at, at + 1, self.lexer.input), "nesting too deep to parse "
                             f"(more than the {sys.getrecursionlimit()}-frame recursion limit allows)") from None

    # Dense literals are built in memory as they are parsed: refuse a huge one
    # before xDSL repeats a splat 10^22 times (OverflowError) or 10^10 times
    # (tens of GB). The type is checked when it follows the literal ...
    def _parse_block(self) -> Block:
        # xDSL records no definition span for a block that was referenced before it
        # was defined (`cf.br ^bb4` then `^bb4:`), so a second `^bb4:` popped the
        # forward reference again (KeyError); record it, and xDSL's own
        # "re-declaration of block" error fires
        token = self._current_token
        block = super()._parse_block()
        name = token.text[1:]
        if self.blocks.get(name, (None, True))[1] is None:
            self.blocks[name] = (block, token.span)
        return block

    def _parse_dense_literal_type(self):
        start = self._current_token.span.start
        type_ = super()._parse_dense_literal_type()
        self._check_constant_size(type_, start)
        return type_

    # ... and when an op's custom syntax gives it first.
    def parse_dense_int_or_fp_elements_attr(self, type):
        start = self._current_token.span.start
        if type is not None:
            self._check_constant_size(type, start)
        try:
            return super().parse_dense_int_or_fp_elements_attr(type)
        except (ValueError, OverflowError) as err:  # a value the element type cannot hold
            raise ParseError(Span(start, max(start + 1, self.pos), self.lexer.input),
                             _first_line(err)) from None

    def _check_constant_size(self, type_, start: int) -> None:
        count = math.prod(type_.get_shape())
        size = count * _element_bytes(type_.get_element_type())
        if size > MAX_CONSTANT_BYTES:
            raise ParseError(
                Span(start, max(start + 1, self.pos), self.lexer.input),
                f"dense literal of {count} elements ({_bytes_text(size)}) is larger than "
                f"the {_bytes_text(MAX_CONSTANT_BYTES)} limit on constants",
            )

    def _better_undefined_value(self, err: ParseError) -> ParseError:
        # xDSL reports undefined values at the end of the input; point at the first use.
        match = re.fullmatch(r"values used but not defined: \[(%[^\],]+).*\]", err.msg)
        if match is None:
            return err
        name = match.group(1)
        use = next((
            m for m in re.finditer(re.escape(name) + r"(?![\w$.-])", self._text)
            if "//" not in self._text[self._text.rfind("\n", 0, m.start()) + 1 : m.start()]
            and not _DEFINES.match(self._text, m.end())
        ), None)  # the first use outside a comment (not a definition in a region out of scope)
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
        except (DiagnosticException, ValueError, OverflowError) as err:
            # a custom op parser, or an attribute's constructor, that checks what
            # it builds (an integer out of its type's range...): locate its complaint
            raise ParseError(Span(start, max(start + 1, self.pos), self.lexer.input), _first_line(err)) from None
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


def _first_line(err: BaseException) -> str:
    return (str(err).strip().split("\n") or [""])[0] or type(err).__name__


def _element_bytes(element) -> int:
    size = getattr(element, "compile_time_size", None)  # ints, floats, index, complex
    return size if isinstance(size, int) and size > 0 else 8


def _bytes_text(size: int) -> str:
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if size >= scale:
            return f"{size / scale:.3g} {unit}"
    return f"{size} bytes"


# xDSL messages to reword; one is a bug of xDSL 0.75 (mlir_lexer.py's
# _lex_prefixed_ident forgets the f-string prefix, so "{first_char}" is printed
# as is): `%` / `^` / `#` / `!` with no name after it, e.g. `func.func @f(% : i32)`.
_UNFILLED_SUFFIX = "Expected suffix identifier after {first_char}"


def _reword(message: str, text: str, start: int) -> str:
    if message == _UNFILLED_SUFFIX:
        prefix = text[start : start + 1] or "%"
        return f"expected a name or number after '{prefix}'"
    return message


def _parse_error(err: ParseError) -> DiagnosticError:
    loc = err.span.get_location()
    text = err.span.input.content
    if isinstance(text, bytes):
        text = text.decode("utf-8", "replace")
    line_start = text.rfind("\n", 0, err.span.start) + 1
    line_end = text.find("\n", err.span.start)
    line = text[line_start : line_end if line_end >= 0 else len(text)]
    message = _reword(err.msg.strip(), text, err.span.start)
    if not text[err.span.start :].strip():
        message = f"unexpected end of input ({message})"
    return DiagnosticError(
        message, loc.file, loc.line, loc.col,
        caret_len=max(1, err.span.end - err.span.start), text=line.rstrip("\r"),
    )


def parse_module(ctx: Context, text: str, name: str) -> ModuleOp:
    """Parse ``text`` (registered under ``name`` for diagnostics) into a module."""
    register_source(name, text)
    check_nesting(text, name)
    try:
        return LocatingParser(ctx, text, name).parse_module()
    except ParseError as err:
        raise _parse_error(err) from None
    except WeightResourceError as err:
        raise DiagnosticError(str(err), name) from None


# Brackets that nest in MLIR text, with the tokens whose brackets do not count:
# string literals (TE programs, hex constants), comments, `->`, `>=`, `<=`.
_NESTING_TOKENS = re.compile(r'"(?:[^"\\\n]|\\.)*"|//[^\n]*|->|>=|<=|[{(\[<]|[})\]>]')


def check_nesting(text: str, name: str, limit: int = MAX_NESTING) -> None:
    """A DiagnosticError at the first bracket nested more than ``limit`` deep
    (before xDSL's recursive parser runs out of stack on it)."""
    depth = 0
    for match in _NESTING_TOKENS.finditer(text):
        token = match.group()
        if len(token) != 1:
            continue
        if token in "{([<":
            depth += 1
            if depth > limit:
                at = match.start()
                line = text.count("\n", 0, at) + 1
                col = at - (text.rfind("\n", 0, at) + 1) + 1
                raise DiagnosticError(f"nesting too deep (more than {limit} levels)", name, line, col)
        elif depth:
            depth -= 1


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
        _check_dominance(module, context)
        return
    except (VerifyException, ValueError) as err:
        first_error = err
    except RecursionError:  # nesting check_nesting did not count: no recursion in here
        raise DiagnosticError("nesting too deep to verify (more than the "
                              f"{sys.getrecursionlimit()}-frame recursion limit allows)"
                              + (f" ({context})" if context else ""), file_of(module)) from None
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


def _check_dominance(module: Operation, context: str) -> None:
    """Each operand is visible where it is used: defined in a block enclosing
    the use and, in the same block, before it. xDSL 0.75's verifier checks
    neither, and a pass or translation meeting `%s` used before `%s = ...`, or
    a loop variable used outside its loop, fails with a KeyError. (Across the
    blocks of one CFG region the order is not checked.)"""
    positions: dict[Block, dict[Operation, int]] = {}
    for user in module.walk():
        for index, operand in enumerate(user.operands):
            owner = getattr(operand, "op", None)  # an OpResult's op; a block argument has none
            if owner is not None and isinstance(owner.parent_op(), ModuleOp):
                continue  # module bodies are graph regions: any order
            block = owner.parent_block() if owner is not None else getattr(operand, "block", None)
            if block is None:
                continue
            anchor: Operation | None = user  # the user, or its ancestor in the defining block
            while anchor is not None and anchor.parent_block() is not block:
                anchor = anchor.parent_op()
            problem = None
            if anchor is None:
                if not _encloses(block.parent, user):
                    problem = "is defined in a region that does not enclose this use"
            elif owner is not None:
                order = positions.get(block)
                if order is None:
                    order = positions[block] = {o: i for i, o in enumerate(block.ops)}
                if order[anchor] <= order[owner]:
                    where = location_of(owner)
                    problem = "does not dominate this use (it is defined later" + (
                        f", at line {where[1]})" if where else ")")
            if problem:
                hint = f" (%{operand.name_hint})" if operand.name_hint else ""
                raise error_at_op(user, f"'{user.name}' op operand #{index}{hint} {problem}"
                                  + (f" ({context})" if context else ""))


def _encloses(region, op: Operation) -> bool:
    """Whether ``op`` is inside ``region`` (in any of its blocks)."""
    current: Operation | None = op
    while current is not None:
        parent_block = current.parent_block()
        if parent_block is not None and parent_block.parent is region:
            return True
        current = current.parent_op()
    return False


def file_of(module: Operation) -> str | None:
    """The source file of ``module``'s ops (the first located top-level op), without recursion."""
    for op in (module, *(module.regions[0].block.ops if module.regions and module.regions[0].blocks else ())):
        if isinstance(op.location, FileLineColLoc):
            return op.location.filename.data
    return None


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


def call_with_deep_stack(fn: Callable, *args, **kwargs):
    """``fn(*args, **kwargs)`` on a thread with TOOL_STACK_BYTES of stack and a
    recursion limit of at least TOOL_RECURSION_LIMIT, so that xDSL's recursive
    parser, verifier, printer and passes handle MAX_NESTING levels (the main
    thread's 8 MB stack overflows, a segfault, long before such a limit).
    Exceptions reach the caller; Ctrl-C interrupts the wait."""
    result: dict[str, object] = {}

    def work() -> None:
        try:
            result["value"] = fn(*args, **kwargs)
        except BaseException as err:  # handed to the caller, re-raised there
            result["error"] = err

    old_limit = sys.getrecursionlimit()
    sys.setrecursionlimit(max(old_limit, TOOL_RECURSION_LIMIT))
    old_size = threading.stack_size(TOOL_STACK_BYTES)
    try:
        worker = threading.Thread(target=work, name="dlc-tool", daemon=True)
        worker.start()
    finally:
        threading.stack_size(old_size)
    try:
        worker.join()
    finally:
        if not worker.is_alive():
            sys.setrecursionlimit(old_limit)
    if "error" in result:
        raise result["error"]  # type: ignore[misc]
    return result.get("value")


@contextmanager
def recursion_headroom(frames: int) -> Iterator[None]:
    """At least ``frames`` more Python frames allowed inside the block (the
    limit is restored after): for a recursive walk over input whose depth a
    check has already bounded (the TE's expression depth), called from any
    thread. Stays well within the main thread's 8 MB stack for a few thousand."""
    depth, frame = 0, sys._getframe()
    while frame is not None:
        depth, frame = depth + 1, frame.f_back
    old = sys.getrecursionlimit()
    if depth + frames > old:
        sys.setrecursionlimit(depth + frames)
    try:
        yield
    finally:
        if depth + frames > old:
            sys.setrecursionlimit(old)


def run_tool(tool: str, main: Callable[[list[str]], int], argv: list[str] | None = None) -> int:
    """Run ``main(argv)`` (on a deep stack: :func:`call_with_deep_stack`); print
    diagnostics as one message and return the exit code."""
    argv = sys.argv[1:] if argv is None else argv
    try:
        return call_with_deep_stack(main, argv)
    except DiagnosticError as err:
        print(err.format(tool), file=sys.stderr)
        return 1
    except (KeyboardInterrupt, SystemExit):
        raise
    except BrokenPipeError:
        return 1
    except RecursionError:  # a backstop: the inputs' limits (MAX_NESTING...) come first
        print(f"{tool}: error: nesting too deep (more than the {TOOL_RECURSION_LIMIT}-frame "
              "recursion limit allows)", file=sys.stderr)
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
        stream = getattr(sys.stdin, "buffer", None)
        if stream is None:  # a text stream (tests replace stdin with StringIO)
            return sys.stdin.read(), "<stdin>"
        data, name = stream.read(), "<stdin>"
    else:
        name = path
        try:
            with open(path, "rb") as f:
                data = f.read()
        except FileNotFoundError:
            raise DiagnosticError(f"cannot open '{path}': no such file") from None
        except IsADirectoryError:
            raise DiagnosticError(f"cannot read '{path}': is a directory") from None
        except OSError as err:
            raise DiagnosticError(f"cannot read '{path}': {err.strerror or err}") from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as err:  # name the first bad byte's line:col
        line = data.count(b"\n", 0, err.start) + 1
        col = len(data[data.rfind(b"\n", 0, err.start) + 1 : err.start].decode("utf-8", "replace")) + 1
        raise DiagnosticError(f"not UTF-8 text (byte 0x{data[err.start]:02x})", name, line, col) from None
    # newlines as text-mode reading gives them
    return text.replace("\r\n", "\n").replace("\r", "\n"), name


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
