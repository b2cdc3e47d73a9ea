"""PyTorch frontend (torch.export): ExportedProgram / nn.Module -> graph dialect.

``from_exported_program(ep)``, ``from_module(model, example_args)`` and
``load_exported_program("model.pt2")`` return a ``ModuleOp`` holding
``func.func @main`` with the weights store attached (parameters, buffers and
lifted constants by state-dict name). Unsupported ops raise
:class:`TorchImportError` listing each op, its count and the source line.
Importing this package needs torch (``pip install torch``).
"""

from dlc.frontends.torch.importer import (
    TorchImportError,
    from_exported_program,
    from_module,
    load_exported_program,
)
from dlc.frontends.torch.registry import supported_ops

__all__ = ["from_exported_program", "from_module", "load_exported_program", "TorchImportError",
           "supported_ops"]
