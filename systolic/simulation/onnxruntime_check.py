"""Compare a model's final outputs with onnxruntime's, when onnxruntime is installed.

The comparison is in each output's own units (integer steps for quantized outputs, real values
for float ones): `max_abs_diff` is the largest |ours − onnxruntime| over every element of every
output, `equal_fraction` the fraction of elements that are exactly equal. NaN on both sides
counts as equal; NaN on one side as an infinite difference.
"""

import dataclasses
import importlib.util
import os
from collections.abc import Mapping

import numpy as np

from systolic.errors import SimulationError

__all__ = ["OnnxruntimeComparison", "compare_outputs", "onnxruntime_available", "run_onnxruntime"]


@dataclasses.dataclass(frozen=True)
class OnnxruntimeComparison:
    """How the final outputs compare with onnxruntime's (see the module docstring)."""

    max_abs_diff: float
    equal_fraction: float
    elements: int


def onnxruntime_available() -> bool:
    """True when the `onnxruntime` package can be imported."""
    return importlib.util.find_spec("onnxruntime") is not None


def run_onnxruntime(
    model: str | os.PathLike[str] | bytes,
    inputs: Mapping[str, np.ndarray],
    *,
    optimized: bool = True,
    base_dir: str | os.PathLike[str] | None = None,
) -> dict[str, np.ndarray]:
    """Run an ONNX model (a file, or serialized bytes whose external data, if any, is relative
    to `base_dir`) on onnxruntime's CPU provider; outputs by name.

    `optimized=False` turns onnxruntime's graph optimizations off, so it runs the graph node
    by node as the ONNX operators define it: with them on (its default) it fuses
    DequantizeLinear -> op -> QuantizeLinear groups into its own quantized kernels
    (QLinearConv, QLinearAdd, QLinearSoftmax, ...), whose arithmetic can differ from the
    operators' (rounding; int16 saturation, see `onnxruntime_saturation`).
    """
    import onnxruntime  # type: ignore[import-untyped]

    options = onnxruntime.SessionOptions()
    options.log_severity_level = 3
    if not optimized:
        options.graph_optimization_level = onnxruntime.GraphOptimizationLevel.ORT_DISABLE_ALL
    if base_dir is not None:
        options.add_session_config_entry(
            "session.model_external_initializers_file_folder_path", os.fspath(base_dir)
        )
    source = model if isinstance(model, bytes) else os.fspath(model)
    try:
        session = onnxruntime.InferenceSession(
            source, options, providers=["CPUExecutionProvider"]
        )
        names = [output.name for output in session.get_outputs()]
        results = session.run(names, dict(inputs))
    except Exception as err:  # noqa: BLE001 (onnxruntime raises its own exception types)
        raise SimulationError(
            f"onnxruntime could not run the model for the comparison ({str(err).splitlines()[0]})"
            f"; rerun with --no-onnxruntime to skip it"
        ) from None
    return dict(zip(names, results, strict=True))


def compare_outputs(
    ours: Mapping[str, np.ndarray], theirs: Mapping[str, np.ndarray]
) -> OnnxruntimeComparison:
    """Compare the outputs both sides computed (by name; shapes must agree)."""
    worst = 0.0
    equal = 0
    total = 0
    for name, value in ours.items():
        if name not in theirs:
            continue
        other = np.asarray(theirs[name])
        if other.shape != value.shape:
            raise SimulationError(
                f"output {name!r}: onnxruntime gives shape {list(other.shape)}, the simulation "
                f"{list(value.shape)}"
            )
        a = value.astype(np.float64)
        b = other.astype(np.float64)
        same = (a == b) | (np.isnan(a) & np.isnan(b))  # NaN on both sides is agreement
        if a.size:
            with np.errstate(invalid="ignore"):  # inf - inf: equal, or NaN: handled below
                gap = np.where(np.isnan(a) | np.isnan(b), np.inf, np.abs(a - b))
            worst = max(worst, float(np.max(np.where(same, 0.0, gap))))
        equal += int(np.count_nonzero(same))
        total += a.size
    return OnnxruntimeComparison(
        max_abs_diff=worst, equal_fraction=equal / total if total else 1.0, elements=total
    )
