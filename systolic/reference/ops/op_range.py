"""Range: the 1-D sequence start, start + delta, ... below limit (above it for delta < 0)."""

from collections.abc import Sequence

import numpy as np

from systolic.errors import UnsupportedError
from systolic.ir import DataType
from systolic.reference.ops._shared import check_type, fold
from systolic.reference.ops.base import Op, TensorInfo

_TYPES = frozenset({DataType.FLOAT, DataType.DOUBLE, DataType.INT16, DataType.INT32,
                    DataType.INT64})


def _count(start: float, limit: float, delta: float) -> int:
    return max(int(np.ceil((limit - start) / delta)), 0)


class Range(Op):
    """Range-11: max(ceil((limit - start) / delta), 0) elements start + i * delta, in the
    inputs' common type. The output length depends on the input values, so they must be known
    before running (constants, or values folded from constants)."""

    op_type = "Range"
    since_versions = (11,)

    def infer(self, inputs: Sequence[TensorInfo | None]) -> list[TensorInfo]:
        start, limit, delta = inputs
        assert start is not None and limit is not None and delta is not None
        check_type(self, start, _TYPES, "start")
        for info, name in ((start, "start"), (limit, "limit"), (delta, "delta")):
            if info.dtype != start.dtype:
                raise self.error(f"{name} is {info.dtype.short} but start is "
                                 f"{start.dtype.short}; they must match")
            if info.size != 1:
                raise self.error(f"{name} must be a scalar, got shape {list(info.shape)}")
        bounds = [info.value for info in (start, limit, delta)]
        if bounds[0] is None or bounds[1] is None or bounds[2] is None:
            raise UnsupportedError(
                f"node {self.node_label!r} (ai.onnx.Range:{self.version}): start, limit and "
                "delta are computed at run time; the reference needs static shapes, so make "
                "them constants (for example by constant-folding the model)")
        first, last, step = (float(np.asarray(v).reshape(())) for v in bounds)
        if step == 0:
            raise self.error("delta must not be 0")
        if not all(np.isfinite((first, last, step))):
            raise self.error(f"start {first}, limit {last} and delta {step} must be finite")
        n = _count(first, last, step)
        return fold(self, inputs, [TensorInfo(start.dtype, (n,))])

    def run(self, inputs: Sequence[np.ndarray | None]) -> list[np.ndarray]:
        start, limit, delta = (np.asarray(x).reshape(()) for x in inputs if x is not None)
        if float(delta) == 0:
            raise self.error("delta must not be 0")
        n = _count(float(start), float(limit), float(delta))
        steps = np.arange(n, dtype=start.dtype)
        return [np.asarray(start + steps * delta, dtype=start.dtype)]


OPS = (Range,)
