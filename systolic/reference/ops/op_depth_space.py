"""DepthToSpace and SpaceToDepth: move blocks of channels to and from the spatial axes."""

from collections.abc import Sequence

import numpy as np

from systolic.ir import Attrs
from systolic.reference.ops._shared import fold, int_attr, str_attr
from systolic.reference.ops.base import Op, TensorInfo


class _Blocks(Op):
    """Shared checks: a positive `blocksize` and a rank-4 NCHW input."""

    def __init__(self, attrs: Attrs, version: int, node_label: str) -> None:
        super().__init__(attrs, version, node_label)
        self.required_attr("blocksize")
        self.block = int_attr(self, "blocksize", 1)
        if self.block < 1:
            raise self.error(f"blocksize must be positive, got {self.block}")

    def out_shape(self, shape: tuple[int, ...]) -> tuple[int, ...]:
        """Return the output shape for input `shape`, or raise ModelError."""
        raise NotImplementedError

    def rank4(self, shape: tuple[int, ...]) -> tuple[int, int, int, int]:
        """Return `shape` as (N, C, H, W), or raise ModelError when it is not rank 4."""
        if len(shape) != 4:
            raise self.error(f"input must be 4-D (N, C, H, W), got shape {list(shape)}")
        n, c, h, w = shape
        return n, c, h, w

    def infer(self, inputs: Sequence[TensorInfo | None]) -> list[TensorInfo]:
        (x,) = inputs
        assert x is not None
        return fold(self, inputs, [TensorInfo(x.dtype, self.out_shape(x.shape))])


class DepthToSpace(_Blocks):
    """DepthToSpace-1 (DCR), -11 (`mode` DCR or CRD), -13 (more types): (N, C, H, W) to
    (N, C/b², H·b, W·b). DCR reads channel (i·b + j)·C/b² + c, CRD reads c·b² + i·b + j."""

    op_type = "DepthToSpace"
    since_versions = (1, 11, 13)

    def __init__(self, attrs: Attrs, version: int, node_label: str) -> None:
        super().__init__(attrs, version, node_label)
        self.mode = str_attr(self, "mode", "DCR") if version >= 11 else "DCR"
        if self.mode not in ("DCR", "CRD"):
            raise self.error(f"mode must be 'DCR' or 'CRD', got {self.mode!r}")

    def out_shape(self, shape: tuple[int, ...]) -> tuple[int, ...]:
        n, c, h, w = self.rank4(shape)
        b = self.block
        if c % (b * b):
            raise self.error(f"channels {c} are not a multiple of blocksize² {b * b}")
        return n, c // (b * b), h * b, w * b

    def run(self, inputs: Sequence[np.ndarray | None]) -> list[np.ndarray]:
        (x,) = inputs
        assert x is not None
        n, c, h, w = self.out_shape(x.shape)
        b = self.block
        if self.mode == "DCR":
            y = x.reshape(n, b, b, c, h // b, w // b).transpose(0, 3, 4, 1, 5, 2)
        else:
            y = x.reshape(n, c, b, b, h // b, w // b).transpose(0, 1, 4, 2, 5, 3)
        return [np.ascontiguousarray(y.reshape(n, c, h, w))]


class SpaceToDepth(_Blocks):
    """SpaceToDepth-1, -13 (more types): (N, C, H, W) to (N, C·b², H/b, W/b), the inverse
    of DepthToSpace in DCR mode."""

    op_type = "SpaceToDepth"
    since_versions = (1, 13)

    def out_shape(self, shape: tuple[int, ...]) -> tuple[int, ...]:
        n, c, h, w = self.rank4(shape)
        b = self.block
        if h % b or w % b:
            raise self.error(f"height {h} and width {w} must be multiples of blocksize {b}")
        return n, c * b * b, h // b, w // b

    def run(self, inputs: Sequence[np.ndarray | None]) -> list[np.ndarray]:
        (x,) = inputs
        assert x is not None
        out = self.out_shape(x.shape)
        n, c, h, w = x.shape
        b = self.block
        y = x.reshape(n, c, h // b, b, w // b, b).transpose(0, 3, 5, 1, 2, 4)
        return [np.ascontiguousarray(y.reshape(out))]


OPS = (DepthToSpace, SpaceToDepth)
