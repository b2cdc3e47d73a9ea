"""Constant loop bounds checked against buffer extents (dialects/tloop_bounds.py):
the tloop.for verifier flags an access that certainly leaves a static dimension,
located at the access; lower-to-llvm checks the same for IR never verified; what
is not provably out of bounds is not flagged."""

from __future__ import annotations

import pytest
from xdsl.parser import Parser

from dlc.context import make_context
from dlc.diagnostics import DiagnosticError, parse_module, verify_module


def _kernel(body: str, args: str = "%x: memref<2x3xf32>") -> str:
    return f"func.func @k({args}) attributes {{tloop.kernel}} {{\n{body}\n  func.return\n}}\n"


def _verify_error(text: str) -> DiagnosticError:
    module = parse_module(make_context(), text, "k.mlir")
    with pytest.raises(DiagnosticError) as info:
        verify_module(module)
    return info.value


ISSUE = _kernel("""\
  tloop.for %i = 0 to 3000000 {
    tloop.for %j = 0 to 3 {
      %v = memref.load %x[%i, %j] : memref<2x3xf32>
      memref.store %v, %x[%j, %j] : memref<2x3xf32>
    }
  }""")


def test_issue_kernel_is_a_located_verifier_error():
    err = _verify_error(ISSUE)
    assert (err.file, err.line, err.col) == ("k.mlir", 4, 7)
    assert err.message == ("memref.load index 0 ranges over [0, 2999999] but dim 0 of %x "
                           "(memref<2x3xf32>) has extent 2")


def test_heap_corrupting_extent_300_and_the_store_index():
    err = _verify_error(ISSUE.replace("3000000", "2").replace("%x[%j, %j]", "%x[%i, %j]")
                        .replace("0 to 3 {", "0 to 300 {"))
    assert err.message.startswith("memref.load index 1 ranges over [0, 299] but dim 1 of %x")


def test_lower_to_llvm_checks_ir_that_was_never_verified():
    from dlc.lowering.lower_to_llvm import lower_module
    from dlc.lowering.to_llvm.function import LoweringError

    module = Parser(make_context(), ISSUE).parse_module()  # no verify
    with pytest.raises(LoweringError, match=r"ranges over \[0, 2999999\] but dim 0"):
        lower_module(module)


def test_dlc_compile_python_api_refuses_it():
    import dlc
    from dlc.driver import CompileError

    host = ("func.func @main(%a: memref<2x3xf32>) attributes {tloop.host, tloop.num_inputs = 1 : i64} {\n"
            "  func.call @k(%a) : (memref<2x3xf32>) -> ()\n  func.return\n}\n")
    with pytest.raises(CompileError, match=r"ranges over \[0, 2999999\]"):
        dlc.compile(ISSUE + host)


@pytest.mark.parametrize("index, ok", [
    ("%i", True), ("%ip1", False), ("%im1", False), ("%twice", False), ("%zero_form", True),
])
def test_affine_forms(index, ok):
    text = _kernel(f"""\
  tloop.for %i = 0 to 4 {{
    %one = arith.constant 1 : index
    %two = arith.constant 2 : index
    %ip1 = arith.addi %i, %one : index
    %im1 = arith.subi %i, %one : index
    %twice = arith.muli %i, %two : index
    %d = arith.subi %twice, %i : index
    %zero_form = arith.subi %d, %i : index
    %v = memref.load %x[{index}] : memref<4xf32>
  }}""", "%x: memref<4xf32>")
    module = parse_module(make_context(), text, "k.mlir")
    if ok:
        verify_module(module)
    else:
        assert "memref.load index 0 ranges over" in _verify_error(text).message


def test_casts_follow_only_values_that_fit():
    # i + 100 computed in i8 wraps (i < 100): the value cast back is not the affine one,
    # so that index is not checked; a value that fits its narrow type is
    def kernel(access: str) -> str:
        return _kernel(f"""\
  tloop.for %i = 0 to 100 {{
    %n = arith.index_cast %i : index to i8
    %c = arith.constant 100 : i8
    %s = arith.addi %n, %c : i8
    %wrapped = arith.index_cast %s : i8 to index
    %fits = arith.index_cast %n : i8 to index
    %v = memref.load %x[{access}] : memref<4xf32>
  }}""", "%x: memref<4xf32>")

    verify_module(parse_module(make_context(), kernel("%wrapped"), "k.mlir"))
    assert "ranges over [0, 99] but dim 0" in _verify_error(kernel("%fits")).message
    widened = _kernel("""\
  tloop.for %i = 0 to 100 {
    %n = arith.constant 5 : i32
    %w = arith.extsi %n : i32 to i64
    %back = arith.index_cast %w : i64 to index
    %v = memref.load %x[%back] : memref<4xf32>
  }""", "%x: memref<4xf32>")
    assert "is 5 but dim 0" in _verify_error(widened).message


def test_nest_under_a_guard_or_a_zero_trip_loop_is_not_flagged():
    guarded = """\
func.func @k(%x: memref<4xf32>, %flag: i1) attributes {tloop.kernel} {
  scf.if %flag {
    tloop.for %i = 0 to 8 {
      %v = memref.load %x[%i] : memref<4xf32>
    }
  }
  tloop.for %j = 0 to 0 {
    %w = memref.load %x[%j] : memref<4xf32>
  }
  func.return
}
"""
    verify_module(parse_module(make_context(), guarded, "k.mlir"))


def test_dlc_generated_kernels_pass(tmp_path):
    """The kernels dlc makes itself (with padding guards, split tails and views)
    pass the check: small_cnn through every loop-level stage."""
    import os

    from dlc.driver import lower_to_llvm_dialect, load_module

    here = os.path.dirname(os.path.abspath(__file__))
    model = os.path.join(here, "..", "..", "examples", "small_cnn.onnx")
    module = load_module(model)
    lower_to_llvm_dialect(module)  # lower-to-llvm runs the check on every nest
