"""Constant and ConstantOfShape."""

from collections.abc import Sequence

import numpy as np

from systolic.errors import UnsupportedError
from systolic.ir import Attrs, DataType, Tensor
from systolic.reference.ops._shared import fold, ints_of, known_ints
from systolic.reference.ops.base import Op, TensorInfo

_CONSTANT_ATTRS = {
    "value": 1,
    "sparse_value": 11,
    "value_float": 12,
    "value_floats": 12,
    "value_int": 12,
    "value_ints": 12,
    "value_string": 12,
    "value_strings": 12,
}
"""Constant's value attributes and the version that introduced each."""


class Constant(Op):
    """Constant-1, -9, -11, -12, -13, -19, -21, -23: exactly one value attribute. value_float(s)
    give float32, value_int(s) int64, value_string(s) strings; sparse_value raises
    UnsupportedError."""

    op_type = "Constant"
    since_versions = (1, 9, 11, 12, 13, 19, 21, 23)

    def __init__(self, attrs: Attrs, version: int, node_label: str) -> None:
        super().__init__(attrs, version, node_label)
        given = [name for name in attrs if name in _CONSTANT_ATTRS]
        if len(given) != 1:
            raise self.error(f"needs exactly one of {', '.join(_CONSTANT_ATTRS)}; got "
                             f"{given or 'none'}")
        (name,) = given
        if version < _CONSTANT_ATTRS[name]:
            raise self.error(f"attribute {name!r} needs Constant-{_CONSTANT_ATTRS[name]} or "
                             "later")
        if name == "sparse_value":
            raise UnsupportedError(f"node {node_label!r} (ai.onnx.Constant:{version}): "
                                   "sparse_value is not supported; store the constant densely")
        value = attrs[name]
        if isinstance(value, Tensor):
            self.value = np.array(value.data)
        elif name in ("value_float", "value_floats"):
            self.value = np.array(value, dtype=np.float32)
        elif name in ("value_int", "value_ints"):
            self.value = np.array(value, dtype=np.int64)
        else:
            self.value = np.array(value, dtype=object)
        self.dtype = DataType.from_numpy(self.value.dtype)

    def infer(self, inputs: Sequence[TensorInfo | None]) -> list[TensorInfo]:
        return [TensorInfo(self.dtype, tuple(self.value.shape), self.value)]

    def run(self, inputs: Sequence[np.ndarray | None]) -> list[np.ndarray]:
        return [self.value]


class ConstantOfShape(Op):
    """ConstantOfShape-9, -20, -21, -23: a tensor of the shape given by input 1 filled with the
    one-element `value` attribute (default float32 zero)."""

    op_type = "ConstantOfShape"
    since_versions = (9, 20, 21, 23)

    def __init__(self, attrs: Attrs, version: int, node_label: str) -> None:
        super().__init__(attrs, version, node_label)
        value = self.attr("value")
        if value is None:
            self.fill = np.zeros((), dtype=np.float32)
        elif isinstance(value, Tensor) and value.data.size == 1:
            self.fill = np.array(value.data).reshape(())
        else:
            raise self.error("attribute 'value' must be a one-element tensor")

    def _shape(self, shape: tuple[int, ...]) -> tuple[int, ...]:
        if any(d < 0 for d in shape):
            raise self.error(f"shape {list(shape)} has a negative dimension")
        return shape

    def infer(self, inputs: Sequence[TensorInfo | None]) -> list[TensorInfo]:
        (shape_info,) = inputs
        shape = known_ints(self, shape_info, "the shape input")
        assert shape is not None
        dtype = DataType.from_numpy(self.fill.dtype)
        return fold(self, inputs, [TensorInfo(dtype, self._shape(shape))])

    def run(self, inputs: Sequence[np.ndarray | None]) -> list[np.ndarray]:
        (shape_in,) = inputs
        shape = ints_of(shape_in)
        assert shape is not None
        return [np.full(self._shape(shape), self.fill, dtype=self.fill.dtype)]


OPS = (Constant, ConstantOfShape)
