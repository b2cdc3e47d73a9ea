"""When compiled models fork threads, and how idle libgomp threads wait.

* default schedules parallelize a nest only when its work (op executions,
  ``nest_work``) pays for a fork/join, not on its iteration count alone;
* the runtime defaults libgomp to a short spin (``GOMP_SPINCOUNT=1000``) before
  libgomp loads, unless the user chose a policy or spin count (runtime/native.py says why).
"""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest

import dlc
from dlc.dialects import graph
from dlc.dialects.tloop import ForOp
from dlc.lowering.lower_to_loops import lower_module
from dlc.lowering.schedule import apply_default_schedules
from dlc.lowering.schedule.defaults_elementwise import OPS_PER_ITERATION, nest_work
from dlc.runtime import native
from test_lower_to_loops import T, make_module


def _scheduled(in_types, body):
    module = make_module(in_types, body)
    lower_module(module)
    apply_default_schedules(module)
    return module


def _parallel_loops(module) -> list[ForOp]:
    return [op for op in module.walk() if isinstance(op, ForOp) and op.loop_kind == "parallel"]


def test_nest_work_counts_op_executions():
    module = make_module([T(3, 5, 7)], lambda x: graph.ReluOp.make(x))
    lower_module(module)
    i = next(op for op in module.walk() if isinstance(op, ForOp))
    j = next(op for op in i.body.block.ops if isinstance(op, ForOp))
    k = next(op for op in j.body.block.ops if isinstance(op, ForOp))

    def own(loop):  # ops directly in the body, not counting the nested loop
        return sum(1 for op in loop.body.block.ops if not isinstance(op, ForOp))

    # an op in k's body runs 105 times, one in j's body 15 times, one in i's 3 times
    assert nest_work(i) == 105 * own(k) + 15 * own(j) + 3 * own(i)


def test_copy_sized_elementwise_nest_stays_serial():
    # ShuffleNet's 1x136x28x28 ReLU: 106 624 iterations (above the old 16 384
    # iteration threshold) but ~30 us of work, less than a fork/join
    module = _scheduled([T(1, 136, 28, 28)], lambda x: graph.ReluOp.make(x))
    assert _parallel_loops(module) == []


def test_heavy_nests_still_parallel():
    big = _scheduled([T(1, 64, 128, 128)], lambda x: graph.ReluOp.make(x))  # 1M elements
    assert len(_parallel_loops(big)) == 1
    # few iterations but a big body per iteration: a 7x7 pool window
    pool = _scheduled([T(1, 32, 64, 64)], lambda x: graph.MaxPool2DOp.make(x, kernel=[7, 7], padding=[3, 3, 3, 3]))
    assert len(_parallel_loops(pool)) == 1


def test_threshold_scales_with_min_parallel_iterations():
    module = make_module([T(1, 136, 28, 28)], lambda x: graph.ReluOp.make(x))
    lower_module(module)
    top = next(op for op in module.walk() if isinstance(op, ForOp))
    apply_default_schedules(module, min_parallel_iterations=nest_work(top) // OPS_PER_ITERATION)
    assert len(_parallel_loops(module)) == 1


def test_results_identical_at_one_and_two_threads():
    module = make_module([T(1, 64, 67, 131)], lambda x: graph.MaxPool2DOp.make(
        x, kernel=[3, 3], strides=[2, 2], padding=[1, 1, 1, 1]))
    compiled = dlc.compile(module)
    assert _parallel_loops(_scheduled([T(1, 64, 67, 131)], lambda x: graph.MaxPool2DOp.make(
        x, kernel=[3, 3], strides=[2, 2], padding=[1, 1, 1, 1])))
    x = np.random.default_rng(0).standard_normal((1, 64, 67, 131)).astype(np.float32)
    compiled.set_num_threads(1)
    one = compiled(x)[0]
    compiled.set_num_threads(2)
    np.testing.assert_array_equal(one, compiled(x)[0])


# -- libgomp wait policy --------------------------------------------------------

PROBE = """
import os, dlc
dlc.compile('func.func @main(%x: tensor<3xf32>) -> tensor<3xf32> {\\n'
            '  %y = graph.relu %x : (tensor<3xf32>) -> tensor<3xf32>\\n'
            '  func.return %y : tensor<3xf32>\\n}')
print(os.environ.get("OMP_WAIT_POLICY"), os.environ.get("GOMP_SPINCOUNT"),
      "libgomp" in open("/proc/self/maps").read())
"""


def _probe(**env_changes) -> str:
    env = {k: v for k, v in os.environ.items() if k not in ("OMP_WAIT_POLICY", "GOMP_SPINCOUNT")}
    env.update(env_changes)
    return subprocess.run([sys.executable, "-c", PROBE], env=env, capture_output=True,
                          text=True, check=True).stdout.strip()


def test_jit_defaults_to_short_spin_before_loading_libgomp():
    assert _probe() == "None 1000 True"


@pytest.mark.parametrize("env, expected", [
    ({"OMP_WAIT_POLICY": "PASSIVE"}, "PASSIVE None True"),  # the user's choice stays
    ({"GOMP_SPINCOUNT": "300000"}, "None 300000 True"),  # a spin count is a choice too
])
def test_user_wait_settings_are_kept(env, expected):
    assert _probe(**env) == expected


def test_no_policy_change_once_libgomp_is_loaded(monkeypatch):
    monkeypatch.delenv("OMP_WAIT_POLICY", raising=False)
    monkeypatch.delenv("GOMP_SPINCOUNT", raising=False)
    monkeypatch.setattr(native, "_libgomp_loaded", lambda: True)
    native.prefer_short_omp_spin()
    assert "GOMP_SPINCOUNT" not in os.environ
    monkeypatch.setattr(native, "_libgomp_loaded", lambda: False)
    native.prefer_short_omp_spin()
    assert os.environ["GOMP_SPINCOUNT"] == native.DEFAULT_GOMP_SPINCOUNT
    assert "OMP_WAIT_POLICY" not in os.environ
