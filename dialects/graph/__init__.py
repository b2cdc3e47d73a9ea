"""The `graph` dialect: typed tensor ops with shape inference (Relay's role).

Values are builtin ranked tensors (`tensor<1x3x224x224xf32>`); element types
f32 first, with f16/f64, i64/i32/i8/ui8 and i1 (bool) where the op allows.
Programs are `func.func`s of graph ops. Every op

* infers its result types (``Op.make(*operands, **attrs)``),
* declares each attribute once, typed and with its default
  (``groups = IntAttribute(default=1)``, see ``dlc.dialects.graph_attributes``):
  ``op.groups`` reads it, and ``infer`` reads ``attrs.groups``,
* verifies them, naming the rule that fails, and rejects attributes it does
  not declare (dialect-prefixed ones like ``dlc.origin`` are allowed),
* prints as ``graph.op %a, %b {attrs} : (operand types) -> result types``,
* has a numpy ``reference`` used by the evaluator and fold-constant.

Defaults: NCHW data / OIHW kernel layout; ``padding`` is
``[top, left, bottom, right]`` (ONNX's begin..., end... order for 2-D).

An op's facts that passes ask about are traits (``dlc/dialects/traits.py``):
``Elementwise``, ``FusionAnchor``, ``WidenF16``, ``LayoutFree``, ``ViewLike``, and
``Composite`` for the ops that ``legalize`` rewrites away with their decomposition
(``decompose.py``); the rest form the *core set* that ``lower-to-loops`` handles.
The constants carry xDSL's ``ConstantLike``.

The ops live in one module per family (the shared op machinery is
``dlc.dialects.graph_base``); this package re-exports every op class of
``GRAPH_OPS`` by its class name, so ``from dlc.dialects import graph as g;
g.Conv2DOp`` names any op:

=================  ==========================================================
``constants``      constant, weight
``elementwise``    unary math and activations, binary arithmetic, comparisons,
                   logical and bitwise ops, where
``cast``           cast, and the semantics of the narrow element types
``linalg``         matmul, dense, det
``conv``           conv2d, conv_transpose2d, deform_conv2d, window attributes
``pool``           2-D, global and N-D pools
``normalization``  batch_norm, layer_norm, softmax, log_softmax
``reduce``         reduce_*, arg_max, arg_min
``movement``       reshape, transpose, broadcast_to, squeeze, unsqueeze, slice,
                   pad, concat, split
``indexing``       gather, gather_nd, scatter_nd, scatter_elements, top_k,
                   reverse_sequence
``data_dependent`` nonzero, compress, unique, non_max_suppression (bounded results
                   with a run-time extent)
``spatial``        resize, grid_sample, dft, col2im, roi_align
``attention``      attention (scaled dot-product, head split/merge folded in)
``control_flow``   if, loop, scan, yield (region ops; not in GRAPH_OPS)
``custom``         custom (a tensor-expression op)
``blocked_layout`` layout_transform and the NCHW{b}c conv/pools
``quantized``      quantize, dequantize, requantize, qconv2d, qdense, qmatmul,
                   qadd, qmul, qconcat, qavg_pool2d (i8/ui8, fixed point)
=================  ==========================================================
"""

from __future__ import annotations

from xdsl.dialects.builtin import DenseIntOrFPElementsAttr, StringAttr, TensorType, i1, i64
from xdsl.ir import Attribute, Dialect

from dlc.dialects.graph import (
    attention,
    blocked_layout,
    cast,
    constants,
    control_flow,
    conv,
    custom,
    data_dependent,
    elementwise,
    indexing,
    linalg,
    movement,
    normalization,
    pool,
    quantized,
    reduce,
    spatial,
)
from dlc.dialects.graph_base import (
    Attrs,
    GraphOp,
    ShapeError,
    broadcast_shapes,
    is_bool,
    is_float,
    is_int,
    is_narrow,
    normalize_axis,
    numpy_dtype,
    numpy_from_dense,
    tensor_type,
)
from dlc.dialects.graph.common import Types
from dlc.dialects.traits import is_composite  # noqa: F401  (re-exported: g.is_composite)
from dlc.dialects.graph.elementwise import BinaryOp, UnaryOp
from dlc.dialects.graph.cast import narrow_cast_reference
from dlc.dialects.graph.conv import _window_attrs, deform_conv_extras, deform_conv_window
from dlc.dialects.graph.pool import (
    _GlobalPoolOp,
    _PoolOp,
    pool_geometry,
    pool_index_steps,
)
from dlc.dialects.graph.reduce import _ArgReduceOp, _reduce_axes, ReduceOp
from dlc.dialects.graph.movement import _slice_params
from dlc.dialects.graph.indexing import SCATTER_REDUCTIONS
from dlc.dialects.graph.spatial import (
    col2im_blocks,
    grid_cubic_weights,
    grid_reflect,
    grid_sample_reference,
    resize_nearest_index,
    resize_source_coords,
    roi_align_samples,
)
from dlc.dialects.graph.control_flow import CONTROL_FLOW_OPS, IfOp, LoopOp, ScanOp, YieldOp
from dlc.dialects.graph.blocked_layout import _BLOCKED_DATA

# The family modules in the order GRAPH_OPS lists their ops.
_FAMILIES = (
    constants, elementwise, cast, linalg, conv, pool, normalization, reduce,
    movement, indexing, data_dependent, spatial, custom, blocked_layout, quantized, attention,
)


def _ops_defined_in(module) -> list[type[GraphOp]]:
    return [
        obj
        for obj in vars(module).values()
        if isinstance(obj, type) and issubclass(obj, GraphOp) and obj.__module__ == module.__name__
        and isinstance(obj.__dict__.get("name"), str) and obj.name.startswith("graph.")
        and not getattr(obj, "CONTROL_FLOW", False)
    ]


# The straight-line ops (every per-op test iterates them); the region ops of
# control_flow are registered with the dialect but kept out of this list.
GRAPH_OPS: list[type[GraphOp]] = [op for module in _FAMILIES for op in _ops_defined_in(module)]

# Every op class is a package attribute (``g.Conv2DOp``), taken from its family
# module here rather than from a list of names: a new op is defined in one file.
globals().update({op.__name__: op for op in GRAPH_OPS})

Graph = Dialect("graph", GRAPH_OPS + CONTROL_FLOW_OPS, [])

