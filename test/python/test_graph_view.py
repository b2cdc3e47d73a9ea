"""`dlc view` (tools/graph_view.py): the page's data, profiles, errors, and the resnet50
page rendered by headless Chromium (Debian's `chromium`; skipped only where it is not
installed: CI installs it).

Chromium runs the page's scripts and prints the DOM after them (``--dump-dom``); console
messages (``console.error``, uncaught exceptions) are on stderr as ``INFO:CONSOLE`` lines
with ``--enable-logging=stderr``. The page logs nothing when it renders fine.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess

import onnx
import pytest
from xdsl.traits import ConstantLike

from dlc import driver
from dlc.tools import dlc_cli
from dlc.tools.graph_view import graph_data, load_graph, read_profile, render_html

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SMALL_CNN = os.path.join(ROOT, "examples", "small_cnn.onnx")
RESNET50 = os.path.join(os.path.dirname(onnx.__file__), "backend", "test", "data", "light", "light_resnet50.onnx")
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


def graph_op_count(module) -> int:
    """Graph ops of @main after the passes, constants and weights left out (the page's boxes)."""
    (fn,) = [op for op in module.ops if op.name == "func.func"]
    return sum(1 for op in fn.body.block.ops if op.name.startswith("graph.") and not op.has_trait(ConstantLike))


def test_small_cnn_data():
    module = load_graph(SMALL_CNN)
    data = graph_data(module, "small_cnn.onnx")
    ops = [n for n in data["nodes"] if n["kind"] == "op"]
    assert data["op_count"] == len(ops) == graph_op_count(module) == 16
    groups = [c for c in data["clusters"] if c["kind"] == "group"]
    assert [c["members"] for c in groups] == [3, 3, 2]  # conv+add+relu twice, matmul+add
    assert sum(n["parent"] == groups[0]["id"] for n in ops) == 3
    labels = [e["label"] for e in data["edges"]]
    assert "1x3x32x32xf32" in labels  # the image, plain
    assert "1x1x32x32x16xf32 NCHW16c" in labels  # the first conv group's result, blocked
    assert [n["label"] for n in data["nodes"] if n["kind"] in ("input", "output")] == ["image", "probs"]
    conv = next(n for n in ops if n["label"] == "conv2d_nchwc")
    assert "graph.conv2d_nchwc" in conv["ir"] and conv["sub"].startswith("w ")
    # the kernel names are the compiled code's (what a profile names)
    defined = set(re.findall(r'define [^@]*@"?([\w.]+)"?\(', driver.compile(SMALL_CNN).llvm_ir))
    kernels = {c["kernel"] for c in groups} | {n["kernel"] for n in ops if n["kernel"]}
    assert len(kernels) >= 8
    assert kernels <= defined, kernels - defined


def test_profile_times_are_matched_by_kernel_name(tmp_path):
    module = load_graph(SMALL_CNN)
    data = graph_data(module, "m")
    group = next(c for c in data["clusters"] if c["kind"] == "group")
    softmax = next(n for n in data["nodes"] if n["label"] == "softmax")
    trace = {"traceEvents": [
        {"name": group["kernel"], "ph": "X", "ts": 0, "dur": 300.0, "pid": 1, "tid": 1, "args": {}},
        {"name": group["kernel"], "ph": "X", "ts": 400, "dur": 100.0, "pid": 1, "tid": 1, "args": {}},
        {"name": softmax["kernel"], "ph": "X", "ts": 600, "dur": 50, "pid": 1, "tid": 1},
        {"name": "not_a_kernel_here", "ph": "X", "ts": 700, "dur": 25, "pid": 1, "tid": 1},
        {"name": "process_name", "ph": "M", "pid": 1, "args": {"name": "dlc"}},
    ]}
    path = tmp_path / "trace.json"
    path.write_text(json.dumps(trace))
    profile, skipped = read_profile(str(path))
    assert skipped == 1 and profile[group["kernel"]] == 400.0
    shown = graph_data(module, "m", profile)["profile"]
    assert shown["times"] == {group["id"]: 400.0, softmax["id"]: 50.0}
    assert shown["unmatched"] == ["not_a_kernel_here"]
    assert shown["total_us"] == 475.0 and shown["matched_us"] == 450.0


def test_page_is_self_contained(tmp_path):
    html = render_html(graph_data(load_graph(SMALL_CNN), "small </script> cnn"))
    assert "sourceMappingURL" not in html
    assert not re.search(r"<(script|img|link|iframe)[^>]*\s(src|href)=", html)  # nothing to load
    assert set(re.findall(r"url\(([^)]*)\)", html)) == {"#arrow"}
    assert set(re.findall(r"https?://[^\s\"']+", html)) == {"http://www.w3.org/2000/svg"}
    assert html.count("</script>") == 3  # the title and JSON cannot close a script early


def run_view(capsys, *argv) -> tuple[int, str, str]:
    code = dlc_cli.main(["view", *argv])
    out, err = capsys.readouterr()
    return code, out, err


def test_view_cli_and_errors(tmp_path, capsys):
    page = tmp_path / "g.html"
    code, out, err = run_view(capsys, SMALL_CNN, "-o", str(page))
    assert code == 0, err
    assert out.strip() == f"wrote {page}: 16 ops, 3 fused groups"
    assert page.read_text().startswith("<!DOCTYPE html>")

    loops = tmp_path / "loops.mlir"
    subprocess.run(["dlc-opt", "-p", "lower-to-loops", os.path.join(ROOT, "test", "lit", "tools", "Inputs", "add.mlir"),
                    "-o", str(loops)], check=True)
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    for argv, message in [
        ([str(loops)], "holds loops-level IR; dlc view shows graph-level IR"),
        ([str(tmp_path / "none.onnx")], "no such file"),
        ([SMALL_CNN, "--profile", str(bad)], "cannot read '"),
        ([SMALL_CNN, "--profile", str(tmp_path / "none.json")], "cannot open '"),
    ]:
        out_page = tmp_path / "never.html"
        code, _, err = run_view(capsys, *argv, "-o", str(out_page))
        assert code == 1 and len(err.strip().splitlines()) == 1 and message in err, err
        assert not out_page.exists()


def chromium(*args: str, timeout: int = 180) -> subprocess.CompletedProcess:
    return subprocess.run([CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
                           "--enable-logging=stderr", "--v=0", *args],
                          capture_output=True, text=True, timeout=timeout)


@pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed (Debian package 'chromium'; CI installs it)")
def test_resnet50_page_in_headless_chromium(tmp_path):
    page = tmp_path / "resnet50.html"
    module = load_graph(RESNET50)
    expected = graph_op_count(module)  # counted here, not from the page's data
    page.write_text(render_html(graph_data(module, "light_resnet50.onnx")))
    assert expected > 150
    assert page.stat().st_size < 400_000  # the page stays small (about 150 kB)

    dom = chromium("--dump-dom", page.as_uri())
    assert dom.returncode == 0, dom.stderr[-2000:]
    console = [line for line in dom.stderr.splitlines() if ":CONSOLE" in line]
    assert console == [], console
    body = re.search(r"<body[^>]*>", dom.stdout).group(0)
    assert "data-error" not in body, body
    assert f'data-rendered="{expected}"' in body
    assert len(re.findall(r'<g class="node op"', dom.stdout)) == expected
    assert len(re.findall(r'<g class="cluster group"', dom.stdout)) >= 50  # fused groups as boxes

    shot = tmp_path / "resnet50.png"
    result = chromium("--window-size=1400,900", f"--screenshot={shot}", page.as_uri())
    assert result.returncode == 0, result.stderr[-2000:]
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and shot.stat().st_size > 10_000


TWO_FUNCTIONS = """\
func.func @main(%a: tensor<3x4xf32>, %b: tensor<4xf32>) -> tensor<3x4xf32> {
  %c = graph.add %a, %b : (tensor<3x4xf32>, tensor<4xf32>) -> tensor<3x4xf32>
  %d = graph.relu %c : (tensor<3x4xf32>) -> tensor<3x4xf32>
  func.return %d : tensor<3x4xf32>
}
func.func @other(%a: tensor<3x4xf32>) -> tensor<3x4xf32> {
  %c = graph.exp %a : (tensor<3x4xf32>) -> tensor<3x4xf32>
  func.return %c : tensor<3x4xf32>
}
"""


@pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed (Debian package 'chromium'; CI installs it)")
def test_profiled_page_with_two_functions_in_headless_chromium(tmp_path):
    source = tmp_path / "two.mlir"
    source.write_text(TWO_FUNCTIONS)
    module = load_graph(str(source))
    data = graph_data(module, "two.mlir")
    group = next(c for c in data["clusters"] if c["kind"] == "group")
    exp = next(n for n in data["nodes"] if n["label"] == "exp")
    assert [c["label"] for c in data["clusters"] if c["kind"] == "function"] == ["@main", "@other"]
    profile = {group["kernel"]: 80.0, exp["kernel"]: 20.0}
    page = tmp_path / "two.html"
    page.write_text(render_html(graph_data(module, "two.mlir", profile)))
    dom = chromium("--dump-dom", f"{page.as_uri()}#{exp['id']}")
    assert [line for line in dom.stderr.splitlines() if ":CONSOLE" in line] == []
    assert re.search(r'<body data-rendered="3"', dom.stdout)
    # the group's box is coloured (the slowest: red end), the exp op too, its IR shown (#id)
    assert re.search(r'<g class="cluster group"[^>]*><rect [^>]*style="fill: rgb\(235, 60, 35\)', dom.stdout)
    assert re.search(rf'<g class="node op selected" data-id="{re.escape(exp["id"])}"[^>]*><rect [^>]*style="fill: rgb',
                     dom.stdout)
    assert "graph.exp" in re.search(r'<pre id="ir">(.*?)</pre>', dom.stdout, re.S).group(1)
    assert "0.020 ms (20.0%)" in dom.stdout
