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

from dlc.lowering.schedule import annotate, cache, fission, loops, producer
from dlc.lowering.schedule.core import Schedule, ScheduleError, find_kernel
from dlc.lowering.schedule.defaults import apply_default_schedules
from dlc.lowering.schedule.producer import inline

Schedule.split = loops.split
Schedule.tile = loops.tile
Schedule.reorder = loops.reorder
Schedule.fuse = loops.fuse
Schedule.fuse_siblings = loops.fuse_siblings
Schedule.distribute = fission.distribute
Schedule.split_range = fission.split_range
Schedule.parallel = annotate.parallel
Schedule.vectorize = annotate.vectorize
Schedule.unroll = annotate.unroll
Schedule.cache_read = cache.cache_read
Schedule.cache_write = cache.cache_write
Schedule.compute_at = producer.compute_at
Schedule.of = staticmethod(lambda module, name: Schedule(find_kernel(module, name)))

__all__ = ["Schedule", "ScheduleError", "apply_default_schedules", "find_kernel", "inline"]
