"""Parallel LLVM code generation for the export: one module's IR text split into
parts, each optimized and compiled to its own object, the parts at the same time.

Why: LLVM's O3 pipeline and code generation are most of an export's time (ResNet-50:
about 2.7 s of CPU), and every kernel is optimized on its own (no inlining across
kernels: each is called once, through the host function, and runs for microseconds or
more), so the kernels can be compiled side by side. llvmlite serializes all calls into
LLVM behind one lock, so the extra parts run in worker processes
(``codegen_worker.py``, a fresh interpreter with only llvmlite: no fork of a process that
may hold other threads), the first part in this process meanwhile; the objects are
linked together (export.py).

The split (``split_ir``) works on llvmlite's IR text, whose top level is one entity a
line or a ``define ... { ... }`` block:

- functions are grouped so that an internal function (an outlined parallel body) lives
  in the part of every function that refers to it; groups go to parts by the size of
  their text (the largest first, each to the smallest part so far);
- a part declares the functions of other parts it calls (``declare`` with the same
  signature); those are external already (kernels, host functions), so they link;
- mutable internal globals (the thread count, cached workspaces) are defined once, in
  part 0, ``hidden`` (one variable for the whole library, not exported from it), and
  declared ``external hidden`` in the other parts; internal constants are copied into
  every part that uses them (LLVM drops the unused ones); other defined globals
  (``dlc_metadata``) are defined in part 0 and declared where used;
- metadata, attribute groups, declarations and the header are copied into every part.

``parallel_jobs()``: how many parts (``DLC_CODEGEN_JOBS``, else the CPUs this process may
run on); modules under ``MIN_SPLIT_CHARS`` of IR stay whole (a worker's start, about
0.15 s of CPU, would cost more than it saves).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from dataclasses import dataclass, field

from dlc.backends.llvm import codegen_worker

MIN_SPLIT_CHARS = 50_000  # IR text below which one part is faster (ResNet-50: 420k, about 2.7 s of LLVM)

_NAME = re.compile(r'@"([^"]+)"|@([-A-Za-z$._][-\w$.]*)')
_GLOBAL = re.compile(r'^@(?:"(?P<q>[^"]+)"|(?P<n>[-A-Za-z$._][-\w$.]*))\s*=\s*(?P<rest>.*)$')
_LINKAGES = ("private", "internal", "available_externally", "linkonce", "weak", "common", "appending",
             "extern_weak", "linkonce_odr", "weak_odr", "external")


class SplitError(Exception):
    """IR text whose shape the splitter does not know (a dlc bug: translate.py writes it)."""


def parallel_jobs() -> int:
    """Parts an export's code generation may use: env ``DLC_CODEGEN_JOBS`` (an integer >= 1),
    else the CPUs this process may run on."""
    text = os.environ.get("DLC_CODEGEN_JOBS")
    if text is not None:
        try:
            jobs = int(text)
        except ValueError:
            jobs = 0
        if jobs < 1:
            raise SplitError(f"DLC_CODEGEN_JOBS must be an integer >= 1, not '{text}'")
        return jobs
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not Linux
        return max(1, os.cpu_count() or 1)


@dataclass
class _Function:
    name: str
    text: str  # the whole define ... } block
    header: str  # its define line
    internal: bool
    refs: set[str] = field(default_factory=set)


@dataclass
class _Global:
    name: str
    line: str
    linkage: str  # "" (external definition), "internal", "private", "external" (a declaration) ...
    constant: bool
    type_text: str


def _names(text: str) -> set[str]:
    return {q or n for q, n in _NAME.findall(text)}


def _global(line: str) -> _Global:
    match = _GLOBAL.match(line)
    if match is None:
        raise SplitError(f"parallel codegen: cannot read the global '{line[:80]}'")
    name = match["q"] or match["n"]
    words = match["rest"].split(" ")
    linkage = ""
    i = 0
    while i < len(words) and words[i] in (*_LINKAGES, "hidden", "protected", "default", "dso_local",
                                          "unnamed_addr", "local_unnamed_addr", "thread_local"):
        if words[i] in _LINKAGES:
            linkage = words[i]
        i += 1
    if i >= len(words) or words[i] not in ("global", "constant"):
        raise SplitError(f"parallel codegen: cannot read the global '{line[:80]}'")
    constant = words[i] == "constant"
    type_text = _leading_type(" ".join(words[i + 1:]), line)
    return _Global(name, line, linkage, constant, type_text)


def _leading_type(text: str, line: str) -> str:
    """The LLVM type at the start of ``text`` (``[4 x float]``, ``{ptr, i64}``, ``i32``)."""
    if not text:
        raise SplitError(f"parallel codegen: no type in the global '{line[:80]}'")
    if text[0] not in "[{<":
        return text.split(" ", 1)[0]
    depth = 0
    for i, ch in enumerate(text):
        if ch in "[{<":
            depth += 1
        elif ch in "]}>":
            depth -= 1
            if depth == 0:
                return text[:i + 1]
    raise SplitError(f"parallel codegen: unbalanced type in the global '{line[:80]}'")


def _define_linkage(header: str) -> str:
    words = header.split(" ")
    return words[1] if len(words) > 1 and words[1] in _LINKAGES else ""


def _read(text: str):
    """The module's entities: header lines, globals, functions, other top-level lines."""
    lines = text.split("\n")
    head: list[str] = []
    globals_: list[_Global] = []
    functions: list[_Function] = []
    shared: list[str] = []  # declares, metadata, attribute groups: copied into every part
    i = 0
    while i < len(lines):
        line = lines[i]
        if line.startswith("define "):
            end = i
            while end < len(lines) and lines[end] != "}":
                end += 1
            if end == len(lines):
                raise SplitError(f"parallel codegen: no end of the function '{line[:80]}'")
            block = "\n".join(lines[i:end + 1])
            names = _names(line.split("(", 1)[0])
            if len(names) != 1:
                raise SplitError(f"parallel codegen: no name in '{line[:80]}'")
            name = names.pop()
            linkage = _define_linkage(line)
            functions.append(_Function(name, block, line, linkage in ("internal", "private"),
                                       _names("\n".join(lines[i + 1:end + 1]))))
            i = end + 1
            continue
        if line.startswith("@"):
            globals_.append(_global(line))
        elif line.startswith(("declare ", "!", "attributes ", "source_filename", "$")):
            shared.append(line)
        elif line.startswith(("target ", ";")):
            head.append(line)
        elif line.strip():
            raise SplitError(f"parallel codegen: unknown top-level line '{line[:80]}'")
        i += 1
    return head, globals_, functions, shared


def split_ir(text: str, parts: int) -> list[str]:
    """``text`` (one module's LLVM IR, as translate.py writes it) as ``parts`` modules (fewer
    when it has fewer function groups) that, compiled one by one and linked, define what it
    defines. One part: the text itself."""
    if parts <= 1:
        return [text]
    head, globals_, functions, shared = _read(text)
    by_name = {f.name: f for f in functions}
    # union-find: an internal function joins every function that refers to it
    parent = {f.name: f.name for f in functions}

    def find(name: str) -> str:
        while parent[name] != name:
            parent[name] = parent[parent[name]]
            name = parent[name]
        return name

    for f in functions:
        for ref in f.refs:
            callee = by_name.get(ref)
            if callee is not None and callee.internal and ref != f.name:
                parent[find(ref)] = find(f.name)
    groups: dict[str, list[_Function]] = {}
    for f in functions:
        groups.setdefault(find(f.name), []).append(f)
    if len(groups) < 2:
        return [text]
    parts = min(parts, len(groups))
    sizes = [0] * parts
    owner: dict[str, int] = {}
    for members in sorted(groups.values(), key=lambda g: -sum(len(f.text) for f in g)):
        p = sizes.index(min(sizes))
        sizes[p] += sum(len(f.text) for f in members)
        for f in members:
            owner[f.name] = p
    out = []
    for p in range(parts):
        mine = [f for f in functions if owner[f.name] == p]
        used = set().union(*(f.refs for f in mine)) if mine else set()
        lines = list(head)
        for g in globals_:
            lines.append(_global_in_part(g, p, g.name in used))
        lines += [line for line in (_declaration(f) for f in functions
                                    if owner[f.name] != p and f.name in used) if line]
        lines += shared
        out.append("\n".join(lines) + "\n\n" + "\n\n".join(f.text for f in mine) + "\n")
    return out


def _global_in_part(g: _Global, part: int, used: bool) -> str:
    if g.linkage in ("external", "extern_weak"):  # a declaration (the weights): the same everywhere
        return g.line
    if g.linkage in ("internal", "private") and g.constant:
        return g.line  # a copy each (unused copies are dropped by LLVM)
    if g.linkage in ("internal", "private"):  # one variable: defined in part 0, hidden
        if part == 0:
            return g.line.replace(f" = {g.linkage} ", " = hidden ", 1)
        return f'@"{g.name}" = external hidden global {g.type_text}'
    if part == 0:
        return g.line
    what = "constant" if g.constant else "global"
    return f'@"{g.name}" = external {what} {g.type_text}' if used else ""


def _declaration(f: _Function) -> str:
    if f.internal:  # grouping keeps an internal function with all its users
        raise SplitError(f"parallel codegen: internal @{f.name} is used from two parts")
    header = f.header
    words = header.split(" ")
    if len(words) > 1 and words[1] in _LINKAGES:
        del words[1]
    return "declare " + " ".join(words[1:]).rstrip(" {")


def compile_parts(text: str, spec: dict, directory: str, jobs: int,
                  timings: dict[str, float] | None = None) -> list[str]:
    """``text`` optimized and compiled to object files in ``directory`` (their paths): split
    into up to ``jobs`` parts, part 0 here, the others in worker processes meanwhile.
    A part LLVM rejects is a CodegenError with its message. ``timings``: part 0's
    "llvm-parse", "llvm-opt", "llvm-codegen", then "llvm-wait-workers" (the wait for the
    other parts after it)."""
    parts = split_ir(text, jobs) if jobs > 1 and len(text) >= MIN_SPLIT_CHARS else [text]
    spec_path = os.path.join(directory, "machine.json")
    workers = []
    if len(parts) > 1:
        with open(spec_path, "w") as f:
            json.dump(spec, f)
    for i, part in enumerate(parts[1:], start=1):
        ir_path = os.path.join(directory, f"part{i}.ll")
        with open(ir_path, "w") as f:
            f.write(part)
        obj_path = os.path.join(directory, f"part{i}.o")
        cmd = [sys.executable, codegen_worker.__file__, spec_path, ir_path, obj_path]
        workers.append((obj_path, subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                                   text=True, env=_worker_env())))
    first = os.path.join(directory, "part0.o")
    try:
        obj = codegen_worker.compile_text(parts[0], spec, timings)
    except BaseException:
        for _, proc in workers:
            proc.kill()
            proc.wait()
        raise
    with open(first, "wb") as f:
        f.write(obj)
    objects = [first]
    errors = []
    clock = codegen_worker.stage_clock(timings)
    for obj_path, proc in workers:
        _, err = proc.communicate()
        if proc.returncode != 0:
            lines = err.strip().splitlines()
            errors.append(lines[-1] if lines else f"the codegen worker exited with {proc.returncode}")
        objects.append(obj_path)
    if workers:  # the other parts' time beyond this one's
        clock("llvm-wait-workers")
    if errors:
        raise codegen_worker.CodegenError(errors[0])
    return objects


def _worker_env() -> dict[str, str]:
    env = dict(os.environ)
    # the worker imports only llvmlite: where this interpreter finds it
    env["PYTHONPATH"] = os.pathsep.join(p for p in sys.path if p)
    return env

