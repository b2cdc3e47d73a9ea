"""PyTorch frontend: nn.Modules compiled with dlc.compile (native code through
the LLVM backend) against eager torch; error messages of the importer."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="torch is not installed (pip install torch==2.13.0)")
nn = torch.nn
F = torch.nn.functional

import dlc  # noqa: E402
from dlc.driver import CompileError  # noqa: E402
from dlc.frontends.torch import TorchImportError, from_exported_program, from_module  # noqa: E402


def _randomize(model: nn.Module, seed: int = 0) -> nn.Module:
    """Non-trivial parameters and running statistics (fresh BN is identity-like)."""
    gen = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for p in model.parameters():
            p.copy_(torch.randn(p.shape, generator=gen) * 0.5)
        for name, b in model.named_buffers():
            if "running_var" in name:
                b.copy_(torch.rand(b.shape, generator=gen) + 0.5)
            elif b.dtype.is_floating_point:
                b.copy_(torch.randn(b.shape, generator=gen) * 0.5)
    return model.eval()


def check(model: nn.Module, *args, atol: float = 1e-4):
    model = model.eval()
    with torch.no_grad():
        expected = model(*[a.clone() for a in args])
    compiled = dlc.compile(model, tuple(args))
    got = compiled(*[a.numpy() for a in args])
    expected = list(expected) if isinstance(expected, (tuple, list)) else [expected]
    assert len(got) == len(expected)
    for g, e in zip(got, expected):
        e = e.detach().numpy()
        assert g.shape == e.shape and g.dtype == e.dtype
        np.testing.assert_allclose(g, e, rtol=1e-4, atol=atol)
    return compiled


# ---------------------------------------------------------------------------
# models
# ---------------------------------------------------------------------------


class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1, self.fc2, self.fc3 = nn.Linear(13, 29), nn.Linear(29, 7), nn.Linear(7, 3, bias=False)

    def forward(self, x):
        return self.fc3(torch.tanh(self.fc2(F.relu(self.fc1(x)))))


def test_mlp():
    check(_randomize(MLP()), torch.randn(5, 13))


class ConvBN(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 6, 3, stride=2, padding=1)
        self.bn1 = nn.BatchNorm2d(6)
        self.conv2 = nn.Conv2d(6, 4, (3, 2), dilation=(2, 1), padding=(1, 0), bias=False)
        self.bn2 = nn.BatchNorm2d(4)
        self.pool = nn.MaxPool2d(2, ceil_mode=True)

    def forward(self, x):
        x = F.relu(self.bn1(self.conv1(x)))
        x = self.pool(F.silu(self.bn2(self.conv2(x))))
        return F.avg_pool2d(x, 2, stride=1, padding=1)


def test_cnn_with_batch_norm():
    check(_randomize(ConvBN()), torch.randn(2, 3, 13, 11))


class Depthwise(nn.Module):
    def __init__(self):
        super().__init__()
        self.dw = nn.Conv2d(6, 12, 3, padding=1, groups=6)
        self.pw = nn.Conv2d(12, 5, 1)

    def forward(self, x):
        return self.pw(F.relu6(self.dw(x)))


def test_depthwise_conv():
    check(_randomize(Depthwise()), torch.randn(1, 6, 7, 5))


class Attention(nn.Module):
    def __init__(self, dim=12, heads=3):
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(dim, 3 * dim)
        self.out = nn.Linear(dim, dim)

    def forward(self, x, mask):
        b, t, d = x.shape
        q, k, v = self.qkv(x).split(d, dim=-1)
        q, k, v = (z.view(b, t, self.heads, d // self.heads).transpose(1, 2) for z in (q, k, v))
        y = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
        return self.out(y.transpose(1, 2).reshape(b, t, d))


def test_attention_with_mask():
    mask = torch.rand(5, 5) > 0.4
    mask |= torch.eye(5, dtype=torch.bool)  # no fully masked row
    check(_randomize(Attention()), torch.randn(2, 5, 12), mask)


class CausalAttention(nn.Module):
    def forward(self, q, k, v):
        return F.scaled_dot_product_attention(q, k, v, is_causal=True, scale=0.3)


def test_causal_attention():
    check(CausalAttention(), torch.randn(1, 2, 7, 4), torch.randn(1, 2, 7, 4), torch.randn(1, 2, 7, 3))


class LayerNormGelu(nn.Module):
    def __init__(self):
        super().__init__()
        self.ln = nn.LayerNorm(11)
        self.fc = nn.Linear(11, 11)
        self.ln2 = nn.LayerNorm([3, 11], elementwise_affine=False)

    def forward(self, x):
        y = F.gelu(self.fc(self.ln(x)))
        return self.ln2(F.gelu(y, approximate="tanh") + x)


def test_layer_norm_gelu():
    check(_randomize(LayerNormGelu()), torch.randn(2, 3, 11))


class Embedding(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(17, 6)
        self.pos = nn.Parameter(torch.randn(7, 6))

    def forward(self, ids):
        return (self.emb(ids) + self.pos).mean(dim=1)


def test_embedding_lookup():
    check(_randomize(Embedding()), torch.randint(0, 17, (3, 7)))


class ConcatSplitSlice(nn.Module):
    def forward(self, x, y):
        z = torch.cat([x, y * 2.0], dim=1)
        a, b, c = z.split([2, 3, 4], dim=1)
        first, second = torch.chunk(c, 2, dim=-1)
        s = z[:, 1:8:3, ::2]
        sel = z[:, 4]
        stacked = torch.stack([a.sum(1), b.amax(1)], dim=0)
        return s, sel.t(), stacked, first - second[..., :1], z.permute(2, 0, 1).flatten(1)


def test_concat_split_slicing():
    check(ConcatSplitSlice(), torch.randn(2, 4, 5), torch.randn(2, 5, 5))


class InPlace(nn.Module):
    def forward(self, x):
        y = x.clone()
        y.add_(1.5)
        y.mul_(torch.arange(7, dtype=torch.float32))
        y.relu_()
        y[:, 0] = 3.0
        y.clamp_(max=4.0)
        return y.masked_fill(y > 2.0, -1.0)


def test_in_place_ops():
    check(InPlace(), torch.randn(3, 7))


class TransposedConv(nn.Module):
    def __init__(self):
        super().__init__()
        self.up = nn.ConvTranspose2d(4, 3, 3, stride=2, padding=1, output_padding=1)
        self.up1d = nn.ConvTranspose1d(3, 2, 2, stride=2)

    def forward(self, x, s):
        return torch.sigmoid(self.up(x)), self.up1d(s)


def test_transposed_conv():
    check(_randomize(TransposedConv()), torch.randn(1, 4, 5, 3), torch.randn(2, 3, 5))


class Classifier(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3)
        self.gn = nn.GroupNorm(2, 8)
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(8, 5)

    def forward(self, x):
        x = self.pool(F.leaky_relu(self.gn(self.conv(x)), 0.1))
        return F.log_softmax(self.fc(torch.flatten(x, 1)), dim=1), F.softmax(x.squeeze(-1).squeeze(-1), -1)


def test_adaptive_avg_pool_classifier():
    check(_randomize(Classifier()), torch.randn(3, 3, 9, 7))


class Arithmetic(nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("table", torch.tensor([0.5, -1.0, 2.0]))

    def forward(self, x, idx):
        y = (x - 1) / 3 + 2 ** x.clamp(-2, 2) - x.pow(2) * torch.rsqrt(x.abs() + 1)
        y = torch.where(x > 0, y, self.table) + x.var(dim=0, keepdim=True) + 1 / (1 + x.exp())
        z = y[idx] + F.hardtanh(y, -0.5, 0.5).unsqueeze(0).expand(4, 3, 3).sum(0)
        return z, y.max(dim=1)[0], y.argmax(dim=0), (x.int() * 2).float() + x.std(), y.to(torch.float64)


def test_arithmetic_scalars_and_promotion():
    check(Arithmetic(), torch.randn(3, 3), torch.tensor([2, 0, 0]))


class Activations(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1d = nn.Conv1d(3, 4, 3, padding="same")
        self.bn1d = nn.BatchNorm1d(4)

    def forward(self, x, s):
        acts = [F.hardswish(x), F.hardsigmoid(x), F.softplus(x, beta=2.0), F.elu(x, 0.7), F.relu6(x * 4),
                torch.sin(x) * torch.cos(x), torch.sqrt(x.abs()), torch.log(x.abs() + 1), torch.erf(x),
                torch.floor(x * 3), torch.ceil(x * 3), torch.sign(x), -x, torch.minimum(x, x.t())]
        y = torch.stack(acts, dim=0).sum(0)
        rows = torch.unbind(y, dim=0)
        picked = torch.index_select(y, 1, torch.tensor([4, 0, 4]))
        flags = torch.stack([(x > 0.5).any(dim=1), (x > -2).all(dim=1)], 1)
        up = F.interpolate(x.reshape(1, 1, 5, 5), scale_factor=2, mode="nearest")
        pooled = F.max_pool2d(x.unsqueeze(0), 3, stride=2, padding=1)
        return (rows[1] + rows[3], picked, flags, up, pooled, self.bn1d(self.conv1d(s)),
                x.prod(dim=1), x.argmin(), x.amin(dim=(0, 1), keepdim=True))


def test_activations_and_more_ops():
    check(_randomize(Activations()), torch.randn(5, 5), torch.randn(2, 3, 7))


def test_exported_program_and_padding_ops():
    class Pad(nn.Module):
        def forward(self, x):
            y = F.pad(x, (1, 2, 0, 1), value=0.5)
            return F.pad(y, (1, 1, 1, 1), mode="reflect"), x.repeat(1, 2, 1, 1), x.flip(-1)

    x = torch.randn(1, 2, 3, 4)
    ep = torch.export.export(Pad(), (x,))
    compiled = dlc.compile(ep)
    got = compiled(x.numpy())
    for g, e in zip(got, Pad()(x)):
        np.testing.assert_allclose(g, e.numpy(), rtol=1e-6)


@pytest.mark.parametrize("name", ["cnn", "attention", "classifier", "layer_norm", "transposed", "slicing"])
def test_core_aten_opset(name):
    """Programs decomposed to core ATen (convolution, addmm, native_layer_norm,
    _softmax, bmm, mean.dim...) import as well as the high-level ones."""
    mask = torch.eye(5, dtype=torch.bool) | (torch.rand(5, 5) > 0.5)
    model, args = {
        "cnn": (ConvBN(), (torch.randn(1, 3, 9, 7),)),
        "attention": (Attention(), (torch.randn(1, 5, 12), mask)),
        "classifier": (Classifier(), (torch.randn(2, 3, 8, 6),)),
        "layer_norm": (LayerNormGelu(), (torch.randn(2, 3, 11),)),
        "transposed": (TransposedConv(), (torch.randn(1, 4, 3, 3), torch.randn(1, 3, 4))),
        "slicing": (ConcatSplitSlice(), (torch.randn(2, 4, 5), torch.randn(2, 5, 5))),
    }[name]
    model = _randomize(model, seed=1)
    ep = torch.export.export(model, args).run_decompositions()
    got = dlc.compile(ep)(*[a.numpy() for a in args])
    with torch.no_grad():
        expected = model(*args)
    expected = list(expected) if isinstance(expected, (tuple, list)) else [expected]
    for g, e in zip(got, expected, strict=True):
        np.testing.assert_allclose(g, e.numpy(), rtol=1e-4, atol=1e-4)


def test_numpy_example_args():
    x = np.random.default_rng(0).standard_normal((3, 13)).astype(np.float32)
    model = _randomize(MLP())
    got = dlc.compile(model, (x,))(x)[0]
    np.testing.assert_allclose(got, model(torch.from_numpy(x)).detach().numpy(), rtol=1e-4, atol=1e-5)


def test_module_signature_names_inputs_and_weights_are_stored():
    from dlc.weights import store_of

    module = from_module(_randomize(MLP()), (torch.randn(2, 13),))
    store = store_of(module, create=False)
    assert set(store) == {"fc1.weight", "fc1.bias", "fc2.weight", "fc2.bias", "fc3.weight"}
    text = str(module)
    assert '{dlc.name = "x"}' in text and "graph.dense" in text


# ---------------------------------------------------------------------------
# errors
# ---------------------------------------------------------------------------


class Unsupported(nn.Module):
    def forward(self, x):
        y = torch.cumsum(x, 0)  # LINE-CUMSUM
        y = y + torch.cumsum(x, 1)
        return torch.sort(y, dim=1)[0]  # LINE-SORT


def _line_of(marker: str) -> int:
    with open(__file__) as f:
        for number, line in enumerate(f, 1):
            if marker in line and "_line_of" not in line:
                return number
    raise AssertionError(marker)


def test_unsupported_ops_listed_with_counts_and_source_lines():
    with pytest.raises(TorchImportError) as info:
        from_module(Unsupported(), (torch.randn(3, 4),))
    message = str(info.value)
    assert "\n" not in message
    assert message.startswith("unsupported PyTorch ops:")
    assert f"aten.cumsum.default x2 (at {__file__}:{_line_of('LINE-CUMSUM')})" in message
    assert f"aten.sort.default x1 (at {__file__}:{_line_of('LINE-SORT')})" in message


def test_compile_reports_unsupported_ops_as_compile_error():
    with pytest.raises(CompileError, match=r"unsupported PyTorch ops: aten\.cumsum"):
        dlc.compile(Unsupported(), (torch.randn(3, 4),))


def test_compile_module_without_example_args():
    with pytest.raises(CompileError, match="needs example_args"):
        dlc.compile(MLP())


def test_training_mode_batch_norm_is_rejected_with_source_line():
    model = nn.Sequential(nn.Conv2d(1, 2, 1), nn.BatchNorm2d(2)).train()
    with pytest.raises(TorchImportError, match=r"batch_norm.*training mode"):
        from_module(model, (torch.randn(2, 1, 3, 3),))


def test_unused_tuple_member_is_an_error_only_when_used():
    class UsesIndices(nn.Module):
        def forward(self, x):
            return F.max_pool2d(x, 2, return_indices=True)[1].float()

    with pytest.raises(TorchImportError, match="max_pool2d's indices"):
        from_exported_program(torch.export.export(UsesIndices(), (torch.randn(1, 1, 4, 4),)))


def test_saved_pt2_file_compiles(tmp_path):
    x = torch.randn(4, 13)
    model = _randomize(MLP())
    path = str(tmp_path / "mlp.pt2")
    torch.export.save(torch.export.export(model, (x,)), path)
    got = dlc.compile(path)(x.numpy())[0]
    np.testing.assert_allclose(got, model(x).detach().numpy(), rtol=1e-4, atol=1e-5)


def test_missing_pt2_file():
    with pytest.raises(CompileError, match="no such file"):
        dlc.compile("/nonexistent/model.pt2")
