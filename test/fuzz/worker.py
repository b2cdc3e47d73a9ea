"""Run a batch of fuzz cases in one process (importing dlc once is most of a
tool's start-up time), each with its own cwd and its stdout/stderr file
descriptors redirected to files, so C-level output (libgomp, malloc) is caught.

Protocol on the control stream (the worker's original stdout): ``BEGIN <id>``
before a case and ``END <json>`` after it. A case that kills or hangs the
process leaves a BEGIN without its END; the runner records it and starts a new
worker for the rest.
"""

from __future__ import annotations

import json
import os
import sys
import traceback

from .case import Case


def _tool_main(tool: str):
    if tool == "dlc-opt":
        from dlc.tools.dlc_opt import main
    elif tool == "dlc-translate":
        from dlc.tools.dlc_translate import main
    elif tool == "dlc":
        from dlc.tools.dlc_cli import main
    else:
        raise ValueError(f"unknown tool {tool}")
    return main


def _is_dlc_error(err: BaseException) -> bool:
    return any(c.__module__.split(".")[0] == "dlc" for c in type(err).__mro__)


def run_one(case: Case, cwd: str, io_prefix: str) -> dict:
    result = {"id": case.id, "rc": 0, "api_error": None, "api_note": None}
    sys.stdout.flush()
    sys.stderr.flush()
    saved = os.dup(1), os.dup(2), os.dup(0)
    out = os.open(io_prefix + ".out", os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    err = os.open(io_prefix + ".err", os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(out, 1)
    os.dup2(err, 2)
    os.dup2(null, 0)
    old_cwd = os.getcwd()
    try:
        os.chdir(cwd)
        if case.api is not None:
            from .runtime_cases import API

            try:
                result["api_note"] = API[case.api](**case.params)
            except Exception as exc:  # the oracle judges what was raised
                result["rc"] = 1
                message = str(exc).strip()
                result["api_error"] = f"{type(exc).__name__}: {message}"
                if not _is_dlc_error(exc):
                    traceback.print_exc()
                    result["api_note"] = f"raised {type(exc).__module__}.{type(exc).__name__}, not a dlc error"
        else:
            try:
                result["rc"] = int(_tool_main(case.argv[0])(case.argv[1:]) or 0)
            except SystemExit as exc:  # argparse
                code = exc.code
                result["rc"] = code if isinstance(code, int) else (0 if code is None else 1)
                if isinstance(code, str):
                    print(code, file=sys.stderr)
            except BaseException:  # escaped run_tool: the oracle flags the traceback
                traceback.print_exc()
                result["rc"] = 1
    finally:
        os.chdir(old_cwd)
        sys.stdout.flush()
        sys.stderr.flush()
        os.dup2(saved[0], 1)
        os.dup2(saved[1], 2)
        os.dup2(saved[2], 0)
        for fd in (*saved, out, err, null):
            os.close(fd)
    with open(io_prefix + ".err", errors="replace") as f:
        result["stderr"] = f.read(20000)
    result["stdout_len"] = os.path.getsize(io_prefix + ".out")
    os.unlink(io_prefix + ".out")
    os.unlink(io_prefix + ".err")
    return result


def main(batch_file: str) -> int:
    with open(batch_file) as f:
        batch = json.load(f)
    control = os.fdopen(os.dup(1), "w", buffering=1)
    for item in batch["cases"]:
        case = Case.from_json(item["case"])
        control.write(f"BEGIN {case.id}\n")
        control.flush()
        result = run_one(case, item["cwd"], item["io"])
        control.write("END " + json.dumps(result) + "\n")
        control.flush()
    return 0
