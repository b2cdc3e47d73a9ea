"""One name -> entry table, filled by a decorator: the registry behind every
extension point of dlc (ONNX, torch and TFLite converters, lower-to-loops
kernel generators, lower-to-llvm op handlers).

    CONVERTERS = Registry("ONNX converter", modules=["dlc.frontends.onnx.ops_nn", ...])

    @CONVERTERS.register("Relu", "LeakyRelu")
    def convert_relu(cx, node): ...

    fn = CONVERTERS.lookup("Relu")      # None when nothing is registered

``modules`` are imported the first time the table is read, so that a registry
is complete without its users importing every module that fills it, and
importing the registry stays cheap. A name registered twice is an error (two
modules claiming one op is a bug, not an override), unless ``replace=True``.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterator, Sequence
from typing import Generic, TypeVar

T = TypeVar("T")


class Registry(Generic[T]):
    def __init__(self, what: str, modules: Sequence[str] = ()) -> None:
        self.what = what
        self._modules = tuple(modules)
        self._loaded = not self._modules
        self._entries: dict[str, T] = {}

    def register(self, *names: str, replace: bool = False) -> Callable[[T], T]:
        """Decorator: register the decorated entry under each of ``names``."""

        def decorate(entry: T) -> T:
            for name in names:
                self.add(name, entry, replace=replace)
            return entry

        return decorate

    def add(self, name: str, entry: T, replace: bool = False) -> None:
        if not replace and name in self._entries and self._entries[name] is not entry:
            raise ValueError(f"{self.what} for '{name}' is registered twice")
        self._entries[name] = entry

    def _load(self) -> None:
        if not self._loaded:
            self._loaded = True  # first: the modules register into this table while importing
            for module in self._modules:
                importlib.import_module(module)

    def lookup(self, name: str) -> T | None:
        self._load()
        return self._entries.get(name)

    def __contains__(self, name: str) -> bool:
        self._load()
        return name in self._entries

    def __getitem__(self, name: str) -> T:
        self._load()
        return self._entries[name]

    def __iter__(self) -> Iterator[str]:
        self._load()
        return iter(list(self._entries))

    def __len__(self) -> int:
        self._load()
        return len(self._entries)

    def names(self) -> list[str]:
        self._load()
        return sorted(self._entries)

    def items(self):
        self._load()
        return list(self._entries.items())
