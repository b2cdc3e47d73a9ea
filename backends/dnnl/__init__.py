"""BYOC target ``dnnl``: conv2d, dense/matmul and 2-D pools through oneDNN's C API.

What goes to oneDNN (docs/architecture.md "BYOC: the oneDNN codegen"):

* the pattern table: conv2d [+ bias add] [+ residual add] [+ relu | clip], dense or
  matmul [+ bias add] [+ relu | clip], max_pool2d, avg_pool2d, each a composite whose
  chain becomes one oneDNN primitive with post-ops (plan.py);
* the support predicates of the same anchor ops alone (checks.py says what each refuses
  and why: non-f32 types, dynamic shapes, grouped HWIO kernels, batch-broadcast
  matmuls, ceil_mode avg pools that count padding), and concat;
* the codegen (codegen.py): one C file per partition over the runtime in
  dnnl_runtime.c, linked with libdnnl from the oneDNN that library.py finds.

Registered for dlc.byoc as target "dnnl" (dlc.byoc.targets names this module).
"""

from __future__ import annotations

from xdsl.dialects import func

from dlc.backends.dnnl import checks
from dlc.backends.dnnl.library import OneDNNMissingError
from dlc.backends.dnnl.plan import PlanError
from dlc.byoc import CodegenContext, CodegenError, ExternalKernel, codegen, is_op, pattern_table, supports, wildcard

TARGET = "dnnl"


def _chain(anchor):
    """``anchor`` followed by an optional bias add, an optional second (residual) add in
    either operand order, then an optional relu or clip."""
    def add(p):
        return is_op("graph.add")(p, wildcard()) | is_op("graph.add")(wildcard(), p)

    def act(p):
        return is_op("graph.relu")(p) | is_op("graph.clip")(p)

    return anchor.optional(add).optional(add).optional(act)


def _match_check(m) -> bool | str:
    """A composite goes to oneDNN only when each of its ops does, and its adds broadcast
    as a binary post-op can."""
    anchor = m.ops[0]
    chain = anchor.results[0]
    if anchor.name == "graph.conv2d":
        axis = 1 if anchor.attrs.data_layout == "NCHW" else 3
    else:
        axis = -1
    for op in m.ops:
        verdict = checks.check(op)
        if verdict is True and op is not anchor and op.name == "graph.add":
            verdict = checks.post_add(op, chain, axis)
        if verdict is not True:
            return f"{op.name}: {verdict}"
        chain = op.results[0]
    return True


@pattern_table(TARGET)
def _patterns():
    conv = is_op("graph.conv2d")(wildcard(), wildcard())
    dense = is_op("graph.dense")(wildcard(), wildcard(), wildcard()) | is_op("graph.dense")(wildcard(), wildcard())
    matmul = is_op("graph.matmul")(wildcard(), wildcard())
    return [
        ("conv2d", _chain(conv), _match_check),
        ("dense", _chain(dense), _match_check),
        ("matmul", _chain(matmul), _match_check),
        ("max_pool2d", is_op("graph.max_pool2d")(wildcard()), _match_check),
        ("avg_pool2d", is_op("graph.avg_pool2d")(wildcard()), _match_check),
    ]


supports(TARGET, "graph.conv2d")(checks.conv2d)
supports(TARGET, "graph.matmul")(checks.matmul)
supports(TARGET, "graph.dense")(checks.dense)
supports(TARGET, "graph.max_pool2d", "graph.avg_pool2d")(checks.pool2d)
supports(TARGET, "graph.concat")(checks.concat)


@codegen(TARGET)
def dnnl_codegen(partition: func.FuncOp, ctx: CodegenContext) -> ExternalKernel:
    from dlc.backends.dnnl.codegen import generate

    try:
        src = generate(partition, ctx.symbol)
    except (PlanError, OneDNNMissingError) as err:
        raise CodegenError(f"BYOC target 'dnnl', partition @{ctx.symbol}: {err}") from None
    lib = src.onednn
    return ExternalKernel(
        symbol=ctx.symbol,
        sources=[(f"{ctx.symbol}.c", src.source)],
        include_dirs=[lib.include_dir],
        library_dirs=[lib.library_dir],
        libraries=["dnnl"],
        runtime_library_dirs=[lib.library_dir],
        report=src.report,
    )
