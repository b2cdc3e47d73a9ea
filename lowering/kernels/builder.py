"""KernelBuilder: emits one loop-IR kernel (`func.func` with `tloop.for` nests).

A thin layer over xDSL's op constructors (we add no dialect here): it tracks the
insertion block, hoists constants to the kernel entry, gives loop induction
variables unique readable names (schedule passes address loops by name), and
dispatches scalar arithmetic on the *graph* element type, because memrefs use
signless integers and the signedness of ``ui8`` lives only in the op choice
(``divui``, ``cmpi ult``, ``uitofp``...).

Index expressions are ``SSAValue | int``: Python ints are folded while building
so the IR carries no ``x + 0`` or ``x * 1``.
"""

from __future__ import annotations

import math as pymath
from collections.abc import Iterator, Sequence
from contextlib import contextmanager

from xdsl.dialects import arith, func, math, memref, scf
from xdsl.dialects.builtin import (
    FloatAttr,
    IndexType,
    IntegerAttr,
    IntegerType,
    MemRefType,
    StringAttr,
    TensorType,
    UnitAttr,
    f64,
)
from xdsl.ir import Attribute, Block, Operation, Region, SSAValue

from dlc.dialects import tloop
from dlc.dialects.graph_base import is_bool, is_float, is_narrow, is_unsigned
from dlc.lowering.memref_layout import row_major

Index = SSAValue | int
INDEX = IndexType()


def storage_type(element_type: Attribute) -> Attribute:
    """Element type in memory: integers become signless (ui8 -> i8); narrow
    types are widened to their ml_dtypes byte layout (bf16 -> i16; f8, f4,
    i4, i2 -> i8 holding the code in the low bits) and only the cast kernel
    interprets those bits (lowering/kernels/narrow.py)."""
    if is_narrow(element_type):
        return IntegerType(16 if str(element_type) == "bf16" else 8)
    if isinstance(element_type, IntegerType):
        return IntegerType(element_type.width.data)
    return element_type


def memref_of(t: TensorType) -> MemRefType:
    return MemRefType(storage_type(t.element_type), t.get_shape())


def lowest(et: Attribute) -> float | int:
    """Identity of max: -inf for floats, the smallest integer otherwise."""
    if is_float(et):
        return -pymath.inf
    if is_bool(et) or is_unsigned(et):
        return 0
    return -(1 << (et.width.data - 1))


def highest(et: Attribute) -> float | int:
    if is_float(et):
        return pymath.inf
    if is_bool(et):
        return 1
    if is_unsigned(et):
        return (1 << et.width.data) - 1
    return (1 << (et.width.data - 1)) - 1


class Epilogue:
    """Elementwise ops applied to a kernel's result before it is stored (fuse-ops).

    ``extra_inputs``: types of the extra kernel arguments (after the anchor's
    inputs); ``apply(kb, value, out_idx, extras)`` computes the chain on the
    anchor's output element at ``out_idx`` (see ``lowering/fused.py``).
    """

    def __init__(self, extra_inputs: Sequence[TensorType], apply, source_suffix: str):
        self.extra_inputs = list(extra_inputs)
        self.apply = apply
        self.source_suffix = source_suffix


_EPILOGUE: list[Epilogue] = []  # the epilogue of the kernel being generated (a stack)


@contextmanager
def epilogue(spec: Epilogue) -> Iterator[None]:
    """Kernels generated inside this block apply ``spec`` to their result."""
    _EPILOGUE.append(spec)
    try:
        yield
    finally:
        _EPILOGUE.pop()


def _letters(n: int) -> str:
    """1 -> a, 2 -> b, ..., 26 -> z, 27 -> aa (bijective base 26): a suffix that stays a
    valid SSA name however many loops share a base (a concat of 40 inputs)."""
    out = ""
    while n > 0:
        n, rest = divmod(n - 1, 26)
        out = chr(ord("a") + rest) + out
    return out


class KernelBuilder:
    """Builds ``func.func @name(inputs..., outputs...) {tloop.kernel}``.

    Inside ``with epilogue(spec)`` the kernel also takes ``spec``'s extra inputs
    (between inputs and outputs, in ``self.extra_inputs``), and generators pass
    each final output value through :meth:`epilogue_value` (elementwise
    kernels) or call :meth:`apply_epilogue` once an accumulated output element
    is complete (matmul, conv2d, pools, reductions).
    """

    def __init__(
        self,
        name: str,
        inputs: Sequence[TensorType],
        outputs: Sequence[TensorType],
        source: str,
        arg_names: Sequence[str] | None = None,
    ):
        self.epilogue = _EPILOGUE[-1] if _EPILOGUE else None
        extra = self.epilogue.extra_inputs if self.epilogue else []
        types = [memref_of(t) for t in (*inputs, *extra, *outputs)]
        self.func = func.FuncOp(name, (types, []))
        self.func.attributes["tloop.kernel"] = UnitAttr()
        self.func.attributes["tloop.source"] = StringAttr(source)
        if self.epilogue:
            self.func.attributes["tloop.fused"] = StringAttr(source + self.epilogue.source_suffix)
        self.entry = self.func.body.block
        self.block = self.entry
        args = self.entry.args
        names = list(arg_names or [f"in{i}" for i in range(len(inputs))] + [
            f"out{i}" if len(outputs) > 1 else "out" for i in range(len(outputs))
        ])
        names[len(inputs):len(inputs)] = [f"extra{i}" for i in range(len(extra))]
        for arg, hint in zip(args, names):
            arg.name_hint = hint
        self.inputs = list(args[: len(inputs)])
        self.extra_inputs = list(args[len(inputs): len(inputs) + len(extra)])
        self.outputs = list(args[len(inputs) + len(extra):])
        self._constants: dict[tuple[Attribute, object], SSAValue] = {}
        self._loop_names: set[str] = set()

    # -- fused epilogues ---------------------------------------------------------
    def epilogue_value(self, value: SSAValue, out_idx: Sequence[Index]) -> SSAValue:
        """``value`` (the output element at ``out_idx``) after the fused epilogue."""
        if self.epilogue is None:
            return value
        return self.epilogue.apply(self, value, list(out_idx), self.extra_inputs)

    def apply_epilogue(self, out_idx: Sequence[Index], view: SSAValue | None = None,
                       view_idx: Sequence[Index] | None = None) -> None:
        """Rewrite the finished output element at ``out_idx`` through the epilogue; with
        `view` (a view of the output the kernel writes through), the element is
        ``view[view_idx]`` (the epilogue's operands are still indexed by ``out_idx``)."""
        if self.epilogue is None:
            return
        buf, idx = (self.outputs[0], out_idx) if view is None else (view, view_idx)
        value = self.load(buf, idx)
        self.store(self.epilogue_value(value, out_idx), buf, idx)

    # -- finishing ---------------------------------------------------------------
    def finish(self, form: str | None = None) -> func.FuncOp:
        """The kernel; ``form``: its kernel form (kernels/forms.py), which picks its
        default schedule (kernels without one get the generic schedule)."""
        self.entry.add_op(func.ReturnOp())
        if form is not None:
            from dlc.lowering.kernels.forms import stamp_form

            stamp_form(self.func, form)
        return self.func

    # -- emission ----------------------------------------------------------------
    def emit(self, op: Operation) -> SSAValue:
        self.block.add_op(op)
        return op.results[0] if len(op.results) == 1 else None  # type: ignore[return-value]

    def _hoisted(self, op: Operation) -> SSAValue:
        """Insert a constant at the top of the kernel (dominates every loop)."""
        # constants go before the first non-constant op, in creation order
        anchor = self._first_non_constant_op()
        if anchor is None:
            self.entry.add_op(op)
        else:
            self.entry.insert_op_before(op, anchor)
        return op.results[0]

    def _first_non_constant_op(self) -> Operation | None:
        for op in self.entry.ops:
            if not isinstance(op, arith.ConstantOp):
                return op
        return None

    def index(self, value: Index) -> SSAValue:
        if isinstance(value, SSAValue):
            return value
        key = (INDEX, int(value))
        if key not in self._constants:
            self._constants[key] = self._hoisted(
                arith.ConstantOp(IntegerAttr(int(value), INDEX))
            )
        return self._constants[key]

    def const(self, value: float | int | bool, et: Attribute) -> SSAValue:
        """A scalar constant of graph element type ``et``."""
        st = storage_type(et)
        if is_float(et):
            key = (st, float(value))
            attr = FloatAttr(float(value), st)
        else:
            width = st.width.data
            ivalue = int(value)
            if is_bool(et):
                ivalue = 1 if value else 0
            # two's complement wrap, then signed view as IntegerAttr wants
            ivalue &= (1 << width) - 1
            if ivalue >= 1 << (width - 1) and width > 1:
                ivalue -= 1 << width
            if width == 1:
                ivalue = -ivalue if ivalue else 0
            key = (st, ivalue)
            attr = IntegerAttr(ivalue, st)
        if key not in self._constants:
            self._constants[key] = self._hoisted(arith.ConstantOp(attr))
        return self._constants[key]

    # -- structure ---------------------------------------------------------------
    def _unique(self, name: str) -> str:
        # `r`, `r2`, `r3` (or `d0`, `d0b`, `d0c`): xDSL's parser drops a `_<digits>`
        # suffix from names, so `r_1` would not survive a print/parse round trip.
        base, n = name, 1
        while name in self._loop_names:
            n += 1
            name = f"{base}{_letters(n)}" if base[-1:].isdigit() else f"{base}{n}"
        self._loop_names.add(name)
        return name

    @contextmanager
    def loop(self, name: str, upper: int, lower: int = 0, step: int = 1) -> Iterator[SSAValue]:
        """``tloop.for %name = lower to upper step step`` (serial)."""
        body = Block(arg_types=[INDEX])
        body.args[0].name_hint = self._unique(name)
        parent = self.block
        self.block = body
        try:
            yield body.args[0]
        finally:
            self.block = parent
        parent.add_op(tloop.ForOp(lower, upper, step, "serial", body))

    @contextmanager
    def loops(self, names: Sequence[str], uppers: Sequence[int]) -> Iterator[list[SSAValue]]:
        """A perfect nest, outermost first."""
        ivs: list[SSAValue] = []
        managers = []
        try:
            for name, ub in zip(names, uppers):
                m = self.loop(name, ub)
                ivs.append(m.__enter__())
                managers.append(m)
            yield ivs
        finally:
            for m in reversed(managers):
                m.__exit__(None, None, None)

    @contextmanager
    def if_(self, cond: SSAValue) -> Iterator[None]:
        """``scf.if %cond { ... }`` without results."""
        body = Block()
        parent = self.block
        self.block = body
        try:
            yield
        finally:
            self.block = parent
        body.add_op(scf.YieldOp())
        parent.add_op(scf.IfOp(cond, [], Region(body), Region(Block([scf.YieldOp()]))))

    def select_if(self, cond: SSAValue, then_fn, else_fn, result_type: Attribute) -> SSAValue:
        """``scf.if`` with one result: only the taken branch runs (guards loads)."""
        results = []
        for fn in (then_fn, else_fn):
            body = Block()
            parent = self.block
            self.block = body
            try:
                value = fn()
            finally:
                self.block = parent
            body.add_op(scf.YieldOp(value))
            results.append(body)
        op = scf.IfOp(cond, [result_type], Region(results[0]), Region(results[1]))
        return self.emit(op)

    # -- memory ------------------------------------------------------------------
    def load(self, buf: SSAValue, indices: Sequence[Index]) -> SSAValue:
        return self.emit(memref.LoadOp.get(buf, [self.index(i) for i in indices]))

    def store(self, value: SSAValue, buf: SSAValue, indices: Sequence[Index]) -> None:
        self.emit(memref.StoreOp.get(value, buf, [self.index(i) for i in indices]))

    # -- index arithmetic (folds Python ints) ------------------------------------
    def iadd(self, a: Index, b: Index) -> Index:
        if isinstance(a, int) and isinstance(b, int):
            return a + b
        if isinstance(b, int) and b == 0:
            return a
        if isinstance(a, int) and a == 0:
            return b
        if isinstance(b, int) and b < 0:
            return self.emit(arith.SubiOp(self.index(a), self.index(-b)))
        return self.emit(arith.AddiOp(self.index(a), self.index(b)))

    def isub(self, a: Index, b: Index) -> Index:
        if isinstance(b, int):
            return self.iadd(a, -b)
        if isinstance(a, int) and isinstance(b, int):
            return a - b
        return self.emit(arith.SubiOp(self.index(a), self.index(b)))

    def imul(self, a: Index, b: Index) -> Index:
        if isinstance(a, int) and isinstance(b, int):
            return a * b
        if isinstance(b, int) and b == 1:
            return a
        if isinstance(a, int) and a == 1:
            return b
        if (isinstance(a, int) and a == 0) or (isinstance(b, int) and b == 0):
            return 0
        return self.emit(arith.MuliOp(self.index(a), self.index(b)))

    def idiv(self, a: Index, b: int) -> Index:
        """a / b for a >= 0 (unsigned division of non-negative indices)."""
        if b == 1:
            return a
        if isinstance(a, int):
            return a // b
        return self.emit(arith.DivUIOp(a, self.index(b)))

    def irem(self, a: Index, b: int) -> Index:
        """a % b for a >= 0."""
        if b == 1:
            return 0
        if isinstance(a, int):
            return a % b
        return self.emit(arith.RemUIOp(a, self.index(b)))

    def icmp(self, pred: str, a: Index, b: Index) -> SSAValue:
        """Signed index comparison (indices may be negative before a guard)."""
        return self.emit(arith.CmpiOp(self.index(a), self.index(b), pred))

    def imax(self, a: Index, b: Index) -> Index:
        if isinstance(a, int) and isinstance(b, int):
            return max(a, b)
        return self.emit(arith.MaxSIOp(self.index(a), self.index(b)))

    def imin(self, a: Index, b: Index) -> Index:
        if isinstance(a, int) and isinstance(b, int):
            return min(a, b)
        return self.emit(arith.MinSIOp(self.index(a), self.index(b)))

    def iselect(self, cond: SSAValue, a: Index, b: Index) -> SSAValue:
        return self.emit(arith.SelectOp(cond, self.index(a), self.index(b)))

    def wrap_negative(self, raw: Index, n: int) -> Index:
        """An index read from data: a negative one counts from the end (``raw + n``)."""
        return self.iselect(self.icmp("slt", raw, 0), self.iadd(raw, n), raw)

    def clamp_extent(self, i: Index, n: int) -> Index:
        """``i`` clamped into ``[0, n)`` (no in-range condition emitted)."""
        return self.imin(self.imax(i, 0), n - 1)

    def all_of(self, conds: Sequence[SSAValue]) -> SSAValue | None:
        out = None
        for c in conds:
            out = c if out is None else self.emit(arith.AndIOp(out, c))
        return out

    def in_range(self, i: Index, lo: int, hi: int, known_lo: int, known_hi: int) -> list[SSAValue]:
        """Conditions for ``lo <= i < hi`` given that ``known_lo <= i <= known_hi``
        (only the checks that can fail are emitted)."""
        conds = []
        if known_lo < lo:
            conds.append(self.icmp("sge", i, lo))
        if known_hi >= hi:
            conds.append(self.icmp("slt", i, hi))
        return conds

    def clamp_index(self, i: Index, lo: int, hi: int, known_lo: int, known_hi: int
                    ) -> tuple[Index, SSAValue | None]:
        """(``i`` clamped into ``[lo, hi)``, the condition ``lo <= i < hi`` or None).

        With :meth:`load_or` this replaces an ``scf.if`` guard by a branch-free
        load (the clamped address is always valid), which keeps padded window
        loops vectorizable; checks that cannot fail are not emitted."""
        cond = self.all_of(self.in_range(i, lo, hi, known_lo, known_hi))
        if known_lo < lo:
            i = self.imax(i, lo)
        if known_hi >= hi:
            i = self.imin(i, hi - 1)
        return i, cond

    def window_tap(self, out_ivs: Sequence[Index], tap_ivs: Sequence[Index], *, strides, dilations,
                   pads, in_hw, out_hw, kernel) -> tuple[Index, Index, SSAValue | None]:
        """(clamped input row, clamped input column, the inside-the-input condition or
        None) of tap ``tap_ivs`` (kh, kw) of the 2-D window at output ``out_ivs`` (oh, ow):
        windows with ``strides``, ``dilations`` and begin padding ``pads`` (top, left) over
        an ``in_hw`` input; ``out_hw`` and ``kernel`` bound the positions, so only checks
        that can fail are emitted. With :meth:`load_or`: a padded window, branch-free."""
        (iv_oh, iv_ow), (iv_kh, iv_kw) = out_ivs, tap_ivs
        (sh, sw), (dh, dw), (pt, pl) = strides, dilations, pads
        (h, w), (oh, ow), (kh, kw) = in_hw, out_hw, kernel
        ih = self.iadd(self.iadd(self.imul(iv_oh, sh), self.imul(iv_kh, dh)), -pt)
        iw = self.iadd(self.iadd(self.imul(iv_ow, sw), self.imul(iv_kw, dw)), -pl)
        ih, h_ok = self.clamp_index(ih, 0, h, -pt, (oh - 1) * sh + (kh - 1) * dh - pt)
        iw, w_ok = self.clamp_index(iw, 0, w, -pl, (ow - 1) * sw + (kw - 1) * dw - pl)
        return ih, iw, self.all_of([c for c in (h_ok, w_ok) if c is not None])

    def load_or(self, buf: SSAValue, indices: Sequence[Index], cond: SSAValue | None,
                fill: SSAValue) -> SSAValue:
        """``cond ? buf[indices] : fill`` as load + ``arith.select`` (indices must be valid)."""
        value = self.load(buf, indices)
        return value if cond is None else self.select(cond, value, fill)

    # -- buffers -------------------------------------------------------------------
    def row_major_view(self, source: SSAValue, shape: list[int], hint: str | None = None) -> SSAValue:
        """``source``'s data seen as a row-major memref of ``shape`` (no copy)."""
        view = self.emit(memref.ReinterpretCastOp(source, [], [], [], [0], shape, row_major(shape),
                                                  MemRefType(source.type.element_type, shape)))
        if hint is not None:
            view.name_hint = hint
        return view

    def copy_phase_planes(self, x: SSAValue, xp: SSAValue, lead: Sequence[tuple[str, int]], x_lead,
                          xp_lead, *, h: int, w: int, sh: int, sw: int, pt: int, pl: int,
                          rph: int, cph: int, rows: int, wq: int, zero: SSAValue) -> None:
        """The zero-padded phase-plane copy of the flat conv forms (kernels/conv.py):
        ``xp[*xp_lead, (a * cph + b) * PLANE + r * WQ + q] = padded x[*x_lead, r * sh + a - pt,
        q * sw + b - pl]`` (0 outside ``x``), ``PLANE = rows * WQ``.

        Loops: ``lead``'s (name, extent) pairs, then ``pad_a`` / ``pad_b`` (only with
        more than one row / column phase), ``pad_r``, ``pad_q`` (schedules address them).
        ``x_lead(ivs)`` / ``xp_lead(ivs)``: the leading indices of each buffer, from the
        ``lead`` loops' induction variables."""
        names, uppers = [name for name, _ in lead], [extent for _, extent in lead]
        if rph > 1:
            names, uppers = names + ["pad_a"], uppers + [rph]
        if cph > 1:
            names, uppers = names + ["pad_b"], uppers + [cph]
        plane = rows * wq
        with self.loops(names + ["pad_r", "pad_q"], uppers + [rows, wq]) as ivs:
            lead_ivs, phase_ivs, (iv_r, iv_q) = ivs[:len(lead)], ivs[len(lead):-2], ivs[-2:]
            iv_a = phase_ivs[0] if rph > 1 else 0
            iv_b = phase_ivs[-1] if cph > 1 else 0
            ih, h_ok = self.clamp_index(self.iadd(self.iadd(self.imul(iv_r, sh), iv_a), -pt), 0, h,
                                        -pt, (rows - 1) * sh + rph - 1 - pt)
            iw, w_ok = self.clamp_index(self.iadd(self.iadd(self.imul(iv_q, sw), iv_b), -pl), 0, w,
                                        -pl, (wq - 1) * sw + cph - 1 - pl)
            inside = self.all_of([cond for cond in (h_ok, w_ok) if cond is not None])
            value = self.load_or(x, [*x_lead(lead_ivs), ih, iw], inside, zero)
            phase = self.iadd(self.imul(iv_a, cph), iv_b)
            self.store(value, xp, [*xp_lead(lead_ivs),
                                   self.iadd(self.imul(phase, plane), self.iadd(self.imul(iv_r, wq), iv_q))])

    # -- scalar arithmetic dispatched on the graph element type -------------------
    def add(self, a, b, et):
        return self.emit(arith.AddfOp(a, b) if is_float(et) else arith.AddiOp(a, b))

    def sub(self, a, b, et):
        return self.emit(arith.SubfOp(a, b) if is_float(et) else arith.SubiOp(a, b))

    def mul(self, a, b, et):
        return self.emit(arith.MulfOp(a, b) if is_float(et) else arith.MuliOp(a, b))

    def div(self, a, b, et):
        """Float division, or C integer division (toward zero); a zero integer
        divisor is replaced by 1, as the graph reference does."""
        if is_float(et):
            return self.emit(arith.DivfOp(a, b))
        b = self._nonzero(b, et)
        return self.emit(arith.DivUIOp(a, b) if is_unsigned(et) else arith.DivSIOp(a, b))

    def rem(self, a, b, et):
        """C fmod semantics (sign of the dividend); integer b == 0 gives 0."""
        if is_float(et):
            return self._fmod(a, b, et)
        b = self._nonzero(b, et)
        return self.emit(arith.RemUIOp(a, b) if is_unsigned(et) else arith.RemSIOp(a, b))

    def _fmod(self, a, b, et):
        """fmod without arith.remf (absent from xDSL 0.75): a - trunc(a/b)*b in
        f64, which is exact for f32/f16 operands with |a/b| < 2^29."""
        a64, b64 = self.convert(a, et, f64), self.convert(b, et, f64)
        q = self.emit(arith.DivfOp(a64, b64))
        q = self.trunc(q)
        r = self.emit(arith.SubfOp(a64, self.emit(arith.MulfOp(q, b64))))
        # a zero remainder keeps the sign of a (fmod(-4, 2) = -0): a * 0 has it
        zero = self.const(0.0, f64)
        r = self.select(self.emit(arith.CmpfOp(r, zero, "oeq")), self.emit(arith.MulfOp(a64, zero)), r)
        # |a| < |b| gives a itself: covers b = +-inf, where q*b would be 0*inf = NaN
        a_smaller = self.emit(arith.CmpfOp(self.emit(math.AbsFOp(a64)), self.emit(math.AbsFOp(b64)), "olt"))
        r = self.select(a_smaller, a64, r)
        return self.convert(r, f64, et)

    def trunc(self, x):
        """Round toward zero with floor/ceil (math.trunc is not in the contract)."""
        negative = self.emit(arith.CmpfOp(x, self.const(0.0, x.type), "olt"))
        return self.select(negative, self.emit(math.CeilOp(x)), self.emit(math.FloorOp(x)))

    def _nonzero(self, b, et):
        zero = self.const(0, et)
        is_zero = self.emit(arith.CmpiOp(b, zero, "eq"))
        return self.emit(arith.SelectOp(is_zero, self.const(1, et), b))

    def max(self, a, b, et):
        if is_float(et):
            return self.emit(arith.MaximumfOp(a, b))
        return self.emit(arith.MaxUIOp(a, b) if is_unsigned(et) or is_bool(et) else arith.MaxSIOp(a, b))

    def min(self, a, b, et):
        if is_float(et):
            return self.emit(arith.MinimumfOp(a, b))
        return self.emit(arith.MinUIOp(a, b) if is_unsigned(et) or is_bool(et) else arith.MinSIOp(a, b))

    def neg(self, a, et):
        if is_float(et):
            return self.emit(arith.NegfOp(a))
        return self.emit(arith.SubiOp(self.const(0, et), a))

    def select(self, cond, a, b):
        return self.emit(arith.SelectOp(cond, a, b))

    _FLOAT_PRED = {"eq": "oeq", "ne": "une", "lt": "olt", "le": "ole", "gt": "ogt", "ge": "oge"}

    def cmp(self, pred: str, a, b, et) -> SSAValue:
        """pred in eq ne lt le gt ge; floats compare ordered (NaN is unequal to all)."""
        if is_float(et):
            return self.emit(arith.CmpfOp(a, b, self._FLOAT_PRED[pred]))
        if pred in ("eq", "ne"):
            return self.emit(arith.CmpiOp(a, b, pred))
        prefix = "u" if is_unsigned(et) or is_bool(et) else "s"
        return self.emit(arith.CmpiOp(a, b, prefix + pred[0] + ("t" if pred[1] == "t" else "e")))

    def is_nan(self, a) -> SSAValue:
        return self.emit(arith.CmpfOp(a, a, "uno"))

    def convert(self, value: SSAValue, src: Attribute, dst: Attribute) -> SSAValue:
        """Element conversion with numpy ``astype`` semantics (float -> int
        truncates toward zero, anything -> bool is ``!= 0``)."""
        s, d = storage_type(src), storage_type(dst)
        if is_bool(dst) and not is_bool(src):
            zero = self.const(0, src)
            return self.cmp("ne", value, zero, src)
        if is_float(src) and is_float(dst):
            if s == d:
                return value
            if s.bitwidth < d.bitwidth:
                return self.emit(arith.ExtFOp(value, d))
            return self.emit(arith.TruncFOp(value, d))
        if is_float(src):
            return self.emit(arith.FPToUIOp(value, d) if is_unsigned(dst) else arith.FPToSIOp(value, d))
        if is_float(dst):
            unsigned = is_unsigned(src) or is_bool(src)
            return self.emit(arith.UIToFPOp(value, d) if unsigned else arith.SIToFPOp(value, d))
        ws, wd = s.width.data, d.width.data
        if ws == wd:
            return value
        if ws > wd:
            return self.emit(arith.TruncIOp(value, d))
        unsigned = is_unsigned(src) or is_bool(src)
        return self.emit(arith.ExtUIOp(value, d) if unsigned else arith.ExtSIOp(value, d))

    def to_index(self, value: SSAValue, et: Attribute) -> SSAValue:
        """Integer element -> index (sign- or zero-extended via i64)."""
        st = storage_type(et)
        if st.width.data < 64:
            wide = IntegerType(64)
            value = self.emit(
                arith.ExtUIOp(value, wide) if is_unsigned(et) or is_bool(et) else arith.ExtSIOp(value, wide)
            )
        return self.emit(arith.IndexCastOp(value, INDEX))

    def index_to(self, value: Index, et: Attribute) -> SSAValue:
        """index -> integer (i64 result types of argmax) or float element."""
        v = self.index(value)
        i64t = IntegerType(64)
        as_i64 = self.emit(arith.IndexCastOp(v, i64t))
        if is_float(et):
            return self.emit(arith.SIToFPOp(as_i64, storage_type(et)))
        return self.convert(as_i64, i64t, et)

    def f64(self, value: float) -> SSAValue:
        return self.const(value, f64)
