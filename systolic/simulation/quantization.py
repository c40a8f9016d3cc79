"""How far a quantized float model's outputs are from the float model's (`checks.quantization`).

Over every output (by name, both float): `max_abs_error` = the largest |quantized − float|,
`cosine_similarity` of all output values as one vector (1.0 when both are all zero), and
`top1_agreement` = the fraction of rows whose arg-max agrees, for outputs shaped
(batch, classes) with more than one class (null when no output has that shape).
"""

from collections.abc import Mapping

import numpy as np

__all__ = ["quantization_accuracy"]


def quantization_accuracy(
    quantized: Mapping[str, np.ndarray], float_outputs: Mapping[str, np.ndarray]
) -> dict[str, float | None]:
    """Return {max_abs_error, cosine_similarity, top1_agreement} (module docstring)."""
    worst = 0.0
    ours: list[np.ndarray] = []
    theirs: list[np.ndarray] = []
    agree = rows = 0
    for name, value in quantized.items():
        if name not in float_outputs:
            continue
        a = np.asarray(value, dtype=np.float64)
        b = np.asarray(float_outputs[name], dtype=np.float64)
        if a.shape != b.shape or a.size == 0:
            continue
        worst = max(worst, float(np.max(np.abs(a - b))))
        ours.append(a.ravel())
        theirs.append(b.ravel())
        if a.ndim == 2 and a.shape[1] > 1:
            agree += int(np.count_nonzero(a.argmax(axis=1) == b.argmax(axis=1)))
            rows += a.shape[0]
    x = np.concatenate(ours) if ours else np.zeros(0)
    y = np.concatenate(theirs) if theirs else np.zeros(0)
    norms = float(np.linalg.norm(x) * np.linalg.norm(y))
    if norms:
        cosine = float(np.dot(x, y) / norms)
    else:
        cosine = 1.0 if not np.any(x) and not np.any(y) else 0.0
    return {
        "max_abs_error": worst,
        "cosine_similarity": round(cosine, 9),
        "top1_agreement": agree / rows if rows else None,
    }
