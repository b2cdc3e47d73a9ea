"""Auto-tuning (issue 19): tasks (the unique tunable kernels of a model, tasks.py), and,
built on them, the search, cost model, measurement and the ``dlc tune`` CLI.

The schedule spaces and tuning records the tuner explores and writes live in the
lowering layer (``dlc.lowering.schedule.space``, ``dlc.lowering.schedule.records``):
``dlc.compile(..., tuning_records=...)`` applies a log without importing this package.
"""

from dlc.tune.tasks import Task, TaskError, extract_tasks

__all__ = ["Task", "TaskError", "extract_tasks"]


# `dlc.tune(source, ...)` is the tuner (tuner.py) while `dlc.tune` stays this package: the
# module itself is callable.
import sys as _sys
import types as _types


class _TunePackage(_types.ModuleType):
    def __call__(self, *args, **kwargs):
        from dlc.tune.tuner import tune

        return tune(*args, **kwargs)


_sys.modules[__name__].__class__ = _TunePackage
