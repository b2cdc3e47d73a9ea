"""pytest setup for test/python: every compile verifies its llvm-dialect module with
xDSL before translation (``dlc.driver.verify_ir``; off by default for compile speed),
so a lowering that builds invalid IR fails its tests with xDSL's message."""

import os

os.environ.setdefault("DLC_VERIFY_IR", "1")
