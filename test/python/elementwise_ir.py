"""Hand-written loop IR for tests: one kernel applying scalar ops element by element."""

from __future__ import annotations

from collections.abc import Sequence


def memref(shape: Sequence[int], elem: str) -> str:
    return "memref<" + "".join(f"{d}x" for d in shape) + elem + ">"


def elementwise_module(shape: Sequence[int], inputs: Sequence[tuple[str, str, str]],
                       outputs: Sequence[tuple[str, str, str]], body: str) -> str:
    """Kernel ``@main_0_op`` + host ``@main`` over buffers of ``shape``: loads each
    input ``(buffer, value, elem)`` as ``%value`` from ``%buffer`` at the loop
    indices ``%i0, %i1...``, runs ``body``, stores each output ``(buffer, value,
    elem)``'s ``%value`` (defined by ``body``) into ``%buffer``."""
    ivs = [f"%i{k}" for k in range(len(shape))]
    idx = ", ".join(ivs)
    typed = [(buf, value, memref(shape, elem)) for buf, value, elem in [*inputs, *outputs]]
    params = ", ".join(f"%{buf}: {t}" for buf, _, t in typed)
    loads = "".join(f"      %{value} = memref.load %{buf}[{idx}] : {t}\n" for buf, value, t in typed[:len(inputs)])
    stores = "".join(f"      memref.store %{value}, %{buf}[{idx}] : {t}\n" for buf, value, t in typed[len(inputs):])
    opens = "".join(f"tloop.for {iv} = 0 to {d} {{\n" for iv, d in zip(ivs, shape))
    closes = "}\n" * len(shape)
    args = ", ".join(f"%{buf}" for buf, _, _ in typed)
    types = ", ".join(t for _, _, t in typed)
    return f"""
builtin.module {{
  func.func @main_0_op({params}) attributes {{tloop.kernel}} {{
    {opens}{loads}      {body}
{stores}    {closes}
    func.return
  }}
  func.func @main({params}) attributes {{tloop.host, tloop.num_inputs = {len(inputs)} : i64}} {{
    func.call @main_0_op({args}) : ({types}) -> ()
    func.return
  }}
}}
"""
