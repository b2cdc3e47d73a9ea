"""``python -m dlc.rpc server|tracker ...``: the RPC commands without xDSL."""

import sys

from dlc.rpc.cli import main

sys.exit(main())
