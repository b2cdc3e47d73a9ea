"""Tensor-expression diagnostics: syntax errors say line:col and what was
expected (in words); semantic errors say line:col and the rule broken."""

from __future__ import annotations

import pytest

import dlc.te as te
from dlc.frontends.te.syntax import parse

SYNTAX = [
    ("input A f32", "1:9: expected ':', ';', end of input, end of line, found 'f32'"),
    ("input A: f32[3]\nC[i] = A[i] +", "2:14: expected an expression, found end of input"),
    ("input A: f32[3]\nC[i] = A[i] B[i]", "2:13: expected "),
    ("C[i] = sum(k in 0..: 1.0)", "1:20: expected '-', an integer, found ':'"),
    ("input A: f33[3]", "1:10: expected an element type (f32, f64, i32, i64), found 'f33'"),
    ("C[i] = A[i]\nD[i] = (A[i]", "2:8: '(' is never closed"),
    ("C[i] = A[i]\nD[i] = (A[i]\n + 1.0) )", "3:9: expected ';', end of input, end of line, found ')'"),
    ("C[i] = A[i] @ 2", "1:13: unexpected character '@'"),
    ("C[i + 1] = 2.0", "1:5: expected "),
]


@pytest.mark.parametrize("text,message", SYNTAX, ids=[t for t, _ in SYNTAX])
def test_syntax_errors_have_position_and_expected_tokens(text, message):
    with pytest.raises(te.TEError) as info:
        parse(text)
    assert str(info.value).startswith(message)
    assert "\n" not in str(info.value)


SEMANTIC = {
    "unknown_tensor": ("input A: f32[3]\nC[i] = B[i]", "2:8: unknown tensor 'B'"),
    "rank_mismatch": ("input A: f32[3, 4]\nC[i] = A[i]",
                      "2:8: rank mismatch: 'A' has rank 2 (f32[3, 4]) but is indexed with 1 subscript"),
    "unbound_index": ("input A: f32[3]\nC[i] = A[i] * q", "2:15: unbound index 'q'"),
    "shape_conflict": ("input A: f32[3]\ninput B: f32[4]\nC[i] = A[i] + B[i]",
                       "3:15: shape conflict: index 'i' ranges over 3 (from A[...] dim 0 at 3:8) but dim 0 of 'B' "
                       "has size 4"),
    "out_of_bounds": ("input A: f32[3]\noutput C: f32[3]\nC[i] = A[i + 1]",
                      "3:8: out of bounds: subscript i + 1 of 'A' ranges over 1..3 but dim 0 has size 3"),
    "no_range": ("input A: f32[3]\nC[i, j] = A[i]", "2:6: cannot infer the range of index 'j'"),
    "no_axis_range": ("input A: f32[3]\nC[i] = A[i] + sum(k: 1.0)", "2:19: cannot infer the range of index 'k'"),
    "computed_twice": ("input A: f32[3]\nC[i] = A[i]\nC[i] = A[i]", "3:1: tensor 'C' is already computed"),
    "assign_input": ("input A: f32[3]\nA[i] = 1.0", "2:1: tensor 'A' is an input"),
    "used_before": ("input A: f32[3]\nC[i] = D[i]\nD[i] = A[i]", "2:8: tensor 'D' is used before it is computed (line 3)"),
    "mixed_types": ("input A: f32[3]\ninput B: f64[3]\nC[i] = A[i] + B[i]", "3:15: mixed element types f32 and f64"),
    "comparison_value": ("input A: f32[3]\nC[i] = A[i] < 1.0", "2:13: a comparison cannot be a tensor's value"),
    "comparison_operand": ("input A: f32[3]\nC[i] = (A[i] < 1.0) * 2.0", "2:14: a comparison can only be"),
    "unknown_function": ("input A: f32[3]\nC[i] = foo(A[i])", "2:8: unknown function 'foo'"),
    "arity": ("input A: f32[3]\nC[i] = exp(A[i], 1)", "2:8: exp takes 1 argument, got 2"),
    "rebound_axis": ("input A: f32[3, 3]\nC[i] = sum(i: A[i, i])", "2:12: index 'i' is already bound"),
    "value_subscript": ("input A: f32[3]\nC[i] = A[A[i]]", "2:10: subscript of 'A' must be index arithmetic"),
    "float_subscript": ("input A: f32[3]\nC[i] = A[i * 1.5]", "2:10: subscript of 'A' must be index arithmetic"),
    "input_without_shape": ("input A\nC[i] = A[i]", "1:7: input 'A' needs a type and shape"),
    "output_rank": ("input A: f32[3]\noutput C: f32[3, 3]\nC[i] = A[i]", "3:1: rank mismatch: output 'C'"),
    "nothing": ("input A: f32[3]", "1:1: the program computes nothing"),
    "float_func_on_int": ("input A: i32[3]\nC[i] = exp(A[i])", "2:1: exp needs a float element type"),
    "reduction_as_call": ("input A: f32[3]\nC[i] = sum(A[i])", "2:8: sum is a reduction"),
    "empty_range": ("input A: f32[3]\nC[i] = sum(k in 3..1: A[i])", "2:12: empty range 3..1 for axis 'k'"),
    "lhs_repeat": ("input A: f32[3, 3]\nC[i, i] = A[i, i]", "2:6: index 'i' appears twice"),
    "output_never": ("input A: f32[3]\noutput D: f32[3]\nC[i] = A[i]", "2:8: output 'D' is declared but never computed"),
    "no_valid_range": ("input X: f32[3]\nY[i] = sum(r in 0..5: X[i + r])", "2:23: index 'i' has no valid range"),
    "digit_suffix": ("input A: f32[3]\nC[i_2] = A[i_2]", "2:3: index name 'i_2' may not end in _<digits>"),
    "select_condition": ("input A: f32[3]\nC[i] = select(A[i], 1.0, 0.0)", "2:15: select's condition must be a comparison"),
}


@pytest.mark.parametrize("name", SEMANTIC)
def test_semantic_errors_have_position_and_rule(name):
    text, message = SEMANTIC[name]
    with pytest.raises(te.TEError) as info:
        te.program(text)
    assert str(info.value).startswith(message), str(info.value)
    assert (info.value.line, info.value.col) == tuple(int(p) for p in message.split(":")[:2])


def test_guarded_access_may_leave_bounds_but_unguarded_may_not():
    te.program("input A: f32[3]\noutput C: f32[3]\nC[i] = select(i + 1 < 3, A[i + 1], 0.0)")
    with pytest.raises(te.TEError, match="out of bounds"):
        te.program("input A: f32[3]\noutput C: f32[3]\nC[i] = select(i + 1 < 3, 1.0, 0.0) + A[i + 1]")


def test_compile_and_lower_raise_te_errors():
    with pytest.raises(te.TEError, match="unknown tensor 'B'"):
        te.compile("input A: f32[3]\nC[i] = B[i]")
    with pytest.raises(te.TEError, match="1:8"):
        te.lower("C[i] = ")


def test_import_te_names_the_file(tmp_path):
    from dlc.diagnostics import DiagnosticError

    path = tmp_path / "bad.te"
    path.write_text("input A: f32[3]\nC[i] = A[i] * q\n")
    with pytest.raises(DiagnosticError) as info:
        te.import_te(str(path))
    assert (info.value.file, info.value.line, info.value.col) == (str(path), 2, 15)
    assert "unbound index 'q'" in info.value.message
