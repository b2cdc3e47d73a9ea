"""TE text -> syntax tree (lark LALR parser over ``grammar.lark``).

Why lark and not xDSL's parser: the TE is not MLIR; lark is installed, gives
an LALR parser from a short grammar, and reports the expected token set, which
we turn into a plain-words message with ``line:col``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

import lark
from xdsl.utils.exceptions import DiagnosticException


# Expression nesting allowed (a 10,000-term sum is 10,000 levels): the syntax
# tree, analysis, lowering and interpreter recurse about 2 frames a level, and
# the public entry points (frontends/te/__init__.py) allow that many frames.
MAX_DEPTH = 1000
RECURSION_FRAMES = 4 * MAX_DEPTH + 500


class TEError(DiagnosticException):
    """A TE program is malformed; ``str()`` is one line ``[file:]line:col: message``."""

    def __init__(self, message: str, line: int | None = None, col: int | None = None,
                 file: str | None = None):
        self.message, self.line, self.col, self.file = message, line, col, file
        super().__init__(self._format())

    def _format(self) -> str:
        where = ":".join(str(p) for p in (self.file, self.line, self.col) if p is not None)
        return f"{where}: {self.message}" if where else self.message

    def with_file(self, file: str) -> TEError:
        return TEError(self.message, self.line, self.col, file)

    def __str__(self) -> str:
        return self._format()


# ---------------------------------------------------------------------------
# syntax tree
# ---------------------------------------------------------------------------


@dataclass
class Node:
    line: int
    col: int


@dataclass
class IntLit(Node):
    value: int


@dataclass
class FloatLit(Node):
    value: float


@dataclass
class Name(Node):
    """A bare name: an index variable (or a rank-0 tensor)."""

    name: str


@dataclass
class Access(Node):
    tensor: str
    subscripts: list[Node]


@dataclass
class Unary(Node):
    op: str  # "neg"
    operand: Node


@dataclass
class Binary(Node):
    op: str  # add sub mul div and or, or a comparison "<" "<=" ...
    lhs: Node
    rhs: Node


@dataclass
class Axis(Node):
    name: str
    lower: int | None = None
    upper: int | None = None


@dataclass
class Call(Node):
    """``f(args)``; a reduction when ``body`` is set (``sum(k: body)``)."""

    func: str
    args: list[Node]
    body: Node | None = None


@dataclass
class InputDecl(Node):
    name: str
    dtype: str | None  # None: shape and type come from outside (graph.custom operands)
    shape: list[int] | None


@dataclass
class OutputDecl(Node):
    name: str
    dtype: str
    shape: list[int]


@dataclass
class Compute(Node):
    tensor: str
    indices: list[Name]
    value: Node


@dataclass
class Module:
    statements: list[Node] = field(default_factory=list)


# ---------------------------------------------------------------------------
# parsing
# ---------------------------------------------------------------------------


class _JoinLinesInBrackets:
    """A newline inside (...) or [...] continues the statement (as in Python)."""

    always_accept = ("_NL",)

    def __init__(self):
        self.open: list = []  # the brackets still open (for "never closed" errors)

    def process(self, stream):
        self.open = []
        for tok in stream:
            if tok.type in ("LPAR", "LSQB"):
                self.open.append(tok)
            elif tok.type in ("RPAR", "RSQB"):
                if self.open:
                    self.open.pop()
            elif tok.type == "_NL" and self.open:
                continue
            yield tok


@lru_cache(maxsize=1)
def _parser() -> lark.Lark:
    grammar = (Path(__file__).parent / "grammar.lark").read_text()
    return lark.Lark(grammar, parser="lalr", propagate_positions=True, maybe_placeholders=True,
                     postlex=_JoinLinesInBrackets())


def _int(token) -> int:
    """An integer literal; sizes, bounds and constants are 64-bit in the loop IR."""
    value = int(token)
    if value >= 2**63:
        raise TEError(f"integer {_clip_digits(str(token))} does not fit in 64 bits", *_pos(token))
    return value


def _clip_digits(text: str) -> str:
    return text if len(text) <= 30 else f"{text[:12]}...{text[-6:]} ({len(text)} digits)"


def _pos(meta_or_token) -> tuple[int, int]:
    return meta_or_token.line, meta_or_token.column


def _at(tree: lark.Tree) -> tuple[int, int]:
    return (tree.meta.line, tree.meta.column) if not tree.meta.empty else (0, 0)


class _Build(lark.Transformer):
    """lark tree -> syntax-tree dataclasses (positions from propagate_positions)."""

    # expressions
    def int_lit(self, items):
        tok = items[0]
        return IntLit(*_pos(tok), _int(tok))

    def float_lit(self, items):
        tok = items[0]
        return FloatLit(*_pos(tok), float(tok))

    def name(self, items):
        tok = items[0]
        return Name(*_pos(tok), str(tok))

    @lark.v_args(meta=True)
    def access(self, meta, items):
        tok, subs = items[0], [s for s in items[1:] if s is not None]
        return Access(*_pos(tok), str(tok), subs)

    @lark.v_args(meta=True)
    def neg(self, meta, items):
        return Unary(*_pos(meta), "neg", items[0])

    def _binary(op):  # noqa: N805  (a factory of transformer methods)
        @lark.v_args(meta=True)
        def build(self, meta, items):
            return Binary(*_pos(meta), op, items[0], items[1])

        return build

    add, sub, mul, div = _binary("+"), _binary("-"), _binary("*"), _binary("/")
    and_, or_ = _binary("and"), _binary("or")

    @lark.v_args(meta=True)
    def compare(self, meta, items):
        lhs, op, rhs = items
        return Binary(op.line, op.column, str(op), lhs, rhs)

    def signed_int(self, items):
        return _int(items[0])

    def neg_int(self, items):
        return -_int(items[0])

    @lark.v_args(meta=True)
    def axis_range(self, meta, items):
        tok, lo, hi = items
        return Axis(*_pos(tok), str(tok), lo, hi)

    def call(self, items):
        tok, *args = items
        body = args.pop()  # the optional `: body` (None when absent)
        return Call(*_pos(tok), str(tok), [a for a in args if a is not None], body)

    # statements
    def shape(self, items):
        return [_int(t) for t in items if t is not None]

    def input_decl(self, items):
        tok, dtype, shape = items
        return InputDecl(*_pos(tok), str(tok), str(dtype) if dtype is not None else None, shape)

    def output_decl(self, items):
        tok, dtype, shape = items
        return OutputDecl(*_pos(tok), str(tok), str(dtype), shape)

    def compute(self, items):
        tok, *rest = items
        value = rest.pop()
        indices = [Name(*_pos(t), str(t)) for t in rest if t is not None]
        return Compute(*_pos(tok), str(tok), indices, value)

    def start(self, items):
        return Module([s for s in items if s is not None])


# How expected tokens read in messages (lark names them by terminal).
_TOKEN_WORDS = {
    "NAME": "a name", "INT": "an integer", "FLOAT": "a number", "DTYPE": "an element type (f32, f64, i32, i64)",
    "CMP": "a comparison", "_NL": "end of line", "$END": "end of input", "SEMICOLON": "';'",
    "LSQB": "'['", "RSQB": "']'", "LPAR": "'('", "RPAR": "')'", "COMMA": "','", "COLON": "':'",
    "EQUAL": "'='", "PLUS": "'+'", "MINUS": "'-'", "STAR": "'*'", "SLASH": "'/'",
    "IN": "'in'", "AND": "'and'", "OR": "'or'", "INPUT": "'input'", "OUTPUT": "'output'",
    "__ANON_0": "'..'", "DOUBLE_DOT": "'..'",
}


def _expected(err: lark.UnexpectedToken) -> set[str]:
    """What the parser could take here (the lexer's set also holds the
    always-accepted newline of the bracket postlexer, so ask the parser)."""
    try:
        return set(err.interactive_parser.accepts()) or set(err.expected)
    except Exception:  # an older lark without interactive parsers
        return set(err.expected)


# Tokens that can start an expression: listed together they read "an expression".
_EXPRESSION_START = {"NAME", "INT", "FLOAT", "LPAR", "MINUS"}


def _words(names) -> str:
    names = set(names)
    lead = []
    if _EXPRESSION_START <= names:
        names -= _EXPRESSION_START
        lead = ["an expression"]
    words = lead + sorted({_TOKEN_WORDS.get(n, _literal_of(n)) for n in names})
    if len(words) > 6:
        words = words[:6] + ["..."]
    return ", ".join(words)


def _literal_of(terminal: str) -> str:
    for t in _parser().terminals:
        if t.name == terminal and t.pattern.type == "str":
            return f"'{t.pattern.value}'"
    return terminal.lower()


def _found(token) -> str:
    if token is None or token.type == "$END":
        return "end of input"
    if token.type == "_NL":
        return "end of line"
    return f"'{token}'"


def parse(text: str) -> Module:
    """Parse TE text; raises :class:`TEError` with ``line:col`` on bad syntax."""
    try:
        tree = _parser().parse(text)
    except lark.UnexpectedToken as err:
        at_end = err.token is None or err.token.type == "$END" or err.line in (None, -1)
        unclosed = _parser().options.postlex.open
        if at_end and unclosed:
            tok = unclosed[-1]
            raise TEError(f"'{tok}' is never closed", tok.line, tok.column) from None
        line, col = _end(text) if at_end else (err.line, err.column)
        raise TEError(f"expected {_words(_expected(err))}, found {_found(err.token)}", line, col) from None
    except lark.UnexpectedCharacters as err:
        allowed = f" (expected {_words(err.allowed)})" if err.allowed else ""
        raise TEError(f"unexpected character '{text[err.pos_in_stream]}'{allowed}",
                      err.line, err.column) from None
    except lark.UnexpectedEOF as err:
        raise TEError(f"unexpected end of input (expected {_words(err.expected)})", *_end(text)) from None
    _check_depth(tree)
    try:
        return _Build().transform(tree)
    except lark.exceptions.VisitError as err:  # lark wraps what a rule raises
        if isinstance(err.orig_exc, TEError):
            raise err.orig_exc from None
        raise


def _check_depth(tree: lark.Tree) -> None:
    """A TEError at the first subtree nested more than MAX_DEPTH deep (walked
    without recursion, before the recursive transform)."""
    stack = [(tree, -2)]  # start -> statement -> expression: the expression's root is level 0
    while stack:
        node, depth = stack.pop()
        if depth > MAX_DEPTH:
            raise TEError(f"nesting too deep (more than {MAX_DEPTH} levels)", *_at(node))
        stack.extend((child, depth + 1) for child in node.children if isinstance(child, lark.Tree))


def _end(text: str) -> tuple[int, int]:
    lines = text.split("\n")
    return len(lines), len(lines[-1]) + 1
