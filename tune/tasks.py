"""Tuning tasks: the unique tunable kernels of a model, each a standalone module.

``extract_tasks(source, target)`` runs the CPU pipeline up to the loop IR (graph passes,
``driver.lower_to_loops_pass``: the kernels ``dlc.compile`` schedules for the target), keeps the
kernels whose form has a schedule space (lowering/schedule/space.py), and groups them by
workload key: one :class:`Task` per key, ``count`` = how often the model calls such a
kernel, ``flops`` = the float operations of one call (each float arith op of the kernel
times the iterations around it: 2 per multiply-add).

A task's ``module_text`` is a loop-level module holding just that kernel (unscheduled)
and a host entry ``@main`` whose arguments are the kernel's buffers (its last one is the
output), so a build times that kernel alone on random inputs of the .so's input specs.
:meth:`Task.build` schedules it with a config and exports it with the minimum pipeline
(schedule, expand-math, plan-workspace, lower-to-llvm, LLVM, link: no JIT).
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from xdsl.dialects import arith, func
from xdsl.dialects.builtin import IntegerAttr, IntegerType, ModuleOp, UnitAttr

from dlc.diagnostics import DiagnosticError
from dlc.dialects.tloop import KERNEL_ATTR, ForOp
from dlc.lowering.schedule.space import Space, space_of, workload_key
from dlc.target import Target, TargetError, as_target

# float ops counted as one floating-point operation each (flops of a kernel call)
_FLOAT_OPS = (arith.AddfOp, arith.SubfOp, arith.MulfOp, arith.DivfOp, arith.MaximumfOp, arith.MinimumfOp,
              arith.MaxnumfOp, arith.MinnumfOp)


class TaskError(DiagnosticError):
    """A task that cannot be extracted or built (one line)."""


@dataclass
class Task:
    """One tunable kernel of a model: its workload ``key``, ``form``, ``target``, schedule
    ``space``, a standalone ``module_text``, how many calls of it the model makes
    (``count``) and the floating-point operations of one call (``flops``)."""

    key: str
    form: str
    target: Target
    space: Space
    module_text: str
    count: int
    flops: float

    def __reduce__(self):
        # picklable for runner processes and Ray: the space (its constraint is a closure) is
        # rebuilt from the module text on the other side
        return (_restore_task, (self.key, self.form, str(self.target), self.module_text, self.count, self.flops))

    # -- building ------------------------------------------------------------

    def _module(self) -> ModuleOp:
        from dlc.driver import load_module

        return load_module(self.module_text)

    def _scheduled_module(self, config: dict | None) -> ModuleOp:
        """The task's module, its kernel scheduled with `config` (None: the default)."""
        from dlc.lowering.schedule.defaults import Tuning, apply_default_schedules

        module = self._module()
        tuning = Tuning({} if config is None else {self.key: dict(config)}, "the task")
        apply_default_schedules(module, self.target, tuning=tuning)  # ScheduleConfigError: a bad config
        if config is not None and tuning.tuned != 1:
            raise TaskError(f"task '{self.key}': its kernel's workload key changed "
                            "(the module text was not built by extract_tasks for this dlc)")
        return module

    def scheduled_kernel(self, config: dict | None = None) -> func.FuncOp:
        """The kernel's loop IR after its schedule with `config` (and the generic
        parallel / vector marks), as ``dlc.compile`` would produce it."""
        module = self._scheduled_module(config)
        return next(op for op in module.ops if isinstance(op, func.FuncOp) and KERNEL_ATTR in op.attributes)

    def build(self, config: dict | None, out_path: str) -> str:
        """Export the task scheduled with `config` as a shared library at `out_path`
        (``dlc.runtime.load`` runs it; its entry ``main`` takes the kernel's inputs and
        output buffer). A config outside the space is a ScheduleConfigError."""
        from dlc.backends.llvm.export import ExportError, export_shared_library
        from dlc.backends.llvm.translate import TranslationError, translate
        from dlc.driver import CompileError, lower_to_llvm_dialect, metadata_for

        module = self._scheduled_module(config)
        meta = metadata_for(module, "main", None, self.target)
        lower_to_llvm_dialect(module, target=self.target)
        try:
            translation = translate(module, meta, triple=self.target.triple,
                                    width_hints=not self.target.scalable_vectors)
        except (TranslationError, NotImplementedError) as err:
            raise CompileError(f"llvm translation: {str(err).splitlines()[0]}") from None
        if translation.weight_symbols:
            raise TaskError(f"task '{self.key}': its module reads weights (a task's buffers are all inputs)")
        try:
            export_shared_library(str(translation.module), {}, out_path, target=self.target)
        except ExportError as err:
            raise CompileError(str(err)) from None
        return out_path


def _restore_task(key: str, form: str, target: str, module_text: str, count: int, flops: float) -> Task:
    from dlc.driver import load_module

    target_ = Target.from_string(target)
    module = load_module(module_text)
    kernel = next(op for op in module.ops if isinstance(op, func.FuncOp) and KERNEL_ATTR in op.attributes)
    space = space_of(kernel, target_)
    if space is None or workload_key(kernel, target_) != key:
        raise TaskError(f"task '{key}': its module no longer has this workload key (another dlc version?)")
    return Task(key, form, target_, space, module_text, count, flops)


def extract_tasks(source, target: Target | str = "llvm", input_shapes=None, layout: str | None = None) -> list[Task]:
    """The tunable kernels of `source` (what ``dlc.compile`` takes: an ONNX path or
    ModelProto, graph IR text or module), one Task per workload key, in the order of
    their first call; ``input_shapes`` fixes an ONNX model's dynamic input dims."""
    from dlc.driver import CompileError, _level, graph_passes, load_module, lower_to_loops_pass, run_pass

    try:
        target = as_target(target)
    except TargetError as err:
        raise TaskError(str(err)) from None
    if target.kind != "llvm" or target.bare_metal:
        raise TaskError(f"tuning tasks are for hosted llvm targets, not '{target}'")
    if input_shapes:
        if not (isinstance(source, (str, os.PathLike)) and os.fspath(source).endswith(".onnx")
                or type(source).__name__ == "ModelProto"):
            raise TaskError("input_shapes is for ONNX models (a path ending in .onnx or a ModelProto)")
        from dlc.frontends.onnx import import_model

        module = import_model(source, input_shapes=input_shapes)
    else:
        module = load_module(source)
    if _level(module) == "graph":
        try:
            for name in graph_passes(layout, target):
                run_pass(name, module)
            run_pass(lower_to_loops_pass(target), module)
        except DiagnosticError as err:
            raise CompileError(err.message) from None
    kernels = {op.sym_name.data: op for op in module.ops
               if isinstance(op, func.FuncOp) and KERNEL_ATTR in op.attributes}
    calls: dict[str, int] = {}
    for op in module.walk():
        if isinstance(op, func.CallOp) and op.callee.root_reference.data in kernels:
            name = op.callee.root_reference.data
            calls[name] = calls.get(name, 0) + _trips_around(op)
    tasks: dict[str, Task] = {}
    for name, kernel in kernels.items():
        space = space_of(kernel, target)
        if space is None:
            continue
        key = workload_key(kernel, target)
        count = calls.get(name, 0)
        if key in tasks:
            tasks[key].count += count
            continue
        tasks[key] = Task(key, space.form, target, space, standalone_module(kernel), count, kernel_flops(kernel))
    return list(tasks.values())


def _trips_around(op) -> int:
    """Iterations of the host-level loops around a call (scf.for of graph.scan): 1 at top."""
    from xdsl.dialects import scf

    count, parent = 1, op.parent_op()
    while parent is not None and not isinstance(parent, func.FuncOp):
        if isinstance(parent, scf.ForOp):
            from dlc.lowering.schedule.affine import constant_value

            lb, ub, step = (constant_value(v) for v in (parent.lb, parent.ub, parent.step))
            if None not in (lb, ub, step) and step > 0:
                count *= max(0, -(-(ub - lb) // step))
        parent = parent.parent_op()
    return count


def kernel_flops(kernel: func.FuncOp) -> float:
    """Floating-point operations of one call: each float arith op (add, sub, mul, div,
    max, min) times the trip counts of the loops around it."""
    total = 0
    for op in kernel.walk():
        if isinstance(op, _FLOAT_OPS):
            trips, parent = 1, op.parent_op()
            while parent is not None and parent is not kernel:
                if isinstance(parent, ForOp):
                    trips *= parent.trip_count
                parent = parent.parent_op()
            total += trips
    return float(total)


def standalone_module(kernel: func.FuncOp) -> str:
    """Module text: `kernel` (a copy) and a host ``@main`` passing its arguments through
    (the last one is the output: destination passing)."""
    copy = kernel.clone()
    types = list(kernel.function_type.inputs.data)
    host = func.FuncOp("main", (types, []))
    host.attributes["tloop.host"] = UnitAttr()
    host.attributes["tloop.num_inputs"] = IntegerAttr(len(types) - 1, IntegerType(64))
    args = list(host.body.block.args)
    for arg, original in zip(args, kernel.body.block.args):
        arg.name_hint = original.name_hint
    host.body.block.add_ops([func.CallOp(kernel.sym_name.data, args, []), func.ReturnOp()])
    return str(ModuleOp([copy, host]))
