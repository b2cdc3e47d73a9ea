"""CUDA C of the host functions: branches and loops on the CPU that launch kernels.

Input: a host function after ``lower-to-gpu`` (``gpu.host``): its arguments and
weights are device pointers, its buffers ``gpu.alloc``, its kernel calls
``gpu.launch_func``, and the control flow ``lower-to-loops`` made for
``graph.if``/``graph.loop``/``graph.scan`` (``scf.if``, ``scf.while``, ``scf.for``)
is still there. Each host function ``@f`` becomes three ``extern "C"`` entries:

* ``int dlc_f__device(inputs..., outputs..., const void* const* dlc_weights)``: the
  program on device pointers (arguments and the weights table); a host-side
  ``memref.load``/``memref.store`` (an if's condition, a loop's trip count, carried
  condition or iteration index) copies that one element between device and host
  (``cudaMemcpy`` of a few bytes, which also orders it after the kernels before it).
* ``int dlc_f__copying(host inputs..., host outputs..., const void* const* d_weights)``:
  copies the inputs to fresh device buffers, runs ``dlc_f__device``, copies the
  outputs back (what the exported library's host-buffer entry calls).
* ``int dlc_f(host inputs..., host outputs..., const void* const* dlc_weights)``: the
  same with the weights in host memory, uploaded for the call (``CudaProgram``).

Each returns 0 or the ``cudaError_t`` of the first failing call. Intermediates use
the stream-ordered allocator (``cudaMallocAsync``/``cudaFreeAsync`` with the pool
kept across calls), so a loop body's buffers and repeated calls do not pay
``cudaMalloc``'s device-wide synchronization.

Why the host runs the control flow: a condition or trip count computed on the
device is one small copy per branch or iteration, and no body is unrolled, so a
20,000-iteration ``Loop`` has as many kernels as one iteration (``expand-control-flow``
used to unroll up to 4,096 iterations and refuse more).
"""

from __future__ import annotations

from xdsl.dialects import func, gpu, memref, scf
from xdsl.dialects.builtin import MemRefType

from dlc.backends.cuda.cuda_c import CudaEmitError, FunctionWriter, byte_size, ctype
from dlc.dialects.tloop import WeightOp

HOST_PRELUDE = """\
// The stream-ordered allocator's pool keeps its memory between calls (its default
// release threshold returns it at every synchronization).
static cudaError_t dlc_init_pool(void) {
  static int done = 0;
  if (done) return cudaSuccess;
  int device = 0;
  cudaError_t err = cudaGetDevice(&device);
  if (err != cudaSuccess) return err;
  cudaMemPool_t pool;
  err = cudaDeviceGetDefaultMemPool(&pool, device);
  if (err != cudaSuccess) return err;
  uint64_t keep = UINT64_MAX;
  err = cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &keep);
  if (err == cudaSuccess) done = 1;
  return err;
}
"""


class HostWriter(FunctionWriter):
    """The kernel writer plus the host-level ops: device buffers, launches, one-element
    copies for host loads/stores, and ``scf.for``/``scf.while`` over SSA bounds."""

    def __init__(self, where: str, kernels: dict[str, func.FuncOp]):
        super().__init__(where)
        self.kernels = kernels
        self.weight_index = 0  # the next tloop.weight's slot in the weights table

    def op(self, op) -> None:  # noqa: C901 - one dispatch table
        w = self
        if isinstance(op, gpu.AllocOp):
            type_ = op.result.type
            var = w.fresh(op.result, "buf")
            w.line(f"{ctype(type_.element_type)}* {var} = nullptr;")
            w.line(f"DLC_CHECK(cudaMallocAsync((void**)&{var}, {max(1, byte_size(type_))}, 0));")
        elif isinstance(op, gpu.DeallocOp):
            w.line(f"DLC_CHECK(cudaFreeAsync({w[op.buffer]}, 0));")
        elif isinstance(op, gpu.MemcpyOp):
            w.line(f"DLC_CHECK(cudaMemcpy({w[op.dst]}, {w[op.src]}, {byte_size(op.dst.type)}, "
                   "cudaMemcpyDeviceToDevice));")
        elif isinstance(op, WeightOp):
            type_ = op.buffer.type
            c = ctype(type_.element_type)
            var = w.fresh(op.buffer, "weight")
            index = self.weight_index
            self.weight_index += 1
            w.line(f"const {c}* {var} = (const {c}*)dlc_weights[{index}];  // \"{op.weight_name.data}\"")
        elif isinstance(op, memref.LoadOp):  # one element of device memory, to the host
            c = ctype(op.res.type)
            var = w.fresh(op.res, "h")
            w.line(f"{c} {var};")
            w.line(f"DLC_CHECK(cudaMemcpy(&{var}, &{w.element(op.memref, op.indices)}, sizeof({c}), "
                   "cudaMemcpyDeviceToHost));")
        elif isinstance(op, memref.StoreOp):  # one host value, to device memory
            c = ctype(op.value.type)
            w.line("{")
            w.depth += 1
            w.line(f"const {c} dlc_value_ = {w[op.value]};")
            w.line(f"DLC_CHECK(cudaMemcpy(&{w.element(op.memref, op.indices)}, &dlc_value_, sizeof({c}), "
                   "cudaMemcpyHostToDevice));")
            w.depth -= 1
            w.line("}")
        elif isinstance(op, memref.ViewOp):
            c = ctype(op.result.type.element_type)
            var = w.fresh(op.result, "view")
            w.line(f"{c}* {var} = ({c}*)((char*){w[op.source]} + {w[op.byte_shift]});")
        elif isinstance(op, memref.ReinterpretCastOp):  # a reshape view (bufferize.py): same pointer
            w.names[op.result] = w[op.source]
        elif isinstance(op, gpu.LaunchFuncOp):
            kname = op.kernel.root_reference.data
            kernel = self.kernels.get(kname)
            if kernel is None:
                raise CudaEmitError(f"emit-cuda: {self.where}: @{kname} is not a GPU kernel")
            grid = kernel.attributes["gpu.grid"].get_values()  # type: ignore[union-attr]
            block = kernel.attributes["gpu.block"].get_values()  # type: ignore[union-attr]
            args = ", ".join(w[a] for a in op.kernelOperands)
            w.line(f"{kname}<<<dim3({grid[0]}, {grid[1]}, {grid[2]}), "
                   f"dim3({block[0]}, {block[1]}, {block[2]})>>>({args});")
            w.line("DLC_CHECK(cudaGetLastError());")
        elif isinstance(op, scf.ForOp):
            iv = op.body.block.args[0]
            if op.iter_args:
                raise CudaEmitError(f"emit-cuda: {self.where}: host scf.for with loop-carried values")
            name = w.fresh(iv, "t")
            w.line(f"for (int64_t {name} = {w[op.lb]}; {name} < {w[op.ub]}; {name} += {w[op.step]}) {{")
            w.depth += 1
            w.block(op.body.block)
            w.depth -= 1
            w.line("}")
        elif isinstance(op, scf.WhileOp):
            self.while_loop(op)
        else:
            super().op(op)

    def while_loop(self, op: scf.WhileOp) -> None:
        w = self
        before, after = op.before_region.block, op.after_region.block
        carried = []
        for arg, init in zip(before.args, op.arguments):
            var = w.fresh(arg, "w")
            w.line(f"{ctype(arg.type)} {var} = {w[init]};")
            carried.append(var)
        results = []
        for result, arg in zip(op.results, after.args):
            var = w.fresh(result, "wr")
            w.line(f"{ctype(result.type)} {var};")
            w.names[arg] = var  # the body sees what scf.condition forwarded
            results.append(var)
        w.line("while (1) {")
        w.depth += 1
        for inner in before.ops:
            if isinstance(inner, scf.ConditionOp):
                for var, value in zip(results, inner.args):
                    w.line(f"{var} = {w[value]};")
                w.line(f"if (!({w[inner.condition]})) break;")
            else:
                w.op(inner)
        w.block(after, carried)
        w.depth -= 1
        w.line("}")


def _params(host: func.FuncOp, w: FunctionWriter, const_inputs: bool = True) -> list[str]:
    num_inputs = host.attributes["tloop.num_inputs"].value.data  # type: ignore[union-attr]
    params = []
    for arg in host.body.block.args:
        const = "const " if arg.index < num_inputs and const_inputs else ""
        params.append(f"{const}{ctype(arg.type.element_type)}* {w.fresh(arg, f'arg{arg.index}')}")
    return params


def weight_types(host: func.FuncOp) -> list[MemRefType]:
    """The types of the host function's weights, in the order of its weights table."""
    return [op.buffer.type for op in host.body.block.ops if isinstance(op, WeightOp)]


def emit_host(host: func.FuncOp, kernels: dict[str, func.FuncOp]) -> str:
    """The three entries of ``host`` (see the module docstring)."""
    name = host.sym_name.data
    weights = [a.data for a in host.attributes["gpu.weights"].data]  # type: ignore[union-attr]
    w = HostWriter(f"host function @{name}", kernels)
    params = _params(host, w)
    lines = [f"// @{name} on device pointers: inputs, outputs, then the weights table in this",
             f"// order: {', '.join(weights) if weights else '(none)'}.",
             f"extern \"C\" int dlc_{name}__device({', '.join(params + ['const void* const* dlc_weights'])}) {{",
             "  DLC_CHECK(dlc_init_pool());"]
    w.block(host.body.block)
    w.line("DLC_CHECK(cudaDeviceSynchronize());")
    w.line("return 0;")
    parts = ["\n".join(lines + w.lines + ["}"])]
    parts.append(_copying_entry(host, name))
    parts.append(_host_weights_entry(host, name, weights))
    return "\n\n".join(parts)


def _copying_entry(host: func.FuncOp, name: str) -> str:
    num_inputs = host.attributes["tloop.num_inputs"].value.data  # type: ignore[union-attr]
    w = FunctionWriter(f"host function @{name}")
    params = _params(host, w)
    args = host.body.block.args
    body = []
    for arg in args:
        c = ctype(arg.type.element_type)
        size = max(1, byte_size(arg.type))
        body.append(f"  {c}* d_{w[arg]} = nullptr;")
        body.append(f"  DLC_CHECK(cudaMalloc((void**)&d_{w[arg]}, {size}));")
        if arg.index < num_inputs:
            body.append(f"  DLC_CHECK(cudaMemcpy(d_{w[arg]}, {w[arg]}, {size}, cudaMemcpyHostToDevice));")
    call = ", ".join([f"d_{w[a]}" for a in args] + ["d_weights"])
    body.append(f"  int status = dlc_{name}__device({call});")
    for arg in args[num_inputs:]:
        size = max(1, byte_size(arg.type))
        body.append(f"  if (status == 0) status = (int)cudaMemcpy({w[arg]}, d_{w[arg]}, {size}, "
                    "cudaMemcpyDeviceToHost);")
    for arg in args:
        body.append(f"  cudaFree(d_{w[arg]});")
    body.append("  return status;")
    head = [f"// @{name} on host buffers, the weights table on the device: copies in, runs, copies out.",
            f"extern \"C\" int dlc_{name}__copying({', '.join(params + ['const void* const* d_weights'])}) {{"]
    return "\n".join(head + body + ["}"])


def _host_weights_entry(host: func.FuncOp, name: str, weights: list[str]) -> str:
    w = FunctionWriter(f"host function @{name}")
    params = _params(host, w)
    types = weight_types(host)
    n = max(1, len(types))
    body = [f"  void* d_weights[{n}] = {{nullptr}};", "  int status = 0;"]
    for k, type_ in enumerate(types):
        size = max(1, byte_size(type_))
        body.append(f"  if (status == 0) status = (int)cudaMalloc(&d_weights[{k}], {size});")
        body.append(f"  if (status == 0) status = (int)cudaMemcpy(d_weights[{k}], dlc_weights[{k}], {size}, "
                    "cudaMemcpyHostToDevice);")
    call = ", ".join([w[a] for a in host.body.block.args] + ["(const void* const*)d_weights"])
    body.append(f"  if (status == 0) status = dlc_{name}__copying({call});")
    body.append(f"  for (int k = 0; k < {n}; k++) cudaFree(d_weights[k]);")
    body.append("  return status;")
    head = [f"// Host entry for @{name}: inputs, outputs (host memory), then the weights",
            f"// array in this order: {', '.join(weights) if weights else '(none)'}.",
            f"extern \"C\" int dlc_{name}({', '.join(params + ['const void* const* dlc_weights'])}) {{"]
    return "\n".join(head + body + ["}"])
