"""Random TE programs: the compiled kernel (tloop -> LLVM) agrees with the
numpy interpreter, with and without the default schedules."""

from __future__ import annotations

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import dlc.te as te

# Leaves and operators of the generated right-hand sides, over X[m, n], v[n].
LEAVES = ["X[i, j]", "v[j]", "X[i, {n}-1-j]", "1.5", "i", "j", "2"]
UNARY = ["-({})", "tanh({})", "abs({})"]
BINARY = ["({} + {})", "({} - {})", "({} * {})", "max({}, {})", "min({}, {})", "select({} < {}, X[i, j], 0.5)"]


@st.composite
def expressions(draw, depth=3):
    if depth == 0 or draw(st.integers(0, 3)) == 0:
        return draw(st.sampled_from(LEAVES))
    kind = draw(st.integers(0, 2))
    if kind == 0:
        return draw(st.sampled_from(UNARY)).format(draw(expressions(depth=depth - 1)))
    if kind == 1:
        return draw(st.sampled_from(BINARY)).format(draw(expressions(depth=depth - 1)),
                                                    draw(expressions(depth=depth - 1)))
    reducer = draw(st.sampled_from(["sum", "max", "min"]))
    axis = f"k{depth}"  # nested reductions need distinct axis names
    body = draw(expressions(depth=depth - 1)).replace("X[i, j]", f"X[i, {axis}]")
    return f"{reducer}({axis}: {body} * X[i, {axis}])"


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(1, 6), st.integers(1, 9), expressions(), st.booleans())
def test_random_programs_match_the_interpreter(m, n, rhs, default_schedule):
    # `X[i, j] * 0.5 +` gives i and j their ranges whatever rhs uses
    src = f"input X: f32[{m}, {n}]\ninput v: f32[{n}]\nY[i, j] = X[i, j] * 0.5 + {rhs}\n"
    src = src.replace("{n}", str(n))
    rng = np.random.default_rng(m * 31 + n)
    x = rng.uniform(-2, 2, (m, n)).astype(np.float32)
    v = rng.uniform(-2, 2, n).astype(np.float32)
    (want,) = te.reference(src, x, v)
    got = te.compile(src, schedule="default" if default_schedule else "none")(x, v)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)
