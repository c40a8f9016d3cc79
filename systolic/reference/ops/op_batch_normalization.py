"""BatchNormalization in inference mode: y = (x - mean) / sqrt(var + epsilon) * scale + B."""

from collections.abc import Sequence

import numpy as np

from systolic.errors import UnsupportedError
from systolic.ir import Attrs
from systolic.reference.ops._shared import FLOAT_TYPES, check_type, float_attr, int_attr
from systolic.reference.ops.base import Op, TensorInfo


class BatchNormalization(Op):
    """BatchNormalization-1, -6, -7, -9, -14, -15, inference only: only output Y is computed,
    from the running mean and variance inputs.

    Legacy attributes: `consumed_inputs` (1) is ignored; `is_test` (1, 6) is ignored, the
    statistics used are always the given ones; `spatial` (1 to 7) = 0 means scale, B, mean
    and var have shape [C, *spatial] instead of [C]. `momentum` only matters when training.
    `training_mode` = 1 (14, 15) raises UnsupportedError. Computed in X's type.
    """

    op_type = "BatchNormalization"
    since_versions = (1, 6, 7, 9, 14, 15)

    def __init__(self, attrs: Attrs, version: int, node_label: str) -> None:
        super().__init__(attrs, version, node_label)
        self.epsilon = float_attr(self, "epsilon", 1e-5)
        self.spatial = int_attr(self, "spatial", 1) if version < 9 else 1
        if version >= 14 and int_attr(self, "training_mode", 0):
            raise UnsupportedError(
                f"node {node_label!r} (ai.onnx.BatchNormalization:{version}): training_mode=1 "
                "is not supported; export the model in inference mode (training_mode=0)"
            )

    def _param_shape(self, x: tuple[int, ...]) -> tuple[int, ...]:
        if len(x) < 2:
            raise self.error(f"X must be [N, C, ...], got {list(x)}")
        return (x[1],) if self.spatial else tuple(x[1:])

    def infer(self, inputs: Sequence[TensorInfo | None]) -> list[TensorInfo]:
        x, *params = inputs
        assert x is not None
        check_type(self, x, FLOAT_TYPES, "X")
        if len(params) != 4 or any(p is None for p in params):
            raise self.error("needs inputs X, scale, B, mean and var")
        want = self._param_shape(x.shape)
        for name, p in zip(("scale", "B", "mean", "var"), params, strict=True):
            assert p is not None
            check_type(self, p, FLOAT_TYPES, name)
            if p.shape != want:
                raise self.error(f"{name} must have shape {list(want)}, got {list(p.shape)}")
        return [TensorInfo(x.dtype, x.shape)]

    def run(self, inputs: Sequence[np.ndarray | None]) -> list[np.ndarray]:
        x, scale, bias, mean, var = inputs
        assert x is not None and scale is not None and bias is not None
        assert mean is not None and var is not None
        shape = (1, *self._param_shape(x.shape))
        shape = shape + (1,) * (x.ndim - len(shape))

        def param(p: np.ndarray) -> np.ndarray:
            return p.astype(x.dtype, copy=False).reshape(shape)

        eps = np.asarray(self.epsilon, dtype=x.dtype)
        y = (x - param(mean)) / np.sqrt(param(var) + eps) * param(scale) + param(bias)
        return [y.astype(x.dtype, copy=False)]


OPS = (BatchNormalization,)
