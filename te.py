"""``dlc.te``: the tensor-expression language (see ``dlc/frontends/te/__init__.py``).

```python
import dlc.te
f = dlc.te.compile('''
input A: f32[64, 32]
input B: f32[32, 48]
C[i, j] = sum(k: A[i, k] * B[k, j])
''', schedule=lambda s: s.parallel("i"))
C = f(A, B)
```
"""

from dlc.frontends.te import (  # noqa: F401  (re-exports)
    HOST,
    KERNEL,
    TEError,
    TEFunction,
    compile,
    import_te,
    lower,
    program,
    reference,
)

__all__ = ["HOST", "KERNEL", "TEError", "TEFunction", "compile", "import_te", "lower", "program", "reference"]
