"""ReduceMean: the mean over some axes."""

import numpy as np

from systolic.reference.ops.op_reduce import _Reduce


class ReduceMean(_Reduce):
    """ReduceMean-1, -11 (negative axes), -13 (axes attribute), -18 (axes input and
    noop_with_empty_axes). No axes means every axis (or none with noop_with_empty_axes=1).
    keepdims defaults to 1. float16 is averaged in float32; integers in float64 and
    truncated back."""

    op_type = "ReduceMean"
    since_versions = (1, 11, 13, 18)

    def reduce(self, x: np.ndarray, axes: tuple[int, ...]) -> np.ndarray:
        acc = x.dtype if x.dtype in (np.float32, np.float64) else (
            np.float32 if x.dtype == np.float16 else np.float64)
        return np.asarray(x.mean(axis=axes, dtype=acc, keepdims=True))


OPS = (ReduceMean,)
