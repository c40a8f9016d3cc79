"""Cast: convert element type."""

from collections.abc import Sequence

import numpy as np

from systolic.errors import UnsupportedError
from systolic.ir import Attrs, DataType
from systolic.reference.ops._shared import fold
from systolic.reference.ops.base import Op, TensorInfo


class Cast(Op):
    """Cast-1 (`to` is a type name such as "FLOAT"), -6, -9, -13, -19, -21, -23 (`to` is the
    TensorProto type number; `saturate` only affects float8 targets, which are unsupported).
    Float to integer truncates toward zero as numpy does; the result of casting NaN,
    infinity or an out-of-range value to an integer is unspecified by ONNX."""

    op_type = "Cast"
    since_versions = (1, 6, 9, 13, 19, 21, 23)

    def __init__(self, attrs: Attrs, version: int, node_label: str) -> None:
        super().__init__(attrs, version, node_label)
        to = self.required_attr("to")
        try:
            if isinstance(to, (str, bytes)):
                name = to.decode() if isinstance(to, bytes) else to
                self.to = DataType[name.upper()]
            elif isinstance(to, int):
                self.to = DataType(to)
            else:
                raise KeyError(to)
        except (KeyError, ValueError):
            raise self.error(f"attribute 'to' = {to!r} is not an element type") from None
        if not self.to.has_numpy or self.to == DataType.STRING:
            raise UnsupportedError(f"node {node_label!r} (ai.onnx.Cast:{version}): casting to "
                                   f"{self.to.name} is not supported")

    def infer(self, inputs: Sequence[TensorInfo | None]) -> list[TensorInfo]:
        (x,) = inputs
        assert x is not None
        if x.dtype == DataType.STRING:
            raise UnsupportedError(f"node {self.node_label!r} (ai.onnx.Cast:{self.version}): "
                                   "casting from strings is not supported")
        return fold(self, inputs, [TensorInfo(self.to, x.shape)])

    def run(self, inputs: Sequence[np.ndarray | None]) -> list[np.ndarray]:
        (x,) = inputs
        assert x is not None
        with np.errstate(invalid="ignore", over="ignore"):
            return [x.astype(self.to.numpy)]


OPS = (Cast,)
