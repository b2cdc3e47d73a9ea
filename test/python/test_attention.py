"""graph.attention: its reference, fuse-attention on the written-out form, and the fused
kernel (online softmax over key blocks, kernels/attention.py) against numpy on odd shapes."""

from __future__ import annotations

import numpy as np
import pytest

import dlc
from dlc.context import make_context
from dlc.diagnostics import parse_module
from dlc.dialects import graph as g
from dlc.passes import load_pass


def _t(shape) -> str:
    return "tensor<" + "x".join(str(d) for d in shape) + "xf32>"


def numpy_attention(q, k, v, mask, scale):
    """(B, H, S, D) operands, float64, the textbook form."""
    s = np.einsum("bhqd,bhkd->bhqk", q.astype(np.float64), k.astype(np.float64)) * scale
    if mask is not None:
        s = s + mask
    s = np.exp(s - s.max(-1, keepdims=True))
    return np.einsum("bhqk,bhkd->bhqd", s / s.sum(-1, keepdims=True), v.astype(np.float64))


def _perm_shape(logical, perm):
    """The physical shape whose transpose by `perm` is `logical`."""
    shape = [0] * 4
    for t, p in enumerate(perm):
        shape[p] = logical[t]
    return shape


CASES = [
    # (B, H, Sq, Sk, Dh, Dv, mask, q_perm, k_perm, v_perm, out_perm)
    (1, 1, 1, 1, 5, 5, None, (0, 2, 1, 3), (0, 2, 1, 3), (0, 2, 1, 3), (0, 2, 1, 3)),
    (1, 3, 7, 7, 5, 5, "causal", (0, 2, 1, 3), (0, 2, 1, 3), (0, 2, 1, 3), (0, 2, 1, 3)),
    (2, 3, 13, 13, 64, 64, "causal", (0, 2, 1, 3), (0, 2, 1, 3), (0, 2, 1, 3), (0, 2, 1, 3)),
    (1, 3, 13, 7, 64, 5, None, (0, 1, 2, 3), (0, 1, 3, 2), (0, 2, 1, 3), (0, 1, 2, 3)),
    # keys 0..31 (the first block) masked with -inf for row 0..3: the guarded exp shift
    (1, 1, 7, 40, 8, 8, "block", (0, 2, 1, 3), (0, 2, 1, 3), (0, 2, 1, 3), (0, 2, 1, 3)),
    # ViT's 197 rows and keys (a 1-row tail, a 5-key block tail) and 48 value features (a
    # 32-wide register tile chunk and a 16-wide one)
    (1, 2, 197, 197, 64, 48, "causal", (0, 2, 1, 3), (0, 2, 1, 3), (0, 2, 1, 3), (0, 2, 1, 3)),
]


def _mask(kind, b, h, sq, sk):
    if kind is None:
        return None
    if kind == "causal":
        return np.triu(np.full((sq, sk), -1e4, np.float32), 1).reshape(1, 1, sq, sk)
    m = np.zeros((1, 1, sq, sk), np.float32)
    m[..., :4, :32] = -np.inf
    return m


@pytest.mark.parametrize("case", CASES, ids=[f"b{c[0]}h{c[1]}q{c[2]}k{c[3]}d{c[4]}v{c[5]}-{c[6]}" for c in CASES])
def test_attention_kernel_matches_numpy(case):
    b, h, sq, sk, dh, dv, kind, qp, kp, vp, op = case
    rng = np.random.default_rng(sq * 100 + sk)
    ql, kl, vl = (rng.standard_normal(s).astype(np.float32) for s in ((b, h, sq, dh), (b, h, sk, dh), (b, h, sk, dv)))
    mask = _mask(kind, b, h, sq, sk)
    scale = 1.0 / np.sqrt(dh)
    phys = [np.ascontiguousarray(np.transpose(x, np.argsort(p))) for x, p in ((ql, qp), (kl, kp), (vl, vp))]
    for x, logical, p in zip(phys, (ql, kl, vl), (qp, kp, vp)):
        assert np.array_equal(np.transpose(x, p), logical)
    shapes = [x.shape for x in phys]
    out_shape = [[b, h, sq, dv][p] for p in op]
    operands = ["%q", "%k", "%v"] + (["%m"] if mask is not None else [])
    types = [_t(s) for s in shapes] + ([_t(mask.shape)] if mask is not None else [])
    args = ", ".join(f"{n}: {t}" for n, t in zip(operands, types))
    perms = ", ".join(f"{n} = array<i64: {', '.join(map(str, p))}>" for n, p in
                      (("q_perm", qp), ("k_perm", kp), ("v_perm", vp), ("out_perm", op)))
    text = f"""func.func @main({args}) -> {_t(out_shape)} {{
  %o = graph.attention {', '.join(operands)} {{scale = {float(np.float32(scale))!r} : f32, {perms}}} : ({', '.join(types)}) -> {_t(out_shape)}
  func.return %o : {_t(out_shape)}
}}"""
    compiled = dlc.compile(text, num_threads=2)
    assert "attention" in compiled.llvm_ir  # the fused kernel, not the legalized chain
    got = compiled(*phys, *([mask] if mask is not None else []))
    got = got[0] if isinstance(got, (list, tuple)) else got
    want = np.transpose(numpy_attention(ql, kl, vl, mask, np.float32(scale)), op)
    assert got.shape == want.shape
    assert np.all(np.isfinite(got))
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5 * np.abs(want).max())
    # the op's own reference (the evaluator's) agrees too
    module = parse_module(make_context(), text, "<test>")
    attn = next(o for o in module.walk() if isinstance(o, g.AttentionOp))
    ref = attn.reference(*phys, *([mask] if mask is not None else []))[0]
    np.testing.assert_allclose(ref, want, rtol=1e-5, atol=1e-6)


def _written_out(masked: bool, s=13, h=3, dh=5, scale_op="div") -> str:
    d = h * dh
    t4, tl, sc = _t([1, s, h, dh]), _t([1, h, s, dh]), _t([1, h, s, s])
    kt = _t([1, h, dh, s])
    mask_arg = f", %m: {_t([1, 1, s, s])}" if masked else ""
    scale_value = np.sqrt(dh) if scale_op == "div" else 1 / np.sqrt(dh)
    lines = [
        f"func.func @main(%x: {_t([1, s, d])}{mask_arg}) -> {_t([1, s, d])} {{",
        f"  %q = graph.reshape %x {{shape = array<i64: 1, {s}, {h}, {dh}>}} : ({_t([1, s, d])}) -> {t4}",
        f"  %ql = graph.transpose %q {{perm = array<i64: 0, 2, 1, 3>}} : ({t4}) -> {tl}",
        f"  %kt = graph.transpose %q {{perm = array<i64: 0, 2, 3, 1>}} : ({t4}) -> {kt}",
        f"  %s = graph.matmul %ql, %kt : ({tl}, {kt}) -> {sc}",
        f"  %c = graph.constant dense<{float(np.float32(scale_value))!r}> : tensor<f32>",
        f"  %s2 = graph.{scale_op} %s, %c : ({sc}, tensor<f32>) -> {sc}",
    ]
    last = "%s2"
    if masked:
        lines.append(f"  %s3 = graph.add %s2, %m : ({sc}, {_t([1, 1, s, s])}) -> {sc}")
        last = "%s3"
    lines += [
        f"  %p = graph.softmax {last} {{axis = -1 : i64}} : ({sc}) -> {sc}",
        f"  %o = graph.matmul %p, %ql : ({sc}, {tl}) -> {tl}",
        f"  %r = graph.transpose %o {{perm = array<i64: 0, 2, 1, 3>}} : ({tl}) -> {t4}",
        f"  %y = graph.reshape %r {{shape = array<i64: 1, {s}, {d}>}} : ({t4}) -> {_t([1, s, d])}",
        f"  func.return %y : {_t([1, s, d])}",
        "}",
    ]
    return "\n".join(lines)


@pytest.mark.parametrize("masked,scale_op", [(True, "div"), (False, "mul")])
def test_written_out_attention_is_fused_and_matches(masked, scale_op):
    s, h, dh = 13, 3, 5
    text = _written_out(masked, s, h, dh, scale_op)
    module = parse_module(make_context(), text, "<test>")
    for name in ("legalize", "fold-constant", "fuse-attention"):
        load_pass(name)().apply(make_context(), module)
    ops = [o.name for o in module.walk() if o.name.startswith("graph.")]
    assert ops.count("graph.attention") == 1 and "graph.matmul" not in ops and "graph.transpose" not in ops
    rng = np.random.default_rng(1)
    x = rng.standard_normal((1, s, h * dh)).astype(np.float32)
    mask = np.triu(np.full((s, s), -1e4, np.float32), 1).reshape(1, 1, s, s) if masked else None
    got = dlc.compile(text, num_threads=2)(*([x, mask] if masked else [x]))
    got = got[0] if isinstance(got, (list, tuple)) else got
    ql = x.reshape(1, s, h, dh).transpose(0, 2, 1, 3)
    want = numpy_attention(ql, ql, ql, mask, 1 / np.sqrt(dh)).transpose(0, 2, 1, 3).reshape(1, s, h * dh)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5 * np.abs(want).max())


def test_legalize_writes_attention_out():
    text = _written_out(True)
    module = parse_module(make_context(), text, "<test>")
    for name in ("legalize", "fold-constant", "fuse-attention"):
        load_pass(name)().apply(make_context(), module)
    load_pass("legalize")().apply(make_context(), module)  # the GPU path: no attention op left
    names = {o.name for o in module.walk()}
    assert "graph.attention" not in names and "graph.matmul" in names


def test_long_sequence_keeps_the_written_out_form():
    # one head's packed keys (Sk * Dh * 4 bytes) beyond the kernel's scratch limit
    from dlc.lowering.kernels.attention import PACK_LIMIT

    s = PACK_LIMIT // (4 * 64) + 1
    module = parse_module(make_context(), _written_out(False, s=s, h=1, dh=64), "<test>")
    for name in ("legalize", "fold-constant", "fuse-attention"):
        load_pass(name)().apply(make_context(), module)
    names = [o.name for o in module.walk()]
    assert "graph.attention" not in names and names.count("graph.matmul") == 2
    module = parse_module(make_context(), _written_out(False, s=s - 1, h=1, dh=64), "<test>")
    for name in ("legalize", "fold-constant", "fuse-attention"):
        load_pass(name)().apply(make_context(), module)
    assert "graph.attention" in [o.name for o in module.walk()]


def test_products_accumulate_in_register_tiles():
    """The score block and the P V chunk accumulate in tiles of their own around their
    reduction loops (schedule_attention's _register_tiles), whose columns are one vector."""
    from dlc.dialects.tloop import ForOp
    from dlc.driver import lower_to_loops_pass, run_pass, schedule_pass
    from dlc.lowering.schedule.core import loop_name

    b, h, s_, d = 1, 2, 64, 64
    t = _t([b, s_, h, d])
    perm = "array<i64: 0, 2, 1, 3>"
    text = f"""func.func @main(%q: {t}, %k: {t}, %v: {t}) -> {t} {{
  %o = graph.attention %q, %k, %v {{scale = 0.125 : f32, q_perm = {perm}, k_perm = {perm}, v_perm = {perm}, out_perm = {perm}}} : ({t}, {t}, {t}) -> {t}
  func.return %o : {t}
}}"""
    module = parse_module(make_context(), text, "<test>")
    run_pass(lower_to_loops_pass(), module)
    run_pass(schedule_pass(), module)
    kernel = next(op for op in module.ops if "attention" in getattr(getattr(op, "sym_name", None), "data", ""))
    names = {op.memref.name_hint for op in kernel.walk() if op.name == "memref.alloca"}
    assert {"s_tile_sd", "acc_tile_pj"} <= names, names
    loops = {loop_name(op): op for op in kernel.walk() if isinstance(op, ForOp)}
    assert "dlc.whole_vector" in loops["sj"].attributes and "dlc.whole_vector" in loops["pd"].attributes
