"""Upload and run of the fast ONNX light models over loopback RPC match the
local run of the same exported library bit for bit, and onnx's shipped outputs
(the compile is most of
this file's time: about 10 s a model on an idle machine)."""

from __future__ import annotations

import os
import sys

import numpy as np
import pytest

import dlc
import dlc.rpc
import dlc.runtime
from rpc_testing import REPO, deadline, start_server

pytestmark = pytest.mark.usefixtures("deadline")
_ = deadline  # the fixture, used by pytestmark
sys.path.insert(0, os.path.join(REPO, "conformance"))

import run_light_models  # noqa: E402


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    proc = start_server(tmp_path_factory.mktemp("server"))
    yield proc
    proc.stop()


@pytest.mark.parametrize("name", ["squeezenet", "bvlc_alexnet"])
def test_light_models_remote_match_local(server, name, tmp_path):
    library = str(tmp_path / f"{name}.so")
    dlc.compile(os.path.join(run_light_models.LIGHT_DIR, f"light_{name}.onnx")).export(library)
    x = run_light_models.light_input(name)
    want = dlc.runtime.load(library)(x)
    with dlc.rpc.connect("127.0.0.1", server.port) as remote:
        got = remote.load(remote.upload(library))(x)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g, w)
    from onnx import load_tensor, numpy_helper  # and both match what onnx ships

    shipped = numpy_helper.to_array(load_tensor(os.path.join(run_light_models.LIGHT_DIR, f"light_{name}_output_0.pb")))
    np.testing.assert_allclose(got[0], shipped, rtol=run_light_models.RTOL, atol=run_light_models.ATOL)
