"""`dlc.compile`: source -> native code you can call with numpy arrays.

Pipeline (each stage timed in ``CompiledModule.timings``)::

    parse/import -> legalize -> fold-constant -> lower-to-loops
      -> default schedules -> lower-to-llvm -> llvmlite (O3) -> MCJIT

A source may be graph-level IR, loop-level IR (tloop kernels + host
functions) or llvm-dialect IR; stages it no longer needs are skipped. Each call
of the compiled module is one native call of the host function (no per-kernel
Python); ``export(path)`` writes a shared library that ``dlc.runtime.load``
runs with only numpy + ctypes.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Sequence
from contextlib import contextmanager

import numpy as np
from xdsl.dialects import func
from xdsl.dialects.builtin import MemRefType, ModuleOp, StringAttr, TensorType, UnitAttr, i64
from xdsl.utils.exceptions import DiagnosticException

import dlc.frontends.te  # noqa: F401  (graph.custom's "te" language and kernel)
from dlc.passes import GPU_GRAPH_PASSES, GRAPH_PASSES  # noqa: F401  (the graph pipelines live in passes.py)
from dlc.runtime.native import (
    ALLOC_FAILURE_GETTER,
    DlcRuntimeError,
    EntryPoint,
    NativeModule,
    Spec,
    check_thread_count,
    env_thread_count,
    metadata_json,
)
from dlc.target import Target, TargetError
from dlc.weights import ElidedWeightError, attach, load_for_module, store_of

HOST_ATTR = "tloop.host"
NUM_INPUTS_ATTR = "tloop.num_inputs"


class CompileError(DiagnosticException):
    """A one-line reason why a source did not compile (stage and place named)."""


# ---------------------------------------------------------------------------
# loading
# ---------------------------------------------------------------------------


def load_module(source, example_args=None) -> ModuleOp:
    """MLIR text, a path to .mlir/.onnx/.tflite/.pt2, an onnx.ModelProto, a torch
    nn.Module (with ``example_args``) or ExportedProgram, or a ModuleOp -> a private ModuleOp."""
    if _is_torch(source):
        return _import_torch(source, example_args)
    if isinstance(source, ModuleOp):
        clone = source.clone()
        store = store_of(source, create=False)
        if store is not None:
            attach(clone, store)
        return clone
    if isinstance(source, (str, os.PathLike)) and _looks_like_path(source):
        path = os.fspath(source)
        if not os.path.exists(path):
            raise CompileError(f"{path}: no such file")
        if path.endswith(".onnx"):
            return _import_onnx(path)
        if path.endswith(".tflite"):
            return _import_tflite(path)
        if path.endswith(".pt2"):
            return _import_torch(path, None)
        with open(path) as f:
            return _parse(f.read(), path)
    if isinstance(source, str):
        return _parse(source, None)
    if type(source).__name__ == "ModelProto":
        return _import_onnx(source)
    raise CompileError(f"cannot compile a {type(source).__name__}: expected MLIR text, a path, "
                       "an onnx.ModelProto or a ModuleOp")


def _looks_like_path(source) -> bool:
    text = os.fspath(source)
    return "\n" not in text and "{" not in text and (
        text.endswith((".mlir", ".onnx", ".tflite", ".pt2")) or os.path.exists(text))


def _parse(text: str, path: str | None) -> ModuleOp:
    from xdsl.utils.exceptions import ParseError

    from dlc.context import make_context
    from dlc.weights import ResourceParser, WeightResourceError

    try:
        module = ResourceParser(make_context(), text, name=path or "<source>").parse_module()
    except ParseError as err:
        loc = err.span.get_location()
        raise CompileError(f"{loc.file}:{loc.line}:{loc.col}: {err.msg}") from None
    except (DiagnosticException, WeightResourceError) as err:
        raise CompileError(f"{path or '<source>'}: {err}") from None
    try:  # inline weights always; a .npz sidecar relative to the IR file only
        if path is not None or not isinstance(module.attributes.get("dlc.weights"), StringAttr):
            load_for_module(module, path)
    except WeightResourceError as err:
        raise CompileError(f"{path or '<source>'}: {err}") from None
    return module


def _is_torch(source) -> bool:
    """An nn.Module or ExportedProgram (checked by class name: torch stays optional)."""
    return any((c.__module__, c.__name__) in (("torch.nn.modules.module", "Module"),
                                              ("torch.export.exported_program", "ExportedProgram"))
               for c in type(source).__mro__)


def _import_torch(source, example_args) -> ModuleOp:
    try:
        from dlc.frontends.torch import TorchImportError, from_exported_program, from_module
        from dlc.frontends.torch.importer import load_exported_program
    except ImportError:
        raise CompileError("PyTorch import needs torch (pip install torch)") from None
    try:
        if isinstance(source, (str, os.PathLike)):
            return load_exported_program(os.fspath(source))
        if type(source).__name__ == "ExportedProgram":
            return from_exported_program(source)
        if example_args is None:
            raise CompileError("compiling an nn.Module needs example_args (a tuple of example inputs)")
        return from_module(source, example_args)
    except TorchImportError as err:
        raise CompileError(str(err)) from None


def _import_tflite(source) -> ModuleOp:
    from dlc.frontends.tflite import TfliteImportError, import_tflite

    try:
        return import_tflite(source)
    except TfliteImportError as err:
        raise CompileError(str(err)) from None


def _import_onnx(source) -> ModuleOp:
    try:
        from dlc.frontends.onnx import import_model
    except ImportError:
        raise CompileError("ONNX import is not available (dlc.frontends.onnx is missing)") from None
    return import_model(source)


# ---------------------------------------------------------------------------
# entry-point specs (the ABI's metadata)
# ---------------------------------------------------------------------------


def _numpy_dtype(element_type) -> np.dtype:
    from dlc.dialects.graph_base import numpy_dtype

    return numpy_dtype(element_type)


def _spec(name: str, type_) -> Spec:
    if not isinstance(type_, (TensorType, MemRefType)):
        raise CompileError(f"entry argument '{name}' has type {type_}; expected a tensor or memref")
    return name, tuple(int(d) for d in type_.get_shape()), _numpy_dtype(type_.element_type)


def entry_specs(module: ModuleOp) -> dict[str, tuple[list[Spec], list[Spec]]]:
    """Inputs/outputs of each function that becomes an exported entry point."""
    entries: dict[str, tuple[list[Spec], list[Spec]]] = {}
    for op in module.ops:
        if isinstance(op, func.FuncOp) and not op.is_declaration:
            name = op.sym_name.data
            args = op.body.block.args
            if HOST_ATTR in op.attributes:
                n_in = op.attributes[NUM_INPUTS_ATTR].value.data
                ins = [_spec(a.name_hint or f"input{i}", a.type) for i, a in enumerate(args[:n_in])]
                outs = [_spec(a.name_hint or f"output{i}", a.type) for i, a in enumerate(args[n_in:])]
            elif "tloop.kernel" in op.attributes or "dlc.codegen" in op.attributes \
                    or "dlc.composite" in op.attributes:
                continue  # kernels, BYOC partitions and composites are no entry points
            else:
                ins = [_spec(_name(op.arg_attrs, i) or a.name_hint or f"input{i}", a.type)
                       for i, a in enumerate(args)]
                outs = [_spec(_name(op.res_attrs, i) or f"output{i}", t)
                        for i, t in enumerate(op.function_type.outputs.data)]
            entries[name] = (ins, outs)
    return entries


def entry_extents(module: ModuleOp) -> dict[str, list[tuple[int, int, int]]]:
    """Per entry with data-dependent outputs (graph.nonzero / compress / unique /
    non_max_suppression results returned from it): ``(bounded result, its run-time dim,
    the count result)`` for each, read from the results' ``dlc.extent_of``
    (dialects/graph/data_dependent.py) and checked."""
    from dlc.dialects.graph.data_dependent import function_extents

    found: dict[str, list[tuple[int, int, int]]] = {}
    for op in module.ops:
        if not isinstance(op, func.FuncOp) or op.is_declaration:
            continue
        name = op.sym_name.data
        try:
            extents = function_extents(op)
        except ValueError as err:
            raise CompileError(f"@{name}: {err}") from None
        outputs = op.function_type.outputs.data
        for result, dim, count in extents:
            where = f"@{name} result {count}: dlc.extent_of"
            if not 0 <= result < len(outputs) or result == count:
                raise CompileError(f"{where} names result {result}, which is not another result")
            if not 0 <= dim < len(outputs[result].get_shape()):
                raise CompileError(f"{where} names dim {dim} of result {result}, of rank "
                                   f"{len(outputs[result].get_shape())}")
            if outputs[count].get_shape() != () or outputs[count].element_type != i64:
                raise CompileError(f"{where}: the count must be a tensor<i64>, got {outputs[count]}")
        if extents:
            found[name] = extents
    return found


def _name(attrs, index: int) -> str | None:
    """The ``dlc.name`` an importer gave argument/result ``index`` (ONNX tensor names)."""
    if attrs is None or index >= len(attrs.data):
        return None
    name = attrs.data[index].data.get("dlc.name")
    return name.data if isinstance(name, StringAttr) else None


def _default_entry(entries: dict, entry: str | None) -> str:
    if entry is not None:
        if entry not in entries:
            raise CompileError(f"no function named @{entry} (have {', '.join(entries) or 'none'})")
        return entry
    if not entries:
        raise CompileError("the module has no function to compile")
    return "main" if "main" in entries else next(iter(entries))


def metadata_for(module: ModuleOp, entry: str | None = None, num_threads: int | None = None,
                 target: Target | None = None) -> str | None:
    """JSON metadata of ``module``'s entry points (and the target string and triple
    when ``target`` is given), or None for llvm-dialect input."""
    entries = entry_specs(module)
    if not entries:
        return None
    meta = metadata_json(entries, _default_entry(entries, entry),
                         *((str(target), target.triple) if target is not None else ()),
                         extents=entry_extents(module))
    if num_threads is not None:
        import json

        data = json.loads(meta)
        data["num_threads"] = num_threads
        meta = json.dumps(data)
    return meta


# ---------------------------------------------------------------------------
# the pipeline
# ---------------------------------------------------------------------------


def _level(module: ModuleOp) -> str:
    if any(op.name.startswith("graph.") for op in module.walk()):
        return "graph"
    if any(  # e.g. a function that only returns its input: no graph op, but tensors
        isinstance(op, func.FuncOp)
        and any(isinstance(t, TensorType) for t in (*op.function_type.inputs, *op.function_type.outputs))
        for op in module.ops
    ):
        return "graph"
    if any(isinstance(op, func.FuncOp) for op in module.ops):
        return "loops"
    return "llvm"


def run_pass(spec: str, module: ModuleOp) -> None:
    """Run one pass of the registry (``dlc.passes.PASSES``) on `module`, given as dlc-opt
    does: ``name`` or ``name{option=value ...}``. A pass that is not registered or cannot
    load (its module fails to import) stops the compile with one line saying why."""
    from xdsl.utils.arg_spec import parse_pipeline

    from dlc.context import make_context
    from dlc.passes import PASSES

    try:
        (pass_spec,) = parse_pipeline(spec)
    except BaseException as err:  # xDSL's ArgSpecParseError is a BaseException
        raise CompileError(f"bad pass spec '{spec}': {err}") from None
    name = pass_spec.name
    if name not in PASSES:
        raise CompileError(f"pass '{name}' is not registered (dlc.passes.PASSES)")
    try:
        pass_cls = PASSES[name]()
    except Exception as err:  # an import error or a syntax error in the pass: never skipped
        raise CompileError(f"pass '{name}' cannot load: {type(err).__name__}: {err}") from err
    try:
        instance = pass_cls.from_pass_spec(pass_spec)
    except Exception as err:
        raise CompileError(f"{name}: bad options in '{spec}': {err}") from None
    try:
        instance.apply(make_context(), module)
    except DiagnosticException as err:
        raise CompileError(_one_line(err, name)) from None


# Passes the pipeline leaves out, by name: empty except when the benchmarks measure a
# pass's effect (``disable_passes``, bench/models.py --no-expand-math ...).
_DISABLED_PASSES: frozenset[str] = frozenset()


def disable_passes(names) -> None:
    """Make the compile pipeline skip the passes named in ``names`` (for measuring their
    effect; ``()`` restores the full pipeline). ``run_pass`` itself still runs any pass."""
    global _DISABLED_PASSES
    _DISABLED_PASSES = frozenset(names)


def _pipeline_pass(spec: str, module: ModuleOp) -> None:
    """One pass of the compile pipeline: :func:`run_pass`, unless disabled."""
    if spec.split("{", 1)[0] not in _DISABLED_PASSES:
        run_pass(spec, module)


def _one_line(err: Exception, stage: str) -> str:
    text = str(err).strip().splitlines()
    msg = text[0] if text else type(err).__name__
    return msg if msg.startswith(stage) else f"{stage}: {msg}"


# the CPU default: conv chains, pools and channel concats in NCHW16c (alter-op-layout);
# "NCHW" (layout= or env DLC_LAYOUT) keeps plain layouts. The GPU pipeline never blocks.
DEFAULT_CPU_LAYOUT = "NCHWc"


def graph_passes(layout: str | None = None, target: Target | None = None) -> tuple[str, ...]:
    """GRAPH_PASSES (CPU), with fold-qdq, fuse-attention, pack-matmul-weights (its panel the
    register tile width of `target`, default the host), and alter-op-layout before fuse-ops
    for ``layout="NCHWc"`` (default: env ``DLC_LAYOUT``, else DEFAULT_CPU_LAYOUT; "NCHW":
    plain layouts)."""
    layout = layout or os.environ.get("DLC_LAYOUT", DEFAULT_CPU_LAYOUT)
    if layout not in ("NCHW", "NCHWc"):
        raise CompileError(f"unknown layout '{layout}' (expected NCHW or NCHWc)")
    # fold-qdq (CPU): QDQ patterns become integer ops, before fold-constant would fold the
    # dequantized weights into float ones (fold-qdq reads their integers and scales)
    at = GRAPH_PASSES.index("fold-constant")
    passes = GRAPH_PASSES[:at] + ("fold-qdq",) + GRAPH_PASSES[at:]
    # fuse-attention (CPU): softmax(Q K^T * s + mask) V as one graph.attention (one kernel),
    # after fold-constant (the scale is a constant then), before fuse-ops groups its parts
    at = passes.index("fuse-ops")
    passes = passes[:at] + ("fuse-attention",) + passes[at:]
    # pack-matmul-weights (CPU): constant GEMM operands in the register tile's column panels,
    # before fuse-ops (the packed matmul takes the fused epilogue)
    pack = "pack-matmul-weights"  # (its default panel: the host's tile width)
    if target is not None and target.matmul_register_tile[1] != Target.host().matmul_register_tile[1]:
        pack += f"{{panel={target.matmul_register_tile[1]}}}"
    at = passes.index("fuse-ops")
    passes = passes[:at] + (pack,) + passes[at:]
    if layout == "NCHW":
        return passes
    at = passes.index("fuse-ops")
    return passes[:at] + ("alter-op-layout",) + passes[at:]


def lower_to_loops_pass(target: Target | None = None, profile: bool = False) -> str:
    """The lower-to-loops pass spec of a CPU compile for `target` (default: the host): the
    CPU kernel forms, with the int8 register tiles its vector registers hold."""
    target = Target.host() if target is None else target
    profiled = " profile=true" if profile else ""
    return f"lower-to-loops{{flat-conv=true int8-accumulators={target.int8_accumulators}{profiled}}}"


def schedule_pass(target: Target | None = None) -> str:
    """The default-schedule pass spec for `target` (default: the host)."""
    target = Target.host() if target is None else target
    return f'tloop-default-schedule{{target="{target}"}}'


def byoc_passes(targets: Sequence[str]) -> tuple[str, ...]:
    """The BYOC pipeline for ``targets`` (in priority order): merge-composite per target,
    annotate-target, merge-compiler-regions, partition-graph."""
    return (*(f"merge-composite{{target={t}}}" for t in targets),
            f"annotate-target{{targets={','.join(targets)}}}", "merge-compiler-regions", "partition-graph")


def check_byoc(targets) -> list[str]:
    """``targets`` (a name or a list of names), each a known BYOC target (CompileError naming
    the unknown one and the known ones)."""
    from dlc.byoc import UnknownTargetError, check_targets

    names = [targets] if isinstance(targets, str) else list(targets or ())
    try:
        return check_targets(names)
    except UnknownTargetError as err:
        raise CompileError(err.message) from None


def _run_byoc(module: ModuleOp, targets: list[str], target: Target | None, timed, externals: list) -> None:
    """Partition ``module`` for ``targets`` and run their codegens (dlc.byoc); the kernels
    go to ``externals``, the report lines to the module's ``dlc.byoc_report``."""
    from dlc.byoc import CodegenError, UnknownTargetError
    from dlc.byoc.codegen_run import run_codegens

    for spec in byoc_passes(targets):
        with timed(spec.split("{", 1)[0]):
            try:
                run_pass(spec, module)
            except UnknownTargetError as err:
                raise CompileError(err.message) from None
    with timed("byoc-codegen"):
        try:
            externals.extend(run_codegens(module, Target.host() if target is None else target))
        except (CodegenError, UnknownTargetError) as err:
            raise CompileError(err.message) from None


def _run_codegens_of_partitions(module: ModuleOp, target: Target | None, timed, externals: list) -> None:
    """Graph IR partitioned already (dlc-opt ... partition-graph): its codegens still run."""
    from dlc.byoc import CodegenError, UnknownTargetError
    from dlc.byoc.codegen_run import partitions, run_codegens

    if not partitions(module):
        return
    with timed("byoc-codegen"):
        try:
            externals.extend(run_codegens(module, Target.host() if target is None else target))
        except (CodegenError, UnknownTargetError) as err:
            raise CompileError(err.message) from None


def qdq_report(module: ModuleOp) -> list[str]:
    """fold-qdq's notes (the module's ``dlc.qdq_report``): what became integer ops, what stayed float."""
    attr = module.attributes.get("dlc.qdq_report")
    return [a.data for a in attr.data] if attr is not None else []


SCHEDULE_REPORT_ATTR = "dlc.schedule_report"


def schedule_report(module: ModuleOp) -> list[str]:
    """The kernels whose form's default schedule refused them and got the generic one
    (``@kernel: why``), as the schedule stage recorded them (``dlc.schedule_report``)."""
    attr = module.attributes.get(SCHEDULE_REPORT_ATTR)
    return [a.data for a in attr.data] if attr is not None else []


def _record_schedule_fallbacks(module: ModuleOp) -> None:
    """Copy the kernels' FALLBACK_ATTR into the module's report (it outlives the kernels'
    lowering to the llvm dialect)."""
    from xdsl.dialects.builtin import ArrayAttr, StringAttr

    from dlc.lowering.schedule.defaults_forms import FALLBACK_ATTR

    lines = [f"@{op.sym_name.data}: {op.attributes[FALLBACK_ATTR].data}" for op in module.ops
             if isinstance(op, func.FuncOp) and FALLBACK_ATTR in op.attributes]
    if lines:
        module.attributes[SCHEDULE_REPORT_ATTR] = ArrayAttr([StringAttr(line) for line in schedule_report(module) + lines])


def byoc_report(module: ModuleOp, externals=()) -> list[str]:
    """The partition report (partition-graph's lines, then each codegen's own line)."""
    from dlc.byoc import REPORT_ATTR

    attr = module.attributes.get(REPORT_ATTR)
    lines = [a.data for a in attr.data] if attr is not None else []
    return lines + [f"@{k.symbol}: {k.report}" for k in externals if k.report]


def lower_to_llvm_dialect(module: ModuleOp, timings: dict[str, float] | None = None,
                          layout: str | None = None, target: Target | None = None,
                          profile: bool = False, progress: Progress | None = None,
                          byoc: Sequence[str] = (), externals: list | None = None) -> None:
    """Run the stages ``module`` still needs to reach the llvm dialect (in place), each a
    pass of the registry; schedules plan for `target` (default: the host). ``profile``:
    kernels carry their cost and every kernel call is timed (lowering/to_llvm/profile.py);
    ``progress``: called as each stage starts (see :func:`compile`). ``byoc``: BYOC
    targets whose partitions are cut out after simplify-inference (before layouts and
    fusion) and compiled by their codegens into ``externals`` (dlc.byoc.ExternalKernel)."""
    timings = timings if timings is not None else {}
    on = "{profile=true}" if profile else ""
    timed = _stage_timer(timings, progress)
    if byoc and externals is None:
        raise CompileError("lower_to_llvm_dialect(byoc=...) needs an externals list for the kernels")
    if _level(module) == "graph":
        for name in graph_passes(layout, target):
            with timed(name.split("{")[0]):
                _pipeline_pass(name, module)
            if name == "simplify-inference" and byoc:
                _run_byoc(module, list(byoc), target, timed, externals)
        if not byoc and externals is not None:
            _run_codegens_of_partitions(module, target, timed, externals)
        with timed("lower-to-loops"):
            _pipeline_pass(lower_to_loops_pass(target, profile), module)
        with timed("schedule"), _kernel_progress(progress):
            _pipeline_pass(schedule_pass(target), module)
        _record_schedule_fallbacks(module)
    if _level(module) == "loops":
        with timed("expand-math"):
            _pipeline_pass("expand-math", module)  # vectorizable exp/log/tanh/erf
        with timed("plan-workspace"):
            _pipeline_pass("plan-workspace", module)  # reused buffers, no malloc per call
    if _level(module) == "loops":
        with timed("lower-to-llvm"):
            _pipeline_pass("lower-to-llvm" + on, module)
    if verify_ir():
        with timed("verify"):
            try:
                module.verify()
            except DiagnosticException as err:
                raise CompileError(_one_line(err, "lower-to-llvm (verify)")) from None


def verify_ir() -> bool:
    """Whether compile verifies the llvm-dialect module with xDSL before translating it
    (env ``DLC_VERIFY_IR=1``; the test suite sets it, test/python/conftest.py). Off by
    default: it walks every op of the module (ResNet-50: 0.6 s, 7% of its compile), and
    the translated module is verified by LLVM on every compile anyway, so an invalid
    lowering still stops the compile (with LLVM's message instead of xDSL's)."""
    return os.environ.get("DLC_VERIFY_IR", "0") not in ("", "0")


def _apply_default_schedules(module: ModuleOp, target: Target | None = None) -> None:
    """The default schedules of every kernel, for `target` (default: the host)."""
    _pipeline_pass(schedule_pass(target), module)


# ``progress(stage, detail)``: ``detail`` is None when a stage starts, ``(i, n)`` while the
# schedule stage works on its i-th of n kernels
Progress = Callable[[str, "tuple[int, int] | None"], None]


def _stage_timer(timings: dict[str, float], progress: Progress | None):
    """``with timed(stage):`` times the stage and reports its start to ``progress``."""
    @contextmanager
    def timed(stage: str):
        if progress is not None:
            progress(stage, None)
        with _timed(timings, stage):
            yield
    return timed


@contextmanager
def _kernel_progress(progress: Progress | None):
    """Per-kernel progress of the default schedules (lowering/schedule/defaults.py)."""
    if progress is None:
        yield
        return
    from dlc.lowering.schedule.defaults import report_kernels

    with report_kernels(lambda i, n: progress("schedule", (i, n))):
        yield


class StageTimings(dict):
    """stage -> wall seconds (a dict, in the order the stages ran), plus ``cpu``: stage ->
    CPU seconds of this process (``time.process_time``; a worker process's time is not
    in it: wall below CPU means the stage ran in parallel, above it that it waited)."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.cpu: dict[str, float] = {}


@contextmanager
def _timed(timings: dict[str, float], stage: str):
    start, cpu = time.perf_counter(), time.process_time()
    try:
        yield
    finally:
        timings[stage] = timings.get(stage, 0.0) + time.perf_counter() - start
        if isinstance(timings, StageTimings):
            timings.cpu[stage] = timings.cpu.get(stage, 0.0) + time.process_time() - cpu


# ---------------------------------------------------------------------------
# compiled modules
# ---------------------------------------------------------------------------


class CompiledModule:
    """A compiled model: ``module(*arrays) -> list[np.ndarray]`` (JIT-compiled when the
    target runs on this host).

    Attributes: ``input_specs``/``output_specs`` (default entry, lists of
    ``(name, shape, dtype)``), ``timings`` (stage -> seconds), ``llvm_ir``
    (unoptimized LLVM IR text), ``optimized_llvm_ir``, ``target`` (the
    ``dlc.target.Target`` it was built for); ``run(entry, *arrays)`` calls another
    entry point; ``export(path)`` writes a shared library for the target. A module for
    a target this host cannot run (another architecture, or a CPU feature the host
    lacks) has no JIT: calling it is a CompileError, ``export`` works.
    """

    def __init__(self, native: NativeModule | None, jit, llvm_ir: str, weights: dict[str, np.ndarray],
                 timings: dict[str, float], num_threads: int | None, profiler=None,
                 target: Target | None = None,
                 entries: dict[str, tuple[list[Spec], list[Spec]]] | None = None, default: str | None = None,
                 externals=(), byoc_report: list[str] | None = None, external_library=None,
                 not_runnable: str | None = None):
        self._native = native
        self._not_runnable = not_runnable  # why calling it fails, where not cannot_run_here
        self._jit = jit
        self.llvm_ir = llvm_ir
        self._weights = weights
        self.timings = timings
        self._num_threads = num_threads
        self._profiler = profiler  # dlc.runtime.profile.Profiler when compiled with profile=True
        self.target = target
        self._entries = entries if entries is not None else {
            name: (list(p.inputs), list(p.outputs)) for name, p in native.entries.items()}
        self._default = default if default is not None else native.default_entry
        self._optimized: str | None = None
        self._externals = list(externals)  # BYOC kernels, linked into export() too
        self._external_library = external_library  # their JIT library (kept loaded)
        # which ops went to which BYOC codegen, and why the rest did not (dlc -v)
        self.byoc_report = list(byoc_report or [])
        self.tuning_note: str | None = None  # dlc.compile(tuning_records=...): what they applied
        # which QDQ patterns fold-qdq made integer ops, and why the others stayed float (dlc -v)
        self.qdq_report: list[str] = []
        # the kernels whose form's schedule refused them (the generic one applied), and why
        self.schedule_report: list[str] = []

    def _runnable(self) -> NativeModule:
        if self._native is None:
            raise CompileError(self._not_runnable or cannot_run_here(self.target))
        return self._native

    def profile(self, *arrays, repeat: int = 10, entry: str | None = None):
        """Run ``repeat`` timed calls (after one warm-up call) and return their
        ``dlc.runtime.profile.Profile``: per-kernel times, ``.table()``,
        ``.to_chrome_trace()``, ``.save(path)``. Needs ``dlc.compile(..., profile=True)``."""
        from dlc.runtime.profile import ProfileError

        if self._profiler is None:
            raise CompileError("profile() needs a module compiled with dlc.compile(..., profile=True)")
        try:
            return self._profiler.profile(lambda: self.run(entry or self._native.default_entry, *arrays),
                                          repeat=repeat)
        except ProfileError as err:
            raise CompileError(str(err)) from None

    def __call__(self, *arrays, outputs=None) -> list[np.ndarray]:
        return self._runnable()(*arrays, outputs=outputs)

    def run(self, entry: str, *arrays, outputs=None) -> list[np.ndarray]:
        return self._runnable().run(entry, *arrays, outputs=outputs)

    @property
    def input_specs(self) -> list[Spec]:
        return list(self._entries[self._default][0])

    @property
    def output_specs(self) -> list[Spec]:
        return list(self._entries[self._default][1])

    @property
    def entries(self) -> list[str]:
        return list(self._entries)

    @property
    def optimized_llvm_ir(self) -> str:
        if self._jit is not None:
            return self._jit.optimized_ir
        if self._optimized is None:  # no JIT (a cross target): optimized for the target here
            from dlc.backends.llvm.jit import parse_and_optimize, target_machine

            self._optimized = str(parse_and_optimize(self.llvm_ir, target_machine(self.target)))
        return self._optimized

    def set_num_threads(self, n: int) -> None:
        self._runnable().set_num_threads(n)

    def export(self, path: str) -> str:
        """Write a shared library (weights embedded) loadable by ``dlc.runtime.load``
        at ``path``: a file (replaced whole, or not at all), a symlink's target, a
        device or FIFO (written through); a directory or a missing directory is a
        CompileError (dlc.output_files)."""
        from dlc.backends.llvm.export import ExportError, export_shared_library
        from dlc.diagnostics import DiagnosticError

        stages = StageTimings()
        try:
            with _timed(stages, "export"):
                export_shared_library(self.llvm_ir, self._weights, path, target=self.target,
                                      externals=self._externals, timings=stages)
        except ExportError as err:
            raise CompileError(str(err)) from None
        except DiagnosticError as err:  # the path cannot be written (output_files)
            raise CompileError(err.message) from None
        # its stages (llvm-parse, llvm-opt, llvm-codegen, link ...); the rest as "export"
        total, total_cpu = stages.pop("export"), stages.cpu.pop("export")
        stages["export"] = max(0.0, total - sum(stages.values()))
        stages.cpu["export"] = max(0.0, total_cpu - sum(stages.cpu.values()))
        for stage, seconds in stages.items():
            self.timings[stage] = seconds
            if isinstance(self.timings, StageTimings):
                self.timings.cpu[stage] = stages.cpu.get(stage, 0.0)
        return path


def compile(source, example_args=None, target: str | Target = "llvm", entry: str | None = None,
            num_threads: int | None = None, opt: int = 3, layout: str | None = None,
            profile: bool = False, progress: Progress | None = None,
            byoc: Sequence[str] | str | None = None, tuning_records=None,
            jit: bool = True, allow_tf32: bool = False) -> CompiledModule:
    """Compile ``source`` (MLIR text, .mlir/.onnx/.tflite/.pt2 path, onnx.ModelProto, ModuleOp,
    torch ExportedProgram, or a torch nn.Module with ``example_args``) for the host CPU.

    ``target``: "llvm" (the host), "cuda", a preset ("aarch64", "riscv64", "x86-64-v3":
    ``dlc.target.PRESETS``), or a ``dlc.target.Target`` / target string
    (``"llvm -mtriple=aarch64-linux-gnu -mcpu=cortex-a72"``): the schedules plan for it and
    LLVM generates its code. A target this host cannot run (``Target.runs_on_host``) is
    compiled without a JIT: ``export`` writes its library (a cross export), calling the
    module is a CompileError saying where it runs. ``-num-cores=N`` in the target is the
    default of ``num_threads``. "c": portable C99 source for bare metal, a
    ``dlc.backends.c.CProgram`` (``.source``, ``.header``, ``.metadata``,
    ``.export("model.tar")``), compiled by your C compiler, not here. A bare-metal llvm
    target ("cortex-m4", ``Target.bare_metal``): the same archive with ``lib/model.o``.

    ``num_threads``: threads for parallel loops (default: env ``DLC_NUM_THREADS``,
    else all cores). ``entry``: the default entry point (default ``@main`` or the
    first function). ``layout``: "NCHWc" runs conv chains, pools and channel concats
    in the blocked NCHW16c layout (alter-op-layout), "NCHW" keeps plain layouts
    (default: env ``DLC_LAYOUT``, else "NCHWc").

    ``profile``: the host entry times every kernel call natively (timestamps into a
    buffer, no Python per kernel); ``CompiledModule.profile(*inputs)`` reads them. The
    code of a build without it is unchanged. ``progress``: ``progress(stage, detail)`` is
    called as each stage starts ("load", the graph passes, "lower-to-loops", "schedule"
    (again with ``(i, n)`` per kernel), "expand-math", "plan-workspace", "lower-to-llvm",
    "translate", "llvm-jit"; ``detail`` None) for a progress display (the CLI's).

    ``byoc``: BYOC targets (``["dnnl"]``, ``"c"``; dlc.byoc): the ops their predicates
    accept are partitioned out and compiled by their codegens, linked into this module
    and into ``export()``; ``CompiledModule.byoc_report`` lists the partitions and why
    the other ops stayed with dlc.

    ``tuning_records``: a tuning log's path (``tune.jsonl``), a list of
    ``dlc.lowering.schedule.records.TuningRecord`` or a dict workload key -> config: each
    kernel with a record gets its best config, the others the default
    (``CompiledModule.tuning_note`` counts them); records for another target are refused.

    ``jit=False``: build for ``export()`` only (what ``dlc compile -o m.so`` does): LLVM
    runs once, at the export, instead of once for the JIT and again for the library;
    calling the module is then a CompileError. For ``target="cuda"`` it needs nvcc
    but no GPU here (the library runs on another machine).

    ``allow_tf32`` (``target="cuda"`` only): f32 matmul/dense may run on tf32 tensor cores
    (10-bit mantissa inputs, f32 accumulation), as torch's ``allow_tf32``; f16/bf16
    inputs use tensor cores without it (backends/cuda/mma_schedule.py).
    """
    byoc = check_byoc(byoc)
    if isinstance(target, str):
        try:
            target = Target.from_string(target)  # "llvm": the host, once here; presets too
        except TargetError as err:
            raise CompileError(str(err)) from None
    if profile and target.kind == "cuda":
        raise CompileError("profile=True is for the llvm target (the CUDA build is not instrumented)")
    if byoc and (target.kind != "llvm" or target.bare_metal):
        raise CompileError(f"byoc= is for hosted llvm targets (BYOC kernels are C code linked with dlc's), "
                           f"not '{target}'")
    if tuning_records is not None and (target.kind != "llvm" or target.bare_metal):
        raise CompileError(f"tuning_records is for hosted llvm targets, not '{target}'")
    tuning = _tuning(tuning_records, target) if tuning_records is not None else None
    if allow_tf32 and target.kind != "cuda":
        raise CompileError(f"allow_tf32=True is for the cuda target (tensor cores), not '{target}'")
    if target.kind == "cuda":
        return _compile_cuda(source, entry, example_args, allow_tf32, export_only=not jit)
    if target.kind == "c" or target.bare_metal:
        return _compile_c(source, target, entry, example_args, num_threads, profile)
    if target.kind != "llvm":
        raise CompileError(f"dlc.compile does not build the '{target}' target (it builds llvm, cuda and c targets)")
    runs_here = target.runs_on_host()
    if profile and not runs_here:
        raise CompileError(f"profile=True needs a target this host runs: {cannot_run_here(target)}")
    try:  # the default's source first: DLC_NUM_THREADS=abc is an error even when overridden
        env_thread_count()
        if num_threads is not None:
            num_threads = check_thread_count(num_threads, "num_threads")
    except DlcRuntimeError as err:
        raise CompileError(str(err)) from None
    if num_threads is None:
        num_threads = target.num_cores  # -num-cores=N: the module's default thread count
    from dlc.backends.llvm.jit import JITError, JITModule
    from dlc.backends.llvm.translate import TranslationError, translate

    timings = StageTimings()
    timed = _stage_timer(timings, progress)
    with timed("load"):
        module = load_module(source, example_args)
    entries = entry_specs(module)
    if not entries:
        raise CompileError("the module has no function to compile (llvm-dialect input has no "
                           "entry-point metadata: compile graph- or loop-level IR)")
    default = _default_entry(entries, entry)
    extents = entry_extents(module)
    meta = metadata_for(module, default, num_threads, target)
    externals: list = []
    if byoc and _level(module) != "graph":
        raise CompileError("byoc= needs graph-level input (partitions are cut from the graph)")
    from dlc.lowering.schedule.defaults import use_tuning

    with use_tuning(tuning):
        lower_to_llvm_dialect(module, timings, layout, target, profile, progress, byoc, externals)
    report = byoc_report(module, externals)
    qdq_notes = qdq_report(module)
    schedule_notes = schedule_report(module)
    external_list = external_kernels(module)
    if external_list and meta is not None:
        import json

        data = json.loads(meta)
        data["external"] = external_list
        meta = json.dumps(data)
    external_library = None
    if externals and runs_here:  # a cross build links them at export only
        from dlc.backends.llvm.external import ExternalBuildError, load_for_jit

        with timed("byoc-build"):
            try:
                external_library = load_for_jit(externals)
            except ExternalBuildError as err:
                raise CompileError(str(err)) from None
    with timed("translate"):
        try:
            translation = translate(module, meta, triple=target.triple,
                                    width_hints=not target.scalable_vectors)
        except (TranslationError, NotImplementedError) as err:
            raise CompileError(_one_line(err, "llvm translation")) from None
        llvm_ir = str(translation.module)
    weights = _bind_weights(module, translation.weight_symbols)
    if not runs_here or not jit:  # no JIT: export (or cross-export) is all such a module does
        compiled = CompiledModule(None, None, llvm_ir, weights, timings, num_threads, target=target,
                                  entries=entries, default=default, externals=externals, byoc_report=report,
                                  not_runnable=None if not runs_here else
                                  "this module was compiled with jit=False: export() it and load the "
                                  "library with dlc.runtime.load")
        compiled.tuning_note = tuning.note() if tuning is not None else None
        compiled.qdq_report = qdq_notes
        compiled.schedule_report = schedule_notes
        return compiled
    with timed("llvm-jit"):
        try:
            jit = JITModule(llvm_ir, weights, opt=opt, target=target)
        except JITError as err:
            raise CompileError(str(err)) from None
    points = {
        name: EntryPoint(name, jit.address(name), ins, outs, extents=extents.get(name, ()))
        for name, (ins, outs) in entries.items()
    }
    native = NativeModule(points, default, jit.address("dlc_set_num_threads"), keepalive=jit,
                          alloc_failure_address=jit.address(ALLOC_FAILURE_GETTER),
                          external_kernels=external_list)
    if num_threads is not None:
        native.set_num_threads(num_threads)
    compiled = CompiledModule(native, jit, llvm_ir, weights, timings, num_threads,
                              _profiler(module, jit) if profile else None, target=target,
                              externals=externals, byoc_report=report, external_library=external_library)
    compiled.tuning_note = tuning.note() if tuning is not None else None  # "tuning: 3 of 5 kernels ..."
    compiled.qdq_report = qdq_notes
    compiled.schedule_report = schedule_notes
    return compiled


def _tuning(records, target: Target):
    """dlc.compile's ``tuning_records`` (a path, TuningRecords or key -> config) as the
    schedules' Tuning; a log for another target is a CompileError naming both."""
    from dlc.lowering.schedule.defaults import Tuning
    from dlc.lowering.schedule.records import TuningRecordError, best_configs, check_config_keys, record_error_text

    try:
        if isinstance(records, dict):
            check_config_keys(records, target)
            return Tuning(dict(records), "the given configs")
        source = os.fspath(records) if isinstance(records, (str, os.PathLike)) else "the given records"
        return Tuning(best_configs(records, target), source)
    except TuningRecordError as err:
        raise CompileError(record_error_text(err)) from None


def cannot_run_here(target: Target, built: bool = True) -> str:
    """Why this host cannot run code built for ``target``, and what runs it (``built``:
    the module exists; else the words for a target checked before compiling)."""
    from dlc.target import host_arch

    what = "compiled for" if built else "code for"
    if target.bare_metal:
        return (f"{what} {target.triple} is bare-metal firmware code: 'dlc compile --target \"{target}\" -o "
                "model.tar' writes its object (lib/model.o) to link into a firmware image")
    if target.arch != host_arch():
        return (f"{what} {target.triple}; this host ({host_arch()}) cannot run it: export it "
                f"and run it with dlc-run under qemu-{target.arch}, or on the device over RPC")
    missing = sorted(target.features - Target.host().features)
    return (f"{what} '{target}', which needs CPU features this host lacks "
            f"({', '.join('+' + f for f in missing)}): export it and run it on such a machine, "
            "or over RPC")


def external_kernels(module: ModuleOp) -> list[list[str]]:
    """[symbol, BYOC target] of each external kernel of an llvm-dialect module, in the
    order of their status codes (lowering/to_llvm/function.py STATUS_EXTERNAL_BASE)."""
    from xdsl.dialects import llvm

    found = []
    for op in module.ops:
        if isinstance(op, llvm.FuncOp) and "dlc.external_index" in op.attributes:
            found.append((op.attributes["dlc.external_index"].value.data,
                          [op.sym_name.data, op.attributes["dlc.external"].data]))
    return [entry for _, entry in sorted(found)]


def _profiler(module: ModuleOp, jit):
    """The reader of a profiled module's kernel records (dlc.runtime.profile)."""
    from dlc.lowering.to_llvm.profile import BEGIN, END, sites_of
    from dlc.runtime.profile import Profiler

    sites = sites_of(module)
    if sites is None:  # llvm-dialect input: nothing was instrumented
        raise CompileError("profile=True needs graph- or loop-level input (llvm-dialect IR is not instrumented)")
    return Profiler(jit.address(BEGIN), jit.address(END), sites)


def _compile_cuda(source, entry: str | None, example_args=None, allow_tf32: bool = False,
                  export_only: bool = False):
    """``target="cuda"``: the GPU pipeline of ``dlc.backends.cuda.build`` (the graph
    passes, lower-to-loops with host control flow, lower-to-gpu, CUDA C, nvcc). Returns
    a ``CudaProgram`` (``program(*arrays) -> outputs``, ``.cuda_source``, ``.timings``,
    ``.export(path)``: a library ``dlc.runtime.load`` runs). Without nvcc, a CUDA
    driver or a GPU this fails at once with one line naming which; with
    ``export_only`` only nvcc is needed (the library runs on another machine)."""
    from dlc.backends.cuda import build

    start = time.perf_counter()
    module = load_module(source, example_args)
    _refuse_extents(module, "the cuda target")
    if allow_tf32:  # read by lower-to-gpu (mma_schedule.ALLOW_TF32_ATTR)
        module.attributes["gpu.allow_tf32"] = UnitAttr()
    loaded = time.perf_counter() - start
    try:
        graph_specs = entry_specs(module)  # the graph function's tensor names, as the CPU export's
        program = build(module, entry=entry, require_device=not export_only)
        for name, entry_program in program.entries.items():
            ins, outs = graph_specs.get(name, (None, None))
            if ins is not None and len(ins) == len(entry_program.input_types) \
                    and len(outs) == len(entry_program.output_types):
                entry_program.names = ([n for n, _, _ in ins], [n for n, _, _ in outs])
    except DiagnosticException as err:  # CudaBuildError, GpuLoweringError, pass errors...
        raise CompileError(_one_line(err, "cuda")) from None
    program.timings["load"] = loaded
    return program


def _compile_c(source, target, entry: str | None, example_args, num_threads, profile: bool):
    """``target="c"``: portable C99 for bare metal (``dlc.backends.c.build``). Returns a
    ``CProgram`` (``.source``, ``.header``, ``.metadata``, ``.export(path)``: the archive);
    nothing is compiled or run here. A bare-metal llvm target (``cortex-m4``): the same
    archive with ``lib/model.o`` instead of the C (``dlc.backends.llvm.bare_metal``)."""
    if target.kind == "c":
        from dlc.backends.c import build
    else:
        from functools import partial

        from dlc.backends.llvm.bare_metal import build as build_object

        build = partial(build_object, target=target)
    what, name = ("", "C target") if target.kind == "c" else (" of a hosted machine", f"'{target}' target")

    try:
        Target.from_string(target) if isinstance(target, str) else target  # "c -x": one line
    except TargetError as err:
        raise CompileError(str(err)) from None
    if num_threads is not None:
        raise CompileError(f"num_threads is for the llvm target{what} (the {name} runs no threads)")
    if profile:
        raise CompileError(f"profile=True is for the llvm target{what} (the {name} is not instrumented)")
    start = time.perf_counter()
    module = load_module(source, example_args)
    _refuse_extents(module, f"the {name}")
    loaded = time.perf_counter() - start
    try:
        program = build(module, entry=entry)
    except DiagnosticException as err:  # CBuildError, pass errors...
        raise CompileError(_one_line(err, "c target")) from None
    program.timings["load"] = loaded
    return program


def _refuse_extents(module: ModuleOp, what: str) -> None:
    """Outputs with a run-time extent (NonZero, Compress) need the llvm target's runtime."""
    for name, extents in entry_extents(module).items():
        result, dim, _ = extents[0]
        raise CompileError(f"@{name} result {result} has a data-dependent dim {dim} (nonzero, compress, "
                           f"unique or non_max_suppression); {what} does not return run-time extents yet: use the llvm target")


def _bind_weights(module: ModuleOp, symbols: dict[str, str]) -> dict[str, np.ndarray]:
    """symbol -> C-contiguous array of the weights-store entry it stands for."""
    if not symbols:
        return {}
    store = store_of(module, create=False)
    out = {}
    for name, symbol in symbols.items():
        if store is not None and store.is_elided(name):
            raise CompileError(str(ElidedWeightError.of(name)))
        if store is None or name not in store:
            raise CompileError(f"weight \"{name}\" is not in the module's weights store")
        out[symbol] = np.ascontiguousarray(store[name])
    return out


def translate_to_llvm_ir(module: ModuleOp, entry: str | None = None) -> str:
    """LLVM IR text (unoptimized) of ``module``: graph-level, loop-level or llvm-dialect IR
    (``dlc-translate --to-llvm``). Runs whatever part of the pipeline the module still
    needs. Modifies ``module``."""
    from dlc.backends.llvm.translate import translate

    meta = metadata_for(module, entry)
    lower_to_llvm_dialect(module)
    return str(translate(module, meta, define_weights=True).module)  # weights defined: the text stands alone
