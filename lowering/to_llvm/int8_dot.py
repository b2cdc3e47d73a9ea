"""lower-to-llvm of the int8 dot loop: 16 lanes x 4 bytes of u8 x s8 -> i32.

The integer GEMM kernels (``lowering/kernels/quantized_fast.py``) accumulate

    for nl in 0..16:            (tloop.for marked ``dlc.int8_dot``)
      for j in 0..4:
        acc[.. + nl] += zext(a[.. + j]) * sext(w[.. + 4*nl + j])      (i8 loads, i32 acc)

The schedule (``lowering/schedule/defaults_quantized.py``) picks the form from its Target
(:func:`dot_form`, the target's features, never the build machine's) and marks the loop:

* ``"vpdpbusd"`` (``avx512vnni`` + ``avx512bw``): exactly one AVX512-VNNI
  ``vpdpbusd zmm_acc, zmm_a, zmm_w``: 16 i32 lanes, each adding the four u8 x s8
  products of its 4-byte group (wrapping i32 adds, as the loop). Emitted as one
  ``<16 x i32>`` load of the accumulators, the 4 activation bytes broadcast to 64, one
  ``<64 x i8>`` load of the weights, ``llvm.x86.avx512.vpdpbusd.512``, one store.
* ``"pmaddwd"`` (x86 with ``avx2``, no VNNI): two AVX2 ``vpmaddwd`` per 8 lanes, exact.
  The 64 weight bytes read as 32 i16 words split into their sign-extended even bytes
  (``ashr(shl(w, 8), 8)``: w[4nl], w[4nl+2] per lane) and odd bytes (``ashr(w, 8)``:
  w[4nl+1], w[4nl+3]); the activation word into ``x & 0x00ff00ff`` (a0, a2) and
  ``(x >> 8) & 0x00ff00ff`` (a1, a3), each broadcast. ``vpmaddwd(even, a_even) +
  vpmaddwd(odd, a_odd)`` is the lane's four products: each product of a u8 and an s8
  fits an i16 operand pair's i32 sum exactly. Measured on Zen 3 (AVX2, MobileNet int8,
  1 thread): 8x faster than the vectorizer's form of the plain loop.
* ``"pmaddubsw"`` (x86 with ``avx2``, no VNNI, and a kernel whose packed weights lie in
  PAIR_SAFE_WEIGHTS, ``tloop.int8_weight_range``): per 8 lanes ``vpmaddubsw`` of the
  broadcast activation bytes and 32 weight bytes (each lane's two byte pairs summed in
  i16), then ``vpmaddwd`` with ones (the two pair sums in i32). ``vpmaddubsw`` saturates
  its i16 sums, but for weights within +-64 a pair is at most 255 * 64 * 2 = 32640: exact.
  onnxruntime's ``reduce_range`` models (7-bit weights) are of that kind.

Why explicit intrinsics and not LLVM's vectorizer: LLVM 22 (llvmlite 0.50) never forms
``vpdpbusd`` from ``add(mul(zext, sext))`` outside a horizontal reduction (it picks
``vpmovsxbd`` / ``vpdpwssd``: half the products per instruction plus the widening
shuffles), and on AVX2 it vectorizes the 16 lanes with the 4 bytes of each lane gathered
by shuffles. Any other target keeps the loop unmarked (the portable form: j unrolled,
lowered as written with a vectorize hint). ``vpmaddubsw`` is used only where the weights
cannot saturate it: for full-range weights its i16 pair sums saturate (255 * 127 * 2 >
32767) and results would differ from the exact integer reference.

The handler checks the loop really is that form (trip counts, the load / ext / mul / add /
store chain, and through the affine analysis the flattened address strides: accumulator
+1 per ``nl``, activations +1 per ``j`` and none per ``nl``, weights +4 per ``nl`` and +1
per ``j``) and raises LoweringError naming the kernel otherwise: a marked loop that does
not match is a schedule bug, never silently slower code.
"""

from __future__ import annotations

from xdsl.dialects import arith, llvm, memref
from xdsl.dialects.builtin import DenseArrayBase, IntegerAttr, IntegerType, MemRefType, StringAttr, VectorType, i32, i64
from xdsl.ir import Operation, SSAValue

from dlc.dialects import tloop
from dlc.lowering.to_llvm.function import (
    FunctionLowering,
    LoweringError,
    row_major_strides,
)
from dlc.target import Target

DOT_ATTR = "dlc.int8_dot"  # the schedule's mark on the 16-lane loop (defaults_quantized.py)
LANES = 16  # i32 accumulators of one vpdpbusd (512 bits)
GROUP = 4  # bytes summed into each lane
VNNI_FEATURES = ("avx512vnni", "avx512bw")
VNNI_INTRINSIC = "llvm.x86.avx512.vpdpbusd.512"


PMADDWD_INTRINSIC = "llvm.x86.avx2.pmadd.wd"  # <16 x i16> x <16 x i16> -> <8 x i32>
PMADDUBSW_INTRINSIC = "llvm.x86.avx2.pmadd.ub.sw"  # <32 x u8> x <32 x s8> -> <16 x i16>, saturating
DOT_FORMS = ("vpdpbusd", "pmaddubsw", "pmaddwd")
# s8 weights for which a u8 x s8 byte pair's sum fits i16 (255 * 64 * 2 = 32640): vpmaddubsw
# cannot saturate, so it is exact (onnxruntime's reduce_range weights: +-63 / 64)
PAIR_SAFE_WEIGHTS = (-64, 64)


def has_vnni(target: Target) -> bool:
    """The target can run the vpdpbusd form (its features, not this machine's)."""
    return target.arch == "x86_64" and all(f in target.features for f in VNNI_FEATURES)


def dot_form(target: Target, weight_range: tuple[int, int] | None = None) -> str | None:
    """The form the schedule marks the dot loop with for `target` (None: unmarked, the
    portable loop): vpdpbusd with VNNI; with AVX2 pmaddubsw when the kernel states weights
    within PAIR_SAFE_WEIGHTS (`weight_range`, the packed weights' min and max), else pmaddwd."""
    if has_vnni(target):
        return "vpdpbusd"
    if target.arch == "x86_64" and target.has("avx2"):
        safe = weight_range is not None and PAIR_SAFE_WEIGHTS[0] <= weight_range[0] <= weight_range[1] <= PAIR_SAFE_WEIGHTS[1]
        return "pmaddubsw" if safe else "pmaddwd"
    return None


def lower_dot_loop(lo: FunctionLowering, op: tloop.ForOp) -> None:
    """Lower a loop marked ``dlc.int8_dot`` with one of DOT_FORMS (the schedule marks it
    from its Target: the choice is made there, not here)."""
    kind = op.attributes[DOT_ATTR]
    if not isinstance(kind, StringAttr) or kind.data not in DOT_FORMS:
        known = ", ".join(f'"{f}"' for f in DOT_FORMS)
        raise LoweringError(op, f"'tloop.for': unknown {DOT_ATTR} form {kind} (known: {known})"
                                f"{lo.where(op)}")
    dot = match_dot(op, lo)
    {"vpdpbusd": emit_vnni, "pmaddubsw": emit_pmaddubsw, "pmaddwd": emit_pmaddwd}[kind.data](lo, op, dot)


class _Dot:
    def __init__(self, j_loop, acc_load, a_load, w_load, acc_store):
        self.j_loop, self.acc_load, self.a_load, self.w_load, self.acc_store = (
            j_loop, acc_load, a_load, w_load, acc_store)


def match_dot(op: tloop.ForOp, lo: FunctionLowering) -> _Dot:
    """The loads and the store of a DOT_ATTR loop, or LoweringError saying what differs."""

    def bad(why: str) -> LoweringError:
        return LoweringError(op, f"'tloop.for' marked {DOT_ATTR}: {why}{lo.where(op)}")

    if (op.lower, op.upper, op.stride) != (0, LANES, 1):
        raise bad(f"the lane loop must run 0..{LANES} step 1")
    inner = [o for o in op.body.block.ops if isinstance(o, tloop.ForOp)]
    if len(inner) != 1 or (inner[0].lower, inner[0].upper, inner[0].stride) != (0, GROUP, 1):
        raise bad(f"the lane loop must hold one loop 0..{GROUP} step 1")
    j_loop = inner[0]
    loads = [o for o in j_loop.walk() if isinstance(o, memref.LoadOp)]
    stores = [o for o in j_loop.walk() if isinstance(o, memref.StoreOp)]
    if any(isinstance(o, memref.StoreOp | memref.LoadOp) for o in op.body.block.ops) or len(loads) != 3 \
            or len(stores) != 1:
        raise bad("the body must be acc += zext(a) * sext(w): 3 loads and 1 store in the inner loop")
    store = stores[0]
    add = store.value.owner
    if not isinstance(add, arith.AddiOp) or add.result.type != i32:
        raise bad("the stored value must be an i32 arith.addi")
    acc_load = next((v.owner for v in add.operands if isinstance(v.owner, memref.LoadOp)), None)
    mul = next((v.owner for v in add.operands if isinstance(v.owner, arith.MuliOp)), None)
    if acc_load is None or mul is None or acc_load.memref is not store.memref \
            or not _same_indices(acc_load, store):
        raise bad("the addi must add a product to the load of the stored element")
    ext = {type(v.owner): v.owner for v in mul.operands}
    if set(ext) != {arith.ExtUIOp, arith.ExtSIOp}:
        raise bad("the product must be zext(u8) * sext(s8)")
    a_load, w_load = ext[arith.ExtUIOp].input.owner, ext[arith.ExtSIOp].input.owner
    for load in (a_load, w_load):
        if not isinstance(load, memref.LoadOp) or load.res.type != IntegerType(8):
            raise bad("both factors must be i8 loads")
    for load, (per_lane, per_j) in ((acc_load, (1, 0)), (a_load, (0, 1)), (w_load, (GROUP, 1))):
        strides = _address_strides(load, op, j_loop)
        if strides != (per_lane, per_j):
            raise bad(f"%{load.memref.name_hint or 'buffer'} moves {strides} elements per (lane, j); "
                      f"the form needs {(per_lane, per_j)}")
    return _Dot(j_loop, acc_load, a_load, w_load, store)


def _same_indices(load: memref.LoadOp, store: memref.StoreOp) -> bool:
    """The load and the store address the same element (equal affine forms: the schedule's
    rewrites may compute an index twice)."""
    from dlc.lowering.schedule.affine import analyse

    for a, b in zip(load.indices, store.indices, strict=True):
        if a is b:
            continue
        fa, fb = analyse(a), analyse(b)
        if fa is None or fb is None or fa.key() != fb.key():
            return False
    return True


def _address_strides(load: memref.LoadOp, lane: tloop.ForOp, j: tloop.ForOp) -> tuple[int, int] | None:
    """Elements the flattened address of `load` moves per lane and per j step (None: not affine)."""
    from dlc.lowering.schedule.affine import Digit, analyse

    strides, _ = row_major_strides(load.memref.type)
    per = [0, 0]
    for index, stride in zip(load.indices, strides, strict=True):
        form = analyse(index)
        if form is None:
            return None
        for key, coef in form.terms.items():
            if isinstance(key, Digit) and key.loop in (lane, j):
                if key.part != "iv":
                    return None
                per[0 if key.loop is lane else 1] += coef * stride
    return per[0], per[1]


def _lower_addresses(lo: FunctionLowering, op: tloop.ForOp, dot: _Dot) -> None:
    """Lane and j at 0, and the loop bodies' index arithmetic: the base addresses."""
    lo.values[op.induction_var] = lo.const(0, i64)
    lo.values[dot.j_loop.induction_var] = lo.const(0, i64)
    data = {dot.acc_load, dot.a_load, dot.w_load, dot.acc_store}
    data |= {o for o in dot.j_loop.body.block.ops if isinstance(o, (arith.ExtUIOp, arith.ExtSIOp,
                                                                     arith.MuliOp, arith.AddiOp))
             and o.results and o.results[0].type == i32}
    for block_op in list(op.body.block.ops) + list(dot.j_loop.body.block.ops):
        if block_op is dot.j_loop or block_op in data or block_op.name in ("tloop.yield", "scf.yield"):
            continue
        lo.lower_op(block_op)  # index arithmetic: the base addresses


def _splat(lo: FunctionLowering, scalar: SSAValue, vector: VectorType) -> SSAValue:
    one = lo.emit(llvm.InsertElementOp(lo.emit(llvm.UndefOp(vector)), scalar, lo.const(0, i32)))
    lanes = vector.get_shape()[0]
    return lo.emit(llvm.ShuffleVectorOp(one, one, DenseArrayBase.from_list(i32, [0] * lanes), vector))


def emit_vnni(lo: FunctionLowering, op: tloop.ForOp, dot: _Dot) -> None:
    """The loop as straight-line vector code: one vpdpbusd."""
    _lower_addresses(lo, op, dot)
    v16 = VectorType(i32, [LANES])
    v64 = VectorType(IntegerType(8), [LANES * GROUP])
    acc_ptr = _pointer(lo, dot.acc_load)
    acc = lo.emit(llvm.LoadOp(acc_ptr, v16, alignment=4))
    word = lo.emit(llvm.LoadOp(_pointer(lo, dot.a_load), i32, alignment=1))  # the 4 activation bytes
    a_bytes = lo.emit(llvm.BitcastOp(_splat(lo, word, v16), v64))
    w_bytes = lo.emit(llvm.LoadOp(_pointer(lo, dot.w_load), v64, alignment=1))
    result = lo.intrinsic(VNNI_INTRINSIC, [acc, a_bytes, w_bytes], v16)
    lo.emit(llvm.StoreOp(result, acc_ptr, alignment=4))


def emit_pmaddwd(lo: FunctionLowering, op: tloop.ForOp, dot: _Dot) -> None:
    """The loop as straight-line AVX2 code: per 8 lanes, vpmaddwd of the even weight bytes
    with (a0, a2) plus vpmaddwd of the odd ones with (a1, a3) (module docstring)."""
    _lower_addresses(lo, op, dot)
    i16 = IntegerType(16)
    half = LANES // 2
    v16, v8 = VectorType(i32, [LANES]), VectorType(i32, [half])
    words, half_words = VectorType(i16, [LANES * 2]), VectorType(i16, [LANES])
    acc_ptr = _pointer(lo, dot.acc_load)
    acc = lo.emit(llvm.LoadOp(acc_ptr, v16, alignment=4))
    word = lo.emit(llvm.LoadOp(_pointer(lo, dot.a_load), i32, alignment=1))  # a0 a1 a2 a3
    low_bytes = lo.const(0x00FF00FF, i32)
    a_even = lo.emit(llvm.AndOp(word, low_bytes))
    a_odd = lo.emit(llvm.AndOp(lo.emit(llvm.LShrOp(word, lo.const(8, i32))), low_bytes))
    a_even, a_odd = (lo.emit(llvm.BitcastOp(_splat(lo, a, v8), half_words)) for a in (a_even, a_odd))
    w = lo.emit(llvm.LoadOp(_pointer(lo, dot.w_load), VectorType(IntegerType(8), [LANES * GROUP]),
                            alignment=1))
    w = lo.emit(llvm.BitcastOp(w, words))
    eight = _splat(lo, lo.const(8, i16), words)
    w_even = lo.emit(llvm.AShrOp(lo.emit(llvm.ShlOp(w, eight)), eight))
    w_odd = lo.emit(llvm.AShrOp(w, eight))
    sums = []
    for part in range(2):  # lanes 0..7, 8..15: 16 weight words each
        mask = DenseArrayBase.from_list(i32, list(range(part * LANES, (part + 1) * LANES)))
        even, odd = (lo.emit(llvm.ShuffleVectorOp(v, v, mask, half_words)) for v in (w_even, w_odd))
        sums.append(lo.emit(llvm.AddOp(lo.intrinsic(PMADDWD_INTRINSIC, [even, a_even], v8),
                                       lo.intrinsic(PMADDWD_INTRINSIC, [odd, a_odd], v8))))
    both = lo.emit(llvm.ShuffleVectorOp(sums[0], sums[1], DenseArrayBase.from_list(i32, list(range(LANES))), v16))
    lo.emit(llvm.StoreOp(lo.emit(llvm.AddOp(acc, both)), acc_ptr, alignment=4))


def emit_pmaddubsw(lo: FunctionLowering, op: tloop.ForOp, dot: _Dot) -> None:
    """The loop as straight-line AVX2 code for weights within PAIR_SAFE_WEIGHTS: per 8
    lanes, vpmaddubsw (the byte pairs' sums in i16, which cannot saturate for them) and
    vpmaddwd with ones (the two pair sums of each lane in i32)."""
    _lower_addresses(lo, op, dot)
    i8, i16 = IntegerType(8), IntegerType(16)
    half = LANES // 2
    v16, v8 = VectorType(i32, [LANES]), VectorType(i32, [half])
    half_bytes, pairs = VectorType(i8, [half * GROUP]), VectorType(i16, [LANES])
    acc_ptr = _pointer(lo, dot.acc_load)
    acc = lo.emit(llvm.LoadOp(acc_ptr, v16, alignment=4))
    word = lo.emit(llvm.LoadOp(_pointer(lo, dot.a_load), i32, alignment=1))  # a0 a1 a2 a3
    a_bytes = lo.emit(llvm.BitcastOp(_splat(lo, word, v8), half_bytes))
    w = lo.emit(llvm.LoadOp(_pointer(lo, dot.w_load), VectorType(i8, [LANES * GROUP]), alignment=1))
    ones = _splat(lo, lo.const(1, i16), pairs)
    sums = []
    for part in range(2):  # lanes 0..7, 8..15: 32 weight bytes each
        mask = DenseArrayBase.from_list(i32, list(range(part * half * GROUP, (part + 1) * half * GROUP)))
        w_half = lo.emit(llvm.ShuffleVectorOp(w, w, mask, half_bytes))
        pair_sums = lo.intrinsic(PMADDUBSW_INTRINSIC, [a_bytes, w_half], pairs)
        sums.append(lo.intrinsic(PMADDWD_INTRINSIC, [pair_sums, ones], v8))
    both = lo.emit(llvm.ShuffleVectorOp(sums[0], sums[1], DenseArrayBase.from_list(i32, list(range(LANES))), v16))
    lo.emit(llvm.StoreOp(lo.emit(llvm.AddOp(acc, both)), acc_ptr, alignment=4))


def _pointer(lo: FunctionLowering, load: Operation) -> SSAValue:
    """The element pointer of `load` at lane 0, j 0, emitted from the affine form of its
    flattened address rather than from the index ops: the schedule's cache_write indexes
    its register tile as ``(tile base + mi) - tile base``, which LLVM does not always fold
    back to ``mi``; the affine form has the terms cancelled, so the register tile's offsets
    are constants once the unrolled loops are, and SROA keeps the accumulators in zmm."""
    from dlc.lowering.schedule.affine import Digit, analyse

    memref_type = load.memref.type
    assert isinstance(memref_type, MemRefType)
    strides, offset = row_major_strides(memref_type)
    total: dict = {}
    const = offset
    for index, stride in zip(load.indices, strides, strict=True):
        form = analyse(index)
        if form is None:  # (match_dot checked every index through the same analysis)
            raise LoweringError(load, f"'{load.name}': index not affine{lo.where(load)}")
        const += form.const * stride
        for key, coef in form.terms.items():
            total[key] = total.get(key, 0) + coef * stride
    address = lo.const(const, i64)
    for key, coef in total.items():
        if coef == 0:
            continue
        if isinstance(key, Digit):
            term = lo.v(key.loop.induction_var)
            if key.part != "iv":
                divisor = lo.const(key.divisor, i64)
                term = lo.emit(llvm.UDivOp(term, divisor) if key.part == "div" else llvm.URemOp(term, divisor))
        else:
            term = lo.v(key)
        if coef != 1:
            term = lo.emit(llvm.MulOp(term, lo.const(coef, i64)))
        address = lo.emit(llvm.AddOp(address, term))
    elem = IntegerType(memref_type.element_type.width.data)
    return lo.emit(llvm.GEPOp(lo.v(load.memref), [llvm.GEP_USE_SSA_VAL], elem, ssa_indices=[address],
                              inbounds=True))
