"""dlc.output_files: how an output path is written (renamed over a file, written
through a FIFO or device, a symlink's target), the one-line errors, and
OutputSet's all-or-none; then the tools that use it (dlc run --output,
dlc compile -o, CompiledModule.export)."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
import threading

import numpy as np
import pytest

from dlc.diagnostics import DiagnosticError
from dlc.output_files import OutputSet, check_writable, is_file_output, publish_file, write_atomically


def _error(path, data=b"x") -> str:
    with pytest.raises(DiagnosticError) as info:
        write_atomically(str(path), data)
    message = info.value.message
    assert "\n" not in message and ".tmp" not in message
    return message


def _no_temporaries(directory) -> None:
    assert not [name for name in os.listdir(directory) if ".tmp" in name]


def test_new_file_gets_the_default_permissions(tmp_path):
    path = tmp_path / "out.mlir"
    write_atomically(str(path), "text\n")
    assert path.read_text() == "text\n"
    umask = os.umask(0)
    os.umask(umask)
    assert stat.S_IMODE(path.stat().st_mode) == 0o666 & ~umask
    _no_temporaries(tmp_path)


def test_existing_file_is_replaced_and_keeps_its_permissions(tmp_path):
    path = tmp_path / "out.mlir"
    path.write_text("old contents, longer than the new\n")
    os.chmod(path, 0o640)
    write_atomically(str(path), b"new\n")
    assert path.read_bytes() == b"new\n"
    assert stat.S_IMODE(path.stat().st_mode) == 0o640
    _no_temporaries(tmp_path)


def test_symlink_stays_a_link_and_its_target_is_written(tmp_path):
    (tmp_path / "real").mkdir()
    target = tmp_path / "real" / "out.mlir"
    target.write_text("old\n")
    link = tmp_path / "link.mlir"
    link.symlink_to(target)
    write_atomically(str(link), "new\n")
    assert link.is_symlink() and target.read_text() == "new\n"
    _no_temporaries(tmp_path / "real")
    dangling = tmp_path / "dangling.mlir"
    dangling.symlink_to(tmp_path / "real" / "made.mlir")
    write_atomically(str(dangling), "made\n")
    assert dangling.is_symlink() and (tmp_path / "real" / "made.mlir").read_text() == "made\n"


def test_fifo_is_written_through(tmp_path):
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    got = []
    reader = threading.Thread(target=lambda: got.append(open(fifo, "rb").read()))
    reader.start()
    write_atomically(str(fifo), b"through the pipe\n")
    reader.join(timeout=30)
    assert got == [b"through the pipe\n"]
    assert stat.S_ISFIFO(os.stat(fifo).st_mode)
    assert not is_file_output(str(fifo))
    _no_temporaries(tmp_path)


@pytest.mark.skipif(not os.access("/dev/null", os.W_OK), reason="/dev/null is not writable here")
def test_dev_null_stays_a_device():
    write_atomically("/dev/null", b"discarded")
    assert stat.S_ISCHR(os.stat("/dev/null").st_mode)
    assert not [name for name in os.listdir("/dev") if name.startswith(".null.")]


def test_dev_stdout_redirected_to_a_file_is_written_at_its_offset(tmp_path):
    # a rename would detach the file from the redirection; truncating it would
    # drop what the process printed before
    out = tmp_path / "stdout.txt"
    code = "from dlc.output_files import write_atomically; print('first', flush=True); " \
           "write_atomically('/dev/stdout', 'second\\n'); print('third')"
    with open(out, "w") as f:
        subprocess.run([sys.executable, "-c", code], stdout=f, check=True)
    assert out.read_text() == "first\nsecond\nthird\n"


def test_directory_is_an_error(tmp_path):
    assert _error(tmp_path) == f"cannot write '{tmp_path}': is a directory"
    with pytest.raises(DiagnosticError, match="is a directory"):
        check_writable(str(tmp_path))


def test_missing_directory_is_an_error(tmp_path):
    missing = tmp_path / "missing"
    assert _error(missing / "x.so") == f"cannot write '{missing}/x.so': no such directory '{missing}'"
    assert _error("/missing-dlc-dir/x.so") == "cannot write '/missing-dlc-dir/x.so': no such directory '/missing-dlc-dir'"
    (tmp_path / "file").write_text("")
    assert _error(tmp_path / "file" / "a" / "x.so").endswith(f"'{tmp_path}/file' is not a directory")
    assert not missing.exists()


def test_proc_is_an_error_naming_the_path():
    assert _error("/proc/x.so") == "cannot write '/proc/x.so': no such file (files cannot be created in /proc)"


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into read-only directories")
def test_permission_denied_names_the_users_path(tmp_path):
    locked = tmp_path / "locked"
    locked.mkdir()
    os.chmod(locked, 0o500)
    try:
        assert _error(locked / "out.mlir") == f"cannot write '{locked}/out.mlir': permission denied"
    finally:
        os.chmod(locked, 0o700)


def test_output_set_is_all_or_none_when_a_second_output_fails(tmp_path):
    first = tmp_path / "first.mlir"
    first.write_text("keep\n")
    with pytest.raises(DiagnosticError, match="is a directory"):
        with OutputSet() as out:
            out.add(str(first), "new\n")
            out.add(str(tmp_path), "a directory")
    assert first.read_text() == "keep\n"
    _no_temporaries(tmp_path)

    def fails(f):
        f.write(b"half")
        raise DiagnosticError("the second output failed half-way")

    with pytest.raises(DiagnosticError, match="half-way"):
        with OutputSet() as out:
            out.add(str(tmp_path / "new.mlir"), "new\n")
            out.add_writer(str(tmp_path / "second.npz"), fails)
    assert sorted(os.listdir(tmp_path)) == ["first.mlir"]


def test_output_set_publishes_every_output_together(tmp_path):
    with OutputSet() as out:
        out.add(str(tmp_path / "a.mlir"), "a\n")
        out.add_writer(str(tmp_path / "b.npy"), lambda f: np.save(f, np.arange(3)))
        out.add_file(str(tmp_path / "c.bin"), lambda tmp: open(tmp, "wb").write(b"c"))
        # nothing is in place before the end, only hidden temporaries beside the targets
        assert all(name.startswith(".") and ".tmp" in name for name in os.listdir(tmp_path))
    assert (tmp_path / "a.mlir").read_text() == "a\n"
    assert list(np.load(tmp_path / "b.npy")) == [0, 1, 2]
    assert (tmp_path / "c.bin").read_bytes() == b"c"


def test_the_same_output_twice_is_an_error(tmp_path):
    with pytest.raises(DiagnosticError, match="the same file is given as two outputs"):
        with OutputSet() as out:
            out.add(str(tmp_path / "a.npy"), "1")
            out.add(str(tmp_path / "." / "a.npy"), "2")
    assert os.listdir(tmp_path) == []
    if os.access("/dev/null", os.W_OK):
        with OutputSet() as out:  # discarding two outputs
            out.add("/dev/null", "1")
            out.add("/dev/null", "2")


def test_publish_file_keeps_the_producers_mode(tmp_path):
    def produce(tmp):
        with open(tmp, "wb") as f:
            f.write(b"\x7fELF")
        os.chmod(tmp, 0o755)

    publish_file(produce, str(tmp_path / "lib.so"))
    assert stat.S_IMODE((tmp_path / "lib.so").stat().st_mode) == 0o755


def test_diagnostics_write_atomically_forwards(tmp_path):
    from dlc.diagnostics import write_atomically as old_name

    old_name(str(tmp_path / "x.txt"), "x")
    assert (tmp_path / "x.txt").read_text() == "x"


# ---------------------------------------------------------------------------
# the tools
# ---------------------------------------------------------------------------

TWO_OUTPUTS = """\
func.func @main(%a: tensor<2x3xf32>) -> (tensor<2x3xf32>, tensor<2x3xf32>) {
  %b = graph.add %a, %a : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  %c = graph.mul %a, %a : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return %b, %c : tensor<2x3xf32>, tensor<2x3xf32>
}
"""


@pytest.fixture(scope="module")
def two_outputs(tmp_path_factory):
    path = tmp_path_factory.mktemp("model") / "two.mlir"
    path.write_text(TWO_OUTPUTS)
    return str(path)


def _one_line_error(capsys, code) -> str:
    err = capsys.readouterr().err
    assert code == 1 and "Traceback" not in err and ".tmp" not in err, err
    assert len(err.strip().splitlines()) == 1, err
    return err.strip()


def test_dlc_run_output_directory_is_an_error(two_outputs, tmp_path, capsys):
    from dlc.tools import dlc_cli

    code = dlc_cli.main(["run", two_outputs, "--repeat", "1", "--output", str(tmp_path)])
    assert _one_line_error(capsys, code) == f"dlc: error: cannot write '{tmp_path}': is a directory"
    assert os.listdir(tmp_path) == [] and not os.path.exists(f"{tmp_path}.npy")


def test_dlc_run_two_outputs_all_or_none(two_outputs, tmp_path, capsys):
    from dlc.tools import dlc_cli

    first, bad = tmp_path / "first.npy", tmp_path / "missing" / "second.npy"
    code = dlc_cli.main(["run", two_outputs, "--repeat", "1", "--output", str(first), "--output", str(bad)])
    assert "no such directory" in _one_line_error(capsys, code)
    assert os.listdir(tmp_path) == []
    second = tmp_path / "second"  # written at the path as given (np.save would add .npy)
    assert dlc_cli.main(["run", two_outputs, "--repeat", "1", "--output", str(first), "--output", str(second)]) == 0
    a = np.load(first)
    assert a.shape == (2, 3) and np.load(second).shape == (2, 3)
    _no_temporaries(tmp_path)


def test_dlc_compile_output_errors_before_compiling(two_outputs, tmp_path, capsys):
    from dlc.tools import dlc_cli

    for path, why in ((tmp_path, "is a directory"), (tmp_path / "no" / "x.so", "no such directory"),
                      ("/proc/x.so", "cannot be created in /proc")):
        code = dlc_cli.main(["compile", two_outputs, "-o", str(path)])
        assert why in _one_line_error(capsys, code)
    assert os.listdir(tmp_path) == []


def test_export_to_a_directory_is_an_error_and_to_a_symlink_writes_its_target(two_outputs, tmp_path):
    import dlc
    from dlc.driver import CompileError

    compiled = dlc.compile(two_outputs)
    with pytest.raises(CompileError, match="is a directory"):
        compiled.export(str(tmp_path))
    assert os.listdir(tmp_path) == []
    (tmp_path / "lib").mkdir()
    link = tmp_path / "model.so"
    link.symlink_to(tmp_path / "lib" / "real.so")
    compiled.export(str(link))
    assert link.is_symlink() and (tmp_path / "lib" / "real.so").read_bytes()[:4] == b"\x7fELF"
    _no_temporaries(tmp_path / "lib")
