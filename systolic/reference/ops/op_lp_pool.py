"""Lp pooling: the p-norm of each window (LpPool) or of all spatial positions
(GlobalLpPool), on the pooling family's window geometry (op_pool.py)."""

from collections.abc import Sequence
from typing import ClassVar

import numpy as np

from systolic.ir import Attrs
from systolic.reference.kernels.pool import pool_windows
from systolic.reference.ops._shared import float_attr
from systolic.reference.ops.base import Op
from systolic.reference.ops.op_pool import _GlobalPool, _Pool


def _p(op: Op) -> float:
    """Return attribute p (default 2): a float in version 1, an integer from version 2;
    it must be positive."""
    p = float_attr(op, "p", 2.0)
    if op.version >= 2 and not isinstance(op.attr("p", 2), int):
        raise op.error(f"attribute 'p' must be an integer from version 2, got {op.attr('p')!r}")
    if p <= 0:
        raise op.error(f"attribute 'p' must be positive, got {p}")
    return p


def _norm(windows: np.ndarray, axes: tuple[int, ...], p: float) -> np.ndarray:
    """Return (sum |w|^p)^(1/p) over `axes`, in float64."""
    return np.asarray(np.sum(np.abs(windows) ** p, axis=axes) ** (1.0 / p))


class LpPool(_Pool):
    """LpPool-1 (p a float), -2 (p an integer), -11 (auto_pad "SAME_*"), -18 (ceil_mode,
    dilations), -22: (sum over the window of |x|^p)^(1/p); padding cells are 0 and add
    nothing. Computed in float64, rounded once; float types only."""

    op_type = "LpPool"
    since_versions = (1, 2, 11, 18, 22)
    first_version_with: ClassVar[dict[str, int]] = {"ceil_mode": 18, "dilations": 18}

    def __init__(self, attrs: Attrs, version: int, node_label: str) -> None:
        super().__init__(attrs, version, node_label)
        self.p = _p(self)

    def run(self, inputs: Sequence[np.ndarray | None]) -> list[np.ndarray]:
        (x,) = inputs
        assert x is not None
        pads, _ = self.geometry(x.shape)
        windows = pool_windows(x.astype(np.float64), self.kernel, self.strides, pads,
                               self.dilations, ceil_mode=self.ceil_mode, fill=0)
        rank = len(self.kernel)
        axes = tuple(range(windows.ndim - rank, windows.ndim))
        return [_norm(windows, axes, self.p).astype(x.dtype)]


class GlobalLpPool(_GlobalPool):
    """GlobalLpPool-1 (p a float), -2 (p an integer), -22: the p-norm over all spatial
    axes, in float64 rounded once."""

    op_type = "GlobalLpPool"
    since_versions = (1, 2, 22)

    def __init__(self, attrs: Attrs, version: int, node_label: str) -> None:
        super().__init__(attrs, version, node_label)
        self.p = _p(self)

    def run(self, inputs: Sequence[np.ndarray | None]) -> list[np.ndarray]:
        (x,) = inputs
        assert x is not None
        axes = tuple(range(2, x.ndim))
        out = _norm(x.astype(np.float64), axes, self.p)
        return [out.reshape(*x.shape[:2], *(1,) * len(axes)).astype(x.dtype)]


OPS = (GlobalLpPool, LpPool)
