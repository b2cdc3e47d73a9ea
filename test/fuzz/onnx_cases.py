"""ONNX family: tiny valid models built with onnx.helper (and examples/small_cnn.onnx),
mutated with seeded changes, imported with ``dlc-translate --from-onnx`` (a few
also ``dlc run``).

"Located" here: the message names the mutated node (its name or its output), the
graph input/output/initializer, the opset, or the file (for bytes that do not
parse).
"""

from __future__ import annotations

import os
import random
import re

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from .case import Case

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
OPSET = 17
F = TensorProto.FLOAT


def _model(nodes, inputs, outputs, inits=(), opset=OPSET) -> onnx.ModelProto:
    graph = helper.make_graph(nodes, "g", inputs, outputs, list(inits))
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 8
    return m


def _init(name, array) -> TensorProto:
    return numpy_helper.from_array(np.asarray(array), name)


def seeds() -> dict[str, onnx.ModelProto]:
    rng = np.random.default_rng(0)
    vi = helper.make_tensor_value_info
    s = {}
    s["conv_relu"] = _model(
        [helper.make_node("Conv", ["x", "w", "b"], ["c"], "conv0", pads=[1, 1, 1, 1], strides=[1, 1]),
         helper.make_node("Relu", ["c"], ["y"], "relu0")],
        [vi("x", F, [1, 3, 8, 8])], [vi("y", F, [1, 4, 8, 8])],
        [_init("w", rng.standard_normal((4, 3, 3, 3)).astype(np.float32)),
         _init("b", rng.standard_normal(4).astype(np.float32))])
    s["matmul_add"] = _model(
        [helper.make_node("MatMul", ["a", "w"], ["m"], "matmul0"),
         helper.make_node("Add", ["m", "bias"], ["y"], "add0")],
        [vi("a", F, [2, 3])], [vi("y", F, [2, 4])],
        [_init("w", rng.standard_normal((3, 4)).astype(np.float32)),
         _init("bias", rng.standard_normal(4).astype(np.float32))])
    s["gather"] = _model(
        [helper.make_node("Gather", ["data", "idx"], ["y"], "gather0", axis=0)],
        [vi("data", F, [2, 3])], [vi("y", F, [2, 3])],
        [_init("idx", np.array([1, 0], np.int64))])
    s["reshape"] = _model(
        [helper.make_node("Reshape", ["x", "shape"], ["y"], "reshape0")],
        [vi("x", F, [2, 3, 4])], [vi("y", F, [4, 6])],
        [_init("shape", np.array([4, 6], np.int64))])
    s["softmax"] = _model(
        [helper.make_node("Softmax", ["x"], ["y"], "softmax0", axis=1)],
        [vi("x", F, [2, 5])], [vi("y", F, [2, 5])])
    s["reducesum"] = _model(
        [helper.make_node("ReduceSum", ["x", "axes"], ["y"], "reduce0", keepdims=0)],
        [vi("x", F, [2, 3, 4])], [vi("y", F, [2, 4])],
        [_init("axes", np.array([1], np.int64))])
    s["two_outputs"] = _model(
        [helper.make_node("Relu", ["x"], ["y1"], "relu0"),
         helper.make_node("Sigmoid", ["x"], ["y2"], "sigmoid0")],
        [vi("x", F, [2, 3])], [vi("y1", F, [2, 3]), vi("y2", F, [2, 3])])
    s["small_cnn"] = onnx.load(os.path.join(ROOT, "examples", "small_cnn.onnx"))
    return s


def _names(m: onnx.ModelProto) -> list[str]:
    g = m.graph
    names = [n.name for n in g.node if n.name]
    names += [o for n in g.node for o in n.output if o]
    names += [v.name for v in list(g.input) + list(g.output)] + [t.name for t in g.initializer]
    return sorted(set(names))


def _q(*names: str) -> list[str]:
    """Locators: the name appears in the message as a word (quoted or not)."""
    return [rf"(?<![\w.]){re.escape(n)}(?![\w])" for n in names if n]


# ---------------------------------------------------------------------------
# mutators: (model copy, rng) -> (what, expect, locators), the model changed in place,
# or None when the mutator does not apply to this seed
# ---------------------------------------------------------------------------


def _copy(m):
    c = onnx.ModelProto()
    c.CopyFrom(m)
    return c


def mut_attr_value(m, rng):
    nodes = [n for n in m.graph.node if any(a.type == onnx.AttributeProto.INT for a in n.attribute)]
    if not nodes:
        return None
    node = rng.choice(nodes)
    attr = rng.choice([a for a in node.attribute if a.type == onnx.AttributeProto.INT])
    attr.i = rng.choice([-2, 99, 2**40, -(2**62)])
    return f"{node.name}.{attr.name}={attr.i}", "any", _q(node.name, *node.output, attr.name)


def mut_attr_type(m, rng):
    nodes = [n for n in m.graph.node if n.attribute]
    if not nodes:
        return None
    node = rng.choice(nodes)
    attr = rng.choice(list(node.attribute))
    if attr.type == onnx.AttributeProto.INT:
        new = helper.make_attribute(attr.name, rng.choice(["one", 1.5]))
    elif attr.type == onnx.AttributeProto.INTS:
        new = helper.make_attribute(attr.name, [float(v) + 0.5 for v in attr.ints] or [0.5])
    else:
        new = helper.make_attribute(attr.name, "bad")
    attr.CopyFrom(new)
    return f"{node.name}.{attr.name} as {onnx.AttributeProto.AttributeType.Name(attr.type)}", "error", \
        _q(node.name, *node.output, attr.name)


def mut_input_dim(m, rng):
    inp = rng.choice(list(m.graph.input))
    dims = inp.type.tensor_type.shape.dim
    k = rng.randrange(len(dims))
    value = rng.choice([0, -2, 2**40])
    dims[k].dim_value = value
    expect = "error" if value < 0 else "any"
    # a negative dim must be refused at the input; a 0 or huge one may fail at any node
    return f"input {inp.name} dim {k}={value}", expect, _q(inp.name) if value < 0 else _q(*_names(m))


def mut_const_index(m, rng):
    for t in m.graph.initializer:
        if t.name in ("idx", "axes", "shape"):
            arr = numpy_helper.to_array(t).copy()
            if t.name == "idx":
                arr[rng.randrange(arr.size)] = rng.choice([5, -3, 2**40])
            elif t.name == "axes":
                arr[0] = rng.choice([9, -4])
            else:
                arr = np.array(rng.choice([[5, 5], [-1, -1], [0, 24], [-2, 12]]), np.int64)
            t.CopyFrom(numpy_helper.from_array(arr, t.name))
            node = next(n for n in m.graph.node if t.name in n.input)
            return f"{t.name}={arr.tolist()}", "error", _q(node.name, *node.output, t.name)
    return None


def mut_duplicate_producer(m, rng):
    """A second node writing the graph output (an Identity of the first input):
    nothing dangles, only the producer is duplicated."""
    target = m.graph.output[0].name
    m.graph.node.append(helper.make_node("Identity", [m.graph.input[0].name], [target], "dup0"))
    return f"dup0 writes {target} a second time", "error", _q("dup0", target)


def mut_duplicate_input(m, rng):
    g = m.graph
    dup = onnx.ValueInfoProto()
    dup.CopyFrom(g.input[0])
    g.input.append(dup)
    return f"graph input {dup.name} twice", "error", _q(dup.name)


def mut_empty_name(m, rng):
    node = rng.choice(list(m.graph.node))
    k = rng.randrange(len(node.input))
    old = node.input[k]
    node.input[k] = ""
    return f"{node.name} input {k} ('{old}') empty", "error", _q(node.name, *node.output, old)


def mut_undefined_input(m, rng):
    node = rng.choice(list(m.graph.node))
    node.input[0] = "nowhere"
    return f"{node.name} reads undefined 'nowhere'", "error", _q(node.name, *node.output, "nowhere")


def mut_opset(m, rng):
    v = rng.choice([99, 0, -1])
    m.opset_import[0].version = v
    return f"opset {v}", "error", [r"opset"]


def mut_unknown_domain(m, rng):
    node = rng.choice(list(m.graph.node))
    node.domain = "com.example.nope"
    return f"{node.name} in an unknown domain", "error", _q(node.name, *node.output, "com.example.nope")


def mut_output_type(m, rng):
    out = rng.choice(list(m.graph.output))
    tt = out.type.tensor_type
    if rng.random() < 0.5:
        tt.elem_type = TensorProto.INT64
        what = "int64"
    else:
        del tt.shape.dim[:]
        for d in (7, 7):
            tt.shape.dim.add().dim_value = d
        what = "[7,7]"
    return f"output {out.name} declared {what}", "error", _q(out.name)


def mut_initializer_shape(m, rng):
    inits = [t for t in m.graph.initializer if t.data_type == F]
    if not inits:
        return None
    t = rng.choice(inits)
    t.dims.append(2)  # the data no longer fills the declared shape
    return f"initializer {t.name} dims {list(t.dims)} for {np.prod(t.dims[:-1])} values", "error", _q(t.name)


def mut_empty_node_names(m, rng):
    """Node names are optional in ONNX: errors must then name the node's output."""
    for node in m.graph.node:
        node.name = ""
    return "every node name empty", "any", _q(*_names(m))


def mut_empty_input_name(m, rng):
    g = m.graph
    old = g.input[0].name
    g.input[0].name = ""
    for node in g.node:
        for k, name in enumerate(node.input):
            if name == old:
                node.input[k] = ""
    return f"graph input '{old}' renamed ''", "error", _q(*_names(m), old) + [r"graph input"]


MODEL_MUTATORS = [mut_empty_node_names, mut_empty_input_name, mut_attr_value, mut_attr_type, mut_input_dim, mut_const_index, mut_duplicate_producer,
                  mut_duplicate_input, mut_empty_name, mut_undefined_input, mut_opset, mut_unknown_domain,
                  mut_output_type, mut_initializer_shape]


def _translate_case(n, what, data, expect, locators, files=None, extra_argv=(), isolated=False) -> Case:
    files = {"m.onnx": data, **(files or {})}
    return Case(id=f"onnx-{n}", family="onnx", what=what, files=files, expect=expect, locators=locators,
                argv=["dlc-translate", "--from-onnx", "m.onnx", "-o", "out.mlir", *extra_argv],
                must_not_exist=["out.mlir", "out.mlir.weights.npz", "out.weights.npz"], isolated=isolated)


def _external_cases(start: int) -> list[Case]:
    """The conv seed's weight moved to external data with bad locations."""
    cases = []
    base = seeds()["conv_relu"]
    w = numpy_helper.to_array(base.graph.initializer[0])
    good = w.tobytes()
    variants = [
        ("location missing.bin (absent)", "missing.bin", {}, "error", ["missing.bin", "w"]),
        ("location escapes the folder", "../../../etc/passwd", {}, "error", ["passwd", "w"]),
        ("location has a NUL byte", "w\x00.bin", {}, "error", ["w", "location"]),
        ("location is a directory", "wdir", {"wdir/keep": b""}, "error", ["wdir", "w"]),
        ("external file too short", "w.bin", {"w.bin": good[:17]}, "error", ["w.bin", "w"]),
        ("location absolute", "/etc/hostname", {}, "error", ["hostname", "w"]),
        ("valid external data", "w.bin", {"w.bin": good}, "ok", []),
    ]
    for i, (what, location, files, expect, names) in enumerate(variants):
        m = _copy(base)
        t = m.graph.initializer[0]
        t.ClearField("raw_data")
        t.data_location = TensorProto.EXTERNAL
        for key, value in (("location", location), ("offset", "0"), ("length", str(len(good)))):
            entry = t.external_data.add()
            entry.key, entry.value = key, value
        cases.append(_translate_case(start + i, "external data: " + what, m.SerializeToString(), expect,
                                     _q(*names) if expect == "error" else [], files=files))
    return cases


def onnx_cases() -> list[Case]:
    cases: list[Case] = []
    n = 0
    models = seeds()
    for seed_index, (name, model) in enumerate(models.items()):
        # the valid seed itself: must import
        cases.append(_translate_case(n, f"{name}: unmutated", model.SerializeToString(), "ok", []))
        n += 1
        rng = random.Random(f"onnx-{name}")
        others = [mu for mu in MODEL_MUTATORS if mu is not mut_const_index]
        # the constant-index mutation wherever it applies, and the others in rotation
        # (every mutator meets several seeds); the rng picks the values
        k = 5 if name != "small_cnn" else 4
        chosen = [others[(seed_index * 5 + j) % len(others)] for j in range(k)]
        for mutator in [mut_const_index] + chosen:
            m = _copy(model)
            got = mutator(m, rng)
            if got is None:
                continue
            what, expect, locators = got
            cases.append(_translate_case(n, f"{name}: {what}", m.SerializeToString(), expect, locators))
            n += 1
        data = model.SerializeToString()
        for kind in ("truncate", "flip"):
            buf = bytearray(data)
            if kind == "truncate":
                cut = rng.randrange(1, len(buf))
                buf = buf[:cut]
                what = f"{name}: truncated at byte {cut} of {len(data)}"
            else:
                for _ in range(3):
                    buf[rng.randrange(len(buf))] ^= 1 << rng.randrange(8)
                what = f"{name}: 3 bits flipped"
            try:  # the message may name what the flipped bits made of a name
                names = _names(onnx.load_from_string(bytes(buf)))
            except Exception:  # noqa: BLE001 - not parsable: only the file name locates
                names = []
            locators = _q(*_names(model), *names, "opset") + [r"m\.onnx"]
            cases.append(_translate_case(n, what, bytes(buf), "any", locators))
            n += 1
    external = _external_cases(n)
    cases += external
    n += len(external)
    # attribute kinds named in issue 14: Softmax axis="one", a Transpose perm of floats
    soft = _copy(models["softmax"])
    soft.graph.node[0].attribute[0].CopyFrom(helper.make_attribute("axis", "one"))
    cases.append(_translate_case(n, 'softmax: axis="one"', soft.SerializeToString(), "error",
                                 _q("softmax0", "y", "axis")))
    n += 1
    perm = helper.make_node("Transpose", ["x"], ["y"], "transpose0")
    perm.attribute.append(helper.make_attribute("perm", [1.0, 0.0]))
    tr = _model([perm], [helper.make_tensor_value_info("x", F, [2, 3])], [helper.make_tensor_value_info("y", F, [3, 2])])
    cases.append(_translate_case(n, "Transpose perm as floats", tr.SerializeToString(), "error",
                                 _q("transpose0", "y", "perm")))
    n += 1
    # Range with delta 0: an error at the node, not a numpy warning with a source path
    rng_model = _model([helper.make_node("Range", ["start", "limit", "delta"], ["y"], "range0")], [],
                       [helper.make_tensor_value_info("y", F, [5])],
                       [_init("start", np.array(0, np.float32)), _init("limit", np.array(5, np.float32)),
                        _init("delta", np.array(0, np.float32))])
    cases.append(_translate_case(n, "Range with delta 0", rng_model.SerializeToString(), "error",
                                 _q("range0", "y", "delta")))
    n += 1
    # a few full compiles + runs of mutants (the import check must stop them before the JIT)
    runs = [
        ("gather", "gather: index 5 on a dim of 2, dlc run", lambda m: m.graph.initializer[0].CopyFrom(
            _init("idx", np.array([5, 0], np.int64))), "error", _q("gather0", "y", "idx")),
        ("conv_relu", "conv_relu: unmutated, dlc run --check", None, "ok", []),
        ("softmax", "softmax: input dim 0, dlc run", lambda m: setattr(
            m.graph.input[0].type.tensor_type.shape.dim[0], "dim_value", 0), "any", _q("x", "y", "softmax0")),
        ("reducesum", "reducesum: axes [9], dlc run", lambda m: m.graph.initializer[0].CopyFrom(
            _init("axes", np.array([9], np.int64))), "error", _q("reduce0", "y", "axes")),
    ]
    for seed, what, change, expect, locators in runs:
        m = _copy(models[seed])
        if change:
            change(m)
        argv = ["dlc", "run", "m.onnx", "--repeat", "1"] + (["--check"] if expect == "ok" else [])
        cases.append(Case(id=f"onnx-{n}", family="onnx", what=what, files={"m.onnx": m.SerializeToString()},
                          expect=expect, locators=locators, argv=argv, isolated=False))
        n += 1
    return cases
