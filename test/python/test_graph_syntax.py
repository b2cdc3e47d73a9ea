"""Graph-dialect syntax: every op's docstring example parses and verifies;
custom -> print -> parse -> print and custom -> generic -> custom are exact
(for the examples and for the lit round-trip files); every verifier rule
reports its one-line message."""

from __future__ import annotations

import pathlib
import re

import numpy as np
import pytest
from xdsl.utils.exceptions import ParseError, VerifyException

from dlc.dialects import graph as g
from dlc.dialects.graph import GRAPH_OPS
from test_graph_util import parse, to_text

LIT_DIR = pathlib.Path(__file__).resolve().parents[1] / "lit" / "graph"
EXAMPLE = re.compile(r"```mlir\n(.*?)```", re.S)


def _split_types(text: str) -> list[str]:
    """Split 'tensor<2x3xf32>, tensor<f32>' at top-level commas."""
    out, depth, cur = [], 0, ""
    for ch in text:
        depth += ch == "<"
        depth -= ch == ">"
        if ch == "," and depth == 0:
            out.append(cur.strip())
            cur = ""
        else:
            cur += ch
    return out + [cur.strip()] if cur.strip() else out


def example_function(op_cls) -> str:
    """The op's docstring example wrapped in a function whose arguments are
    the example's operands (types taken from its functional type)."""
    match = EXAMPLE.search(op_cls.__doc__ or "")
    assert match, f"{op_cls.name} has no ```mlir example in its docstring"
    line = match.group(1).strip()
    _, rhs = line.split(" = ", 1)
    operands = re.findall(r"%\w+", rhs.split(" : ")[0].split("{")[0])
    args = []
    if operands:
        inputs = rhs.rsplit(" : ", 1)[1].split(") -> ")[0].lstrip("(")
        args = [f"{o}: {t}" for o, t in zip(operands, _split_types(inputs), strict=True)]
    return f"func.func @example({', '.join(args)}) {{\n  {line}\n  func.return\n}}\n"


@pytest.mark.parametrize("op_cls", GRAPH_OPS, ids=[op.name for op in GRAPH_OPS])
def test_docstring_example_parses_verifies_and_round_trips(op_cls):
    module = parse(example_function(op_cls))
    ops = [op for op in module.walk() if isinstance(op, op_cls)]
    assert len(ops) == 1
    assert_round_trips(to_text(module))


def assert_round_trips(text: str) -> None:
    """custom -> parse -> print is stable, and custom -> generic -> custom too."""
    printed = to_text(parse(text))
    assert to_text(parse(printed)) == printed
    generic = to_text(parse(printed), generic=True)
    assert '"graph.' in generic or "graph." not in printed
    assert to_text(parse(generic)) == printed


def _lit_files(kind: str) -> list[pathlib.Path]:
    return sorted(p for p in LIT_DIR.glob("*.mlir") if ("invalid" in p.name) == (kind == "invalid"))


@pytest.mark.parametrize("path", _lit_files("valid"), ids=lambda p: p.name)
def test_lit_file_round_trips(path):
    text = path.read_text()
    for chunk in re.split(r"^// -----$", text, flags=re.M):
        assert_round_trips(chunk)


def test_lit_files_exist_per_family():
    names = {p.name for p in LIT_DIR.glob("*.mlir")}
    for family in ("elementwise", "nn", "reduce", "movement", "constants"):
        assert f"{family}.mlir" in names


@pytest.mark.parametrize("path", _lit_files("invalid"), ids=lambda p: p.name)
def test_invalid_lit_file_chunks_fail_with_the_expected_message(path):
    """The in-process twin of `dlc-opt --verify-diagnostics` on the file."""
    chunks = re.split(r"^// -----$", path.read_text(), flags=re.M)
    assert len(chunks) > 3
    for chunk in chunks:
        expected = re.findall(r"expected-error[^{]*\{\{(.*?)\}\}", chunk)
        assert len(expected) == 1, chunk
        with pytest.raises((VerifyException, ParseError)) as info:
            parse(chunk)
        assert expected[0] in str(info.value), (chunk, str(info.value))


# -- constants ---------------------------------------------------------------------


@pytest.mark.parametrize(
    "array",
    [
        np.array([1.5, -2.0, 3.25], np.float32),
        np.array(7.0, np.float32),  # rank 0 stays rank 0
        np.arange(6, dtype=np.int64).reshape(2, 3),
        np.array([[True, False, True]]),
        np.zeros((0, 3), np.float32),
        np.array([1, 255], np.uint8),
        np.arange(3, dtype=np.float16),
        np.arange(2 * 3 * 5, dtype=np.float64).reshape(2, 3, 5) / 7,
    ],
    ids=["f32", "rank0", "i64", "bool", "empty", "ui8", "f16", "f64"],
)
def test_constant_from_numpy_round_trips(array):
    op = g.ConstantOp.from_numpy(array)
    op.verify()
    assert tuple(op.out.type.get_shape()) == array.shape
    np.testing.assert_array_equal(op.array(), array)
    assert op.array().dtype == array.dtype
    text = f"func.func @f() {{\n  {to_text(op)}\n  func.return\n}}\n"
    module = parse(text)
    (parsed,) = [o for o in module.walk() if isinstance(o, g.ConstantOp)]
    np.testing.assert_array_equal(parsed.array(), array)
    assert_round_trips(text)


def test_splat_constant_reads_as_full_array():
    module = parse('%c = graph.constant dense<2.5> : tensor<2x3xf32>')
    np.testing.assert_array_equal(module.body.block.first_op.array(), np.full((2, 3), 2.5, np.float32))


def test_constant_with_extra_attributes_round_trips():
    assert_round_trips('%c = graph.constant {dlc.origin = "onnx"} dense<[1, 2]> : tensor<2xi32>')


# -- make() reports the same rules as the verifier ------------------------------------


def test_make_names_the_broken_rule():
    from test_graph_util import values

    a, b = values(g.tensor_type([2, 3], g.i64), g.tensor_type([4], g.i64))
    with pytest.raises(VerifyException, match=r"graph.add: shapes 2x3 and 4 are not broadcast-compatible"):
        g.AddOp.make(a, b)


def test_make_rejects_a_non_tensor_operand():
    from xdsl.dialects.builtin import f32

    from test_graph_util import values

    (x,) = values(f32)
    with pytest.raises(VerifyException, match=r"graph.relu: operand #0 must be a ranked tensor, got f32"):
        g.ReluOp.make(x)


def test_make_rejects_unknown_attributes_but_allows_dialect_prefixed_ones():
    from test_graph_util import values

    (x,) = values(g.tensor_type([2, 3], g.i64))
    with pytest.raises(VerifyException, match=r"graph.transpose: unknown attribute 'prem' \(known: perm\)"):
        g.TransposeOp.make(x, prem=[1, 0])
    op = g.TransposeOp.make(x, perm=[1, 0])
    op.attributes["dlc.origin"] = g.StringAttr("onnx")
    op.verify()


def test_scalars_have_no_axis():
    from test_graph_util import values

    (s,) = values(g.tensor_type([], g.i64))
    with pytest.raises(VerifyException, match=r"graph.concat: axis 0 is out of range for rank 0"):
        g.ConcatOp.make(s, s, axis=0)
    with pytest.raises(VerifyException, match=r"graph.softmax: operand element type i64 is not float"):
        g.SoftmaxOp.make(s)


def test_every_op_declares_its_attributes():
    # declared as typed fields (graph_attributes), not as an ATTRS name tuple
    assert [op.name for op in GRAPH_OPS + g.CONTROL_FLOW_OPS if hasattr(op, "ATTRS")] == []
