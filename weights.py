"""The external weights store behind `graph.weight`.

Model weights are numpy arrays held by name in a :class:`WeightStore`, never in
Python lists or in printed IR. A store is attached to a `builtin.module`
(``attach``); in text form the module names its store file with the
``dlc.weights`` attribute, a ``.npz`` path relative to the IR file::

    builtin.module attributes {dlc.weights = "model.weights.npz"} {
      func.func @main(...) {
        %w = graph.weight "fc.weight" : tensor<10x4xf32>
        ...

Why our own: xDSL's `dense_resource` blobs live in the Context and print as hex
at the end of the file; we want weights out of the text and memory-mapped.
"""

from __future__ import annotations

import os
import weakref
import zipfile
import zlib
from collections.abc import Iterator

import numpy as np
from xdsl.dialects.builtin import ModuleOp, StringAttr
from xdsl.ir import Operation

WEIGHTS_ATTR = "dlc.weights"


class WeightLookupError(KeyError):
    """A weight name that the module's store does not hold (or no store)."""

    def __str__(self) -> str:  # KeyError's str() would add quotes
        return str(self.args[0])


class WeightStore:
    """name -> numpy array; arrays are stored as given (no copy)."""

    def __init__(self, arrays: dict[str, np.ndarray] | None = None, path: str | None = None):
        self._arrays: dict[str, np.ndarray] = dict(arrays or {})
        self.path = path

    def __contains__(self, name: str) -> bool:
        return name in self._arrays

    def __getitem__(self, name: str) -> np.ndarray:
        return self._arrays[name]

    def __len__(self) -> int:
        return len(self._arrays)

    def __iter__(self) -> Iterator[str]:
        return iter(self._arrays)

    def items(self):
        return self._arrays.items()

    def nbytes(self) -> int:
        return sum(a.nbytes for a in self._arrays.values())

    def add(self, name: str, array: np.ndarray) -> str:
        """Store ``array`` under ``name`` (made unique with a suffix); returns the name."""
        base, n = name, 1
        while name in self._arrays:
            if self._arrays[name] is array:
                return name
            name = f"{base}_{n}"
            n += 1
        self._arrays[name] = array
        return name

    def remove(self, name: str) -> None:
        self._arrays.pop(name, None)

    def save(self, path: str) -> None:
        """Write all arrays to ``path`` (.npz, uncompressed), atomically.

        Written member by member rather than with ``np.savez(path, **arrays)``,
        whose keyword arguments clash with weights named ``file`` or
        ``allow_pickle``."""
        tmp = path + ".tmp.npz"
        try:
            with zipfile.ZipFile(tmp, "w", zipfile.ZIP_STORED, allowZip64=True) as archive:
                for name, array in self._arrays.items():
                    with archive.open(name + ".npy", "w", force_zip64=True) as member:
                        np.lib.format.write_array(member, np.asanyarray(array), allow_pickle=False)
            os.replace(tmp, path)
        finally:
            if os.path.exists(tmp):
                os.remove(tmp)
        self.path = path

    @classmethod
    def load(cls, path: str) -> WeightStore:
        try:
            with np.load(path, allow_pickle=False) as data:
                return cls({k: data[k] for k in data.files}, path=path)
        except (zipfile.BadZipFile, EOFError, zlib.error) as err:  # truncated or corrupt archive
            raise ValueError(f"not a valid .npz archive (truncated or corrupt: {err})") from None


_STORES: weakref.WeakKeyDictionary[Operation, WeightStore] = weakref.WeakKeyDictionary()


def _top(op: Operation) -> Operation:
    while op.parent_op() is not None:
        op = op.parent_op()  # type: ignore[assignment]
    return op


def attach(module: Operation, store: WeightStore) -> WeightStore:
    _STORES[module] = store
    return store


def store_of(op: Operation, create: bool = True) -> WeightStore | None:
    """The store of the module holding ``op`` (created empty if absent)."""
    top = _top(op)
    store = _STORES.get(top)
    if store is None and create:
        store = attach(top, WeightStore())
    return store


def load_for_module(module: ModuleOp, ir_path: str | None) -> WeightStore | None:
    """Load the store a parsed module names in its ``dlc.weights`` attribute."""
    attr = module.attributes.get(WEIGHTS_ATTR)
    if not isinstance(attr, StringAttr):
        return None
    path = attr.data
    if ir_path and not os.path.isabs(path):
        path = os.path.join(os.path.dirname(os.path.abspath(ir_path)), path)
    return attach(module, WeightStore.load(path))


def lookup_weight(op: Operation, name: str, missing_ok: bool = False) -> np.ndarray | None:
    store = store_of(op, create=False)
    if store is None or name not in store:
        if missing_ok:
            return None
        if store is None:
            raise WeightLookupError(f"weight \"{name}\": the module has no weights store attached")
        raise WeightLookupError(f"weight \"{name}\" is not in the module's weights store")
    return store[name]
