"""The weights store behind `graph.weight`, and how IR text carries it.

Model weights are numpy arrays held by name in a :class:`WeightStore`, never in
Python lists or in IR ops. A store is attached to a `builtin.module`
(``attach``). In text, the module's ``dlc.weights`` attribute says where the
weights are, in one of two ways:

* inline (the default of every tool, for stdout and ``-o``): a dictionary from
  weight name to an MLIR ``dense_resource`` whose blob is in the file's
  ``{-# dialect_resources #-}`` section, so the text stands alone (it can be
  piped from tool to tool, and upstream ``mlir-opt`` reads it)::

    builtin.module attributes {dlc.weights = {"fc.weight" = dense_resource<fc.weight> : tensor<10x4xf32>}} {
      func.func @main(...) {
        %w = graph.weight "fc.weight" : tensor<10x4xf32>
        ...
    {-#
      dialect_resources: {
        builtin: {
          fc.weight: "0x04000000..."
        }
      }
    #-}

  A blob is MLIR's: "0x", then hex of a 4-byte little-endian alignment (the
  element size), then the raw little-endian bytes of the array in row-major
  order (numpy's ``tobytes``; bool one byte per element, bf16/f8 in their
  ml_dtypes bytes). Parsing gives back bit-identical arrays.
  ``--elide-constants=N`` prints weights of more than N elements (and
  ``--mlir-elide-resource-strings-if-larger=N`` those whose blob has more than
  N characters) as ``dense_resource<__elided__>`` (MLIR's convention): such
  text parses and prints, but compiling or running it fails naming the weight
  (:class:`ElidedWeightError`).
* sidecar (``--external-weights`` with ``-o OUT``, for big models: no hex in
  the text, which inline costs about 2 bytes of text and 40 ns of printing or
  parsing per weight byte; the arrays load straight from a ``.npz``): a ``.npz`` path,
  relative to the IR file: ``builtin.module attributes {dlc.weights =
  "OUT.weights.npz"}``.

Why the parsing is ours: xDSL 0.75 keeps resource blobs as hex strings in one
process-wide table of the builtin dialect and renames a key another parse has
declared before; :class:`ResourceParser` reads the section itself (one regex
scan, ``bytearray.fromhex``) and keeps keys as written.
"""

from __future__ import annotations

import os
import re
import weakref
import zipfile
import zlib
from collections.abc import Iterator
from typing import BinaryIO

import numpy as np
from xdsl.dialects import builtin
from xdsl.dialects.builtin import (
    DenseResourceAttr,
    DictionaryAttr,
    IntegerType,
    ModuleOp,
    Signedness,
    StringAttr,
    TensorType,
)
from xdsl.ir import Attribute, Operation
from xdsl.parser import Parser
from xdsl.utils.exceptions import DiagnosticException

WEIGHTS_ATTR = "dlc.weights"
ELIDED_KEY = "__elided__"  # MLIR's key for a resource whose data was not printed


class WeightLookupError(KeyError):
    """A weight name that the module's store does not hold (or no store)."""

    def __str__(self) -> str:  # KeyError's str() would add quotes
        return str(self.args[0])


class ElidedWeightError(WeightLookupError, DiagnosticException):
    """A weight printed as ``dense_resource<__elided__>``: the text has no data for it."""

    @classmethod
    def of(cls, name: str) -> ElidedWeightError:
        return cls(f"weight \"{name}\" was elided from the text (dense_resource<{ELIDED_KEY}>, "
                   "printed with --elide-constants); it has no data")


class WeightResourceError(ValueError):
    """The ``dlc.weights`` attribute or the resource section of IR text is malformed."""


class WeightStore:
    """name -> numpy array; arrays are stored as given (no copy).

    Names of weights elided from parsed text are kept apart (``elided``): they
    are not ``in`` the store, and reading one raises :class:`ElidedWeightError`."""

    def __init__(self, arrays: dict[str, np.ndarray] | None = None, path: str | None = None):
        self._arrays: dict[str, np.ndarray] = dict(arrays or {})
        self.path = path
        self.elided: dict[str, TensorType] = {}  # name -> the type the text declared

    def __contains__(self, name: str) -> bool:
        return name in self._arrays

    def __getitem__(self, name: str) -> np.ndarray:
        if name in self.elided and name not in self._arrays:
            raise ElidedWeightError.of(name)
        return self._arrays[name]

    def is_elided(self, name: str) -> bool:
        return name in self.elided and name not in self._arrays

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
        self.elided.pop(name, None)

    def save(self, path: str) -> None:
        """Write all arrays to ``path`` (.npz, uncompressed), atomically."""
        tmp = path + ".tmp.npz"
        try:
            with open(tmp, "wb") as f:
                self.write(f)
            os.replace(tmp, path)
        finally:
            if os.path.exists(tmp):
                os.remove(tmp)
        self.path = path

    def write(self, file: BinaryIO) -> None:
        """Write all arrays as an .npz (uncompressed) to the open binary ``file``
        (what dlc.output_files.OutputSet.add_writer passes).

        Written member by member rather than with ``np.savez(path, **arrays)``,
        whose keyword arguments clash with weights named ``file`` or
        ``allow_pickle``."""
        with zipfile.ZipFile(file, "w", zipfile.ZIP_STORED, allowZip64=True) as archive:
            for name, array in self._arrays.items():
                with archive.open(name + ".npy", "w", force_zip64=True) as member:
                    np.lib.format.write_array(member, np.asanyarray(array), allow_pickle=False)

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
    """Load the store a parsed module names in its ``dlc.weights`` attribute:
    inline (a dictionary of ``dense_resource``s, the blobs those its text's
    resource section held; the attribute is removed, printing puts it back) or a
    ``.npz`` path. Raises WeightResourceError on a malformed inline attribute."""
    attr = module.attributes.get(WEIGHTS_ATTR)
    if isinstance(attr, DictionaryAttr):
        store = store_from_resources(attr, _PARSED_BLOBS.get(module, {}))
        del module.attributes[WEIGHTS_ATTR]
        return attach(module, store)
    if not isinstance(attr, StringAttr):
        return None
    path = attr.data
    if ir_path and not os.path.isabs(path):
        path = os.path.join(os.path.dirname(os.path.abspath(ir_path)), path)
    return attach(module, WeightStore.load(path))


def lookup_weight(op: Operation, name: str, missing_ok: bool = False) -> np.ndarray | None:
    store = store_of(op, create=False)
    if store is not None and store.is_elided(name):
        raise ElidedWeightError.of(name)
    if store is None or name not in store:
        if missing_ok:
            return None
        if store is None:
            raise WeightLookupError(f"weight \"{name}\": the module has no weights store attached")
        raise WeightLookupError(f"weight \"{name}\" is not in the module's weights store")
    return store[name]


# ---------------------------------------------------------------------------
# weights as dense_resource blobs in IR text
# ---------------------------------------------------------------------------

# element type (as MLIR prints it) -> numpy dtype name; narrow types are ml_dtypes'
# (the same table as dialects/graph_base.numpy_dtype, which test_weight_resources checks)
_FLOAT_DTYPES = {"f16": "float16", "f32": "float32", "f64": "float64", "bf16": "bfloat16",
                 "f8E4M3FN": "float8_e4m3fn", "f8E4M3FNUZ": "float8_e4m3fnuz", "f8E5M2": "float8_e5m2",
                 "f8E5M2FNUZ": "float8_e5m2fnuz", "f8E8M0FNU": "float8_e8m0fnu", "f4E2M1FN": "float4_e2m1fn"}
_ML_INTS = {"i4": "int4", "ui4": "uint4", "i2": "int2", "ui2": "uint2"}
_INT = re.compile(r"(u?)i(\d+)")


def dtype_of_element(element_type: Attribute) -> np.dtype:
    """numpy dtype of an element type (i1 -> bool, ui8 -> uint8, bf16 -> ml_dtypes.bfloat16)."""
    name = str(element_type)
    if name == "i1":
        return np.dtype(np.bool_)
    match = _INT.fullmatch(name)
    if match and match.group(2) in ("8", "16", "32", "64"):
        return np.dtype(f"{'u' if match.group(1) else ''}int{match.group(2)}")
    dtype_name = _FLOAT_DTYPES.get(name) or _ML_INTS.get(name)
    if dtype_name is None:
        raise WeightResourceError(f"element type {name} has no weights representation")
    if dtype_name in ("float16", "float32", "float64"):
        return np.dtype(dtype_name)
    import ml_dtypes  # only for the narrow types

    return np.dtype(getattr(ml_dtypes, dtype_name))


def element_of_dtype(dtype: np.dtype) -> Attribute:
    dtype = np.dtype(dtype)
    if dtype == np.bool_:
        return builtin.i1
    if dtype.type.__module__ == "ml_dtypes":
        for table in (_FLOAT_DTYPES, _ML_INTS):
            for name, dtype_name in table.items():
                if dtype.name == dtype_name:
                    if table is _ML_INTS:
                        unsigned = name.startswith("u")
                        return IntegerType(int(name.lstrip("ui")),
                                           Signedness.UNSIGNED if unsigned else Signedness.SIGNLESS)
                    return getattr(builtin, name)
    elif dtype.kind == "f" and dtype.itemsize in (2, 4, 8):
        return getattr(builtin, {2: "f16", 4: "f32", 8: "f64"}[dtype.itemsize])
    elif dtype.kind in "iu" and dtype.itemsize in (1, 2, 4, 8):
        sign = Signedness.UNSIGNED if dtype.kind == "u" else Signedness.SIGNLESS
        return IntegerType(dtype.itemsize * 8, sign)
    raise WeightResourceError(f"numpy dtype {dtype} has no MLIR element type")


def encode_blob(array: np.ndarray) -> str:
    """MLIR's blob text of ``array``: "0x", a 4-byte little-endian alignment, the raw bytes."""
    array = np.ascontiguousarray(array)
    alignment = max(1, array.dtype.itemsize)
    return "0x" + alignment.to_bytes(4, "little").hex().upper() + array.tobytes().hex().upper()


def decode_blob(blob: str, dtype: np.dtype, shape: tuple[int, ...], name: str) -> np.ndarray:
    """The array of a blob (bit-identical to the one encoded), checked against ``dtype``/``shape``."""
    if not blob.startswith("0x") or (len(blob) - 2) % 2 or len(blob) < 10:
        raise WeightResourceError(f"weight \"{name}\": its blob is not MLIR's hex blob (\"0x\", an alignment, the data)")
    count = int(np.prod(shape, dtype=np.int64))
    data_chars = len(blob) - 10
    if data_chars != 2 * count * dtype.itemsize:
        raise WeightResourceError(
            f"weight \"{name}\": its blob holds {data_chars // 2} bytes; "
            f"{dtype}{list(shape)} needs {count * dtype.itemsize}")
    try:
        data = bytearray.fromhex(blob[10:])  # a fresh, aligned, writable buffer
    except ValueError:
        raise WeightResourceError(f"weight \"{name}\": its blob is not a hex string") from None
    return np.frombuffer(data, dtype=dtype).reshape(shape)  # (little-endian hosts)


_KEY_CHAR = re.compile(r"[^A-Za-z0-9_$.]")


def resource_keys(names) -> dict[str, str]:
    """name -> a distinct bare-identifier resource key (MLIR's and xDSL's resource handles)."""
    keys: dict[str, str] = {}
    used = {ELIDED_KEY}
    for name in names:
        key = _KEY_CHAR.sub("_", name)
        if not key or not (key[0].isalpha() or key[0] == "_"):
            key = "w_" + key
        base, n = key, 1
        while key in used:
            key, n = f"{base}_{n}", n + 1
        used.add(key)
        keys[name] = key
    return keys


def resources_attr(store: WeightStore, elide_limit: int | None = None,
                   elide_bytes: int | None = None) -> tuple[DictionaryAttr, dict[str, np.ndarray]]:
    """The inline ``dlc.weights`` attribute of ``store`` and the arrays of its
    resource keys; weights of more than ``elide_limit`` elements (or blobs of
    more than ``elide_bytes`` hex characters) and the store's elided weights
    refer to ``__elided__``."""
    names = sorted({*store, *store.elided})  # (sorted: the same text whatever was elided)
    keys = resource_keys(names)
    entries: dict[str, Attribute] = {}
    blobs: dict[str, np.ndarray] = {}
    for name in names:
        if name in store:
            array = np.asarray(store[name])
            type_ = TensorType(element_of_dtype(array.dtype), list(array.shape))
            elide = (elide_limit is not None and array.size > elide_limit) or (
                elide_bytes is not None and 10 + 2 * array.nbytes > elide_bytes)
        else:
            type_, elide = store.elided[name], True
        key = ELIDED_KEY if elide else keys[name]
        if not elide:
            blobs[key] = array
        entries[name] = DenseResourceAttr.from_params(key, type_)
    return DictionaryAttr(entries), blobs


def store_from_resources(attr: DictionaryAttr, blobs: dict[str, str]) -> WeightStore:
    """The store an inline ``dlc.weights`` dictionary stands for (``blobs``: key -> hex)."""
    store = WeightStore()
    for name, value in attr.data.items():
        if not isinstance(value, DenseResourceAttr) or not isinstance(value.type, TensorType):
            raise WeightResourceError(
                f"{WEIGHTS_ATTR}: weight \"{name}\" must be a dense_resource<key> : tensor<...>, got {value}")
        key = value.resource_handle.data
        if key == ELIDED_KEY:
            store.elided[name] = value.type
            continue
        if key not in blobs:
            raise WeightResourceError(
                f"weight \"{name}\": resource '{key}' has no blob in the file's "
                "{-# dialect_resources #-} section")
        dtype = dtype_of_element(value.type.element_type)
        shape = tuple(value.type.get_shape())
        if any(d < 0 for d in shape):
            raise WeightResourceError(f"weight \"{name}\": {value.type} is not a static shape")
        store._arrays[name] = decode_blob(blobs[key], dtype, shape, name)
    return store


def resource_section(blobs: dict[str, str | np.ndarray]) -> str:
    """The ``{-# dialect_resources #-}`` section of builtin ``blobs`` (key -> array or hex)."""
    if not blobs:
        return ""
    lines = [f'      {key}: "{blob if isinstance(blob, str) else encode_blob(blob)}"'
             for key, blob in sorted(blobs.items())]
    return "\n{-#\n  dialect_resources: {\n    builtin: {\n" + ",\n".join(lines) + "\n    }\n  }\n#-}\n"


# the file metadata: `{-#` at the start of a line, up to `#-}`
_SECTION_START = re.compile(r"^[ \t]*\{-#", re.M)
_TOKEN = re.compile(r'\s*(?:(\{|\}|:|,)|(")|([A-Za-z_][\w$.\-]*))')


def split_resources(text: str) -> tuple[str, dict[str, str]]:
    """``text`` without its ``{-# ... #-}`` sections (blanked, line numbers kept)
    and the builtin dialect's blobs they held (key -> hex). External resources
    (MLIR's reproducer options) are skipped; another dialect's are an error."""
    blobs: dict[str, str] = {}
    pos = 0
    while (start := _SECTION_START.search(text, pos)) is not None:
        begin = text.index("{-#", start.start())
        end = text.find("#-}", begin)
        if end < 0:
            raise WeightResourceError("the file's {-# ... #-} section has no closing '#-}'")
        _parse_section(text[begin + 3 : end], blobs)
        blank = "\n" * text.count("\n", begin, end + 3)
        text = text[:begin] + blank + text[end + 3 :]
        pos = begin + len(blank)
    return text, blobs


def _parse_section(body: str, blobs: dict[str, str]) -> None:
    tokens = []
    pos = 0
    while pos < len(body):
        match = _TOKEN.match(body, pos)
        if match is None:
            if not body[pos:].strip():
                break
            raise WeightResourceError(f"the file's {{-# #-}} section: unexpected text {body[pos:pos + 20]!r}")
        pos = match.end()
        if match.group(2):  # a string (a blob: no escapes), up to its closing quote
            end = body.find('"', pos)
            if end < 0:
                raise WeightResourceError("the file's {-# #-} section: a string has no closing quote")
            tokens.append(("str", body[pos:end]))
            pos = end + 1
        else:
            tokens.append(match.group(1) or ("id", match.group(3)))
    it = iter(tokens)

    def entries(handle) -> None:  # `{ key: value, ... }` after the opening brace
        while (tok := next(it, None)) != "}":
            if tok == ",":
                continue
            if not isinstance(tok, tuple) or next(it, None) != ":":
                raise WeightResourceError("the file's {-# #-} section: expected 'key: value'")
            handle(tok[1])

    def value(key: str, into: dict | None) -> None:
        tok = next(it, None)
        if tok == "{":
            entries(lambda k: value(k, None))
        elif isinstance(tok, tuple):
            if into is not None:
                into[key] = tok[1]
        else:
            raise WeightResourceError(f"the file's {{-# #-}} section: no value for '{key}'")

    def dialect(name: str) -> None:
        if next(it, None) != "{":
            raise WeightResourceError(f"the file's {{-# #-}} section: expected '{{' after '{name}:'")
        if name != "builtin":
            raise WeightResourceError(f"dialect resources of '{name}' are not supported (only builtin's)")
        entries(lambda key: value(key, blobs))

    def top(name: str) -> None:
        if name == "dialect_resources":
            if next(it, None) != "{":
                raise WeightResourceError("the file's {-# #-} section: expected '{' after 'dialect_resources:'")
            entries(dialect)
        elif name == "external_resources":
            value(name, None)
        else:
            raise WeightResourceError(f"the file's {{-# #-}} section: unknown key '{name}'")

    tokens.append("}")
    entries(top)


_PARSED_BLOBS: weakref.WeakKeyDictionary[Operation, dict[str, str]] = weakref.WeakKeyDictionary()


def parsed_blobs(module: Operation) -> dict[str, str]:
    """The builtin resource blobs (key -> hex) of the text ``module`` was parsed from."""
    return _PARSED_BLOBS.get(module, {})


class ResourceParser(Parser):
    """xDSL's Parser that takes the ``{-# dialect_resources #-}`` section out of
    the text first (:func:`split_resources`; the blobs go with the parsed
    module, for :func:`load_for_module`) and keeps resource keys as written."""

    def __init__(self, ctx, text: str, name: str = "<unknown>"):
        text, self.resource_blobs = split_resources(text)
        super().__init__(ctx, text, name)

    def _parse_dialect_resource_handle(self, dialect_name: str, interface) -> str:
        # xDSL declares the key in its process-wide table and renames it when a
        # previous parse declared it; here a key means what this text says
        key = self.parse_identifier(context_msg=" for resource handle")
        self.dialect_resources.add((dialect_name, key))
        return key

    def parse_module(self, allow_implicit_module: bool = True) -> ModuleOp:
        module = super().parse_module(allow_implicit_module)
        _PARSED_BLOBS[module] = self.resource_blobs
        return module
