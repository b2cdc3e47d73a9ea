"""BYOC target dnnl (backends/dnnl): single ops against torch/numpy on odd shapes, models
against onnxruntime / torch / onnx's shipped outputs, the partition report, the exported
.so in a fresh process, and what stays with dlc (and why). Skipped, with the reason,
where no usable oneDNN is installed (``pip install onednn-cpu-gomp onednn-devel-cpu-gomp``);
the tests of the missing-library error run everywhere."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import dlc
from dlc.backends.dnnl import library
from dlc.driver import CompileError

ROOT = Path(__file__).resolve().parents[2]
LIGHT = Path(__import__("onnx").__file__).parent / "backend" / "test" / "data" / "light"


def _onednn_reason() -> str | None:
    try:
        library.find_onednn()
    except library.OneDNNMissingError as err:
        return str(err)
    return None


REASON = _onednn_reason()
needs_onednn = pytest.mark.skipif(REASON is not None, reason=f"no usable oneDNN: {REASON}")


def _compile(text: str, **kw):
    return dlc.compile(text, byoc=["dnnl"], **kw)


def _run(module, *args):
    out = module(*args)
    return out[0] if isinstance(out, (list, tuple)) else out


def _primitives(module) -> str:
    return "\n".join(line for line in module.byoc_report if "oneDNN primitive" in line)


# -- single ops (odd shapes) -------------------------------------------------------------

CONV = """
func.func @main(%x: tensor<1x{c}x{h}x{w}xf32>, %r: tensor<1x{o}x{oh}x{ow}xf32>) -> tensor<1x{o}x{oh}x{ow}xf32> {{
  %k = graph.constant dense<{wv}> : tensor<{o}x{cg}x{kh}x{kw}xf32>
  %b = graph.constant dense<{bv}> : tensor<{o}x1x1xf32>
  %y = graph.conv2d %x, %k {{strides = array<i64: {s0}, {s1}>, padding = array<i64: {p}>, dilations = array<i64: {d0}, {d1}>, groups = {g}}} : (tensor<1x{c}x{h}x{w}xf32>, tensor<{o}x{cg}x{kh}x{kw}xf32>) -> tensor<1x{o}x{oh}x{ow}xf32>
  %yb = graph.add %y, %b : (tensor<1x{o}x{oh}x{ow}xf32>, tensor<{o}x1x1xf32>) -> tensor<1x{o}x{oh}x{ow}xf32>
  %s = graph.add %r, %yb : (tensor<1x{o}x{oh}x{ow}xf32>, tensor<1x{o}x{oh}x{ow}xf32>) -> tensor<1x{o}x{oh}x{ow}xf32>
  %z = graph.relu %s : (tensor<1x{o}x{oh}x{ow}xf32>) -> tensor<1x{o}x{oh}x{ow}xf32>
  func.return %z : tensor<1x{o}x{oh}x{ow}xf32>
}}
"""


def _dense(a: np.ndarray) -> str:
    return "[" + ", ".join(_dense(x) if isinstance(x, np.ndarray) and x.ndim else repr(float(x)) for x in a) + "]"


@needs_onednn
@pytest.mark.parametrize("c,o,h,w,k,stride,pad,dil,groups", [
    (3, 5, 11, 13, (3, 3), (2, 2), (1, 0, 2, 1), (1, 1), 1),  # primes, stride, asymmetric padding
    (6, 6, 9, 7, (3, 3), (1, 1), (1, 1, 1, 1), (1, 1), 6),  # depthwise
    (4, 6, 10, 9, (3, 2), (1, 2), (2, 1, 2, 1), (2, 1), 2),  # grouped, dilated, rectangular
])
def test_conv_bias_residual_relu_is_one_primitive(c, o, h, w, k, stride, pad, dil, groups):
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(0)
    kh, kw = k
    oh = (h + pad[0] + pad[2] - dil[0] * (kh - 1) - 1) // stride[0] + 1
    ow = (w + pad[1] + pad[3] - dil[1] * (kw - 1) - 1) // stride[1] + 1
    weight = rng.standard_normal((o, c // groups, kh, kw)).astype(np.float32)
    bias = rng.standard_normal((o, 1, 1)).astype(np.float32)
    text = CONV.format(c=c, o=o, h=h, w=w, oh=oh, ow=ow, cg=c // groups, kh=kh, kw=kw, s0=stride[0],
                       s1=stride[1], p=", ".join(map(str, pad)), d0=dil[0], d1=dil[1], g=groups,
                       wv=_dense(weight), bv=_dense(bias))
    module = _compile(text)
    assert "1 oneDNN primitive(s): conv2d+add+add+relu" in _primitives(module)
    x = rng.standard_normal((1, c, h, w)).astype(np.float32)
    r = rng.standard_normal((1, o, oh, ow)).astype(np.float32)
    F = torch.nn.functional
    xp = F.pad(torch.tensor(x), (pad[1], pad[3], pad[0], pad[2]))
    want = F.conv2d(xp, torch.tensor(weight), stride=stride, dilation=dil, groups=groups)
    want = torch.relu(want + torch.tensor(bias) + torch.tensor(r)).numpy()
    np.testing.assert_allclose(_run(module, x, r), want, rtol=1e-4, atol=1e-4)


MATMUL = """
func.func @main(%x: tensor<5x7xf32>, %a: tensor<2x3x5xf32>, %b: tensor<2x5x4xf32>) -> (tensor<5x3xf32>, tensor<2x3x4xf32>) {
  %w = graph.constant dense<WV> : tensor<7x3xf32>
  %bias = graph.constant dense<[0.5, -1.0, 2.0]> : tensor<3xf32>
  %m = graph.matmul %x, %w : (tensor<5x7xf32>, tensor<7x3xf32>) -> tensor<5x3xf32>
  %mb = graph.add %m, %bias : (tensor<5x3xf32>, tensor<3xf32>) -> tensor<5x3xf32>
  %y = graph.relu %mb : (tensor<5x3xf32>) -> tensor<5x3xf32>
  %bm = graph.matmul %a, %b : (tensor<2x3x5xf32>, tensor<2x5x4xf32>) -> tensor<2x3x4xf32>
  func.return %y, %bm : tensor<5x3xf32>, tensor<2x3x4xf32>
}
"""


@needs_onednn
def test_matmul_bias_relu_and_batched_matmul():
    rng = np.random.default_rng(1)
    w = rng.standard_normal((7, 3)).astype(np.float32)
    module = _compile(MATMUL.replace("WV", _dense(w)))
    assert "matmul+add+relu" in _primitives(module)
    x = rng.standard_normal((5, 7)).astype(np.float32)
    a = rng.standard_normal((2, 3, 5)).astype(np.float32)
    b = rng.standard_normal((2, 5, 4)).astype(np.float32)
    y, bm = module(x, a, b)
    np.testing.assert_allclose(y, np.maximum(x @ w + np.array([0.5, -1.0, 2.0], np.float32), 0), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(bm, a @ b, rtol=1e-5, atol=1e-5)


POOL = """
func.func @main(%x: tensor<2x3x13x11xf32>) -> (tensor<2x3x7x6xf32>, tensor<2x3x6x5xf32>, tensor<2x3x7x6xf32>) {
  %m = graph.max_pool2d %x {kernel = array<i64: 3, 3>, strides = array<i64: 2, 2>, padding = array<i64: 1, 1, 1, 1>} : (tensor<2x3x13x11xf32>) -> tensor<2x3x7x6xf32>
  %a = graph.avg_pool2d %x {kernel = array<i64: 3, 2>, strides = array<i64: 2, 2>, count_include_pad = true} : (tensor<2x3x13x11xf32>) -> tensor<2x3x6x5xf32>
  %c = graph.avg_pool2d %x {kernel = array<i64: 2, 2>, strides = array<i64: 2, 2>, ceil_mode = true} : (tensor<2x3x13x11xf32>) -> tensor<2x3x7x6xf32>
  func.return %m, %a, %c : tensor<2x3x7x6xf32>, tensor<2x3x6x5xf32>, tensor<2x3x7x6xf32>
}
"""


@needs_onednn
def test_pools():
    torch = pytest.importorskip("torch")
    module = _compile(POOL)
    assert _primitives(module).count("primitive(s): avg_pool2d") == 2 and "max_pool2d" in _primitives(module)
    x = np.random.default_rng(2).standard_normal((2, 3, 13, 11)).astype(np.float32)
    F, t = torch.nn.functional, torch.tensor(x)
    want = [F.max_pool2d(t, 3, 2, 1), F.avg_pool2d(t, (3, 2), 2), F.avg_pool2d(t, 2, 2, ceil_mode=True)]
    for got, ref in zip(module(x), want):
        np.testing.assert_allclose(got, ref.numpy(), rtol=1e-5, atol=1e-6)


# -- what stays with dlc -----------------------------------------------------------------

F64_CONV = """
func.func @main(%x: tensor<1x2x5x5xf64>, %w: tensor<3x2x3x3xf64>) -> tensor<1x3x3x3xf64> {
  %y = graph.conv2d %x, %w : (tensor<1x2x5x5xf64>, tensor<3x2x3x3xf64>) -> tensor<1x3x3x3xf64>
  func.return %y : tensor<1x3x3x3xf64>
}
"""


@needs_onednn
def test_a_refused_op_stays_with_dlc_and_the_report_says_why():
    module = _compile(F64_CONV)
    assert not any(line.startswith("partition") for line in module.byoc_report)
    assert any("stays with dlc: graph.conv2d" in line and "f64" in line for line in module.byoc_report)
    rng = np.random.default_rng(3)
    x, w = rng.standard_normal((1, 2, 5, 5)), rng.standard_normal((3, 2, 3, 3))
    torch = pytest.importorskip("torch")
    np.testing.assert_allclose(_run(module, x, w), torch.nn.functional.conv2d(
        torch.tensor(x), torch.tensor(w)).numpy(), rtol=1e-10)


def test_missing_onednn_is_one_line_naming_the_packages(monkeypatch):
    monkeypatch.delenv(library.ENV_ROOT, raising=False)
    monkeypatch.setattr(library, "_DISTRIBUTIONS", (("no-such-onednn", "no-such-onednn-devel"),))
    library.find_onednn.cache_clear()
    try:
        with pytest.raises(CompileError) as err:
            _compile(F64_CONV.replace("f64", "f32"))
    finally:
        library.find_onednn.cache_clear()
    message = str(err.value)
    assert "\n" not in message and "pip install onednn-cpu-gomp onednn-devel-cpu-gomp" in message
    assert "dnnl" in message


def test_a_dnnl_root_without_onednn_is_named(monkeypatch, tmp_path):
    monkeypatch.setenv(library.ENV_ROOT, str(tmp_path))
    library.find_onednn.cache_clear()
    try:
        with pytest.raises(library.OneDNNMissingError, match="DLC_DNNL_ROOT=.* holds no lib/libdnnl.so.3"):
            library.find_onednn()
    finally:
        library.find_onednn.cache_clear()


# -- models ------------------------------------------------------------------------------


@needs_onednn
def test_small_cnn_matches_onnxruntime():
    ort = pytest.importorskip("onnxruntime")
    path = str(ROOT / "examples" / "small_cnn.onnx")
    module = dlc.compile(path, byoc=["dnnl"])
    assert module.byoc_report[0].startswith("partition @dnnl_main_0 -> dnnl: 7 ops (graph.conv2d x2, "
                                            "graph.add x2, graph.relu x2, graph.max_pool2d")
    assert "@dnnl_main_0: dnnl dnnl_main_0: 3 oneDNN primitive(s): conv2d+add+relu, max_pool2d, " \
        "conv2d+add+relu" in module.byoc_report
    assert any(line.startswith("stays with dlc: graph.reduce_mean") for line in module.byoc_report)
    sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    x = np.random.default_rng(4).standard_normal((1, 3, 32, 32)).astype(np.float32)
    (want,) = sess.run(None, {sess.get_inputs()[0].name: x})
    np.testing.assert_allclose(_run(module, x), want, rtol=1e-4, atol=1e-5)


def _light(name: str):
    import onnx
    from onnx import numpy_helper

    model = onnx.load(str(LIGHT / f"light_{name}.onnx"))
    init = {t.name for t in model.graph.initializer}
    inp = next(i for i in model.graph.input if i.name not in init)
    shape = [d.dim_value for d in inp.type.tensor_type.shape.dim]
    n = int(np.prod(shape))
    x = (np.arange(n).reshape(shape) / n).astype(np.float32)  # onnx's backend runner input
    want = numpy_helper.to_array(onnx.load_tensor(str(LIGHT / f"light_{name}_output_0.pb")))
    return str(LIGHT / f"light_{name}.onnx"), x, want


@needs_onednn
@pytest.mark.parametrize("name", [
    "squeezenet",
    "resnet50",
    pytest.param("bvlc_alexnet", marks=pytest.mark.slow),
])
def test_light_model_matches_shipped_output(name):
    path, x, want = _light(name)
    module = dlc.compile(path, byoc=["dnnl"])
    assert any(line.startswith("partition @dnnl_main_0 -> dnnl") for line in module.byoc_report)
    np.testing.assert_allclose(_run(module, x), want, rtol=1e-3, atol=1e-4)


class _DepthwiseBlock:
    """MobileNet's: depthwise 3x3 (stride 2) + BN + ReLU6, pointwise 1x1 + BN + ReLU."""

    @staticmethod
    def make(torch):
        class Block(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.dw = torch.nn.Conv2d(8, 8, 3, stride=2, padding=1, groups=8)
                self.bn = torch.nn.BatchNorm2d(8)
                self.pw = torch.nn.Conv2d(8, 12, 1)
                self.bn2 = torch.nn.BatchNorm2d(12)

            def forward(self, x):
                y = torch.nn.functional.relu6(self.bn(self.dw(x)))
                return torch.relu(self.bn2(self.pw(y)))
        block = Block()
        with torch.no_grad():  # BN statistics that are not the identity
            for bn in (block.bn, block.bn2):
                bn.running_mean.uniform_(-1, 1)
                bn.running_var.uniform_(0.5, 2)
        return block.eval()


@needs_onednn
@pytest.mark.parametrize("name", ["mlp", "depthwise", "transformer"])
def test_torch_models_match_torch(name):
    torch = pytest.importorskip("torch")
    torch.manual_seed(0)
    if name == "mlp":
        model = torch.nn.Sequential(torch.nn.Linear(13, 32), torch.nn.ReLU(), torch.nn.Linear(32, 7)).eval()
        x, primitives = torch.randn(5, 13), "matmul+add+relu, matmul+add"
    elif name == "depthwise":
        model, x = _DepthwiseBlock.make(torch), torch.randn(1, 8, 15, 17)
        primitives = "conv2d+add+clip, conv2d+add+relu"
    else:
        model = torch.nn.TransformerEncoderLayer(d_model=16, nhead=2, dim_feedforward=32, dropout=0.0,
                                                 batch_first=True).eval()
        x, primitives = torch.randn(2, 6, 16), "matmul+add+relu, matmul+add+add"
    module = dlc.compile(model, (x,), byoc=["dnnl"])
    assert primitives in _primitives(module)
    with torch.no_grad():
        want = model(x).numpy()
    np.testing.assert_allclose(_run(module, x.numpy()), want, rtol=1e-4, atol=1e-5)
    if name == "transformer":  # softmax, layer norm, reshapes stay with dlc
        assert any(line.startswith("stays with dlc: graph.reduce_mean") for line in module.byoc_report)


# -- the exported library ----------------------------------------------------------------


@needs_onednn
def test_exported_library_runs_in_a_fresh_process(tmp_path):
    path = str(ROOT / "examples" / "small_cnn.onnx")
    module = dlc.compile(path, byoc=["dnnl"])
    lib = str(tmp_path / "small_cnn.so")
    module.export(lib)
    x = np.random.default_rng(5).standard_normal((1, 3, 32, 32)).astype(np.float32)
    np.save(tmp_path / "x.npy", x)
    # no LD_LIBRARY_PATH and no DLC_DNNL_ROOT: the library finds libdnnl through its rpath
    env = {k: v for k, v in os.environ.items() if k not in ("LD_LIBRARY_PATH", library.ENV_ROOT)}
    script = (f"import numpy as np, dlc.runtime as rt; m = rt.load({lib!r}); "
              f"np.save({str(tmp_path / 'y.npy')!r}, m(np.load({str(tmp_path / 'x.npy')!r}))[0])")
    subprocess.run([sys.executable, "-c", script], check=True, env=env)
    np.testing.assert_allclose(np.load(tmp_path / "y.npy"), _run(module, x), rtol=1e-6, atol=1e-7)
    readelf = subprocess.run(["readelf", "-d", lib], capture_output=True, text=True).stdout
    assert "libdnnl.so.3" in readelf


BROADCAST_MATMUL = """
func.func @main(%a: tensor<2x3x5xf32>, %b: tensor<1x5x4xf32>) -> tensor<2x3x4xf32> {
  %m = graph.matmul %a, %b : (tensor<2x3x5xf32>, tensor<1x5x4xf32>) -> tensor<2x3x4xf32>
  func.return %m : tensor<2x3x4xf32>
}
"""


@needs_onednn
def test_a_batch_broadcast_matmul_stays_with_dlc():
    module = _compile(BROADCAST_MATMUL)
    assert any("stays with dlc: graph.matmul" in line and "no broadcast batch matmul" in line
               for line in module.byoc_report)
    rng = np.random.default_rng(6)
    a, b = rng.standard_normal((2, 3, 5)).astype(np.float32), rng.standard_normal((1, 5, 4)).astype(np.float32)
    np.testing.assert_allclose(_run(module, a, b), a @ b, rtol=1e-5, atol=1e-5)


@needs_onednn
def test_calls_from_several_threads_agree():
    from concurrent.futures import ThreadPoolExecutor

    module = dlc.compile(str(ROOT / "examples" / "small_cnn.onnx"), byoc=["dnnl"])
    xs = [np.random.default_rng(i).standard_normal((1, 3, 32, 32)).astype(np.float32) for i in range(8)]
    want = [_run(module, x) for x in xs]
    with ThreadPoolExecutor(4) as pool:  # the first calls of each thread's stream, concurrently
        got = list(pool.map(lambda x: _run(module, x), xs * 3))
    for i, y in enumerate(got):
        np.testing.assert_array_equal(y, want[i % len(xs)])


NHWC = """
func.func @main(%x: tensor<1x9x11x3xf32>) -> (tensor<1x5x6x4xf32>, tensor<1x4x5x4xf32>) {
  %k = graph.constant dense<WV> : tensor<3x3x3x4xf32>
  %b = graph.constant dense<[0.5, -0.25, 1.0, 2.0]> : tensor<4xf32>
  %y = graph.conv2d %x, %k {strides = array<i64: 2, 2>, padding = array<i64: 1, 1, 1, 1>, data_layout = "NHWC", kernel_layout = "HWIO"} : (tensor<1x9x11x3xf32>, tensor<3x3x3x4xf32>) -> tensor<1x5x6x4xf32>
  %yb = graph.add %y, %b : (tensor<1x5x6x4xf32>, tensor<4xf32>) -> tensor<1x5x6x4xf32>
  %r = graph.relu %yb : (tensor<1x5x6x4xf32>) -> tensor<1x5x6x4xf32>
  %p = graph.max_pool2d %r {kernel = array<i64: 2, 2>, layout = "NHWC"} : (tensor<1x5x6x4xf32>) -> tensor<1x4x5x4xf32>
  func.return %r, %p : tensor<1x5x6x4xf32>, tensor<1x4x5x4xf32>
}
"""


@needs_onednn
def test_nhwc_conv_with_hwio_kernel_and_nhwc_pool():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(7)
    w = rng.standard_normal((3, 3, 3, 4)).astype(np.float32)  # HWIO
    module = _compile(NHWC.replace("WV", _dense(w)))
    assert "conv2d+add+relu, max_pool2d" in _primitives(module)
    x = rng.standard_normal((1, 9, 11, 3)).astype(np.float32)
    F = torch.nn.functional
    conv = F.conv2d(torch.tensor(x).permute(0, 3, 1, 2), torch.tensor(w).permute(3, 2, 0, 1), stride=2, padding=1)
    r = torch.relu(conv + torch.tensor([0.5, -0.25, 1.0, 2.0]).reshape(1, 4, 1, 1))
    p = F.max_pool2d(r, 2, 1)
    got_r, got_p = module(x)
    np.testing.assert_allclose(got_r, r.permute(0, 2, 3, 1).numpy(), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(got_p, p.permute(0, 2, 3, 1).numpy(), rtol=1e-5, atol=1e-5)


@needs_onednn
def test_fire_module_concat_stays_in_one_partition():
    """SqueezeNet's fire module: squeeze 1x1, expand 1x1 and 3x3, concat on channels."""
    torch = pytest.importorskip("torch")
    torch.manual_seed(1)

    class Fire(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.squeeze = torch.nn.Conv2d(6, 3, 1)
            self.e1 = torch.nn.Conv2d(3, 5, 1)
            self.e3 = torch.nn.Conv2d(3, 7, 3, padding=1)

        def forward(self, x):
            s = torch.relu(self.squeeze(x))
            y = torch.cat([torch.relu(self.e1(s)), torch.relu(self.e3(s))], 1)
            return torch.nn.functional.max_pool2d(y, 3, 2, ceil_mode=True)

    model, x = Fire().eval(), torch.randn(1, 6, 13, 11)
    module = dlc.compile(model, (x,), byoc=["dnnl"])
    assert sum(line.startswith("partition") for line in module.byoc_report) == 1
    assert "concat" in _primitives(module)
    with torch.no_grad():
        want = model(x).numpy()
    np.testing.assert_allclose(_run(module, x.numpy()), want, rtol=1e-5, atol=1e-5)


SPATIAL_ADD = """
func.func @main(%x: tensor<1x2x6x6xf32>, %w: tensor<3x2x1x1xf32>, %s: tensor<1x1x6x6xf32>) -> tensor<1x3x6x6xf32> {
  %y = graph.conv2d %x, %w : (tensor<1x2x6x6xf32>, tensor<3x2x1x1xf32>) -> tensor<1x3x6x6xf32>
  %z = graph.add %y, %s : (tensor<1x3x6x6xf32>, tensor<1x1x6x6xf32>) -> tensor<1x3x6x6xf32>
  func.return %z : tensor<1x3x6x6xf32>
}
"""


@needs_onednn
def test_an_add_oneDNN_cannot_broadcast_stays_with_dlc():
    module = _compile(SPATIAL_ADD)
    assert "1 oneDNN primitive(s): conv2d" in _primitives(module)
    assert any("stays with dlc: graph.add" in line for line in module.byoc_report)
    rng = np.random.default_rng(8)
    x, w, s = (rng.standard_normal(shape).astype(np.float32) for shape in ((1, 2, 6, 6), (3, 2, 1, 1), (1, 1, 6, 6)))
    want = np.einsum("nchw,oc->nohw", x, w[:, :, 0, 0]) + s
    np.testing.assert_allclose(_run(module, x, w, s), want, rtol=1e-5, atol=1e-5)
