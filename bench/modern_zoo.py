"""The modern model classes of issue 21, built from torch.nn with seeded random weights.

Each builder returns ``(module, example_inputs)`` for ``torch.onnx.export``
(TorchScript exporter, ``dynamo=False``: the dynamo exporter needs onnxscript).
``SIZES[name]["full"]`` are the issue's sizes, ``["quick"]`` tiny ones for a
smoke test. The attention blocks are written out (Linear q/k/v, reshape +
transpose per head, matmul, scale, additive mask, softmax, matmul, merge) as
BERT/GPT exports look, rather than ``nn.MultiheadAttention`` (whose export
depends on torch's fast-path choices).
"""

from __future__ import annotations

import math

SIZES = {
    # BERT-base width: d=768, 12 heads, ffn 3072, 4 layers, seq 128, erf GELU; token ids in.
    "bert": {"full": dict(vocab=1000, d=768, heads=12, ffn=3072, layers=4, seq=128),
             "quick": dict(vocab=50, d=32, heads=4, ffn=64, layers=1, seq=7)},
    # GPT-style decoder: pre-LN blocks, causal additive mask, tied-free LM head.
    "gpt": {"full": dict(vocab=1000, d=512, heads=8, ffn=2048, layers=6, seq=128),
            "quick": dict(vocab=50, d=32, heads=4, ffn=64, layers=1, seq=7)},
    # MobileNetV2: inverted residuals, depthwise 3x3 stride 1/2, relu6, 224x224.
    "mobilenetv2": {"full": dict(image=224, width=1.0, full_stages=True),
                    "quick": dict(image=32, width=0.25, full_stages=False)},
    # 2-layer LSTM language model.
    "lstm_lm": {"full": dict(vocab=1000, hidden=512, layers=2, seq=64),
                "quick": dict(vocab=50, hidden=16, layers=2, seq=5)},
    # ViT: 16x16/16 patch embedding (conv), class token, 4 encoder layers at d=768.
    "vit": {"full": dict(image=224, patch=16, d=768, heads=12, ffn=3072, layers=4),
            "quick": dict(image=32, patch=16, d=32, heads=4, ffn=64, layers=1)},
}

MODELS = list(SIZES)


def _nn():
    import torch
    from torch import nn

    class Attention(nn.Module):
        def __init__(self, d, heads):
            super().__init__()
            self.h, self.dh = heads, d // heads
            self.q, self.k, self.v, self.o = (nn.Linear(d, d) for _ in range(4))

        def forward(self, x, mask=None):
            b, s, d = x.shape

            def split(t):  # (b, s, d) -> (b, h, s, dh)
                return t.reshape(b, s, self.h, self.dh).transpose(1, 2)

            q, k, v = split(self.q(x)), split(self.k(x)), split(self.v(x))
            scores = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(self.dh)
            if mask is not None:
                scores = scores + mask
            ctx = torch.matmul(torch.softmax(scores, dim=-1), v)
            return self.o(ctx.transpose(1, 2).reshape(b, s, d))

    class PostLNLayer(nn.Module):  # BERT / ViT-style encoder layer
        def __init__(self, d, heads, ffn, pre_ln=False):
            super().__init__()
            self.pre_ln = pre_ln
            self.attn = Attention(d, heads)
            self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
            self.ffn = nn.Sequential(nn.Linear(d, ffn), nn.GELU(), nn.Linear(ffn, d))

        def forward(self, x, mask=None):
            if self.pre_ln:
                x = x + self.attn(self.ln1(x), mask)
                return x + self.ffn(self.ln2(x))
            x = self.ln1(x + self.attn(x, mask))
            return self.ln2(x + self.ffn(x))

    class Bert(nn.Module):
        def __init__(self, vocab, d, heads, ffn, layers, seq):
            super().__init__()
            self.tok, self.pos = nn.Embedding(vocab, d), nn.Embedding(seq, d)
            self.ln = nn.LayerNorm(d)
            self.layers = nn.ModuleList(PostLNLayer(d, heads, ffn) for _ in range(layers))
            self.register_buffer("positions", torch.arange(seq).unsqueeze(0))

        def forward(self, ids):
            x = self.ln(self.tok(ids) + self.pos(self.positions))
            for layer in self.layers:
                x = layer(x)
            return x

    class Gpt(nn.Module):
        def __init__(self, vocab, d, heads, ffn, layers, seq):
            super().__init__()
            self.tok, self.pos = nn.Embedding(vocab, d), nn.Embedding(seq, d)
            self.layers = nn.ModuleList(PostLNLayer(d, heads, ffn, pre_ln=True) for _ in range(layers))
            self.ln = nn.LayerNorm(d)
            self.head = nn.Linear(d, vocab, bias=False)
            self.register_buffer("positions", torch.arange(seq).unsqueeze(0))
            causal = torch.triu(torch.full((seq, seq), -1e4), diagonal=1)
            self.register_buffer("mask", causal.reshape(1, 1, seq, seq))

        def forward(self, ids):
            x = self.tok(ids) + self.pos(self.positions)
            for layer in self.layers:
                x = layer(x, self.mask)
            return self.head(self.ln(x))

    def conv_bn(cin, cout, k, stride, groups=1, act=True):
        mods = [nn.Conv2d(cin, cout, k, stride, k // 2, groups=groups, bias=False), nn.BatchNorm2d(cout)]
        return nn.Sequential(*mods, nn.ReLU6()) if act else nn.Sequential(*mods)

    class InvertedResidual(nn.Module):
        def __init__(self, cin, cout, stride, expand):
            super().__init__()
            hidden = cin * expand
            layers = [conv_bn(cin, hidden, 1, 1)] if expand != 1 else []
            layers += [conv_bn(hidden, hidden, 3, stride, groups=hidden), conv_bn(hidden, cout, 1, 1, act=False)]
            self.body = nn.Sequential(*layers)
            self.residual = stride == 1 and cin == cout

        def forward(self, x):
            return x + self.body(x) if self.residual else self.body(x)

    class MobileNetV2(nn.Module):
        # (expand, channels, repeats, stride) as in the paper / torchvision
        STAGES = [(1, 16, 1, 1), (6, 24, 2, 2), (6, 32, 3, 2), (6, 64, 4, 2), (6, 96, 3, 1),
                  (6, 160, 3, 2), (6, 320, 1, 1)]

        def __init__(self, image, width, full_stages):
            super().__init__()

            def ch(c):
                return max(8, int(c * width + 4) // 8 * 8)

            stages = self.STAGES if full_stages else [(1, 16, 1, 1), (6, 24, 2, 2), (6, 32, 2, 2)]
            cin = ch(32)
            layers = [conv_bn(3, cin, 3, 2)]
            for t, c, n, s in stages:
                for i in range(n):
                    layers.append(InvertedResidual(cin, ch(c), s if i == 0 else 1, t))
                    cin = ch(c)
            last = ch(1280) if full_stages else 64
            layers.append(conv_bn(cin, last, 1, 1))
            self.features = nn.Sequential(*layers)
            self.classifier = nn.Linear(last, 1000 if full_stages else 10)

        def forward(self, x):
            return self.classifier(self.features(x).mean((2, 3)))

    class LstmLm(nn.Module):
        def __init__(self, vocab, hidden, layers, seq):
            super().__init__()
            self.emb = nn.Embedding(vocab, hidden)
            self.lstm = nn.LSTM(hidden, hidden, layers, batch_first=True)
            self.head = nn.Linear(hidden, vocab)

        def forward(self, ids):
            out, _ = self.lstm(self.emb(ids))
            return self.head(out)

    class Vit(nn.Module):
        def __init__(self, image, patch, d, heads, ffn, layers):
            super().__init__()
            self.embed = nn.Conv2d(3, d, patch, patch)
            n = (image // patch) ** 2
            self.cls = nn.Parameter(torch.randn(1, 1, d) * 0.02)
            self.pos = nn.Parameter(torch.randn(1, n + 1, d) * 0.02)
            self.layers = nn.ModuleList(PostLNLayer(d, heads, ffn, pre_ln=True) for _ in range(layers))
            self.ln = nn.LayerNorm(d)

        def forward(self, x):
            p = self.embed(x).flatten(2).transpose(1, 2)  # (b, n, d)
            x = torch.cat([self.cls.expand(p.shape[0], -1, -1), p], dim=1) + self.pos
            for layer in self.layers:
                x = layer(x)
            return self.ln(x)

    return {"bert": Bert, "gpt": Gpt, "mobilenetv2": MobileNetV2, "lstm_lm": LstmLm, "vit": Vit}


def build(name: str, size: str = "full", seed: int = 0):
    """(torch module in eval mode, example inputs as a tuple of tensors)."""
    import torch

    torch.manual_seed(seed)
    cfg = SIZES[name][size]
    module = _nn()[name](**cfg).eval()
    if name == "mobilenetv2":  # random BN statistics, so the folded scales are not all 1
        for m in module.modules():
            if isinstance(m, torch.nn.BatchNorm2d):
                m.running_mean.uniform_(-0.1, 0.1)
                m.running_var.uniform_(0.5, 1.5)
    if name in ("mobilenetv2", "vit"):
        inputs = (torch.randn(1, 3, cfg["image"], cfg["image"]),)
    else:
        inputs = (torch.randint(0, cfg["vocab"], (1, cfg["seq"]), dtype=torch.int64),)
    return module, inputs


def export(name: str, path: str, size: str = "full", seed: int = 0) -> list:
    """Export model ``name`` to ONNX at ``path`` (opset 17); returns its inputs as numpy arrays."""
    import torch

    module, inputs = build(name, size, seed)
    with torch.no_grad():
        torch.onnx.export(module, inputs, path, opset_version=17, dynamo=False,
                          input_names=[f"input{i}" for i in range(len(inputs))], output_names=["output"])
    return [t.numpy() for t in inputs]
