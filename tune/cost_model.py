"""Cost models that rank candidate configs before they are measured.

``XGBModel``: XGBoost regression of the *normalized throughput* (each task's throughputs
divided by that task's best, so one model serves all tasks, as Ansor does); a failed
measurement counts as throughput 0. Refitted from every measurement so far (``update``);
before the first fit it has nothing to rank with and says so (``fitted`` is False: the
search then samples at random, on purpose, for that first round).
``RandomModel``: uniform scores; only when the user asks for it (``--cost-model random``).

xgboost is an optional extra (``pip install dlc[tune]``); asking for the XGBoost model
without it is a :class:`CostModelError` naming the extra, never a silent switch to random.
"""

from __future__ import annotations

import numpy as np

from dlc.diagnostics import DiagnosticError

COST_MODELS = ("xgb", "random")


class CostModelError(DiagnosticError):
    """An unknown cost model, or one whose package is not installed."""


class RandomModel:
    name = "random"

    def __init__(self, seed: int = 0):
        self._rng = np.random.default_rng(seed)
        self.fitted = True  # scores need no data

    def update(self, features: np.ndarray, throughputs: np.ndarray, groups: np.ndarray) -> None:
        pass

    def predict(self, features: np.ndarray) -> np.ndarray:
        return self._rng.random(len(features))


def normalized(throughputs: np.ndarray, groups: np.ndarray) -> np.ndarray:
    """Each group's (task's) throughputs over its best (0 when it has no success)."""
    y = np.zeros(len(throughputs), dtype=np.float64)
    for g in np.unique(groups):
        mask = groups == g
        best = throughputs[mask].max(initial=0.0)
        if best > 0:
            y[mask] = throughputs[mask] / best
    return y


class XGBModel:
    name = "xgb"
    MIN_SAMPLES = 4  # below this a fit ranks noise

    def __init__(self, seed: int = 0, rounds: int = 80):
        try:
            import xgboost
        except ImportError:
            raise CostModelError("the 'xgb' cost model needs xgboost, which is not installed: "
                                 "pip install 'dlc[tune]' (or choose --cost-model random)") from None
        self._xgb = xgboost
        self._seed = seed
        self._rounds = rounds
        self._booster = None
        self.fitted = False

    def update(self, features: np.ndarray, throughputs: np.ndarray, groups: np.ndarray) -> None:
        """Refit from all measurements so far (features rows, throughput in FLOP/s or 0 for a
        failure, the task index of each row)."""
        if len(features) < self.MIN_SAMPLES:
            return
        y = normalized(np.asarray(throughputs, dtype=np.float64), np.asarray(groups))
        dtrain = self._xgb.DMatrix(np.asarray(features, dtype=np.float32), label=y)
        params = {"objective": "reg:squarederror", "max_depth": 6, "eta": 0.2, "subsample": 1.0,
                  "min_child_weight": 1, "seed": self._seed, "nthread": 1, "verbosity": 0}
        self._booster = self._xgb.train(params, dtrain, num_boost_round=self._rounds)
        self.fitted = True

    def predict(self, features: np.ndarray) -> np.ndarray:
        if self._booster is None:
            raise CostModelError("the xgb cost model has not been fitted yet")
        return self._booster.predict(self._xgb.DMatrix(np.asarray(features, dtype=np.float32)))


def make_cost_model(name: str, seed: int = 0):
    """``"xgb"`` (the default) or ``"random"``; anything else is a CostModelError."""
    if name == "xgb":
        return XGBModel(seed)
    if name == "random":
        return RandomModel(seed)
    raise CostModelError(f"unknown cost model '{name}' (known: {', '.join(COST_MODELS)})")
