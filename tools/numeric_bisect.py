"""`dlc run model.onnx|model.pt2 --bisect`: the first node whose dlc output diverges from the reference.

How it works:

1. A copy of the model gets every intermediate value as an extra graph output: each
   top-level node output that some node or graph output reads and that onnx shape
   inference types as a tensor (values in If/Loop bodies, sequences and values
   without an inferred type cannot be exposed; they are counted as "not compared").
2. dlc compiles that copy through its normal pipeline (``dlc.compile``): every exposed
   value is a result of ``@main``, so the compiled native code computes it (there is
   no numpy or evaluator fallback; values the importer folds, such as Shape -> Gather
   chains, come back as the constants the compiled code returns). onnxruntime, the
   reference, runs the same copy on the same inputs. onnxruntime is imported here
   only: it is never part of dlc's compiled path.
3. The values are compared in graph order (ONNX nodes are topologically sorted) with
   ``--check``'s rule (floats: ``|dlc - ort| <= atol + rtol * |ort|``, NaN equal to NaN;
   other types exactly). The first node with a diverging output is named with its max
   abs / rel error; its inputs were all compared before it (or are graph inputs and
   initializers), which is what makes it the culprit.

An exposed value is read twice (by its consumer and by the return), so fuse-ops
cannot fuse across it: a bug that only shows inside a fused kernel does not show in
the exposed model. So when every exposed value matches, the model is also compiled as
it is and its outputs are compared: if they differ, bisect says so (exit status 1),
naming the error as one inside a fused kernel.

Named numeric_bisect, not bisect: ``python tools/dlc_cli.py`` puts tools/ on sys.path,
where a bisect.py would shadow the standard library's.

PyTorch models, two ways (``test/python/test_bisect.py`` does both):

* a ``torch.export.save``d ``.pt2``: the program is decomposed as dlc's torch frontend
  does (``run_decompositions({})``), every tensor an FX node computes becomes a user
  output, dlc imports and compiles that program and torch runs the same graph as the
  reference; nodes are named by FX name and source line (``conv2d (model.py:12)``);
* ``torch.onnx.export(model, args, "m.onnx", dynamo=False)``, then bisect the .onnx
  (dlc's ONNX path against onnxruntime; node names are the exporter's).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

from dlc.diagnostics import DiagnosticError

# table rows shown around the first divergence
CONTEXT_ROWS = 3


@dataclass
class ValueResult:
    """One compared value: the node producing it and its errors."""

    node_index: int
    node: str  # the node's name, or "#index"
    op_type: str
    value: str
    shape: tuple[int, ...]
    max_abs: float
    max_rel: float
    ok: bool
    problem: str = ""  # a shape or dtype mismatch, in words


@dataclass
class Step:
    """One node of the source graph, in topological order: what it reads and makes."""

    label: str  # the name the user finds it by
    op_type: str
    outputs: list[str]
    inputs: list[str]


@dataclass
class BisectReport:
    compared: list[ValueResult]
    not_compared: list[str]  # intermediate values that could not be exposed
    # when nothing diverged: the model compiled as it is (fused) vs onnxruntime
    fused_outputs: list[ValueResult] = field(default_factory=list)
    # the node's input names -> how we know they match ("compared", "graph input", ...)
    culprit_inputs: dict[str, str] = field(default_factory=dict)

    @property
    def first_divergence(self) -> ValueResult | None:
        return next((r for r in self.compared if not r.ok), None)


# ---------------------------------------------------------------------------
# exposing intermediate values
# ---------------------------------------------------------------------------


def node_label(node, index: int) -> str:
    """How dlc's importer names a node in its errors: its name, or '#index'."""
    return node.name or f"#{index}"


def expose_intermediates(model) -> tuple[object, list[str]]:
    """A copy of ``model`` with every exposable intermediate value as an extra graph
    output; returns (copy, names of the values that could not be exposed)."""
    import onnx

    try:
        inferred = onnx.shape_inference.infer_shapes(model)
    except Exception as err:  # onnx raises InferenceError, ValidationError, RuntimeError...
        raise DiagnosticError(f"--bisect: onnx shape inference failed: {_first_line(err)}") from None
    graph = inferred.graph
    typed = {vi.name: vi for vi in graph.value_info}
    read = {name for node in graph.node for name in node.input if name}
    outputs = {vi.name for vi in graph.output}
    exposed, skipped = [], []
    for node in graph.node:
        for name in node.output:
            if not name or name in outputs or name not in read:
                continue  # an omitted or unused output (Dropout's mask) or already an output
            vi = typed.get(name)
            if vi is None or vi.type.WhichOneof("value") != "tensor_type" or not vi.type.tensor_type.elem_type:
                skipped.append(name)
                continue
            exposed.append(vi)
    copy = onnx.ModelProto()
    copy.CopyFrom(model)
    copy.graph.output.extend(exposed)
    return copy, skipped


# ---------------------------------------------------------------------------
# running both engines
# ---------------------------------------------------------------------------


def run_onnxruntime(model, feeds: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Every graph output of ``model`` by name, computed by onnxruntime (the reference)."""
    try:
        import onnxruntime as ort
    except ImportError:
        raise DiagnosticError("--bisect needs onnxruntime as the reference (pip install onnxruntime)") from None
    try:
        options = ort.SessionOptions()
        options.log_severity_level = 3  # errors only: no notes on unused initializers
        session = ort.InferenceSession(model.SerializeToString(), options, providers=["CPUExecutionProvider"])
        names = [o.name for o in session.get_outputs()]
        return dict(zip(names, (np.asarray(v) for v in session.run(names, feeds))))
    except Exception as err:  # onnxruntime's own exception types (Fail, InvalidGraph, ...)
        raise DiagnosticError(f"onnxruntime: {_first_line(err)}") from None


def compare_value(got: np.ndarray, want: np.ndarray, rtol: float, atol: float) -> tuple[float, float, bool, str]:
    """(max abs err, max rel err, ok, problem): ``dlc run --check``'s rule."""
    got, want = np.asarray(got), np.asarray(want)
    if got.shape != want.shape:
        return float("inf"), float("inf"), False, f"shape {got.shape}, onnxruntime {want.shape}"
    if got.size == 0:
        return 0.0, 0.0, True, ""
    g, w = got.astype(np.float64), want.astype(np.float64)
    both_nan = np.isnan(g) & np.isnan(w)
    with np.errstate(invalid="ignore"):
        abs_err = np.where(both_nan, 0.0, np.abs(g - w))
    abs_err = np.where(np.isnan(abs_err), np.inf, abs_err)  # NaN on one side only
    rel = abs_err / np.maximum(np.abs(w), 1e-30)
    max_abs, max_rel = float(abs_err.max()), float(np.nanmax(rel))
    if got.dtype.kind == "f" or want.dtype.kind == "f":
        ok = bool(np.all(abs_err <= atol + rtol * np.abs(np.nan_to_num(w))))
    else:
        ok = bool(np.array_equal(g, w))
    return max_abs, max_rel, ok, ""


def bisect_model(path: str, make_inputs: Callable[[list], list[np.ndarray]],
                 rtol: float, atol: float, compile_fn: Callable | None = None) -> BisectReport:
    """Compile ``path`` with its intermediates exposed, run it and onnxruntime on
    ``make_inputs(dlc_input_specs)`` and compare every value in graph order."""
    import onnx

    if not os.path.exists(path):
        raise DiagnosticError(f"cannot open '{path}': no such file")
    try:
        model = onnx.load(path)
    except Exception as err:  # protobuf's DecodeError and friends
        raise DiagnosticError(f"cannot read '{path}' as an ONNX model: {_first_line(err)}") from None
    exposed, skipped = expose_intermediates(model)
    if compile_fn is None:
        from dlc.driver import compile as compile_fn
    compiled = compile_fn(exposed)
    inputs = make_inputs(list(compiled.input_specs))
    got = dict(zip((name for name, _, _ in compiled.output_specs), compiled(*inputs)))
    feeds = {name: array for (name, _, _), array in zip(compiled.input_specs, inputs)}
    want = run_onnxruntime(exposed, feeds)
    steps, sources = onnx_steps(exposed.graph)
    report = compare_in_order(steps, sources, got, want, rtol, atol, skipped)
    if report.first_divergence is None:  # a bug inside a fused kernel shows only here
        original = compile_fn(model)
        fused = dict(zip((name for name, _, _ in original.output_specs), original(*inputs)))
        report.fused_outputs = compare_in_order(steps, sources, fused, want, rtol, atol).compared
    return report


def onnx_steps(graph) -> tuple[list[Step], dict[str, str]]:
    """The nodes of an ONNX graph as steps, and its graph inputs and initializers."""
    steps = [Step(node_label(n, i), n.op_type, list(n.output), [x for x in n.input if x])
             for i, n in enumerate(graph.node)]
    sources = {vi.name: "graph input" for vi in graph.input}
    sources.update({t.name: "initializer" for t in graph.initializer})
    return steps, sources


def compare_in_order(steps: Sequence[Step], sources: dict[str, str], got: dict[str, np.ndarray],
                     want: dict[str, np.ndarray], rtol: float, atol: float,
                     skipped: Sequence[str] = ()) -> BisectReport:
    """Compare each step's outputs present in both ``got`` and ``want``, steps in order;
    ``sources``: values that are inputs of the whole graph (name -> what they are)."""
    report = BisectReport([], list(skipped))
    for index, step in enumerate(steps):
        for name in step.outputs:
            if name not in got or name not in want:
                continue
            max_abs, max_rel, ok, problem = compare_value(got[name], want[name], rtol, atol)
            report.compared.append(ValueResult(index, step.label, step.op_type, name,
                                               tuple(np.shape(want[name])), max_abs, max_rel, ok, problem))
    bad = report.first_divergence
    if bad is not None:
        matched = {r.value for r in report.compared if r.ok}
        for name in steps[bad.node_index].inputs:
            if name in sources:
                report.culprit_inputs[name] = sources[name]
            elif name in matched:
                report.culprit_inputs[name] = "compared: match"
            elif name in report.not_compared:
                report.culprit_inputs[name] = "not exposed"
            else:  # a Constant node's output (folded by dlc, exposed as a constant)
                report.culprit_inputs[name] = "not compared"
    return report


# ---------------------------------------------------------------------------
# torch.export programs (.pt2): torch itself is the reference
# ---------------------------------------------------------------------------


def expose_fx_values(ep):
    """``ep`` (decomposed as dlc's importer does) with every tensor an FX node computes
    as an extra user output; returns (program, steps, sources)."""
    import torch
    import torch.utils._pytree as pytree
    from torch.export.graph_signature import InputKind, OutputKind, OutputSpec, TensorArgument

    from dlc.frontends.torch.importer import op_name, source_location

    graph = ep.graph_module.graph
    output = next(n for n in graph.nodes if n.op == "output")
    old = list(output.args[0]) if isinstance(output.args[0], (list, tuple)) else [output.args[0]]
    computed = [n for n in graph.nodes
                if n.op == "call_function" and isinstance(n.meta.get("val"), torch.Tensor)]
    extra = [n for n in computed if n not in old]
    output.args = (tuple(old + extra),)
    ep.graph_signature.output_specs.extend(
        OutputSpec(kind=OutputKind.USER_OUTPUT, arg=TensorArgument(name=n.name), target=None) for n in extra)
    ep.graph_module.recompile()
    ep.module_call_graph[0].signature.out_spec = pytree.tree_flatten(tuple(range(len(old) + len(extra))))[1]

    def label(node) -> str:
        where = source_location(node)  # "node 'x'" without a stack trace
        return node.name if where.startswith("node '") else f"{node.name} ({where})"

    steps = [Step(label(n), op_name(n.target), [n.name], [i.name for i in n.all_input_nodes]) for n in computed]
    kinds = {s.arg.name: s.kind for s in ep.graph_signature.input_specs}
    sources = {name: "graph input" if kind == InputKind.USER_INPUT else kind.name.lower().replace("_", " ")
               for name, kind in kinds.items()}
    return ep, steps, sources


def run_fx(ep, inputs: list[np.ndarray]) -> dict[str, np.ndarray]:
    """Every output of ``ep``'s graph by FX name, computed by torch (the reference)."""
    import torch
    from torch.export.graph_signature import InputKind

    user = iter(inputs)
    flat = []
    for spec in ep.graph_signature.input_specs:
        if spec.kind == InputKind.USER_INPUT:
            flat.append(torch.from_numpy(np.ascontiguousarray(next(user))))
        else:
            flat.append(ep.state_dict[spec.target] if spec.target in ep.state_dict else ep.constants[spec.target])
    with torch.no_grad():
        outs = ep.graph_module(*flat)
    output = next(n for n in ep.graph_module.graph.nodes if n.op == "output")
    names = [n.name if hasattr(n, "name") else f"output{i}" for i, n in enumerate(output.args[0])]
    return {name: o.detach().numpy() for name, o in zip(names, outs) if isinstance(o, torch.Tensor)}


def bisect_exported_program(path: str, make_inputs: Callable[[list], list[np.ndarray]],
                            rtol: float, atol: float, compile_fn: Callable) -> BisectReport:
    """``bisect_model`` for a ``torch.export.save``d program: dlc's torch frontend
    against torch running the same decomposed graph."""
    import warnings

    try:
        import torch
    except ImportError:
        raise DiagnosticError("--bisect on a .pt2 needs torch (pip install torch)") from None
    from dlc.frontends.torch import TorchImportError, from_exported_program

    if not os.path.exists(path):
        raise DiagnosticError(f"cannot open '{path}': no such file")
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", FutureWarning)
            ep = torch.export.load(path).run_decompositions({})  # what dlc's importer runs
    except Exception as err:  # torch's own errors: one line
        raise DiagnosticError(f"'{path}': not a torch.export program ({_first_line(err)})") from None
    ep, steps, sources = expose_fx_values(ep)
    try:
        module = from_exported_program(ep, functionalize=False)
    except TorchImportError as err:
        raise DiagnosticError(str(err)) from None
    compiled = compile_fn(module)
    inputs = make_inputs(list(compiled.input_specs))
    got = dict(zip((name for name, _, _ in compiled.output_specs), compiled(*inputs)))
    want = run_fx(ep, inputs)
    report = compare_in_order(steps, sources, got, want, rtol, atol)
    if report.first_divergence is None:  # the program as it is, fused
        original = compile_fn(path)
        fused = dict(zip((name for name, _, _ in original.output_specs), original(*inputs)))
        report.fused_outputs = compare_in_order(steps, sources, fused, want, rtol, atol).compared
    return report


# ---------------------------------------------------------------------------
# the report
# ---------------------------------------------------------------------------


def summary_line(report: BisectReport, rtol: float, atol: float) -> str:
    bad = report.first_divergence
    if bad is None:
        return f"bisect: no divergence ({len(report.compared)} values compared)"
    why = bad.problem or f"max abs err {bad.max_abs:.3g}, max rel err {bad.max_rel:.3g} (rtol {rtol:g}, atol {atol:g})"
    inputs = report.culprit_inputs
    unmatched = [n for n, s in inputs.items() if s in ("not exposed", "not compared")]
    if not inputs:
        said = "it has no inputs"
    elif not unmatched:
        said = "its inputs already match (" + ", ".join(f"'{n}': {s}" for n, s in inputs.items()) + ")"
    else:
        said = "its other inputs match; " + ", ".join(f"'{n}'" for n in unmatched) + " could not be compared"
    return (f"bisect: first divergence at node '{bad.node}' ({bad.op_type}), output '{bad.value}': "
            f"{why}; {said}")


def table_lines(report: BisectReport) -> list[str]:
    """The compared values around the first divergence (or all, when few)."""
    rows = report.compared
    bad = report.first_divergence
    if bad is None:
        return []
    at = rows.index(bad)
    lo, hi = max(0, at - CONTEXT_ROWS), min(len(rows), at + CONTEXT_ROWS + 1)
    cells = [("#", "node", "op", "output", "shape", "max abs", "max rel", "")]
    for r in rows[lo:hi]:
        mark = "FIRST DIVERGENCE" if r is bad else ("ok" if r.ok else "differs")
        cells.append((str(r.node_index), r.node, r.op_type, r.value, "x".join(map(str, r.shape)) or "scalar",
                      f"{r.max_abs:.3g}", f"{r.max_rel:.3g}", mark))
    widths = [max(len(c[i]) for c in cells) for i in range(len(cells[0]))]
    lines = ["  " + "  ".join(c.ljust(w) for c, w in zip(row, widths)).rstrip() for row in cells]
    if lo > 0:
        lines.insert(1, f"  ... {lo} matching values before")
    if hi < len(rows):
        lines.append(f"  ... {len(rows) - hi} more values")
    return lines


def print_report(report: BisectReport, rtol: float, atol: float) -> int:
    """Print the summary (and the table on divergence); the exit code: 0 or 1."""
    print(summary_line(report, rtol, atol))
    for line in table_lines(report):
        print(line)
    if report.not_compared:
        names = ", ".join(f"'{n}'" for n in report.not_compared[:5])
        more = f" and {len(report.not_compared) - 5} more" if len(report.not_compared) > 5 else ""
        print(f"bisect: {len(report.not_compared)} values not compared (no tensor type from onnx "
              f"shape inference): {names}{more}")
    bad = next((r for r in report.fused_outputs if not r.ok), None)
    if bad is not None:
        why = bad.problem or f"max abs err {bad.max_abs:.3g}, max rel err {bad.max_rel:.3g}"
        print(f"bisect: but the model compiled as it is (fused) differs from onnxruntime at output "
              f"'{bad.value}' of node '{bad.node}' ({bad.op_type}): {why}; the error is inside a fused "
              "kernel (exposing the values splits the groups)")
        return 1
    return 0 if report.first_divergence is None else 1


def _first_line(err: BaseException) -> str:
    return (str(err).strip().splitlines() or [type(err).__name__])[0]


def bisect_command(args) -> int:
    """``dlc run MODEL --bisect`` (args of dlc_cli's ``run``): compile with dlc.compile,
    inputs as ``dlc run`` makes them (``--input``, else seeded random)."""
    from dlc.tools import dlc_cli

    kind = dlc_cli._kind(args.model)
    if kind not in ("onnx", "pt2"):
        raise DiagnosticError(f"--bisect compares against onnxruntime (.onnx) or torch (.pt2), "
                              f"got '{args.model}'")
    if args.check or args.expect or args.output:
        raise DiagnosticError("--bisect runs alone: drop --check, --expect and --output")
    driver = dlc_cli._driver()

    def compile_fn(model):
        return dlc_cli._guard(f"compiling '{args.model}'", driver.compile, model,
                              target=args.target, num_threads=args.threads)

    bisect = bisect_model if kind == "onnx" else bisect_exported_program
    report = bisect(args.model, lambda specs: dlc_cli.load_inputs(specs, args.input, args.seed),
                    args.rtol, args.atol, compile_fn)
    return print_report(report, args.rtol, args.atol)
