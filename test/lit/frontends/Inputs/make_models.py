"""Write small TFLite / torch.export models for the frontend lit tests.

usage: make_models.py KIND OUT   (KIND: tflite_conv, tflite_unsupported,
tflite_truncated, torch_mlp)
The .tflite writer is the one the pytest suite uses (test_tflite_frontend.py).
"""

import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "..", "python"))


def tflite_conv(out: str) -> None:
    from test_tflite_frontend import RELU, SAME, ModelBuilder, _options

    m = ModelBuilder()
    x = m.tensor("image", [1, 5, 5, 2])
    w = m.const("conv/w", np.arange(4 * 3 * 3 * 2, dtype=np.float32).reshape(4, 3, 3, 2) / 50)
    b = m.const("conv/b", [0.5, -0.5, 0.25, 0.0])
    y = m.tensor("conv", [1, 3, 3, 4])
    m.op("CONV_2D", [x, w, b], [y], _options("Conv2DOptions", Padding=SAME, StrideH=2, StrideW=2,
                                             FusedActivationFunction=RELU, DilationHFactor=1,
                                             DilationWFactor=1))
    m.inputs, m.outputs = [x], [y]
    open(out, "wb").write(m.build())


def tflite_unsupported(out: str) -> None:
    from test_tflite_frontend import _model_with

    open(out, "wb").write(_model_with(["EXP", "TANH", "EXP"]))


def tflite_truncated(out: str) -> None:
    from test_tflite_frontend import _model_with

    open(out, "wb").write(_model_with(["TANH"])[:-9])


def torch_mlp(out: str) -> None:
    import torch

    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(5, 3), torch.nn.GELU(), torch.nn.Linear(3, 2)).eval()
    torch.export.save(torch.export.export(model, (torch.randn(7, 5),)), out)


if __name__ == "__main__":
    globals()[sys.argv[1]](sys.argv[2])
