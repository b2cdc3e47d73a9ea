"""Schedule primitives on the tensor-loop dialect (TVM te/tir-style), as IR rewrites.

```python
from dlc.lowering.schedule import Schedule
s = Schedule.of(module, "main_0_matmul")
io, ii = s.split("i", 4)
s.reorder("j", "k")
s.parallel(io)
```
Loops are addressed by kernel + induction-variable name. Every primitive
checks its preconditions and raises `ScheduleError` (naming kernel and loop)
instead of producing wrong code; the dependence rule is documented in
`dlc.lowering.schedule.affine`.
"""

from dlc.lowering.schedule.core import Schedule, ScheduleError, find_kernel
from dlc.lowering.schedule.defaults import apply_default_schedules
from dlc.lowering.schedule.producer import inline

__all__ = ["Schedule", "ScheduleError", "apply_default_schedules", "find_kernel", "inline"]
