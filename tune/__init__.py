"""Auto-tuning (issue 19): tasks (the unique tunable kernels of a model, tasks.py), and,
built on them, the search, cost model, measurement and the ``dlc tune`` CLI.

The schedule spaces and tuning records the tuner explores and writes live in the
lowering layer (``dlc.lowering.schedule.space``, ``dlc.lowering.schedule.records``):
``dlc.compile(..., tuning_records=...)`` applies a log without importing this package.
"""

from dlc.tune.tasks import Task, TaskError, extract_tasks

__all__ = ["Task", "TaskError", "extract_tasks"]
