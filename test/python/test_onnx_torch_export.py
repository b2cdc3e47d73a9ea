"""Models exported from PyTorch with the TorchScript ONNX exporter
(`torch.onnx.export(..., dynamo=False)`) compile to native code with
`dlc.compile` and match torch's eager outputs.

The dynamo exporter needs onnxscript, which is not installed, so only the
TorchScript exporter is covered. Sizes are small and odd (primes, 1) so a
wrong broadcast or a transposed weight cannot hide.
"""

from __future__ import annotations

import io
import warnings

import numpy as np
import onnx
import pytest

torch = pytest.importorskip("torch", reason="torch is not installed: PyTorch export tests skipped")
nn = torch.nn

import dlc  # noqa: E402

RTOL, ATOL = 1e-4, 1e-5


class LayerNormGeluMLP(nn.Module):
    def __init__(self, approximate: str):
        super().__init__()
        self.fc1 = nn.Linear(7, 13)
        self.norm = nn.LayerNorm(13)
        self.act = nn.GELU(approximate=approximate)
        self.fc2 = nn.Linear(13, 5)

    def forward(self, x):
        return self.fc2(self.act(self.norm(self.fc1(x))))


class EncoderLayer(nn.Module):
    """Wraps nn.TransformerEncoderLayer: exporting the layer directly makes the
    TorchScript tracer pass `is_causal` as a tensor, which torch itself then
    rejects (a torch limitation, not ours)."""

    def __init__(self, activation: str):
        super().__init__()
        self.layer = nn.TransformerEncoderLayer(
            d_model=12, nhead=3, dim_feedforward=17, dropout=0.0,
            activation=activation, batch_first=True)

    def forward(self, x):
        return self.layer(x)


class DepthwiseSeparableBlock(nn.Module):
    """MobileNet-style: depthwise 3x3 + BN + ReLU6, pointwise 1x1 + BN."""

    def __init__(self):
        super().__init__()
        self.depthwise = nn.Conv2d(6, 6, 3, stride=1, padding=1, groups=6, bias=False)
        self.bn1 = nn.BatchNorm2d(6)
        self.act = nn.ReLU6()
        self.pointwise = nn.Conv2d(6, 11, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(11)

    def forward(self, x):
        return self.bn2(self.pointwise(self.act(self.bn1(self.depthwise(x)))))


class StridedDepthwiseBlock(DepthwiseSeparableBlock):
    def __init__(self):
        super().__init__()
        self.depthwise = nn.Conv2d(6, 6, 3, stride=2, padding=1, groups=6, bias=False)


def _randomize_batchnorm_stats(module):
    # Fresh BatchNorm has mean 0 / var 1, which would make it a no-op.
    for sub in module.modules():
        if isinstance(sub, nn.BatchNorm2d):
            sub.running_mean.uniform_(-0.5, 0.5)
            sub.running_var.uniform_(0.5, 1.5)
            sub.weight.data.uniform_(0.5, 1.5)
            sub.bias.data.uniform_(-0.5, 0.5)


def _export(module, example) -> onnx.ModelProto:
    buffer = io.BytesIO()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(module, (example,), buffer, dynamo=False, opset_version=17)
    return onnx.load_from_string(buffer.getvalue())


def _check(module, input_shape):
    torch.manual_seed(1)
    example = torch.randn(*input_shape)
    module.eval()
    with torch.no_grad():
        expected = module(example)
    expected = list(expected) if isinstance(expected, tuple) else [expected]
    model = _export(module, example)
    compiled = dlc.compile(model)
    actual = compiled(example.numpy())
    assert len(actual) == len(expected)
    for got, want in zip(actual, expected):
        np.testing.assert_allclose(got, want.numpy(), rtol=RTOL, atol=ATOL)
    return model


def _seeded(factory):
    torch.manual_seed(0)
    module = factory()
    _randomize_batchnorm_stats(module)
    return module


@pytest.mark.parametrize("approximate", ["none", "tanh"])
@pytest.mark.parametrize("batch", [1, 3])
def test_mlp_layernorm_gelu(approximate, batch):
    model = _check(_seeded(lambda: LayerNormGeluMLP(approximate)), (batch, 7))
    assert "LayerNormalization" in {n.op_type for n in model.graph.node}


@pytest.mark.parametrize("activation", ["relu", "gelu"])
def test_transformer_encoder_layer(activation):
    model = _check(_seeded(lambda: EncoderLayer(activation)), (2, 5, 12))
    assert "Softmax" in {n.op_type for n in model.graph.node}


@pytest.mark.parametrize("block", [DepthwiseSeparableBlock, StridedDepthwiseBlock])
def test_mobilenet_depthwise_block(block):
    model = _check(_seeded(block), (2, 6, 7, 5))
    convs = [n for n in model.graph.node if n.op_type == "Conv"]
    groups = [a.i for n in convs for a in n.attribute if a.name == "group"]
    assert 6 in groups  # the depthwise conv survived export as a grouped Conv


@pytest.mark.parametrize("bidirectional,num_layers", [(False, 1), (True, 1), (False, 2)])
def test_gru(bidirectional, num_layers):
    module = _seeded(lambda: nn.GRU(5, 7, num_layers=num_layers, batch_first=True,
                                    bidirectional=bidirectional))
    # Both outputs (sequence output and final hidden state) are compared.
    model = _check(module, (3, 4, 5))
    assert "GRU" in {n.op_type for n in model.graph.node}


def test_compile_from_exported_file(tmp_path):
    """The same flow through a .onnx file on disk instead of a ModelProto."""
    module = _seeded(DepthwiseSeparableBlock).eval()
    example = torch.randn(1, 6, 5, 3)
    path = tmp_path / "block.onnx"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(module, (example,), str(path), dynamo=False, opset_version=17)
    with torch.no_grad():
        expected = module(example).numpy()
    (actual,) = dlc.compile(str(path))(example.numpy())
    np.testing.assert_allclose(actual, expected, rtol=RTOL, atol=ATOL)
