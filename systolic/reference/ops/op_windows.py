"""Window functions of signal front ends: HannWindow, HammingWindow, BlackmanWindow."""

from collections.abc import Sequence

import numpy as np

from systolic.errors import UnsupportedError
from systolic.ir import Attrs, DataType
from systolic.reference.ops._shared import FOLD_LIMIT, int_attr, known_ints
from systolic.reference.ops.base import Op, TensorInfo


class _Window(Op):
    """A window of `size` (a scalar int32/int64 input, known before running: it is the
    output's length) samples, periodic (N = size, default) or symmetric (N = size - 1; a
    symmetric window of one sample is [1], as numpy and PyTorch give), computed in float64
    and cast to `output_datatype` (a TensorProto type number, default float)."""

    def __init__(self, attrs: Attrs, version: int, node_label: str) -> None:
        super().__init__(attrs, version, node_label)
        self.periodic = int_attr(self, "periodic", 1) != 0
        code = int_attr(self, "output_datatype", int(DataType.FLOAT))
        try:
            self.dtype = DataType(code)
        except ValueError:
            raise self.error(f"output_datatype {code} is not an element type") from None
        if not self.dtype.has_numpy or self.dtype in (DataType.STRING, DataType.BOOL):
            raise UnsupportedError(f"node {node_label!r} (ai.onnx.{self.op_type}:{version}): "
                                   f"output_datatype {self.dtype.name} is not supported")

    def shape(self, phase: np.ndarray) -> np.ndarray:
        """Return the window's values at phases 2πn/N."""
        raise NotImplementedError

    def _window(self, size: int) -> np.ndarray:
        if size < 0:
            raise self.error(f"size must not be negative, got {size}")
        period = size if self.periodic else size - 1
        if period == 0:
            return np.ones(size, self.dtype.numpy)
        phase = 2 * np.pi * np.arange(size, dtype=np.float64) / period
        return self.shape(phase).astype(self.dtype.numpy)

    def infer(self, inputs: Sequence[TensorInfo | None]) -> list[TensorInfo]:
        (size,) = inputs
        found = known_ints(self, size, "size")
        if found is None or len(found) != 1:
            raise self.error(f"size must be one integer, got {found}")
        value = self._window(found[0]) if found[0] <= FOLD_LIMIT else None
        return [TensorInfo(self.dtype, (max(found[0], 0),), value)]

    def run(self, inputs: Sequence[np.ndarray | None]) -> list[np.ndarray]:
        (size,) = inputs
        assert size is not None
        return [self._window(int(np.asarray(size).reshape(-1)[0]))]


class HannWindow(_Window):
    """HannWindow-17: 0.5 - 0.5·cos(2πn/N)."""

    op_type = "HannWindow"
    since_versions = (17,)

    def shape(self, phase: np.ndarray) -> np.ndarray:
        return np.asarray(0.5 - 0.5 * np.cos(phase))


class HammingWindow(_Window):
    """HammingWindow-17: 25/46 - 21/46·cos(2πn/N)."""

    op_type = "HammingWindow"
    since_versions = (17,)

    def shape(self, phase: np.ndarray) -> np.ndarray:
        return np.asarray(25 / 46 - 21 / 46 * np.cos(phase))


class BlackmanWindow(_Window):
    """BlackmanWindow-17: 0.42 - 0.5·cos(2πn/N) + 0.08·cos(4πn/N)."""

    op_type = "BlackmanWindow"
    since_versions = (17,)

    def shape(self, phase: np.ndarray) -> np.ndarray:
        return np.asarray(0.42 - 0.5 * np.cos(phase) + 0.08 * np.cos(2 * phase))


OPS = (BlackmanWindow, HammingWindow, HannWindow)
