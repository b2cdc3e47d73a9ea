"""``dlc quantize``: a float ONNX model to a QDQ int8 ONNX model (dlc.quantization).

    dlc quantize model.onnx --calibrate inputs.npz -o model.int8.onnx
                 [--method minmax|percentile] [--percentile 99.99] [--per-tensor]
                 [--activation-type uint8|int8] [--op-types Conv,Gemm,...]

``inputs.npz`` holds one array per model input, named as the input, of its
shape or ``(N, *shape)`` for N samples. Prints how many tensors were quantized.
"""

from __future__ import annotations

import sys

from dlc.diagnostics import DiagnosticError


def add_command(sub) -> None:
    from dlc.quantization.qdq_writer import DEFAULT_OP_TYPES

    q = sub.add_parser("quantize", help="quantize a float ONNX model to a QDQ int8 ONNX model")
    q.add_argument("model", help="float model.onnx")
    q.add_argument("--calibrate", required=True, metavar="INPUTS.npz",
                   help="calibration inputs: one array per model input, (N, *shape) for N samples")
    q.add_argument("-o", "--output", required=True, help="the QDQ model (.onnx)")
    q.add_argument("--method", choices=("minmax", "percentile"), default="minmax",
                   help="activation range: min/max, or cut at --percentile (default minmax)")
    q.add_argument("--percentile", type=float, default=99.99, help="for --method percentile (default 99.99)")
    q.add_argument("--per-tensor", action="store_true", help="one weight scale per tensor, not per channel")
    q.add_argument("--activation-type", choices=("uint8", "int8"), default="uint8")
    q.add_argument("--reduce-range", action="store_true",
                   help="7-bit weights (as onnxruntime's reduce_range: for onnxruntime on x86 without VNNI)")
    q.add_argument("--op-types", default=",".join(DEFAULT_OP_TYPES),
                   help=f"ops to quantize, comma-separated (default {','.join(DEFAULT_OP_TYPES)})")


def quantize_command(args) -> int:
    from dlc.quantization import quantize

    if not args.model.lower().endswith(".onnx"):
        raise DiagnosticError(f"'{args.model}': dlc quantize takes an .onnx model")
    op_types = tuple(t.strip() for t in args.op_types.split(",") if t.strip())
    model = quantize(args.model, args.calibrate, output=args.output, method=args.method,
                     percentile=args.percentile, per_channel=not args.per_tensor,
                     activation_type=args.activation_type, op_types=op_types, reduce_range=args.reduce_range)
    pairs = sum(1 for n in model.graph.node if n.op_type == "QuantizeLinear")
    weights = sum(1 for n in model.graph.node if n.op_type == "DequantizeLinear"
                  and n.input[0].endswith("_quantized"))
    print(f"{args.output}: {pairs} activations and {weights} weights quantized", file=sys.stderr)
    return 0
