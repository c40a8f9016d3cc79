"""Reshape: 0 copies the input dimension (unless allowzero), -1 is inferred."""

from collections.abc import Sequence

import numpy as np

from systolic.ir import Attrs
from systolic.reference.ops._shared import fold, int_attr, ints_attr, ints_of, known_ints
from systolic.reference.ops.base import Op, TensorInfo


class Reshape(Op):
    """Reshape-1 (the target is the `shape` attribute; consumed_inputs ignored), -5, -13 (the
    target is input 2), -14 (`allowzero`: 0 means an empty dimension instead of a copy),
    -19, -21, -23 (wider types)."""

    op_type = "Reshape"
    since_versions = (1, 5, 13, 14, 19, 21, 23)

    def __init__(self, attrs: Attrs, version: int, node_label: str) -> None:
        super().__init__(attrs, version, node_label)
        self.shape_attr = ints_attr(self, "shape") if version < 5 else None
        self.allowzero = int_attr(self, "allowzero", 0) if version >= 14 else 0

    def target(self, in_shape: tuple[int, ...], spec: tuple[int, ...] | None) -> tuple[int, ...]:
        """Return the output shape for requested shape `spec`."""
        if self.version < 5:
            spec = self.shape_attr
        if spec is None:
            raise self.error("the target shape is missing")
        if self.allowzero and 0 in spec and -1 in spec:
            raise self.error("with allowzero=1 the shape may not hold both 0 and -1")
        dims = []
        for i, d in enumerate(spec):
            if d == 0 and not self.allowzero:
                if i >= len(in_shape):
                    raise self.error(f"shape {list(spec)} copies dimension {i}, which the "
                                     f"input {list(in_shape)} does not have")
                d = in_shape[i]
            elif d < -1:
                raise self.error(f"shape {list(spec)} has the invalid dimension {d}")
            dims.append(d)
        total = int(np.prod(in_shape, dtype=np.int64))
        if dims.count(-1) > 1:
            raise self.error(f"shape {list(spec)} has more than one -1")
        if -1 in dims:
            rest = int(np.prod([d for d in dims if d != -1], dtype=np.int64))
            if rest == 0 or total % rest:
                raise self.error(f"cannot reshape {list(in_shape)} to {list(spec)}")
            dims[dims.index(-1)] = total // rest
        if int(np.prod(dims, dtype=np.int64)) != total:
            raise self.error(f"cannot reshape {list(in_shape)} ({total} elements) to "
                             f"{list(spec)}")
        return tuple(dims)

    def infer(self, inputs: Sequence[TensorInfo | None]) -> list[TensorInfo]:
        x, *rest = inputs
        assert x is not None
        spec = known_ints(self, rest[0], "the shape input") if self.version >= 5 else None
        return fold(self, inputs, [TensorInfo(x.dtype, self.target(x.shape, spec))])

    def run(self, inputs: Sequence[np.ndarray | None]) -> list[np.ndarray]:
        x, *rest = inputs
        assert x is not None
        spec = ints_of(rest[0]) if self.version >= 5 else None
        return [x.reshape(self.target(x.shape, spec))]


OPS = (Reshape,)
