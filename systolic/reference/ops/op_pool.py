"""Pooling: MaxPool, AveragePool, GlobalAveragePool, GlobalMaxPool."""

from collections.abc import Sequence
from typing import ClassVar

import numpy as np

from systolic.ir import Attrs, DataType
from systolic.reference.kernels.conv import AUTO_PADS, conv_output_shape, resolve_auto_pad
from systolic.reference.kernels.pool import pool_windows, window_counts, window_max
from systolic.reference.ops._shared import FLOAT_TYPES, check_type, int_attr, ints_attr, str_attr
from systolic.reference.ops.base import Op, TensorInfo

_INT8_TYPES = frozenset({DataType.INT8, DataType.UINT8})


class _Pool(Op):
    """Window geometry shared by MaxPool and AveragePool. `first_version_with` maps optional
    attributes to the version that introduced them; using one earlier is a ModelError."""

    first_version_with: ClassVar[dict[str, int]] = {}

    def __init__(self, attrs: Attrs, version: int, node_label: str) -> None:
        super().__init__(attrs, version, node_label)
        for name, since in self.first_version_with.items():
            if name in attrs and version < since:
                raise self.error(f"attribute {name!r} needs {self.op_type}-{since} or later")
        kernel = ints_attr(self, "kernel_shape")
        if kernel is None:
            raise self.error("required attribute 'kernel_shape' is missing")
        self.kernel = kernel
        rank = len(kernel)
        self.strides = ints_attr(self, "strides") or (1,) * rank
        self.dilations = ints_attr(self, "dilations") or (1,) * rank
        self.pads = ints_attr(self, "pads")
        self.auto_pad = str_attr(self, "auto_pad", "NOTSET")
        self.ceil_mode = bool(int_attr(self, "ceil_mode", 0))
        if self.auto_pad not in AUTO_PADS:
            raise self.error(f"auto_pad {self.auto_pad!r} is not one of {', '.join(AUTO_PADS)}")
        if self.pads is not None and self.auto_pad != "NOTSET":
            raise self.error("pads and auto_pad are both set; remove one of them")
        if len(self.strides) != rank or len(self.dilations) != rank:
            raise self.error(f"strides and dilations need {rank} values, like kernel_shape")
        if self.pads is not None and len(self.pads) != 2 * rank:
            raise self.error(f"pads needs {2 * rank} values, got {len(self.pads)}")
        if min((*kernel, *self.strides, *self.dilations)) < 1:
            raise self.error("kernel_shape, strides and dilations must be positive")
        if self.pads is not None and min(self.pads) < 0:
            raise self.error(f"pads must not be negative, got {list(self.pads)}")

    def geometry(self, x_shape: Sequence[int]) -> tuple[tuple[int, ...], tuple[int, ...]]:
        """Return (explicit pads, output spatial shape) for an input of shape `x_shape`."""
        if len(x_shape) != len(self.kernel) + 2:
            raise self.error(f"input {list(x_shape)} must be [N, C] plus {len(self.kernel)} "
                             "spatial axes, as kernel_shape")
        pads = resolve_auto_pad(self.auto_pad, x_shape[2:], self.kernel, self.strides,
                                self.dilations, self.pads)
        out = conv_output_shape(x_shape[2:], self.kernel, self.strides, pads, self.dilations,
                                ceil_mode=self.ceil_mode)
        if min(out) < 1:
            raise self.error(f"kernel {list(self.kernel)} does not fit input {list(x_shape)}")
        return pads, out

    def infer(self, inputs: Sequence[TensorInfo | None]) -> list[TensorInfo]:
        (x,) = inputs
        assert x is not None
        allowed = FLOAT_TYPES | _INT8_TYPES if self.accepts_int8() else FLOAT_TYPES
        check_type(self, x, allowed, "X")
        _, out = self.geometry(x.shape)
        return [TensorInfo(x.dtype, (*x.shape[:2], *out))]

    def accepts_int8(self) -> bool:
        return False


class MaxPool(_Pool):
    """MaxPool-1, -8 (storage_order), -10 (dilations, ceil_mode), -11, -12 (int8, uint8),
    -22. Only output Y is computed: the optional Indices output is not supported (the
    executor reports it). Padding never wins the maximum."""

    op_type = "MaxPool"
    since_versions = (1, 8, 10, 11, 12, 22)
    first_version_with: ClassVar[dict[str, int]] = {"storage_order": 8, "dilations": 10, "ceil_mode": 10}

    def accepts_int8(self) -> bool:
        return self.version >= 12

    def run(self, inputs: Sequence[np.ndarray | None]) -> list[np.ndarray]:
        (x,) = inputs
        assert x is not None
        pads, _ = self.geometry(x.shape)
        fill = -np.inf if x.dtype.kind == "f" else np.iinfo(x.dtype).min
        return [window_max(x, self.kernel, self.strides, pads, self.dilations,
                           ceil_mode=self.ceil_mode, fill=fill)]


class AveragePool(_Pool):
    """AveragePool-1, -7 (count_include_pad), -10 (ceil_mode), -11, -19 (dilations), -22.

    Each window's sum is divided by the number of input cells it covers, plus its explicit
    padding cells when count_include_pad = 1; cells past the end padding in ceil mode never
    count. float16 is averaged in float32."""

    op_type = "AveragePool"
    since_versions = (1, 7, 10, 11, 19, 22)
    first_version_with: ClassVar[dict[str, int]] = {"count_include_pad": 7, "ceil_mode": 10, "dilations": 19}

    def __init__(self, attrs: Attrs, version: int, node_label: str) -> None:
        super().__init__(attrs, version, node_label)
        self.count_pads = bool(int_attr(self, "count_include_pad", 0))

    def run(self, inputs: Sequence[np.ndarray | None]) -> list[np.ndarray]:
        (x,) = inputs
        assert x is not None
        pads, _ = self.geometry(x.shape)
        acc = np.float64 if x.dtype == np.float64 else np.float32
        windows = pool_windows(x.astype(acc, copy=False), self.kernel, self.strides, pads,
                               self.dilations, ceil_mode=self.ceil_mode, fill=0)
        rank = len(self.kernel)
        sums = windows.sum(axis=tuple(range(windows.ndim - rank, windows.ndim)))
        counts = window_counts(x.shape[2:], self.kernel, self.strides, pads, self.dilations,
                               ceil_mode=self.ceil_mode, count_pads=self.count_pads)
        return [(sums / counts.astype(acc)).astype(x.dtype)]


class _GlobalPool(Op):
    def infer(self, inputs: Sequence[TensorInfo | None]) -> list[TensorInfo]:
        (x,) = inputs
        assert x is not None
        check_type(self, x, FLOAT_TYPES, "X")
        if len(x.shape) < 3:
            raise self.error(f"X must be [N, C, *spatial], got {list(x.shape)}")
        return [TensorInfo(x.dtype, (*x.shape[:2], *(1,) * (len(x.shape) - 2)))]


class GlobalAveragePool(_GlobalPool):
    """GlobalAveragePool-1, -22: the mean over all spatial axes, summed in float64 and rounded
    once to X's type."""

    op_type = "GlobalAveragePool"
    since_versions = (1, 22)

    def run(self, inputs: Sequence[np.ndarray | None]) -> list[np.ndarray]:
        (x,) = inputs
        assert x is not None
        axes = tuple(range(2, x.ndim))
        return [x.mean(axis=axes, dtype=np.float64, keepdims=True).astype(x.dtype)]


class GlobalMaxPool(_GlobalPool):
    """GlobalMaxPool-1, -22: the maximum over all spatial axes."""

    op_type = "GlobalMaxPool"
    since_versions = (1, 22)

    def run(self, inputs: Sequence[np.ndarray | None]) -> list[np.ndarray]:
        (x,) = inputs
        assert x is not None
        return [x.max(axis=tuple(range(2, x.ndim)), keepdims=True)]


OPS = (AveragePool, GlobalAveragePool, GlobalMaxPool, MaxPool)
