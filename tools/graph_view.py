"""`dlc view model.onnx|model.mlir -o graph.html`: the graph after the graph passes, in a browser.

The page is one self-contained HTML file (it loads nothing at view time): the graph
as JSON, the layout library and our drawing code (``tools/graph_view.js``) inlined.
It shows

* every graph op after ``driver.graph_passes()`` (legalize ... alter-op-layout,
  fuse-ops: what lower-to-loops turns into kernels) as a box; constants and weights
  are no boxes, they are listed in the IR text of the op that reads them;
* each fused group (``dlc.group``, lowering/fused.py) as a box around its members,
  labelled with the kernel it becomes;
* on each edge the value's shape and element type, and its layout where it is a
  blocked one (NCHW16c ...: layout_transform results and what the ``*_nchwc`` ops
  and the layout-free ops after them produce);
* with ``--profile trace.json``, each kernel's time as a colour (white to red) and in
  its label;
* a click on an op shows its IR text (and the constants it reads) beside the graph;
  ``graph.html#main.op20`` opens at the op with that id. Control-flow ops (graph.if,
  loop, scan) are one box each, their bodies in their IR text.

Kernel names: the view runs lower-to-loops' bufferization (``bufferize_function``)
with a kernel cache that records which kernel symbol each op or group gets, so names
are exactly those of the compiled code (``main_12_conv2d_nchwc_add_relu``); identical
ops share one kernel, as in the compiled code.

The profile (the coupling with ``dlc run --profile``, kept to this): a Chrome trace
JSON file, a list of events or an object with ``traceEvents``; every complete event
(``"ph": "X"``) whose ``name`` is a kernel symbol of this graph adds its ``dur``
(microseconds) to that kernel. Other events are counted and ignored. A kernel shared
by several ops has its time split evenly between them.

Why dagre (``@dagrejs/dagre`` 3.1.3 from npm, MIT; ``tools/vendor/dagre.min.js`` with
its license files beside it): it is the layered (Sugiyama) layout that graph viewers
of this kind use, is maintained, is 49 kB minified (graphlib bundled: the resnet50
page is a few hundred kB), and it lays out compound graphs, which is what fused groups
as boxes need. Python layout packages (grandalf) have no clusters; elkjs is 1.5 MB.
The layout runs in the browser when the page opens (about a second for resnet50).
"""

from __future__ import annotations

import io
import json
import os
import re
from collections import Counter

from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp, TensorType
from xdsl.ir import OpResult
from xdsl.traits import ConstantLike

from dlc.diagnostics import DiagnosticError, write_atomically

HERE = os.path.dirname(os.path.abspath(__file__))
VENDOR_JS = os.path.join(HERE, "vendor", "dagre.min.js")
PAGE_JS = os.path.join(HERE, "graph_view.js")
ELIDE = 16  # constants with more elements print as dense_resource<__elided__>


# ---------------------------------------------------------------------------
# the graph after the passes
# ---------------------------------------------------------------------------


def load_graph(path: str, layout: str | None = None) -> ModuleOp:
    """``path`` (.onnx or graph-level .mlir) after the CPU graph passes."""
    from dlc import driver
    from dlc.tools import dlc_cli

    kind = dlc_cli._kind(path)
    if kind not in ("onnx", "mlir"):
        raise DiagnosticError(f"dlc view shows .onnx and graph-level .mlir models, got '{path}'")
    if not os.path.exists(path):
        raise DiagnosticError(f"cannot open '{path}': no such file")
    module = dlc_cli.parse_mlir(path) if kind == "mlir" else dlc_cli._guard(
        f"importing '{path}'", driver.load_module, path)
    if driver._level(module) != "graph":
        raise DiagnosticError(f"'{path}' holds {driver._level(module)}-level IR; dlc view shows graph-level IR")
    for spec in driver.graph_passes(layout):
        dlc_cli._guard(f"'{path}'", driver.run_pass, spec, module)
    return module


def graph_functions(module: ModuleOp) -> list[func.FuncOp]:
    return [op for op in module.ops if isinstance(op, func.FuncOp) and not op.is_declaration]


def kernel_symbols(module: ModuleOp) -> dict[object, str]:
    """op -> the symbol of the kernel lower-to-loops calls for it (for a fused group:
    each member -> the group's kernel). Ops that get no kernel (views, constants,
    control flow) are absent."""
    from dlc.lowering.bufferize import bufferize_function
    from dlc.lowering.kernels.forms import KernelOptions
    from dlc.lowering.lower_to_loops import KernelCache, check_lowerable, is_graph_function
    from dlc.weights import store_of

    record: dict[object, str] = {}

    class Recording(KernelCache):
        def kernel_for(self, op, name):
            symbol = super().kernel_for(op, name)
            for member in op if isinstance(op, list) else [op]:
                record[member] = symbol
            return symbol

    cache = Recording(KernelOptions(flat_conv=True))  # dlc.compile's options
    functions = [op for op in module.ops if is_graph_function(op)]
    for fn in functions:
        check_lowerable(fn)
        cache.reserve(fn.sym_name.data)
    store = store_of(module)
    for fn in functions:  # builds host functions and kernels we drop; fn is unchanged
        bufferize_function(fn, store, cache.kernel_for, cache.copy_kernel_for, True, cache.helper_kernel_for)
    return record


def value_layouts(fn: func.FuncOp) -> dict[object, str]:
    """SSA value -> its blocked layout name (NCHW16c), where it has one."""
    layouts: dict[object, str] = {}
    for op in fn.body.block.ops:
        for res in op.results:
            if not isinstance(res.type, TensorType):
                continue
            shape = res.type.get_shape()
            if op.name == "graph.layout_transform":
                layouts[res] = op.attributes["dst"].data
            elif op.name.endswith("_nchwc") and len(shape) == 5:
                layouts[res] = f"NCHW{shape[-1]}c"
            elif op.operands and op.operands[0] in layouts and len(op.operands[0].type.get_shape()) == len(shape):
                layouts[res] = f"NCHW{shape[-1]}c"  # pad, layout-free elementwise ops, concat, pools
    return layouts


def _type_label(t) -> str:
    if isinstance(t, TensorType):
        return "x".join(str(d) for d in t.get_shape()) + ("x" if t.get_shape() else "") + str(t.element_type)
    return str(t)


def _op_texts(module: ModuleOp) -> dict[object, str]:
    """Each op's IR text, SSA names as in the printed function, big constants elided."""
    from dlc.tools.printing import ElidingPrinter

    printer = ElidingPrinter(stream=io.StringIO(), elide_limit=ELIDE)
    printer.print_op(module)  # assigns the SSA names every op text below uses
    texts = {}
    for fn in graph_functions(module):
        for op in fn.body.block.ops:
            printer.stream = io.StringIO()
            printer.print_op(op)
            texts[op] = printer.stream.getvalue()
    return texts


# ---------------------------------------------------------------------------
# the page's data
# ---------------------------------------------------------------------------


def graph_data(module: ModuleOp, title: str, profile: dict[str, float] | None = None) -> dict:
    """What the page draws: nodes, clusters, edges (JSON-able)."""
    from dlc.lowering.fused import fused_groups

    kernels = kernel_symbols(module)
    texts = _op_texts(module)
    users = Counter(kernels.values())  # kernel -> ops calling it (a group counts per member)
    nodes, edges, clusters = [], [], []
    functions = graph_functions(module)
    for f_index, fn in enumerate(functions):
        fname = fn.sym_name.data
        outer = None
        if len(functions) > 1:
            outer = f"f{f_index}"
            clusters.append({"id": outer, "label": f"@{fname}", "kind": "function"})
        layouts = value_layouts(fn)
        source: dict[object, str] = {}  # value -> node id drawing it
        block = fn.body.block
        names = fn.arg_attrs.data if fn.arg_attrs is not None else []
        for i, arg in enumerate(block.args):
            nid = f"{fname}.in{i}"
            label = _dlc_name(names, i) or arg.name_hint or f"arg{i}"
            nodes.append({"id": nid, "kind": "input", "label": label, "sub": _type_label(arg.type),
                          "parent": outer, "ir": f"%arg {label}: {arg.type}"})
            source[arg] = nid
        ops = [op for op in block.ops if op is not block.last_op]
        groups = fused_groups(ops)
        group_ids: dict[int, str] = {}
        for j, op in enumerate(ops):
            if op.has_trait(ConstantLike):
                continue
            nid = f"{fname}.op{j}"
            parent = outer
            if op in groups:
                members = groups[op]
                key = id(members)
                if key not in group_ids:
                    group_ids[key] = f"{fname}.g{len(group_ids)}"
                    kernel = kernels.get(members[-1])
                    clusters.append({"id": group_ids[key], "parent": outer, "kind": "group",
                                     "label": f"fused: {kernel}", "kernel": kernel,
                                     "members": len(members),
                                     "ir": "\n".join(texts[m] for m in members) + f"\n\n// kernel @{kernel}"})
                parent = group_ids[key]
            consts = [texts[v.owner] for v in op.operands if v.owner in texts and v.owner.has_trait(ConstantLike)]
            kernel = kernels.get(op)
            node = {"id": nid, "kind": "op", "label": op.name.split(".", 1)[-1], "parent": parent,
                    "sub": _weights_label(op), "kernel": kernel if op not in groups else None,
                    "ir": "\n".join(consts + [texts[op]])}
            if kernel:
                node["ir"] += f"\n\n// {'fused into ' if op in groups else ''}kernel @{kernel}"
            nodes.append(node)
            for v in op.operands:
                if v in source:
                    edges.append(_edge(source[v], nid, v, layouts))
            for r in op.results:
                source[r] = nid
        for k, v in enumerate(block.last_op.operands):
            nid = f"{fname}.out{k}"
            label = _dlc_name(fn.res_attrs.data if fn.res_attrs is not None else [], k) or f"result{k}"
            nodes.append({"id": nid, "kind": "output", "label": label, "sub": _type_label(v.type),
                          "parent": outer, "ir": f"return {label}: {v.type}"})
            if v in source:
                edges.append(_edge(source[v], nid, v, layouts))
    data = {"title": title, "nodes": nodes, "edges": edges, "clusters": clusters,
            "op_count": sum(n["kind"] == "op" for n in nodes)}
    if profile is not None:
        data["profile"] = _profile_data(profile, nodes, clusters, users)
    return data


def _weights_label(op) -> str:
    """The shapes of the weights an op reads (its edges show the rest)."""
    shapes = [_type_label(v.type) for v in op.operands if isinstance(v, OpResult) and v.owner.name == "graph.weight"]
    return ("w " + ", ".join(shapes)) if shapes else ""


def _edge(src: str, dst: str, value, layouts) -> dict:
    label = _type_label(value.type)
    if value in layouts:
        label += f" {layouts[value]}"
    return {"from": src, "to": dst, "label": label}


def _dlc_name(attrs, index: int) -> str | None:
    if index >= len(attrs):
        return None
    name = attrs[index].data.get("dlc.name")
    return getattr(name, "data", None)


# ---------------------------------------------------------------------------
# profiles
# ---------------------------------------------------------------------------


def read_profile(path: str) -> tuple[dict[str, float], int]:
    """Chrome trace -> (kernel name -> total microseconds, events skipped)."""
    try:
        with open(path) as f:
            trace = json.load(f)
    except FileNotFoundError:
        raise DiagnosticError(f"cannot open '{path}': no such file") from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as err:
        raise DiagnosticError(f"cannot read '{path}' as a Chrome trace (JSON): {err}") from None
    events = trace.get("traceEvents") if isinstance(trace, dict) else trace
    if not isinstance(events, list):
        raise DiagnosticError(f"'{path}': not a Chrome trace (expected a list of events or "
                              "an object with 'traceEvents')")
    totals: dict[str, float] = {}
    skipped = 0
    for event in events:
        if not (isinstance(event, dict) and event.get("ph") == "X" and isinstance(event.get("name"), str)
                and isinstance(event.get("dur"), (int, float))):
            skipped += 1
            continue
        totals[event["name"]] = totals.get(event["name"], 0.0) + float(event["dur"])
    return totals, skipped


def _profile_data(profile: dict[str, float], nodes, clusters, users: Counter) -> dict:
    """Each timed unit's microseconds: op nodes by their kernel, groups by theirs."""
    times: dict[str, float] = {}
    units = [(n["id"], n.get("kernel")) for n in nodes] + [(c["id"], c.get("kernel")) for c in clusters]
    for uid, kernel in units:
        if kernel and kernel in profile:
            members = next((c["members"] for c in clusters if c["id"] == uid), 1)
            times[uid] = profile[kernel] * members / users[kernel]
    known = {k for _, k in units if k}
    return {"times": times, "total_us": sum(profile.values()),
            "matched_us": sum(v for k, v in profile.items() if k in known),
            "unmatched": sorted(k for k in profile if k not in known)[:20]}


# ---------------------------------------------------------------------------
# the page
# ---------------------------------------------------------------------------


def _read(path: str) -> str:
    with open(path, encoding="utf-8") as f:
        return f.read()


def render_html(data: dict) -> str:
    """The self-contained page of ``data`` (``graph_data``)."""
    vendor = re.sub(r"//# sourceMappingURL=\S+\s*$", "", _read(VENDOR_JS))  # nothing to fetch
    payload = json.dumps(data, separators=(",", ":")).replace("</", "<\\/")
    title = data["title"].replace("&", "&amp;").replace("<", "&lt;")
    return (
        "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\">\n"
        f"<title>dlc view: {title}</title>\n<style>{PAGE_CSS}</style></head>\n<body>\n"
        f"<div id=\"bar\"><b>{title}</b> <span id=\"stats\"></span> <span id=\"legend\"></span></div>\n"
        "<div id=\"main\"><svg id=\"graph\" xmlns=\"http://www.w3.org/2000/svg\"></svg>"
        "<pre id=\"ir\">click an op or a fused group to see its IR "
        "(page.html#ID opens at the op with id ID)</pre></div>\n"
        "<script>/* @dagrejs/dagre 3.1.3 (MIT), see tools/vendor/ */\n" + vendor + "\n</script>\n"
        f"<script type=\"application/json\" id=\"dlc-graph\">{payload}</script>\n"
        "<script>\n" + _read(PAGE_JS) + "\n</script>\n</body></html>\n"
    )


PAGE_CSS = """
body{margin:0;font:12px sans-serif;display:flex;flex-direction:column;height:100vh}
#bar{padding:6px 10px;border-bottom:1px solid #ccc;background:#fafafa}
#main{flex:1;display:flex;min-height:0}
#graph{flex:1;min-width:0;cursor:grab;background:#fff}
#ir{width:30%;margin:0;padding:8px;overflow:auto;border-left:1px solid #ccc;background:#f7f7f7;
    font:11px monospace;white-space:pre-wrap;word-break:break-all}
.node rect{stroke:#555;stroke-width:1}
.node.op rect{fill:#eef3fb}.node.input rect,.node.output rect{fill:#e8f5e9}
.node.selected rect{stroke:#d00;stroke-width:2.5}
.node text{font:11px monospace;pointer-events:none}
.cluster rect{fill:#fff7d6;stroke:#c9a227;stroke-dasharray:4 2}
.cluster.function>rect{fill:none;stroke:#888}
.cluster text{font:10px monospace;fill:#7a5d00}
.edge path{fill:none;stroke:#888;stroke-width:1}
.edge text{font:9px monospace;fill:#555}
"""


def view_command(args) -> int:
    """``dlc view MODEL -o PAGE [--profile TRACE] [--layout L]``."""
    profile = None
    note = ""
    if args.profile:
        profile, skipped = read_profile(args.profile)
        note = f", profile {args.profile} ({len(profile)} kernels, {skipped} other events)"
    module = load_graph(args.model, getattr(args, "layout", None))
    from dlc.tools.dlc_cli import _guard

    data = _guard(f"'{args.model}'", graph_data, module, os.path.basename(args.model), profile)
    write_atomically(args.output, render_html(data))  # one-line error on failure, no partial page
    print(f"wrote {args.output}: {data['op_count']} ops, "
          f"{sum(c['kind'] == 'group' for c in data['clusters'])} fused groups{note}")
    return 0
