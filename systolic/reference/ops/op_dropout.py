"""Dropout in inference: the output is the input, the mask is all true (ones)."""

from collections.abc import Sequence

import numpy as np

from systolic.errors import UnsupportedError
from systolic.ir import Attrs, DataType
from systolic.reference.ops._shared import FLOAT_TYPES, check_type, float_attr, int_attr
from systolic.reference.ops.base import Op, TensorInfo


class Dropout(Op):
    """Dropout-1, -6 (is_test; consumed_inputs ignored), -7, -10 (bool mask), -12, -13, -22
    (ratio and training_mode are inputs 2 and 3).

    The reference runs models for inference: Y = X and mask is all ones (bool from 10, X's
    type before). is_test = 0 (1, 6) is treated as inference too. training_mode = true with a
    non-zero ratio raises UnsupportedError."""

    op_type = "Dropout"
    since_versions = (1, 6, 7, 10, 12, 13, 22)

    def __init__(self, attrs: Attrs, version: int, node_label: str) -> None:
        super().__init__(attrs, version, node_label)
        if version < 12:
            self.ratio = float_attr(self, "ratio", 0.5)
        if version < 7:
            int_attr(self, "is_test", 0)

    def _mask_type(self, x: DataType) -> DataType:
        return DataType.BOOL if self.version >= 10 else x

    def _check_training(self, ratio: object, training: object) -> None:
        training_on = training is not None and bool(np.asarray(training).reshape(-1)[0])
        if training_on and (ratio is None or float(np.asarray(ratio).reshape(-1)[0]) != 0.0):
            raise UnsupportedError(
                f"node {self.node_label!r} (ai.onnx.Dropout:{self.version}): "
                "training_mode=true is not supported; export the model for inference"
            )

    def infer(self, inputs: Sequence[TensorInfo | None]) -> list[TensorInfo]:
        x, *rest = inputs
        assert x is not None
        check_type(self, x, FLOAT_TYPES, "data")
        if self.version >= 12 and len(rest) > 1 and rest[1] is not None:
            ratio = rest[0].value if rest[0] is not None else None
            if rest[1].value is not None:
                self._check_training(ratio if rest[0] is not None else 0.5, rest[1].value)
        return [TensorInfo(x.dtype, x.shape, x.value),
                TensorInfo(self._mask_type(x.dtype), x.shape)]

    def run(self, inputs: Sequence[np.ndarray | None]) -> list[np.ndarray]:
        x, *rest = inputs
        assert x is not None
        if self.version >= 12 and len(rest) > 1:
            ratio = rest[0] if rest[0] is not None else 0.5
            self._check_training(ratio, rest[1])
        mask = np.ones(x.shape, dtype=self._mask_type(DataType.from_numpy(x.dtype)).numpy)
        return [x, mask]


OPS = (Dropout,)
