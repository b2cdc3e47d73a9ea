"""Tensor-expression language: programs compile through the tloop dialect and
LLVM, get scheduled with the primitives, and match numpy on odd shapes."""

from __future__ import annotations

import numpy as np
import pytest

import dlc.te as te
from dlc.dialects.tloop import ForOp
from dlc.lowering.schedule import Schedule, ScheduleError

RNG = np.random.default_rng(7)


def rand(*shape, dtype=np.float32):
    return RNG.standard_normal(shape).astype(dtype)


def loops_of(module):
    return {op.induction_var.name_hint: op for op in module.walk() if isinstance(op, ForOp)}


def check(f, want, *args, rtol=2e-5, atol=2e-5):
    got = f(*args)
    got = got if isinstance(got, tuple) else (got,)
    want = want if isinstance(want, (tuple, list)) else (want,)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert g.shape == np.shape(w) and g.dtype == np.asarray(w).dtype
        np.testing.assert_allclose(g, w, rtol=rtol, atol=atol)


# --------------------------------------------------------------------------- programs

MATMUL = """
# matmul
input A: f32[{m}, {k}]
input B: f32[{k}, {n}]
C[i, j] = sum(k: A[i, k] * B[k, j])
"""

CONV1D = """
input X: f32[{n}]
input W: f32[{r}]
Y[i] = sum(r: X[i + r] * W[r])
"""

SOFTMAX = """
input X: f32[{rows}, {cols}]
M[i] = max(j: X[i, j])
E[i, j] = exp(X[i, j] - M[i])
S[i] = sum(j: E[i, j])
Y[i, j] = E[i, j] / S[i]
"""

BIAS_GELU = """
input X: f32[{m}, {n}]
input b: f32[{n}]
T[i, j] = X[i, j] + b[j]
Y[i, j] = 0.5 * T[i, j] * (1.0 + tanh(0.7978845608 * (T[i, j] + 0.044715 * T[i, j] * T[i, j] * T[i, j])))
"""

STENCIL = """
# 5-point stencil with zero padding (select guards the out-of-range neighbours)
input X: f64[{m}, {n}]
Y[i, j] = (4.0 * X[i, j] - select(i > 0, X[i - 1, j], 0.0) - select(i < {m} - 1, X[i + 1, j], 0.0)
           - select(j > 0, X[i, j - 1], 0.0) - select(j < {n} - 1, X[i, j + 1], 0.0))
"""


def np_softmax(x):
    e = np.exp(x - x.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def np_gelu_tanh(t):
    return 0.5 * t * (1 + np.tanh(0.7978845608 * (t + 0.044715 * t ** 3)))


def np_stencil(x):
    p = np.pad(x, 1)
    return 4 * x - p[:-2, 1:-1] - p[2:, 1:-1] - p[1:-1, :-2] - p[1:-1, 2:]


@pytest.mark.parametrize("m,k,n", [(17, 13, 5), (1, 7, 1), (64, 32, 48)])
def test_matmul(m, k, n):
    a, b = rand(m, k), rand(k, n)
    f = te.compile(MATMUL.format(m=m, k=k, n=n))
    check(f, a @ b, a, b, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("n,r", [(41, 5), (7, 7), (3, 1)])
def test_conv1d_valid_range_is_inferred(n, r):
    x, w = rand(n), rand(r)
    src = CONV1D.format(n=n, r=r)
    assert te.program(src).outputs[0].shape == (n - r + 1,)
    check(te.compile(src), np.correlate(x, w, mode="valid"), x, w)


def test_conv1d_padded_and_strided():
    src = """
    input X: f32[41]
    input W: f32[5]
    output Y: f32[21]
    Y[i] = sum(r: select(i*2 + r - 2 >= 0 and i*2 + r - 2 < 41, X[i*2 + r - 2], 0.0) * W[r])
    """
    x, w = rand(41), rand(5)
    want = np.correlate(np.pad(x, 2), w, mode="valid")[::2]
    check(te.compile(src), want, x, w)


@pytest.mark.parametrize("rows,cols", [(7, 13), (1, 1), (3, 31)])
def test_softmax_multiple_statements(rows, cols):
    x = rand(rows, cols) * 5
    prog = te.program(SOFTMAX.format(rows=rows, cols=cols))
    assert [t.name for t in prog.intermediates] == ["M", "E", "S"]
    assert [t.name for t in prog.outputs] == ["Y"]
    check(te.compile(SOFTMAX.format(rows=rows, cols=cols)), np_softmax(x), x, rtol=1e-5, atol=1e-6)


def test_user_defined_bias_gelu():
    x, b = rand(3, 11), rand(11)
    check(te.compile(BIAS_GELU.format(m=3, n=11)), np_gelu_tanh(x + b), x, b, rtol=1e-5, atol=1e-6)


def test_user_defined_stencil_f64():
    x = rand(9, 7, dtype=np.float64)
    check(te.compile(STENCIL.format(m=9, n=7)), np_stencil(x), x, rtol=1e-12, atol=1e-12)


def test_nested_reductions_int_and_index_values():
    src = """
    input X: f32[5, 3]
    Y[i] = sqrt(sum(j: X[i, j] * X[i, j])) + max(j in 1..3: abs(X[i, j])) - i
    """
    x = rand(5, 3)
    want = np.sqrt((x * x).sum(1)) + np.abs(x[:, 1:]).max(1) - np.arange(5)
    check(te.compile(src), want.astype(np.float32), x)
    isrc = """
    input X: i32[5, 3]
    Y[i] = sum(j: X[i, j] * 3 / 2) + max(X[i, 0], -7) + prod(j: X[i, j])
    """
    xi = RNG.integers(-9, 10, (5, 3)).astype(np.int32)
    want = np.trunc(xi * 3 / 2).astype(np.int32).sum(1) + np.maximum(xi[:, 0], -7) + xi.prod(1)
    check(te.compile(isrc), want.astype(np.int32), xi)


def test_multiple_outputs_scalar_input_and_output():
    src = """
    input X: f32[5]
    input s: f32[]
    output Y: f32[5]
    output T: f32[]
    T[] = sum(i: X[i] * s)
    Y[i] = X[i] / T
    """
    x, s = np.arange(1, 6, dtype=np.float32), np.array(2, np.float32)
    check(te.compile(src), (x / 30, np.array(30, np.float32)), x, s)


def test_reference_interpreter_matches_numpy():
    x = rand(7, 13)
    (y,) = te.reference(SOFTMAX.format(rows=7, cols=13), x)
    np.testing.assert_allclose(y, np_softmax(x), rtol=1e-5, atol=1e-7)


# --------------------------------------------------------------------------- lowering + schedules


def test_lower_names_loops_after_the_indices():
    module = te.lower(MATMUL.format(m=4, k=3, n=5))
    names = loops_of(module)
    assert {"i", "j", "k", "i_init", "j_init"} <= set(names)
    kernel = next(op for op in module.ops if op.sym_name.data == te.KERNEL)
    assert "tloop.kernel" in kernel.attributes
    # a name an earlier statement took gets the tensor as suffix (names are unique in a kernel)
    names = loops_of(te.lower(SOFTMAX.format(rows=3, cols=4)))
    assert set(names) == {"i_init", "i", "j", "i_E", "j_E", "i_init_S", "i_S", "j_S", "i_Y", "j_Y"}


def test_schedule_matmul_split_reorder_vectorize_parallel():
    a, b = rand(67, 31), rand(31, 53)

    def schedule(s: Schedule):
        outer, _ = s.split("i", 8)
        s.reorder("k", "j")
        s.vectorize("j")
        s.parallel(outer)

    f = te.compile(MATMUL.format(m=67, k=31, n=53), schedule=schedule)
    kinds = {name: loop.loop_kind for name, loop in loops_of(f.module).items()}
    assert kinds["i_outer"] == "parallel" and kinds["j"] == "vectorized"
    check(f, a @ b, a, b, rtol=1e-4, atol=1e-4)


def test_schedule_a_lowered_module_then_compile_it():
    module = te.lower(CONV1D.format(n=101, r=7))
    s = Schedule.of(module, te.KERNEL)
    s.split("i", 16)
    s.parallel("i_outer")
    s.unroll("r")
    f = te.compile(module)  # a module compiles as it is
    assert loops_of(f.module)["i_outer"].loop_kind == "parallel"
    x, w = rand(101), rand(7)
    check(f, np.correlate(x, w, mode="valid"), x, w)


def test_schedule_softmax_rows_parallel_and_inner_vectorized():
    x = rand(37, 29)

    def schedule(s):
        for name in ("i_init", "i", "i_E", "i_init_S", "i_S", "i_Y"):
            s.parallel(name)
        s.vectorize("j_E")
        s.vectorize("j_Y")

    f = te.compile(SOFTMAX.format(rows=37, cols=29), schedule=schedule)
    check(f, np_softmax(x), x, rtol=1e-5, atol=1e-6)


def test_schedule_stencil_tile():
    x = rand(23, 19, dtype=np.float64)
    f = te.compile(STENCIL.format(m=23, n=19), schedule=lambda s: (s.tile("i", "j", 4, 8), s.parallel("i_outer")))
    check(f, np_stencil(x), x, rtol=1e-12, atol=1e-12)


def test_schedule_errors_are_reported():
    with pytest.raises(ScheduleError, match="only an outermost loop can be parallel"):
        te.compile(MATMUL.format(m=4, k=3, n=5), schedule=lambda s: s.parallel("k"))
    with pytest.raises(ScheduleError, match="cannot be parallel: its iterations update the same elements"):
        te.compile("input X: f32[9]\nT[] = sum(i: X[i])", schedule=lambda s: s.parallel("i"))
    with pytest.raises(ScheduleError, match="no loop named 'q'"):
        te.compile(MATMUL.format(m=4, k=3, n=5), schedule=lambda s: s.split("q", 2))
    with pytest.raises(ValueError, match="schedule must be"):
        te.compile(MATMUL.format(m=4, k=3, n=5), schedule="fast")


def test_default_schedule_and_none():
    src = MATMUL.format(m=4, k=3, n=5)
    plain = te.compile(src, schedule="none")
    assert all(loop.loop_kind == "serial" for loop in loops_of(plain.module).values())
    a, b = rand(4, 3), rand(3, 5)
    check(plain, a @ b, a, b, rtol=1e-5, atol=1e-5)
    check(te.compile(src, schedule="default"), a @ b, a, b, rtol=1e-5, atol=1e-5)


def test_reduction_inside_reduction_and_index_arithmetic_values():
    src = """
    input X: f32[4, 5]
    input W: f32[3]
    output Y: f32[4]
    output Z: f32[4, 5]
    Y[i] = sum(k: max(j: X[i, j] * W[k]) + k)
    Z[i, j] = X[max(i - 1, 0), j] + min(i, j) - abs(i - j) + select(i > j, 1, 2)
    """
    x, w = rand(4, 5), rand(3)
    want_y = sum((x * w[k]).max(1) + k for k in range(3))
    ii, jj = np.meshgrid(np.arange(4), np.arange(5), indexing="ij")
    want_z = x[np.maximum(ii - 1, 0), jj] + np.minimum(ii, jj) - np.abs(ii - jj) + np.where(ii > jj, 1, 2)
    check(te.compile(src), (want_y.astype(np.float32), want_z.astype(np.float32)), x, w)


def test_compile_a_te_file_path(tmp_path):
    path = tmp_path / "mm.te"
    path.write_text(MATMUL.format(m=3, k=2, n=5))
    a, b = rand(3, 2), rand(2, 5)
    check(te.compile(str(path)), a @ b, a, b, rtol=1e-5, atol=1e-5)
