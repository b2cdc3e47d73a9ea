"""`fuse-attention`: form ``graph.attention`` from the written-out attention of BERT/GPT/ViT exports.

Matched (after legalize: its softmax expansion is raised back to ``graph.softmax`` first,
``fuse_ops.raise_softmax``), rank 4, f32::

    Q  = transpose(q, q_perm)        (or q itself)       (B, H, Sq, Dh)
    Kt = transpose(k, kt_perm)       (or k itself)       (B, H, Dh, Sk)
    V  = transpose(v, v_perm)        (or v itself)       (B, H, Sk, Dv)
    s  = matmul(Q, Kt)
    s  = s * c | c * s | s / c       (c a one-element constant; optional)
    s  = s + mask | mask + s         (optional; the add must not broadcast s)
    o  = matmul(softmax(s, -1), V)
    r  = transpose(o, out_perm)      (optional: the head merge)

becomes ``r = graph.attention q, k, v(, mask) {scale, q_perm, k_perm, v_perm, out_perm}``:
the head split/merge transposes are folded into the op's perms, so no transposed copy
and no (B, H, Sq, Sk) score tensor is materialized. Every intermediate (scores, scaled,
masked, probabilities, the context before the merge) must have this chain as its only
user, and one head's keys and values must fit the kernel's packed scratch
(``kernels/attention.packs_fit``: 256 KiB each, Sk * Dh <= 65536 in f32); otherwise nothing
changes. The transposes producing Q/K/V stay when something else
reads them (dead ones are erased). Runs before fuse-ops in the CPU pipeline
(``driver.graph_passes``); the GPU pipeline does not run it.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import Float32Type, ModuleOp
from xdsl.ir import Operation, SSAValue
from xdsl.passes import ModulePass

from dlc.dialects import graph as g
from dlc.dialects.graph_base import ShapeError, normalize_axis
from dlc.lowering.kernels.attention import packs_fit
from dlc.transforms.fuse_ops import raise_softmax, scalar_constant


def _only_user(value: SSAValue) -> Operation | None:
    users = [use.operation for use in value.uses]
    return users[0] if len(users) == 1 else None


def _through_transpose(value: SSAValue) -> tuple[SSAValue, tuple[int, ...]]:
    """(source, perm) with ``value = transpose(source, perm)``, or (value, identity)."""
    owner = value.owner
    if isinstance(owner, g.TransposeOp) and len(owner.perm) == 4:
        return owner.operands[0], tuple(owner.perm)
    return value, (0, 1, 2, 3)


@dataclass
class _Match:
    ops: list[Operation]  # the chain, first to last (erased after the rewrite)
    last: Operation  # whose result the attention op replaces
    q: SSAValue
    k: SSAValue
    v: SSAValue
    mask: SSAValue | None
    scale: float
    perms: dict[str, list[int]]


def match_attention(softmax: g.SoftmaxOp) -> _Match | None:
    x_t = softmax.operands[0].type
    if x_t.get_num_dims() != 4 or not isinstance(x_t.element_type, Float32Type):
        return None
    if normalize_axis(softmax.axis, 4) != 3:
        return None
    pv = _only_user(softmax.results[0])
    if not isinstance(pv, g.MatmulOp) or pv.operands[0] is not softmax.results[0]:
        return None
    chain: list[Operation] = [softmax, pv]
    scores = softmax.operands[0]
    mask = None
    add = scores.owner
    if isinstance(add, g.AddOp):
        for mine, other in ((0, 1), (1, 0)):
            inner = add.operands[mine].owner
            if isinstance(inner, (g.MulOp, g.DivOp, g.MatmulOp)) and add.operands[mine].type == add.results[0].type:
                mask = add.operands[other]
                scores = add.operands[mine]
                break
        else:
            return None
        if _only_user(scores) is not add:
            return None
        chain.insert(0, add)
    scale = 1.0
    scaling = scores.owner
    if isinstance(scaling, (g.MulOp, g.DivOp)):
        lhs, rhs = scaling.operands
        c = scalar_constant(rhs)
        product = lhs
        if c is None and isinstance(scaling, g.MulOp):
            c, product = scalar_constant(lhs), rhs
        if c is None or (isinstance(scaling, g.DivOp) and c == 0.0):
            return None
        scale = 1.0 / c if isinstance(scaling, g.DivOp) else c
        if _only_user(product) is not scaling or product.type != scaling.results[0].type:
            return None
        chain.insert(0, scaling)
        scores = product
    qk = scores.owner
    if not isinstance(qk, g.MatmulOp) or _only_user(qk.results[0]) is not chain[0]:
        return None
    if any(o.type.get_num_dims() != 4 for o in (*qk.operands, *pv.operands)):
        return None
    chain.insert(0, qk)
    q, q_perm = _through_transpose(qk.operands[0])
    k, kt_perm = _through_transpose(qk.operands[1])
    v, v_perm = _through_transpose(pv.operands[1])
    k_perm = (kt_perm[0], kt_perm[1], kt_perm[3], kt_perm[2])
    last, out_perm = pv, (0, 1, 2, 3)
    merge = _only_user(pv.results[0])
    if isinstance(merge, g.TransposeOp):
        last, out_perm = merge, tuple(merge.perm)
        chain.append(merge)
    perms = {"q_perm": list(q_perm), "k_perm": list(k_perm), "v_perm": list(v_perm), "out_perm": list(out_perm)}
    return _Match(chain, last, q, k, v, mask, scale, perms)


def fuse_attention(fn: func.FuncOp) -> int:
    """Form every matching attention of `fn`'s top-level block; returns the count."""
    raise_softmax(fn)
    count = 0
    for op in list(fn.body.block.ops):
        if op.parent is None or not isinstance(op, g.SoftmaxOp):
            continue
        m = match_attention(op)
        if m is None:
            continue
        operands = [m.q, m.k, m.v] + ([m.mask] if m.mask is not None else [])
        try:
            new = g.AttentionOp.make(*operands, scale=float(np.float32(m.scale)), **m.perms)
        except ShapeError:
            continue  # batch broadcasting in a matmul, a mask that widens the scores, ...
        if new.results[0].type != m.last.results[0].type:
            continue
        qs, ks, vs = (list(x.type.get_shape()) for x in (m.q, m.k, m.v))
        if not packs_fit(ks[m.perms["k_perm"][2]], qs[m.perms["q_perm"][3]], vs[m.perms["v_perm"][3]]):
            continue  # a long sequence: its packed keys would not fit the kernel's scratch
        fn.body.block.insert_op_before(new, m.last)
        new.results[0].name_hint = m.last.results[0].name_hint
        new.location = m.last.location
        m.last.results[0].replace_all_uses_with(new.results[0])
        for dead in reversed(m.ops):
            dead.detach()
            dead.erase()
        count += 1
    if count:
        _erase_dead_transposes(fn)
    return count


def _erase_dead_transposes(fn: func.FuncOp) -> None:
    """The head-split transposes the formed ops no longer read."""
    for op in reversed(list(fn.body.block.ops)):
        if isinstance(op, g.TransposeOp) and not op.results[0].uses:
            op.detach()
            op.erase()


@dataclass(frozen=True)
class FuseAttention(ModulePass):
    """``fuse-attention``: see the module docstring."""

    name = "fuse-attention"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for fn in op.walk():
            if isinstance(fn, func.FuncOp) and not fn.is_declaration:
                fuse_attention(fn)
