"""Converters for ONNX recurrent ops: RNN, GRU, LSTM.

The input projection is hoisted out of the recurrence: one rank-2 ``matmul``
computes X*W^T for every time step at once. The recurrence itself is a
``graph.scan`` over time (per direction): the carried state is h (and c), the
scanned input the step's X*W^T row (and the ``sequence_lens`` mask row), and
the body one cell of plain graph ops (H*R^T, the gates, the activations). The
body is compiled once however long the sequence (unrolling 64 steps of a
2-layer LSTM gave LLVM a host function of thousands of calls: 80 s of O3);
``expand-control-flow`` unrolls it where a target wants straight-line code.

Supported: directions forward / reverse / bidirectional, ``initial_h`` /
``initial_c``, bias ``B``, peepholes ``P`` (LSTM), ``input_forget`` (LSTM),
``linear_before_reset`` (GRU), ``clip``, the activations Sigmoid, Tanh, Relu,
LeakyRelu, HardSigmoid, ThresholdedRelu, ScaledTanh, Affine, Elu, Softsign,
Softplus with ``activation_alpha`` / ``activation_beta``, ``layout`` 0 and 1,
and ``sequence_lens`` (compile-time or run-time): steps at or beyond a batch
entry's length keep its state and write zeros to Y, which is exactly ONNX's
semantics for both directions.
"""

from __future__ import annotations

import numpy as np
from xdsl.dialects.builtin import TensorType
from xdsl.ir import Block, Region

from dlc.dialects import graph as g
from dlc.frontends.onnx.importer import ImportContext, Node, Tensor
from dlc.frontends.onnx.ops_shape import reshape, transpose
from dlc.frontends.onnx.registry import converts

# ONNX's default activations per op (one list per direction)
_DEFAULT_ACTIVATIONS = {"RNN": ["Tanh"], "GRU": ["Sigmoid", "Tanh"], "LSTM": ["Sigmoid", "Tanh", "Tanh"]}
# ONNX's default activation_alpha / activation_beta of activations that take them
_DEFAULT_ALPHA = {"LeakyRelu": 0.01, "HardSigmoid": 0.2, "ThresholdedRelu": 1.0, "ScaledTanh": 1.0,
                  "Affine": 1.0, "Elu": 1.0}
_DEFAULT_BETA = {"HardSigmoid": 0.5, "ScaledTanh": 1.0, "Affine": 0.0}
_GATES = {"RNN": 1, "GRU": 3, "LSTM": 4}


class _Activation:
    """One ONNX recurrent activation, applied with graph ops."""

    def __init__(self, ctx: ImportContext, name: str, alpha: float | None, beta: float | None):
        canonical = {n.lower(): n for n in
                     ["Sigmoid", "Tanh", "Relu", *_DEFAULT_ALPHA, "Softsign", "Softplus"]}
        if name.lower() not in canonical:
            raise ctx.error(f"activation '{name}' is not supported "
                            f"(supported: {', '.join(sorted(canonical.values()))})")
        self.name = canonical[name.lower()]
        self.alpha = _DEFAULT_ALPHA.get(self.name, 0.0) if alpha is None else alpha
        self.beta = _DEFAULT_BETA.get(self.name, 0.0) if beta is None else beta

    def __call__(self, ctx: ImportContext, x: Tensor) -> Tensor:
        def c(v):
            return ctx.constant(v, like=x)

        n, a, b = self.name, self.alpha, self.beta
        if n == "Sigmoid":
            return ctx.emit(g.SigmoidOp, x)
        if n == "Tanh":
            return ctx.emit(g.TanhOp, x)
        if n == "Relu":
            return ctx.emit(g.ReluOp, x)
        if n == "LeakyRelu":
            return ctx.emit(g.LeakyReluOp, x, alpha=a)
        if n == "HardSigmoid":
            return ctx.emit(g.HardSigmoidOp, x, alpha=a, beta=b)
        if n == "ThresholdedRelu":
            keep = ctx.emit(g.GreaterOp, x, c(a))
            return ctx.emit(g.WhereOp, keep, x, c(0.0))
        if n == "ScaledTanh":
            return ctx.emit(g.MulOp, ctx.emit(g.TanhOp, ctx.emit(g.MulOp, x, c(b))), c(a))
        if n == "Affine":
            return ctx.emit(g.AddOp, ctx.emit(g.MulOp, x, c(a)), c(b))
        if n == "Elu":
            return ctx.emit(g.EluOp, x, alpha=a)
        if n == "Softsign":
            return ctx.emit(g.DivOp, x, ctx.emit(g.AddOp, ctx.emit(g.AbsOp, x), c(1.0)))
        assert n == "Softplus"
        return ctx.emit(g.SoftplusOp, x)


def _row(ctx: ImportContext, x: Tensor, index: int) -> Tensor:
    """``x[index]`` with the leading dim dropped."""
    piece = ctx.emit(g.SliceOp, x, starts=[index], ends=[index + 1], axes=[0], steps=[1])
    return reshape(ctx, piece, list(x.shape[1:]))


def _activations(node: Node, ctx: ImportContext, num_directions: int) -> list[list[_Activation]]:
    per_direction = len(_DEFAULT_ACTIVATIONS[node.op_type])
    names = list(node.attr("activations", []))
    if not names:
        names = _DEFAULT_ACTIVATIONS[node.op_type] * num_directions
    if len(names) != per_direction * num_directions:
        raise ctx.error(f"expects {per_direction * num_directions} activations "
                        f"({per_direction} per direction), got {len(names)}")
    alphas = list(node.attr("activation_alpha", []))
    betas = list(node.attr("activation_beta", []))
    # alpha/beta lists hold one entry per activation that takes the parameter, in order
    out, ai, bi = [], 0, 0
    for name in names:
        alpha = beta = None
        if name in _DEFAULT_ALPHA and ai < len(alphas):
            alpha, ai = float(alphas[ai]), ai + 1
        if name in _DEFAULT_BETA and bi < len(betas):
            beta, bi = float(betas[bi]), bi + 1
        out.append(_Activation(ctx, name, alpha, beta))
    return [out[d * per_direction:(d + 1) * per_direction] for d in range(num_directions)]


class _Step:
    """Per-direction weights and helpers shared by the three cells. The operands the
    recurrence reads (``recurrent``: R^T, its per-gate pieces, biases, peepholes) are
    prepared outside the time loop, so that no step slices a weight."""

    def __init__(self, ctx, kind, w, r, b, p, hidden, gates):
        self.ctx, self.kind, self.hidden = ctx, kind, hidden
        r_t = transpose(ctx, r, [1, 0])  # [hidden, G*hidden]
        self.w_t = transpose(ctx, w, [1, 0])  # [input, G*hidden]
        if b is not None:
            wb = ctx.emit(g.SliceOp, b, starts=[0], ends=[gates * hidden], axes=[0], steps=[1])
            rb = ctx.emit(g.SliceOp, b, starts=[gates * hidden], ends=[2 * gates * hidden],
                          axes=[0], steps=[1])
        else:
            wb = rb = None
        self.wb, self.rb = wb, rb
        self.recurrent: dict[str, Tensor] = {}
        if kind == "GRU":
            def cols(t, lo, hi, axis):
                return ctx.emit(g.SliceOp, t, starts=[lo], ends=[hi], axes=[axis], steps=[1])

            self.recurrent["r_zr"] = cols(r_t, 0, 2 * hidden, 1)
            self.recurrent["r_h"] = cols(r_t, 2 * hidden, 3 * hidden, 1)
            if rb is not None:
                self.recurrent["rb_zr"] = cols(rb, 0, 2 * hidden, 0)
                self.recurrent["rb_h"] = cols(rb, 2 * hidden, 3 * hidden, 0)
        else:
            self.recurrent["r_t"] = r_t
        if p is not None:
            for name, piece in zip(("p_i", "p_o", "p_f"),
                                   ctx.emit_multi(g.SplitOp, p, axis=0, sizes=[hidden] * 3)):
                self.recurrent[name] = piece

    def inside(self, sub: ImportContext, args: list[Tensor]) -> "_Step":
        """This step as seen from the scan body: ``recurrent`` bound to ``args``."""
        inner = object.__new__(_Step)
        inner.__dict__.update(self.__dict__)
        inner.ctx = sub
        inner.recurrent = dict(zip(self.recurrent, args, strict=True))
        return inner

    def get(self, name: str) -> Tensor | None:
        return self.recurrent.get(name)

    def gates(self, t: Tensor, count: int) -> list[Tensor]:
        if count == 1:
            return [t]
        return self.ctx.emit_multi(g.SplitOp, t, axis=1, sizes=[self.hidden] * count)


def _clip(ctx: ImportContext, x: Tensor, clip: float | None) -> Tensor:
    if clip is None:
        return x
    return ctx.emit(g.ClipOp, x, min=-clip, max=clip)


def _direction(node: Node, ctx: ImportContext, x: Tensor, step: _Step, acts, h: Tensor,
               c: Tensor | None, reverse: bool, mask_rows: Tensor | None) -> tuple[Tensor, Tensor, Tensor | None]:
    """One direction as a ``graph.scan`` over time; returns (Y [seq, batch, hidden] in
    time order, last h, last c)."""
    kind, hidden = node.op_type, step.hidden
    clip = node.attr("clip")
    clip = None if clip is None else float(clip)
    seq, batch = x.shape[0], x.shape[1]
    # One [seq*batch, input] x [input, G*hidden] GEMM for every step at once: a rank-3
    # matmul would run as seq batched M=batch products (M=1 for batch 1: a GEMV each).
    # The bias is added before the reshape back so that fuse-ops folds it into the GEMM.
    flat = reshape(ctx, x, [seq * batch, x.shape[2]])
    xw = ctx.emit(g.MatmulOp, flat, step.w_t)  # [seq*batch, G*hidden]
    if step.wb is not None and kind != "GRU":
        xw = ctx.emit(g.AddOp, xw, ctx.emit(g.AddOp, step.wb, step.rb))
    elif step.wb is not None:
        xw = ctx.emit(g.AddOp, xw, step.wb)
    xw = reshape(ctx, xw, [seq, batch, step.w_t.shape[1]])
    # The recurrence is a scan: its body (one step) becomes kernels once, however
    # long the sequence. Carried: h (and c); scanned: the step's X*W^T row (and the
    # sequence_lens mask row); read only: R^T, GRU's recurrent bias, the peepholes.
    carried = [h] if c is None else [h, c]
    scanned = [xw] if mask_rows is None else [xw, mask_rows]
    readonly = list(step.recurrent.values())
    row_types = [TensorType(t.element_type, list(t.shape[1:])) for t in scanned]
    block = Block(arg_types=[t.type for t in carried] + row_types + [t.type for t in readonly])
    sub = ImportContext(block, ctx.store, ctx.opset)
    sub.node = ctx.node
    args = [Tensor(f"{t.name}_arg", a.type, ssa=a) for t, a in zip([*carried, *scanned, *readonly], block.args)]
    h_in = args[0]
    c_in = args[1] if c is not None else None
    xt = args[len(carried)]
    mask = args[len(carried) + 1] if mask_rows is not None else None
    body_step = step.inside(sub, args[len(carried) + len(scanned):])
    if kind == "RNN":
        pre = sub.emit(g.AddOp, xt, sub.emit(g.MatmulOp, h_in, body_step.get("r_t")))
        h_new, c_new = acts[0](sub, _clip(sub, pre, clip)), None
    elif kind == "GRU":
        h_new, c_new = _gru_cell(node, sub, body_step, acts, xt, h_in, clip), None
    else:
        h_new, c_new = _lstm_cell(node, sub, body_step, acts, xt, h_in, c_in, clip)
    if mask is not None:
        y_t = sub.emit(g.WhereOp, mask, h_new, sub.constant(0.0, like=h_new))
        h_new = sub.emit(g.WhereOp, mask, h_new, h_in)
        if c_new is not None:
            c_new = sub.emit(g.WhereOp, mask, c_new, c_in)
    else:
        y_t = h_new
    states = [h_new] if c_new is None else [h_new, c_new]
    block.add_op(g.YieldOp.make(*[sub.value(t) for t in [*states, y_t]]))
    direction = [1 if reverse else 0]
    op = g.ScanOp.make_with_regions(
        [ctx.value(t) for t in [*carried, *scanned, *readonly]], [Region(block)],
        num_carried=len(carried), num_scan_inputs=len(scanned),
        scan_input_directions=direction * len(scanned), scan_output_directions=direction)
    ctx.block.add_op(op)
    outs = [Tensor("", r.type, ssa=r) for r in op.results]
    y = outs[-1]
    return y, outs[0], (outs[1] if c is not None else None)


def _gru_cell(node, ctx, step: _Step, acts, xt, h, clip):
    xz, xr, xh = step.gates(xt, 3)
    rz_rr, rh = step.get("r_zr"), step.get("r_h")  # [hidden, 2*hidden], [hidden, hidden]
    rbz_rbr, rbh = step.get("rb_zr"), step.get("rb_h")
    hr = ctx.emit(g.MatmulOp, h, rz_rr)
    if rbz_rbr is not None:
        hr = ctx.emit(g.AddOp, hr, rbz_rbr)
    hz, hrr = step.gates(hr, 2)
    z = acts[0](ctx, _clip(ctx, ctx.emit(g.AddOp, xz, hz), clip))
    r = acts[0](ctx, _clip(ctx, ctx.emit(g.AddOp, xr, hrr), clip))
    if node.attr("linear_before_reset", 0):
        hh = ctx.emit(g.MatmulOp, h, rh)
        if rbh is not None:
            hh = ctx.emit(g.AddOp, hh, rbh)
        hh = ctx.emit(g.MulOp, r, hh)
    else:
        hh = ctx.emit(g.MatmulOp, ctx.emit(g.MulOp, r, h), rh)
        if rbh is not None:
            hh = ctx.emit(g.AddOp, hh, rbh)
    candidate = acts[1](ctx, _clip(ctx, ctx.emit(g.AddOp, xh, hh), clip))
    # (1 - z) * candidate + z * h  ==  candidate + z * (h - candidate)
    return ctx.emit(g.AddOp, candidate, ctx.emit(g.MulOp, z, ctx.emit(g.SubOp, h, candidate)))


def _lstm_cell(node, ctx, step: _Step, acts, xt, h, c, clip):
    pre = ctx.emit(g.AddOp, xt, ctx.emit(g.MatmulOp, h, step.get("r_t")))
    pi, po, pf = step.get("p_i"), step.get("p_o"), step.get("p_f")
    gi, go, gf, gc = step.gates(pre, 4)
    if pi is not None:
        gi = ctx.emit(g.AddOp, gi, ctx.emit(g.MulOp, pi, c))
        gf = ctx.emit(g.AddOp, gf, ctx.emit(g.MulOp, pf, c))
    i = acts[0](ctx, _clip(ctx, gi, clip))
    if node.attr("input_forget", 0):
        f = ctx.emit(g.SubOp, ctx.constant(1.0, like=i), i)
    else:
        f = acts[0](ctx, _clip(ctx, gf, clip))
    cand = acts[1](ctx, _clip(ctx, gc, clip))
    c_new = ctx.emit(g.AddOp, ctx.emit(g.MulOp, f, c), ctx.emit(g.MulOp, i, cand))
    if po is not None:
        go = ctx.emit(g.AddOp, go, ctx.emit(g.MulOp, po, c_new))
    o = acts[0](ctx, _clip(ctx, go, clip))
    h_new = ctx.emit(g.MulOp, o, acts[2](ctx, c_new))
    return h_new, c_new


@converts("RNN", "GRU", "LSTM")
def convert_recurrent(node: Node, ctx: ImportContext):
    kind = node.op_type
    gates = _GATES[kind]
    x, w, r = node.input(0), node.input(1), node.input(2)
    b, lens, h0 = node.input(3), node.input(4), node.input(5)
    c0 = node.input(6) if kind == "LSTM" else None
    p = node.input(7) if kind == "LSTM" else None
    if x is None or w is None or r is None:
        raise ctx.error("needs inputs X, W and R")
    layout = int(node.attr("layout", 0))
    if layout not in (0, 1):
        raise ctx.error(f"layout {layout} is not supported (0 or 1)")
    if layout == 1:  # [batch, seq, input] -> [seq, batch, input]
        x = transpose(ctx, x, [1, 0, 2])
        h0 = None if h0 is None else transpose(ctx, h0, [1, 0, 2])
        c0 = None if c0 is None else transpose(ctx, c0, [1, 0, 2])
    if x.rank != 3:
        raise ctx.error(f"X must have rank 3, got shape {list(x.shape)}")
    seq, batch, _ = x.shape
    direction = node.attr("direction", "forward")
    if direction not in ("forward", "reverse", "bidirectional"):
        raise ctx.error(f"unknown direction '{direction}'")
    num_directions = 2 if direction == "bidirectional" else 1
    hidden = int(node.attr("hidden_size", r.shape[-1]))
    rows = (num_directions, gates * hidden)
    if tuple(w.shape[:2]) != rows or r.shape != (*rows, hidden):
        raise ctx.error(f"W {list(w.shape)} / R {list(r.shape)} do not match {num_directions} "
                        f"direction(s) of {gates} gate(s) with hidden_size {hidden}")
    acts = _activations(node, ctx, num_directions)
    zeros = ctx.constant(np.zeros((batch, hidden)), like=x)
    mask_rows = _mask_rows(ctx, lens, seq, batch)

    ys, hs, cs = [], [], []
    for d in range(num_directions):
        step = _Step(ctx, kind, _row(ctx, w, d), _row(ctx, r, d),
                     None if b is None else _row(ctx, b, d),
                     None if p is None else _row(ctx, p, d), hidden, gates)
        h = zeros if h0 is None else _row(ctx, h0, d)
        c = zeros if c0 is None else _row(ctx, c0, d)
        reverse = direction == "reverse" or d == 1
        y, h, c = _direction(node, ctx, x, step, acts[d], h, c if kind == "LSTM" else None,
                             reverse, mask_rows)
        ys.append(reshape(ctx, y, [seq, 1, batch, hidden]))
        hs.append(reshape(ctx, h, [1, batch, hidden]))
        if kind == "LSTM":
            cs.append(reshape(ctx, c, [1, batch, hidden]))

    def join(parts: list[Tensor], axis: int) -> Tensor:
        return parts[0] if len(parts) == 1 else ctx.emit(g.ConcatOp, *parts, axis=axis)

    y = join(ys, 1)  # [seq, dirs, batch, hidden]
    y_h = join(hs, 0)
    y_c = join(cs, 0) if cs else None
    if layout == 1:
        y = transpose(ctx, y, [2, 0, 1, 3])
        y_h = transpose(ctx, y_h, [1, 0, 2])
        y_c = None if y_c is None else transpose(ctx, y_c, [1, 0, 2])
    return [y, y_h, y_c] if kind == "LSTM" else [y, y_h]


def _mask_rows(ctx: ImportContext, lens: Tensor | None, seq: int, batch: int) -> Tensor | None:
    """[seq, batch, 1] bool: entry b still runs at step t (None: all run every step)."""
    if lens is None:
        return None
    steps = np.arange(seq).reshape(seq, 1, 1)
    if lens.const is not None:
        known = np.asarray(lens.const).reshape(-1).astype(np.int64)
        if np.all(known >= seq):
            return None
        return ctx.constant(steps < known.reshape(1, batch, 1))
    column = reshape(ctx, lens, [1, batch, 1])
    return ctx.emit(g.LessOp, ctx.constant(steps, like=column), column)
