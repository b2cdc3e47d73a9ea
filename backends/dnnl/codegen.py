"""The dnnl codegen: a partition's C source over oneDNN's C API.

The source is the fixed runtime (dnnl_runtime.c: engine, streams, building primitives on
the first call, reorders, execution) followed by the partition's tables (plan.py) and its
entry point with the ABI of docs/architecture.md "BYOC": ``int32_t <symbol>(void *arg0,
..., void *argN, void *result0, ...)``, 0 on success.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from xdsl.dialects import func

from dlc.backends.dnnl.library import find_onednn, OneDNN
from dlc.backends.dnnl.plan import MAX_POST, MAX_SRC, Plan, plan_partition

RUNTIME_C = Path(__file__).with_name("dnnl_runtime.c")


@dataclass
class DnnlSource:
    """What the codegen makes of one partition (the fields of dlc.byoc.ExternalKernel)."""

    symbol: str
    source: str
    onednn: OneDNN
    report: str
    plan: Plan = field(repr=False, default=None)


def _ints(values) -> str:
    return "{" + ", ".join(str(int(v)) for v in values) + "}"


def _float(x: float) -> str:
    return repr(float(x)) + "f"


def tables_c(plan: Plan, symbol: str, name: str) -> str:
    """The C tables of ``plan`` and the entry point ``symbol``."""
    vals = ",\n".join(
        f"    {{{v.where}, {v.index}, {len(v.dims)}, {_ints(v.dims)}, {_ints(v.strides)}, {last}}}"
        for v, last in zip(plan.values, plan.last_read))
    ops = []
    for p in plan.prims:
        posts = ", ".join(f"{{{q.kind}, {q.value}, {_float(q.alpha)}, {_float(q.beta)}}}" for q in p.post)
        assert len(p.post) <= MAX_POST and len(p.srcs) <= MAX_SRC
        ops.append(
            f"    {{{p.kind}, {p.src}, {p.wei}, {p.bias}, {p.dst}, {int(p.const_wei)}, "
            f"{_ints(p.strides)}, {_ints(p.kernel)}, {_ints(p.dil)}, {_ints(p.pad_l)}, "
            f"{_ints(p.pad_r)}, {len(p.post)}, {{{posts}}}, {len(p.srcs)}, {p.axis}, {_ints(p.srcs or [0])}}}"
            f"  /* {'+'.join(p.names)} */")
    nv, no = len(plan.values), len(plan.prims)
    ops_text = ",\n".join(ops)
    params = [f"void *a{i}" for i in range(plan.nargs)] + [f"void *r{i}" for i in range(plan.nresults)]
    args = ", ".join(f"a{i}" for i in range(plan.nargs)) or "0"
    outs = ", ".join(f"r{i}" for i in range(plan.nresults))
    return f"""
/* ---- partition {name} ---- */
static const dlcd_value dlcd_values[{nv}] = {{
{vals}
}};
static const dlcd_op dlcd_ops[{no}] = {{
{ops_text}
}};
static dlcd_op_state dlcd_state[{no}];
static dnnl_memory_desc_t dlcd_md[{nv}];
static void *dlcd_buffers[{nv}];
static pthread_mutex_t dlcd_mutex = PTHREAD_MUTEX_INITIALIZER;
static int dlcd_ready;
static void *dlcd_scratch;
static const dlcd_partition dlcd_this = {{
    "{name}", {nv}, {no}, {plan.nargs}, dlcd_values, dlcd_ops, dlcd_state, dlcd_md,
    dlcd_buffers, &dlcd_mutex, &dlcd_ready, &dlcd_scratch}};

int32_t {symbol}({", ".join(params)}) {{
    void *args[] = {{{args}}};
    void *outs[] = {{{outs}}};
    return dlcd_call(&dlcd_this, args, outs);
}}
"""


def generate(partition: func.FuncOp, symbol: str | None = None) -> DnnlSource:
    """The C source of ``partition`` (PlanError: what it cannot take; OneDNNMissingError:
    no usable oneDNN)."""
    onednn = find_onednn()
    symbol = symbol or partition.sym_name.data
    plan = plan_partition(partition)
    source = RUNTIME_C.read_text() + tables_c(plan, symbol, partition.sym_name.data)
    report = f"dnnl {symbol}: {len(plan.prims)} oneDNN primitive(s): {plan.summary()}"
    return DnnlSource(symbol, source, onednn, report, plan)
