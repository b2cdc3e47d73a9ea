"""``build(module) -> CProgram``: a model as portable C99 source for bare metal, and its
Model-Library-Format-like archive.

Pipeline (every pass from the registry, in place)::

    graph IR -> expand-control-flow, legalize, widen-accumulation, fold-constant,
                simplify-inference, fuse-ops            (NCHW: no blocked layouts)
             -> lower-to-loops                           (direct conv: no padded copies)
             -> expand-math                              (exp/log/tanh/erf without libm)
             -> plan-workspace                           (every intermediate in ONE arena)
             -> emit_c.py                                (the C text)

No schedule runs (``apply_default_schedules`` plans for llvm only): the loops are the
kernel generators' own, readable, and the C compiler optimizes them.

Archive (``CProgram.export(path)``, a tar)::

    src/model.c            kernels (static) + the entry dlc_model_run
    src/weights.c          the weights: const arrays in section .rodata.dlc_weights
    include/dlc_model.h    the entry, status codes, workspace and per-IO macros
    metadata.json          workspace / constant bytes, buffer plan, IO, libm symbols
"""

from __future__ import annotations

import io
import json
import tarfile
import time

import numpy as np
from xdsl.dialects import func
from xdsl.dialects.builtin import ArrayAttr, DictionaryAttr, ModuleOp, StringAttr, TensorType
from xdsl.utils.exceptions import DiagnosticException

from dlc.backends.c.emit_c import (
    LIBM_FUNCTIONS,
    PRELUDE,
    STATUS,
    WEIGHTS_SECTION,
    WORKSPACE_ALIGN,
    CEmitError,
    HostCode,
    emit_module,
    emit_weight,
    numpy_name,
)

C_GRAPH_PASSES = ("expand-control-flow", "legalize", "widen-accumulation", "fold-constant",
                  "simplify-inference", "fuse-ops")
C_LOOP_PASSES = ("expand-math", "plan-workspace")
ARCHIVE_FORMAT = "dlc-c-1"
C_TYPES = {"float32": "float", "float64": "double", "bool": "bool", "int8": "int8_t", "uint8": "uint8_t",
           "int16": "int16_t", "uint16": "uint16_t", "int32": "int32_t", "uint32": "uint32_t",
           "int64": "int64_t", "uint64": "uint64_t"}


class CBuildError(DiagnosticException):
    """The model cannot become C (one line: the pass or kernel and graph op at fault)."""


def _graph_funcs(module: ModuleOp) -> list[func.FuncOp]:
    return [op for op in module.ops if isinstance(op, func.FuncOp) and not op.is_declaration
            and "tloop.kernel" not in op.attributes and "tloop.host" not in op.attributes]


def _dlc_name(attrs: ArrayAttr | None, index: int) -> str | None:
    if attrs is None or index >= len(attrs.data):
        return None
    entry = attrs.data[index]
    name = entry.data.get("dlc.name") if isinstance(entry, DictionaryAttr) else None
    return name.data if isinstance(name, StringAttr) else None


def io_names(module: ModuleOp) -> dict[str, list[tuple[str, str]]]:
    """Graph function -> (name, numpy dtype) of its inputs then outputs: ONNX tensor names
    where known, and the graph's dtypes (the loop IR keeps no signedness: ui8 is i8)."""
    names = {}
    for fn in _graph_funcs(module):
        types = [*fn.function_type.inputs.data, *fn.function_type.outputs.data]
        ins = [_dlc_name(fn.arg_attrs, i) or a.name_hint or f"input{i}" for i, a in enumerate(fn.body.block.args)]
        outs = [_dlc_name(fn.res_attrs, i) or f"output{i}" for i in range(len(fn.function_type.outputs.data))]
        names[fn.sym_name.data] = [(n, _dtype_name(t)) for n, t in zip(ins + outs, types)]
    return names


def _dtype_name(type_) -> str | None:
    """The numpy name of a graph tensor's element type (None for a non-tensor)."""
    return numpy_name(type_.element_type) if isinstance(type_, TensorType) else None


def _run(name: str, module: ModuleOp) -> None:
    from dlc.context import make_context
    from dlc.passes import load_pass

    try:
        load_pass(name)().apply(make_context(), module)
    except DiagnosticException as err:
        text = (str(err).strip().splitlines() or [type(err).__name__])[0]
        raise CBuildError(text if text.startswith(name) else f"{name}: {text}") from None


def lower_for_c(module: ModuleOp, timings: dict[str, float] | None = None) -> None:
    """Bring ``module`` (graph or loop level) to planned loop IR for the C target, in place."""
    timings = timings if timings is not None else {}
    stages = []
    if _graph_funcs(module) or any(op.name.startswith("graph.") for op in module.walk()):
        stages += [*C_GRAPH_PASSES, "lower-to-loops"]
    if not any("dlc.workspace" in op.attributes for op in module.walk()):
        stages += list(C_LOOP_PASSES)
    for name in stages:
        start = time.perf_counter()
        _run(name, module)
        timings[name] = time.perf_counter() - start


def _check_types(module: ModuleOp) -> None:
    """Dynamic shapes have no static plan: one line naming the function."""
    for fn in module.ops:
        if isinstance(fn, func.FuncOp):
            for t in (*fn.function_type.inputs.data, *fn.function_type.outputs.data):
                if isinstance(t, TensorType) and any(d < 0 for d in t.get_shape()):
                    raise CBuildError(f"c target: @{fn.sym_name.data} has a dynamic shape ({t}); "
                                      "the C target needs static shapes")


class CProgram:
    """A model as C: ``source`` (src/model.c), ``weights_source`` (src/weights.c),
    ``header`` (include/dlc_model.h), ``metadata`` (dict, metadata.json),
    ``workspace_bytes``, ``constant_bytes``; ``files()`` (archive path -> bytes),
    ``export(path)`` (the tar archive, written whole or not at all)."""

    def __init__(self, name: str, source: str, weights_source: str, header: str, metadata: dict,
                 timings: dict[str, float]):
        self.name = name
        self.source = source
        self.weights_source = weights_source
        self.header = header
        self.metadata = metadata
        self.timings = timings

    @property
    def workspace_bytes(self) -> int:
        return self.metadata["workspace"]["bytes"]

    @property
    def constant_bytes(self) -> int:
        return self.metadata["constants"]["bytes"]

    @property
    def input_specs(self) -> list[tuple[str, tuple[int, ...], np.dtype]]:
        return [(io["name"], tuple(io["shape"]), np.dtype(io["dtype"])) for io in self.metadata["inputs"]]

    @property
    def output_specs(self) -> list[tuple[str, tuple[int, ...], np.dtype]]:
        return [(io["name"], tuple(io["shape"]), np.dtype(io["dtype"])) for io in self.metadata["outputs"]]

    def summary(self) -> str:
        """The one line ``dlc compile`` prints on stderr."""
        ws = self.metadata["workspace"]
        return (f"dlc: {self.metadata['target']} target: workspace (arena) {ws['bytes']} bytes (peak live {ws['peak_live_bytes']}, "
                f"all buffers {ws['sum_of_buffers']}), constants {self.constant_bytes} bytes")

    def files(self) -> dict[str, bytes]:
        return {
            f"src/{self.name}.c": self.source.encode(),
            "src/weights.c": self.weights_source.encode(),
            f"include/dlc_{self.name}.h": self.header.encode(),
            "metadata.json": (json.dumps(self.metadata, indent=2) + "\n").encode(),
        }

    def archive_bytes(self) -> bytes:
        """The tar archive (deterministic: fixed times and owners)."""
        buffer = io.BytesIO()
        with tarfile.open(fileobj=buffer, mode="w", format=tarfile.USTAR_FORMAT) as tar:
            for path, data in self.files().items():
                info = tarfile.TarInfo(path)
                info.size, info.mode, info.mtime = len(data), 0o644, 0
                tar.addfile(info, io.BytesIO(data))
        return buffer.getvalue()

    def export(self, path: str) -> str:
        """Write the archive at ``path`` by the rule of dlc.output_files."""
        from dlc.output_files import write_atomically

        write_atomically(path, self.archive_bytes())
        return path


def _weights(module: ModuleOp, host_code: HostCode) -> list[np.ndarray]:
    from dlc.weights import ElidedWeightError, store_of

    store = store_of(module, create=False)
    arrays = []
    for weight in host_code.weights:
        if store is not None and store.is_elided(weight.name):
            raise CBuildError(f"c target: {ElidedWeightError.of(weight.name)}")
        if store is None or weight.name not in store:
            raise CBuildError(f"c target: weight \"{weight.name}\" is not in the module's weights store")
        array = np.ascontiguousarray(store[weight.name])
        if array.size != int(np.prod(weight.shape)) or array.dtype.itemsize * array.size != weight.bytes:
            raise CBuildError(f"c target: weight \"{weight.name}\" has shape {array.shape} {array.dtype}, "
                              f"expected {weight.shape} {weight.dtype}")
        arrays.append(array)
    return arrays


def peak_live_bytes(host_code: HostCode) -> int:
    """The most bytes of planned buffers in use at one kernel call: no arena for this
    plan's buffers and their lifetimes can be smaller (the lower bound)."""
    steps = len(host_code.kernels)
    return max((sum(b.bytes for b in host_code.buffers if b.first <= s <= b.last) for s in range(steps)),
               default=0)


def _io(names: list[tuple[str, str | None]], types, start: int) -> list[dict]:
    out = []
    for k, t in enumerate(types):
        dtype = names[start + k][1] or numpy_name(t.element_type)
        shape = list(t.get_shape())
        out.append({"name": names[start + k][0], "shape": shape, "dtype": dtype,
                    "ctype": C_TYPES.get(dtype, "uint8_t"),
                    "bytes": int(np.prod(shape)) * np.dtype(dtype).itemsize})
    return out


def emit_header(name: str, meta: dict) -> str:
    up = f"DLC_{name.upper()}"
    guard = f"{up}_H"
    ws = meta["workspace"]
    lines = [
        f"/* {meta['entry']}: generated by dlc (dlc.backends.c). Portable C99: no malloc, no threads,",
        " * no OS calls. The caller provides the workspace (one arena for every intermediate):",
        " *",
        f" *   static uint8_t arena[{up}_WORKSPACE_BYTES] __attribute__((aligned({up}_WORKSPACE_ALIGN)));",
        f" *   int status = {meta['entry']}(input..., output..., arena);  // DLC_STATUS_OK (0): done",
        " *",
        " * Outputs must not overlap the inputs or each other; the workspace is not zeroed and may",
        " * be reused between calls (not by two calls at once). */",
        f"#ifndef {guard}", f"#define {guard}", "", "#include <stdbool.h>", "#include <stdint.h>", "",
        "#ifdef __cplusplus", 'extern "C" {', "#endif", "",
        "/* status codes of the entry */",
        *(f"#define {k} {v}" for k, v in STATUS.items()), "",
        f"#define {up}_WORKSPACE_BYTES {ws['bytes']}u  /* 0: pass any pointer, even NULL */",
        f"#define {up}_WORKSPACE_ALIGN {ws['alignment']}u",
        f"#define {up}_CONSTANT_BYTES {meta['constants']['bytes']}u  /* the weights, in flash */",
        f"#define {up}_NUM_INPUTS {len(meta['inputs'])}",
        f"#define {up}_NUM_OUTPUTS {len(meta['outputs'])}", "",
    ]
    for role, items in (("INPUT", meta["inputs"]), ("OUTPUT", meta["outputs"])):
        for k, io_ in enumerate(items):
            p = f"{up}_{role}{k}"
            lines += [
                f"/* {role.lower()} {k}: \"{io_['name']}\" {io_['dtype']}[{', '.join(map(str, io_['shape']))}] */",
                f"#define {p}_NAME \"{io_['name']}\"",
                f"#define {p}_DTYPE \"{io_['dtype']}\"",
                f"#define {p}_CTYPE {io_['ctype']}",
                f"#define {p}_RANK {len(io_['shape'])}",
                f"#define {p}_SHAPE {{{', '.join(map(str, io_['shape'])) or '1'}}}",
                f"#define {p}_ELEMENTS {int(np.prod(io_['shape']))}u",
                f"#define {p}_BYTES {io_['bytes']}u",
            ]
        sizes = ", ".join(str(io_["bytes"]) for io_ in items) or "0"
        lines += [f"/* bytes of every {role.lower()}, in order (a harness's table) */",
                  f"#define {up}_{role}_BYTES_LIST {{{sizes}}}", ""]
    params = [f"const {io_['ctype']} *{io_['param']}" for io_ in meta["inputs"]]
    params += [f"{io_['ctype']} *{io_['param']}" for io_ in meta["outputs"]]
    params.append("void *workspace")
    lines += [
        f"int {meta['entry']}({', '.join(params)});",
        "/* the same with pointer tables (inputs[i], outputs[i] in the order above) */",
        f"int {meta['entry']}_array(const void *const *inputs, void *const *outputs, void *workspace);",
        "", "#ifdef __cplusplus", "}", "#endif", f"#endif /* {guard} */", "",
    ]
    return "\n".join(lines)


def _array_entry(meta: dict) -> str:
    args = [f"(const {io_['ctype']} *)inputs[{k}]" for k, io_ in enumerate(meta["inputs"])]
    args += [f"({io_['ctype']} *)outputs[{k}]" for k, io_ in enumerate(meta["outputs"])]
    args.append("workspace")
    lines = [f"int {meta['entry']}_array(const void *const *inputs, void *const *outputs, void *workspace) {{"]
    lines.append(f"  if ({'inputs == NULL || ' if meta['inputs'] else ''}outputs == NULL) "
                 "return DLC_STATUS_NULL_ARGUMENT;")
    if not meta["inputs"]:
        lines.append("  (void)inputs;")
    lines += [f"  return {meta['entry']}({', '.join(args)});", "}"]
    return "\n".join(lines)


def build(module: ModuleOp, name: str = "model", entry: str | None = None) -> CProgram:
    """``module`` (graph- or loop-level IR with its weights store; modified in place) as a
    :class:`CProgram`. ``name`` prefixes every external symbol (``dlc_<name>_run``,
    ``dlc_<name>_w_*``, ``DLC_<NAME>_*``) so several models link into one firmware;
    ``entry``: the function to emit (default ``main``, else the first)."""
    import re

    if not re.fullmatch(r"[a-z][a-z0-9_]*", name):
        raise CBuildError(f"c target: bad model name '{name}' (lower-case letters, digits, '_')")
    timings: dict[str, float] = {}
    _check_types(module)
    names = io_names(module)
    lower_for_c(module, timings)
    start = time.perf_counter()
    hosts = [op for op in module.ops if isinstance(op, func.FuncOp) and "tloop.host" in op.attributes]
    if not hosts:
        raise CBuildError("c target: the module has no function to compile")
    host = next((h for h in hosts if h.sym_name.data == (entry or "main")), None)
    if host is None:
        if entry is not None:
            raise CBuildError(f"c target: no function named @{entry} (have "
                              f"{', '.join(h.sym_name.data for h in hosts)})")
        host = hosts[0]
    if len(host.body.blocks) != 1:
        raise CBuildError(f"c target: @{host.sym_name.data} has control flow at the host level")
    prefix = f"dlc_{name}"
    hname = host.sym_name.data
    num_inputs = host.attributes["tloop.num_inputs"].value.data  # type: ignore[union-attr]
    arg_types = [a.type for a in host.body.block.args]
    given = names.get(hname)
    if given is None or len(given) != len(arg_types):
        given = [(a.name_hint or f"{'input' if a.index < num_inputs else 'output'}{a.index}", None)
                 for a in host.body.block.args]
    try:
        kernels, host_code, libm = emit_module(module, host, prefix, given)
    except CEmitError as err:
        raise CBuildError(str(err)) from None
    arrays = _weights(module, host_code)
    inputs = _io(given, arg_types[:num_inputs], 0)
    outputs = _io(given, arg_types[num_inputs:], num_inputs)
    params = re.findall(r"\*(\w+)", host_code.text.split("{", 1)[0])
    for io_, param in zip(inputs + outputs, params):
        io_["param"] = param
    meta = {
        "format": ARCHIVE_FORMAT,
        "model": name,
        "target": "c",
        "entry": f"{prefix}_run",
        "graph_function": hname,
        "workspace": {
            "bytes": host_code.workspace_bytes,
            "alignment": WORKSPACE_ALIGN,
            "peak_live_bytes": peak_live_bytes(host_code),
            "sum_of_buffers": sum(b.bytes for b in host_code.buffers),
        },
        "constants": {
            "bytes": sum(w.bytes for w in host_code.weights),
            "section": WEIGHTS_SECTION,
            "arrays": [{"name": w.name, "symbol": w.symbol, "dtype": w.dtype, "shape": w.shape, "bytes": w.bytes}
                       for w in host_code.weights],
        },
        "buffer_plan": [
            {"name": b.name, "offset": b.offset, "bytes": b.bytes, "shape": b.shape, "dtype": b.dtype,
             "first_call": b.first, "last_call": b.last, "producer": b.producer}
            for b in host_code.buffers
        ],
        "inputs": inputs,
        "outputs": outputs,
        "kernels": host_code.kernels,
        "libm": sorted(libm),
        "libm_allowed": sorted({*LIBM_FUNCTIONS, *(f[:-1] for f in LIBM_FUNCTIONS)}),
        "status": STATUS,
    }
    header = emit_header(name, meta)
    decls = [f"extern const {w.ctype} {w.symbol}[{max(1, int(np.prod(w.shape)))}];" for w in host_code.weights]
    libm_decls = []
    for f in sorted(libm):
        ft = "float" if f in LIBM_FUNCTIONS else "double"
        libm_decls.append(f"extern {ft} {f}({', '.join([ft] * _arity(f))});")
    source = "\n\n".join(filter(None, [
        f"// {meta['entry']}: @{hname} as portable C99, generated by dlc (dlc.backends.c).\n"
        "// Kernels are static functions (loops as for loops, one per graph op or fused group);\n"
        f"// intermediates live in the caller's workspace at the planned offsets ({host_code.workspace_bytes} bytes).",
        PRELUDE + f'#include "dlc_{name}.h"',
        ("// libm: the documented list of the C target (backends/c/emit_c.py LIBM_FUNCTIONS)\n"
         + "\n".join(libm_decls)) if libm_decls else "",
        ("// weights (src/weights.c, section " + WEIGHTS_SECTION + ")\n" + "\n".join(decls)) if decls else "",
        *kernels,
        f"// entry: @{hname}\n" + host_code.text,
        _array_entry(meta),
    ])) + "\n"
    weights_source = "\n\n".join([
        f"// The weights of {meta['entry']} ({meta['constants']['bytes']} bytes): const arrays in section\n"
        f"// {WEIGHTS_SECTION}, so a linker script can place them in flash.\n"
        "#include <stdbool.h>\n#include <stdint.h>\n\n"
        "#if (defined(__GNUC__) || defined(__clang__)) && defined(__ELF__)\n"
        f'#define DLC_WEIGHTS __attribute__((section("{WEIGHTS_SECTION}"), aligned(16)))\n'
        "#elif defined(__GNUC__) || defined(__clang__)\n"
        "#define DLC_WEIGHTS __attribute__((aligned(16)))\n#else\n#define DLC_WEIGHTS\n#endif\n"
        "#if defined(__GNUC__) || defined(__clang__)\n"
        '#define DLC_NANF __builtin_nanf("")\n#define DLC_INFF __builtin_inff()\n#else\n'
        "#define DLC_NANF (0.0f / 0.0f)\n#define DLC_INFF (1.0f / 0.0f)\n#endif\n"
        "// (declared here too, so that each definition has a prior declaration)\n" + "\n".join(decls),
        *(emit_weight(w, a) for w, a in zip(host_code.weights, arrays)),
    ]) + "\n"
    timings["emit-c"] = time.perf_counter() - start
    return CProgram(name, source, weights_source, header, meta, timings)


def _arity(fname: str) -> int:
    return {"powf": 2, "pow": 2, "fmodf": 2, "fmod": 2, "fmaf": 3, "fma": 3}.get(fname, 1)


def emit_c_source(module: ModuleOp) -> str:
    """``dlc-translate --to-c``: the C text (src/model.c) of ``module`` (modified in place);
    the weights, header and metadata come with ``dlc compile --target c``."""
    return build(module).source
