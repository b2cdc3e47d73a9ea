"""Imports point down: a module may import its own layer or a lower one, never a higher one.

This file is THE layer table of dlc (docs/architecture.md names it). Layers, top to bottom:

    tools       the user-facing entry points: tools/ (dlc, dlc-opt, dlc-translate), tune/ (auto-tuning), driver.py
                (`dlc.compile`, which strings the whole pipeline together), the package
                __init__.py (lazy `dlc.compile`), te.py (`dlc.te.compile` over frontends/te) and
                onnx_backend.py (onnx's backend API, as `onnxruntime.backend`), quantization/
                (`dlc.quantize`: calibration compiles the model with driver.py)
    frontends / backends / runtime
                sources -> graph IR (frontends/), loop IR -> machine code (backends/, which
                own their target-specific lowering such as backends/cuda/lower_to_gpu.py),
                the numpy + ctypes runtime of exported libraries (runtime/) and remote execution
                over it (rpc/: server, worker, client, tracker; numpy + dlc.runtime, no xDSL)
    lowering / transforms
                graph passes (transforms/), graph -> loops -> llvm (lowering/), the BYOC
                registries, patterns and codegen driver (byoc/: the passes use them; codegens
                in backends/ register into them and are imported by name), the pass
                registry (passes.py: it names passes of every layer by string and loads them
                lazily; that is registration, not an import) and the reference evaluator
                (evaluator.py: the numpy engine of fold-constant, over the dialects' ops)
    dialects    the IR: dialects/ (graph, tloop) and context.py (`make_context`, the one place
                that knows every dialect, so it sits on top of them)
    core        what every layer uses: diagnostics.py, output_files.py, registry.py, weights.py, target.py

Same-layer imports are fine. Every import counts, also the ones inside functions (a lazy
import is still a dependency; it only moves the cost). bench/, conformance/, examples/,
docs/ and test/ are outside the package layers and are not checked. Only `import` statements
are checked (parsed with `ast`, nothing is executed).
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]  # the repository root is the `dlc` package
PACKAGE = "dlc"

# (layer, paths relative to the root: a folder ends in "/"). Index 0 is the top.
LAYERS: list[tuple[str, tuple[str, ...]]] = [
    ("tools", ("tools/", "tune/", "quantization/", "driver.py", "__init__.py", "te.py", "onnx_backend.py")),
    ("frontends/backends/runtime", ("frontends/", "backends/", "runtime/", "rpc/")),
    ("lowering/transforms", ("lowering/", "transforms/", "byoc/", "passes.py", "evaluator.py")),
    ("dialects", ("dialects/", "context.py")),
    ("core", ("diagnostics.py", "output_files.py", "registry.py", "weights.py", "target.py")),
]
OUTSIDE = ("bench/", "conformance/", "examples/", "docs/", "test/", "quickstart/")

# Upward imports allowed on purpose, each with its reason: (importing file, imported
# package or module; its submodules match too). None today. An entry that no longer
# matches anything fails test_exceptions_are_still_needed, so the list cannot go stale.
EXCEPTIONS: set[tuple[str, str]] = set()


def layer_of_path(rel: str) -> int | None:
    """Index of the layer holding the file at ``rel``; None for files outside the layers."""
    if rel.startswith(OUTSIDE):
        return None
    best: tuple[int, int] | None = None  # (prefix length, layer)
    for index, (_, paths) in enumerate(LAYERS):
        for path in paths:
            hit = rel.startswith(path) if path.endswith("/") else rel == path
            if hit and (best is None or len(path) > best[0]):
                best = (len(path), index)
    return None if best is None else best[1]


def module_files() -> list[str]:
    files = []
    for path in sorted(ROOT.rglob("*.py")):
        rel = path.relative_to(ROOT).as_posix()
        if rel.startswith(OUTSIDE) or any(part.startswith(".") for part in path.relative_to(ROOT).parts):
            continue
        if "/" in rel and not (ROOT / rel.split("/")[0] / "__init__.py").exists():
            continue  # a folder that is no subpackage (build outputs, virtual environments)
        files.append(rel)
    return files


def module_name(rel: str) -> str:
    parts = [PACKAGE, *rel[:-3].split("/")]
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def file_of_module(name: str) -> str | None:
    """The file that defines the longest existing prefix of ``dlc.a.b.c`` (a module or package)."""
    parts = name.split(".")[1:]
    while parts:
        base = "/".join(parts)
        for candidate in (f"{base}.py", f"{base}/__init__.py"):
            if (ROOT / candidate).is_file():
                return candidate
        parts.pop()
    return "__init__.py"


def imported_modules(rel: str) -> list[tuple[int, str]]:
    """(line, module) of every dlc import in ``rel``, at any depth (lazy ones too)."""
    tree = ast.parse((ROOT / rel).read_text(), filename=rel)
    here = module_name(rel).split(".")
    if not rel.endswith("__init__.py"):
        here = here[:-1]  # the package a relative import starts from
    out: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out += [(node.lineno, a.name) for a in node.names if a.name.split(".")[0] == PACKAGE]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = ".".join(here[: len(here) - node.level + 1] + ([node.module] if node.module else []))
            else:
                base = node.module or ""
            if base.split(".")[0] != PACKAGE:
                continue
            # `from dlc.x import y` may name a submodule y: then y is the dependency
            for alias in node.names:
                sub = f"{base}.{alias.name}"
                out.append((node.lineno, sub if file_of_module(sub) != file_of_module(base) else base))
    return sorted(set(out))


def upward_imports() -> tuple[list[str], set[tuple[str, str]]]:
    errors: list[str] = []
    excused: set[tuple[str, str]] = set()
    for rel in module_files():
        mine = layer_of_path(rel)
        if mine is None:
            errors.append(f"{rel}: in no layer: add it to LAYERS in test/python/test_layering.py")
            continue
        for line, name in imported_modules(rel):
            target = file_of_module(name)
            theirs = layer_of_path(target) if target else None
            if theirs is None or theirs >= mine:
                continue
            excuse = next((e for e in EXCEPTIONS if e[0] == rel and (name + ".").startswith(e[1] + ".")), None)
            if excuse is not None:
                excused.add(excuse)
                continue
            errors.append(f"{rel}:{line}: imports {name} ({LAYERS[theirs][0]}) from layer {LAYERS[mine][0]}")
    return errors, excused


def test_imports_point_down():
    errors, _ = upward_imports()
    assert not errors, "upward imports:\n  " + "\n  ".join(errors)


def test_exceptions_are_still_needed():
    _, excused = upward_imports()
    stale = sorted(EXCEPTIONS - excused)
    assert not stale, f"EXCEPTIONS entries that no longer occur (remove them): {stale}"


@pytest.mark.parametrize("rel, layer", [
    ("tools/dlc_opt.py", "tools"), ("driver.py", "tools"), ("backends/cuda/ptx.py", "frontends/backends/runtime"),
    ("lowering/schedule/core.py", "lowering/transforms"), ("dialects/tloop.py", "dialects"),
    ("diagnostics.py", "core"), ("bench/models.py", None), ("rpc/server.py", "frontends/backends/runtime"),
])
def test_layer_table(rel, layer):
    index = layer_of_path(rel)
    assert (None if index is None else LAYERS[index][0]) == layer


def cycles_in(folder: str) -> list[list[str]]:
    """Import cycles among the modules of ``folder`` (lazy imports count; __init__ does not)."""
    files = [f for f in module_files() if f.startswith(folder) and not f.endswith("__init__.py")]
    graph = {f: sorted({file_of_module(n) for _, n in imported_modules(f)} & set(files) - {f}) for f in files}
    found, state = [], {}

    def visit(node: str, path: list[str]) -> None:
        state[node] = "open"
        for nxt in graph[node]:
            if state.get(nxt) == "open":
                found.append(path[path.index(nxt):] + [nxt])
            elif nxt not in state:
                visit(nxt, [*path, nxt])
        state[node] = "done"

    for f in files:
        if f not in state:
            visit(f, [f])
    return found


def test_schedule_modules_form_no_cycle():
    """The schedule package is acyclic: the primitives build on loop_nest, Schedule (core.py)
    on them, the form schedules (defaults_*.py) on those, and defaults.py, the entry point,
    on the form schedules (shared constants live below it, in defaults_elementwise.py)."""
    assert cycles_in("lowering/schedule/") == []


def test_schedule_primitives_are_methods_of_the_class():
    """Schedule has its whole API from its class body: nothing assigns attributes onto it."""
    patched = []
    for rel in module_files():
        for node in ast.walk(ast.parse((ROOT / rel).read_text(), filename=rel)):
            if isinstance(node, ast.Assign):
                patched += [f"{rel}:{node.lineno}" for t in node.targets
                            if isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name)
                            and t.value.id == "Schedule"]
    assert patched == []
    from dlc.lowering.schedule.core import Schedule

    primitives = ["split", "tile", "reorder", "fuse", "fuse_siblings", "distribute", "split_range",
                  "parallel", "vectorize", "unroll", "cache_read", "cache_write", "compute_at", "of"]
    assert [p for p in primitives if p not in vars(Schedule)] == []
