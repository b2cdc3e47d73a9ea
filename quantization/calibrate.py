"""Calibration: the value ranges of a float model's activations, measured by dlc.

The tensors to observe become the outputs of a copy of the float model, which
``dlc.compile`` compiles once (the whole pipeline, so the statistics are what
dlc's own kernels compute; onnxruntime is never on this path). Every
calibration sample is run through it:

* ``minmax``: the running minimum and maximum of each tensor;
* ``percentile``: a second run over the samples fills a 2048-bin histogram of
  each tensor over its [min, max]; the range is then cut at the ``100 - p`` and
  ``p`` percentiles (as onnxruntime's asymmetric percentile calibrator does), so
  a few outliers do not spend the 8-bit range.

Graph inputs are measured from the calibration arrays themselves (numpy).

Calibration data (``load_samples``): a ``.npz`` file or a mapping name -> array,
one array per model input, each of the input's shape (one sample) or of shape
``(N, *input shape)`` (N samples); or a sequence of such mappings (one sample
each). A name, shape or dtype that does not fit the model is a one-line
:class:`QuantizationError` naming the input and the dim.
"""

from __future__ import annotations

import os
import zipfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import onnx

from dlc.diagnostics import DiagnosticError

HISTOGRAM_BINS = 2048


class QuantizationError(DiagnosticError):
    """Bad input to the quantizer (model, calibration data, options): one line."""

    def __init__(self, message: str):
        super().__init__(message)
        self.message = message


@dataclass(frozen=True)
class InputSpec:
    name: str
    shape: tuple[int | None, ...]  # None: a symbolic dim (any size)
    dtype: np.dtype


def model_inputs(model: onnx.ModelProto) -> list[InputSpec]:
    """The graph inputs that are not initializers, with their shapes and dtypes."""
    initializers = {t.name for t in model.graph.initializer}
    specs = []
    for value in model.graph.input:
        if value.name in initializers:
            continue
        tensor = value.type.tensor_type
        shape = tuple(d.dim_value if d.HasField("dim_value") else None for d in tensor.shape.dim)
        specs.append(InputSpec(value.name, shape, np.dtype(onnx.helper.tensor_dtype_to_np_dtype(tensor.elem_type))))
    return specs


def _read_npz(path: str) -> dict[str, np.ndarray]:
    if not os.path.exists(path):
        raise QuantizationError(f"cannot open calibration file '{path}': no such file")
    try:
        with np.load(path, allow_pickle=False) as data:
            if not isinstance(data, np.lib.npyio.NpzFile):
                raise QuantizationError(f"calibration file '{path}': not a .npz archive (one array per model input)")
            return {name: data[name] for name in data.files}
    except (OSError, ValueError, EOFError, zipfile.BadZipFile) as err:
        raise QuantizationError(f"cannot read calibration file '{path}' as .npz: {str(err).splitlines()[0]}") from None


def _fit(what: str, name: str, array: np.ndarray, spec: InputSpec) -> np.ndarray:
    """``array`` as (N, *spec.shape): one sample of the input's shape, or N of them."""
    array = np.asarray(array)
    given = tuple(array.shape)  # messages name the array as the file holds it
    rank = len(spec.shape)
    if array.ndim == rank:
        array = array[None]
    if array.ndim != rank + 1:
        raise QuantizationError(
            f"{what}: array '{name}' has shape {given}: rank {len(given)}, model input '{spec.name}' "
            f"has rank {rank} (shape {_shape_text(spec.shape)}, optionally with a leading sample count)")
    for dim, (got, want) in enumerate(zip(array.shape[1:], spec.shape)):
        if want is not None and got != want:
            raise QuantizationError(
                f"{what}: array '{name}' has shape {given}: dim {dim} of input '{spec.name}' is {got}, "
                f"the model expects {want} (shape {_shape_text(spec.shape)}, optionally with a leading sample count)")
    if array.dtype != spec.dtype:
        if array.dtype.kind != spec.dtype.kind or spec.dtype.kind not in "fiu":
            raise QuantizationError(f"{what}: array '{name}' is {array.dtype}, model input '{spec.name}' "
                                    f"is {spec.dtype}")
        array = array.astype(spec.dtype)  # f64 samples for an f32 input: the same values, rounded
    return array


def _shape_text(shape) -> str:
    return "(" + ", ".join("?" if d is None else str(d) for d in shape) + ("," if len(shape) == 1 else "") + ")"


def load_samples(calibration, specs: list[InputSpec]) -> list[dict[str, np.ndarray]]:
    """The calibration samples as one feed (name -> array of the input's shape) each."""
    if isinstance(calibration, (str, os.PathLike)):
        what = f"calibration file '{os.fspath(calibration)}'"
        arrays = _read_npz(os.fspath(calibration))
        batches = [arrays]
    elif isinstance(calibration, Mapping):
        what, batches = "calibration data", [dict(calibration)]
    elif isinstance(calibration, Sequence):
        what, batches = "calibration data", [dict(b) for b in calibration]
    else:
        raise QuantizationError(f"calibration: expected a .npz path, a mapping name -> array or a list of them, "
                                f"got {type(calibration).__name__}")
    names = [s.name for s in specs]
    samples: list[dict[str, np.ndarray]] = []
    for batch in batches:
        for name in batch:
            if name not in names:
                raise QuantizationError(f"{what}: array '{name}' names no model input (inputs: {', '.join(names)})")
        fitted = {}
        for spec in specs:
            if spec.name not in batch:
                raise QuantizationError(f"{what}: no array for model input '{spec.name}' "
                                        f"(arrays: {', '.join(batch) or 'none'})")
            fitted[spec.name] = _fit(what, spec.name, batch[spec.name], spec)
        counts = {len(a) for a in fitted.values()}
        if len(counts) > 1:
            raise QuantizationError(f"{what}: the arrays hold different sample counts "
                                    f"({', '.join(f'{n}: {len(a)}' for n, a in fitted.items())})")
        count = counts.pop() if counts else 0
        samples.extend({n: a[i] for n, a in fitted.items()} for i in range(count))
    if not samples:
        raise QuantizationError(f"{what}: no calibration samples (every array has 0 samples)")
    return samples


# ---------------------------------------------------------------------------
# observing ranges
# ---------------------------------------------------------------------------


def observer_model(model: onnx.ModelProto, tensors: list[str]) -> onnx.ModelProto:
    """A copy of ``model`` whose outputs are ``tensors`` (their types from shape inference)."""
    inferred = onnx.shape_inference.infer_shapes(model)
    types = {v.name: v for v in (*inferred.graph.value_info, *inferred.graph.output, *inferred.graph.input)}
    observer = onnx.ModelProto()
    observer.CopyFrom(model)
    del observer.graph.output[:]
    for name in tensors:
        value = types.get(name)
        if value is None or not value.type.tensor_type.HasField("elem_type"):
            raise QuantizationError(f"cannot calibrate tensor '{name}': onnx shape inference gives it no type")
        observer.graph.output.append(value)
    return observer


def _quantile_edges(counts: np.ndarray, lo: float, hi: float, percentile: float) -> tuple[float, float]:
    edges = np.linspace(lo, hi, len(counts) + 1)
    cdf = np.cumsum(counts) / max(1, counts.sum())
    upper = edges[min(len(counts), int(np.searchsorted(cdf, percentile / 100.0)) + 1)]
    lower = edges[int(np.searchsorted(cdf, 1.0 - percentile / 100.0))]
    return float(lower), float(upper)


def collect_ranges(model: onnx.ModelProto, tensors: list[str], samples: list[dict[str, np.ndarray]],
                   method: str = "minmax", percentile: float = 99.99) -> dict[str, tuple[float, float]]:
    """(min, max) of each tensor in ``tensors`` over the samples (see the module docstring)."""
    inputs = {s.name for s in model_inputs(model)}
    inner = [t for t in tensors if t not in inputs]
    run = _compiled_runner(model, inner) if inner else None

    def each_sample():
        for feed in samples:
            outs = dict(zip(inner, run(feed))) if run else {}
            yield {t: (feed[t] if t in inputs else outs[t]) for t in tensors}

    lo = {t: np.inf for t in tensors}
    hi = {t: -np.inf for t in tensors}
    for got in each_sample():
        for t, v in got.items():
            if v.size:
                lo[t] = min(lo[t], float(np.min(v)))
                hi[t] = max(hi[t], float(np.max(v)))
    for t in tensors:
        if not (np.isfinite(lo[t]) and np.isfinite(hi[t])):
            raise QuantizationError(f"calibration: tensor '{t}' has no finite range over the samples "
                                    f"(min {lo[t]}, max {hi[t]})")
    if method == "minmax":
        return {t: (lo[t], hi[t]) for t in tensors}
    counts = {t: np.zeros(HISTOGRAM_BINS, np.int64) for t in tensors}
    for got in each_sample():  # the second pass: histograms over the first pass's ranges
        for t, v in got.items():
            if hi[t] > lo[t]:
                counts[t] += np.histogram(v, bins=HISTOGRAM_BINS, range=(lo[t], hi[t]))[0]
    return {t: (_quantile_edges(counts[t], lo[t], hi[t], percentile) if hi[t] > lo[t] else (lo[t], hi[t]))
            for t in tensors}


def _compiled_runner(model: onnx.ModelProto, tensors: list[str]):
    """feed -> the values of ``tensors``, by the float model compiled with dlc.compile."""
    from dlc.driver import compile as dlc_compile

    compiled = dlc_compile(observer_model(model, tensors))
    order = [name for name, _, _ in compiled.input_specs]
    out_names = [name for name, _, _ in compiled.output_specs]
    if out_names != tensors:  # dlc names its outputs by the ONNX graph's: anything else is a dlc bug
        raise RuntimeError(f"observer outputs {out_names[:4]}... do not match the observed tensors {tensors[:4]}...")

    def run(feed: dict[str, np.ndarray]) -> list[np.ndarray]:
        return [np.asarray(o) for o in compiled(*[feed[name] for name in order])]

    return run
