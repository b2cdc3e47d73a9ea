"""The RPC side of the ``dlc`` command line:

    dlc rpc server [--host 127.0.0.1] [--port 9090] [--key K] [--token-file F] [--tracker HOST:PORT]
                   [--max-upload BYTES] [--timeout S] [--work-dir D] [--port-file F]
    dlc rpc tracker [--host 127.0.0.1] [--port 9190] [--list]
    dlc run model.so --rpc HOST:PORT [--rpc-token-file F]
    dlc run model.so --rpc-key K --tracker HOST:PORT [--rpc-token-file F]

``dlc run --rpc`` uploads the library, loads it on the server, runs it on the
given or random inputs, fetches the outputs and prints them as a local run
does, with the run time measured on the server (``time_evaluator``). The
commands themselves live in rpc/cli.py (``python -m dlc.rpc`` on a device).
"""

from __future__ import annotations

import os

import numpy as np

from dlc.diagnostics import DiagnosticError


def add_rpc_command(sub) -> None:
    from dlc.rpc.cli import add_commands

    rpc = sub.add_parser("rpc", help="remote execution: a server for the device, a tracker for a pool")
    add_commands(rpc.add_subparsers(dest="rpc_command", metavar="COMMAND", required=True))


def add_run_arguments(run) -> None:
    run.add_argument("--rpc", metavar="HOST:PORT", help="run the .so on this dlc rpc server")
    run.add_argument("--rpc-token-file", metavar="FILE", help="the server's token (for --rpc or --tracker)")
    run.add_argument("--rpc-key", metavar="KEY", help="device key to ask the --tracker for")
    run.add_argument("--tracker", metavar="HOST:PORT", help="get a server with --rpc-key from this tracker")


def wants_remote(args) -> bool:
    return bool(args.rpc or args.tracker or args.rpc_key)


def rpc_command(args) -> int:
    from dlc.rpc import RpcError
    from dlc.rpc.cli import run_command

    try:
        return run_command(args)
    except RpcError as err:
        raise DiagnosticError(str(err)) from None


def _check_remote_args(args) -> None:
    from dlc.rpc import RpcError
    from dlc.rpc.cli import parse_address

    for flag, value in (("--rpc", args.rpc), ("--tracker", args.tracker)):
        try:
            if value:
                parse_address(value, flag)
        except RpcError as err:
            raise DiagnosticError(str(err)) from None
    if args.rpc and (args.tracker or args.rpc_key):
        raise DiagnosticError("--rpc names the server; --tracker/--rpc-key ask a tracker for one: give one of them")
    if bool(args.tracker) != bool(args.rpc_key):
        raise DiagnosticError("--tracker and --rpc-key go together (the tracker hands out a server by key)")
    if not args.model.endswith(".so"):
        raise DiagnosticError(f"--rpc runs an exported library; compile '{args.model}' first "
                              "(dlc compile MODEL -o model.so)")
    for flag, on in (("--check", args.check), ("--profile", args.profile), ("--bisect", args.bisect)):
        if on:
            raise DiagnosticError(f"{flag} runs locally; it cannot be combined with --rpc/--tracker")


def _connect(args):
    from dlc.rpc import connect, connect_via_tracker
    from dlc.rpc.cli import parse_address

    if args.rpc:
        host, port = parse_address(args.rpc, "--rpc")
        return connect(host, port, token_file=args.rpc_token_file)
    host, port = parse_address(args.tracker, "--tracker")
    return connect_via_tracker(host, port, args.rpc_key, token_file=args.rpc_token_file)


def cmd_run_remote(args) -> int:
    from dlc.rpc import RpcError

    _check_remote_args(args)
    try:
        return _run_remote(args)
    except RpcError as err:
        where = args.rpc or f"tracker {args.tracker}"
        raise DiagnosticError(f"rpc {where}: {err}") from None


def _run_remote(args) -> int:
    from dlc.output_files import OutputSet, check_writable
    from dlc.tools.dlc_cli import check_run_args, compare, describe_output, load_expected, load_inputs

    check_run_args(args)
    for path in args.output:
        check_writable(path)
    expected_stored = [load_expected(path) for path in args.expect]
    if not os.path.isfile(args.model):  # the usual one-line error, before connecting
        raise DiagnosticError(f"cannot open '{args.model}': no such file")
    with _connect(args) as remote:
        name = remote.upload(args.model, name="model.so")
        module = remote.load(name, num_threads=args.threads)
        entry = args.entry or module.default_entry
        if entry not in module.entries:
            raise DiagnosticError(f"no entry point named @{entry} in '{args.model}' "
                                  f"(have {', '.join('@' + e for e in module.entries)})")
        in_specs, out_specs = module.entries[entry]
        inputs = load_inputs(list(in_specs), args.input, args.seed)
        if len(args.output) > len(out_specs) or len(args.expect) > len(out_specs):
            raise DiagnosticError(f"the model has {len(out_specs)} outputs; got "
                                  f"{max(len(args.output), len(args.expect))} --output/--expect files")
        outputs = module.run(entry, *inputs)
        timing = module.time_evaluator(*inputs, repeat=args.repeat, number=1, entry=entry)
        where = remote.where
    for i, array in enumerate(outputs):
        print(describe_output(i, out_specs[i][0], array))
    print(f"median run time: {timing.median * 1e3:.3f} ms over {args.repeat} runs "
          f"(remote {where}: min {timing.min * 1e3:.3f}, max {timing.max * 1e3:.3f}, "
          f"spread {timing.spread * 100:.1f}%)")
    if expected_stored:
        if not compare(outputs[:len(expected_stored)], expected_stored, args.rtol, args.atol):
            raise DiagnosticError("outputs differ from the --expect files")
    with OutputSet() as files:
        for path, array in zip(args.output, outputs):
            files.add_writer(path, lambda f, a=np.asarray(array): np.lib.format.write_array(f, a, allow_pickle=False))
    return 0
