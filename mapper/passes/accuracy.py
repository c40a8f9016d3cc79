"""How close a quantized integer graph stays to its float model, both run by the reference
executor on the same inputs."""

from collections.abc import Mapping, Sequence

import numpy as np

from systolic.errors import ModelError
from systolic.ir import Model
from systolic.reference.executor import run_model

__all__ = ["quantization_accuracy"]


def quantization_accuracy(
    float_model: Model,
    quantized_graph: Model,
    inputs: Mapping[str, np.ndarray] | Sequence[Mapping[str, np.ndarray]],
) -> dict[str, float | int | None]:
    """Compare the final outputs of `quantized_graph` with those of `float_model`.

    `inputs` is one feed or a sequence of feeds. Returns, over all feeds and outputs:
    "max_abs_error" (largest |quantized - float|), "cosine_similarity" (of the flattened
    outputs), "top1_agreement" (fraction of rows whose arg-max over the last axis agrees, for
    outputs whose last axis is longer than 1; None when there is none) and "samples" (feeds).
    Both models must have the same output names and shapes.
    """
    feeds = [inputs] if isinstance(inputs, Mapping) else list(inputs)
    if not feeds:
        raise ModelError("quantization_accuracy needs at least one input feed")
    reference_parts, quantized_parts = [], []
    agree = rows = 0
    for feed in feeds:
        want = run_model(float_model, feed)
        got = run_model(quantized_graph, feed)
        if set(want) != set(got):
            raise ModelError(f"the models have different outputs: {sorted(want)} and "
                             f"{sorted(got)}")
        for name, expected in want.items():
            actual = np.asarray(got[name], dtype=np.float64)
            expected64 = np.asarray(expected, dtype=np.float64)
            if actual.shape != expected64.shape:
                raise ModelError(f"output {name!r} has shape {list(actual.shape)} in the "
                                 f"quantized graph, {list(expected64.shape)} in the float model")
            reference_parts.append(expected64.reshape(-1))
            quantized_parts.append(actual.reshape(-1))
            if expected64.ndim >= 1 and expected64.shape[-1] > 1:
                agree += int(np.sum(np.argmax(actual, -1) == np.argmax(expected64, -1)))
                rows += int(np.prod(expected64.shape[:-1], dtype=np.int64))
    reference = np.concatenate(reference_parts)
    quantized = np.concatenate(quantized_parts)
    norms = float(np.linalg.norm(reference) * np.linalg.norm(quantized))
    cosine = float(np.dot(reference, quantized) / norms) if norms > 0 else float(
        np.array_equal(reference, quantized))
    return {
        "max_abs_error": float(np.max(np.abs(quantized - reference))) if reference.size else 0.0,
        "cosine_similarity": cosine,
        "top1_agreement": agree / rows if rows else None,
        "samples": len(feeds),
    }
