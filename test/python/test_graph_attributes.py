"""Typed attribute declarations of graph ops (dialects/graph_attributes.py)."""

from __future__ import annotations

import pytest
from xdsl.dialects.builtin import FloatAttr, IntegerAttr, StringAttr, f32, i64
from xdsl.utils.exceptions import VerifyException

from dlc.dialects import graph as g
from dlc.dialects.graph_attributes import (
    REQUIRED,
    Attrs,
    EnumAttribute,
    OpAttribute,
    ShapeError,
    declared_attributes,
)
from test_graph_util import values

ALL_OPS = g.GRAPH_OPS + g.CONTROL_FLOW_OPS


def test_no_op_lists_attribute_names_in_ATTRS():
    assert [op.name for op in ALL_OPS if hasattr(op, "ATTRS")] == []


@pytest.mark.parametrize("op_cls", ALL_OPS, ids=[op.name for op in ALL_OPS])
def test_declared_defaults_are_what_the_accessors_return(op_cls):
    empty = Attrs({}, op_cls)
    for name, spec in declared_attributes(op_cls).items():
        assert isinstance(spec, OpAttribute) and spec.ir_name == name
        assert getattr(op_cls, spec.field) is spec  # class access: the declaration
        if spec.required:
            with pytest.raises(ShapeError, match=f"missing attribute '{name}'"):
                getattr(empty, spec.field)
        else:
            assert getattr(empty, spec.field) == spec.default
            assert spec.default is not REQUIRED


def test_accessor_on_the_op_applies_the_default_and_reads_given_values():
    x, w = values(g.tensor_type([1, 4, 8, 8], f32), g.tensor_type([4, 2, 3, 3], f32))
    op = g.Conv2DOp.make(x, w, groups=2)
    assert op.groups == 2
    assert op.padding == (0, 0, 0, 0) and op.strides == (1, 1)
    assert op.data_layout == "NCHW" and op.kernel_layout == "OIHW"
    assert op.attrs.groups == 2  # the Attrs view infer receives
    # defaults are not written into the attribute dictionary (printing is unchanged)
    assert set(op.attributes) == {"groups"}


def test_wrong_kind_keeps_the_message():
    x, w = values(g.tensor_type([1, 4, 8, 8], f32), g.tensor_type([4, 4, 3, 3], f32))
    with pytest.raises(VerifyException, match=r"graph.conv2d: attribute 'groups' must be an integer like 1 : i64, got \"two\""):
        g.Conv2DOp.make(x, w, groups="two")
    with pytest.raises(VerifyException, match=r"attribute 'data_layout' must be one of NCHW, NHWC, got CHWN"):
        g.Conv2DOp.make(x, w, data_layout="CHWN")


def test_wrong_kind_fails_verification_even_where_infer_does_not_read_it():
    # graph.top_k's `sorted` changes nothing in inference; its kind is still checked
    (x,) = values(g.tensor_type([4, 5], f32))
    with pytest.raises(VerifyException, match=r"graph.top_k: attribute 'sorted' must be an integer"):
        g.TopKOp.make(x, k=2, sorted="yes")
    op = g.TopKOp.make(x, k=2)
    op.attributes["sorted"] = FloatAttr(1.0, f32)
    with pytest.raises(VerifyException, match=r"attribute 'sorted' must be an integer"):
        op.verify()


def test_unknown_attribute_list_comes_from_the_declarations():
    (x,) = values(g.tensor_type([2, 3], i64))
    op = g.TransposeOp.make(x, perm=[1, 0])
    op.attributes["perms"] = IntegerAttr(1, i64)
    with pytest.raises(VerifyException, match=r"unknown attribute 'perms' \(known: perm\)"):
        op.verify()
    assert g.Conv2DOp.attribute_names() == (
        "strides", "padding", "dilations", "groups", "data_layout", "kernel_layout")
    # xDSL attr_defs count as declarations too
    assert g.WeightOp.attribute_names() == ("name",)


def test_enum_attribute_checks_its_choices():
    spec = EnumAttribute("a", "b")
    spec.__set_name__(None, "mode")
    assert spec.read({}) == "a"
    assert spec.read({"mode": StringAttr("b")}) == "b"
    with pytest.raises(ShapeError, match="attribute 'mode' must be one of a, b, got c"):
        spec.read({"mode": StringAttr("c")})


def test_attrs_view_rejects_undeclared_names():
    with pytest.raises(AttributeError, match="declares no attribute 'groupz'"):
        Attrs({}, g.Conv2DOp).groupz
