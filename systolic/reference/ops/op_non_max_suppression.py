"""NonMaxSuppression: greedily keep the best-scoring boxes of each class that do not overlap
a kept one by more than an IoU threshold (the tail of single-stage detectors)."""

from collections.abc import Sequence

import numpy as np

from systolic.ir import Attrs, DataType
from systolic.reference.ops._shared import check_type, int_attr
from systolic.reference.ops.base import Op, TensorInfo
from systolic.reference.ops.op_if import ShapeKnownWhenRunning


def corners(boxes: np.ndarray, center_point_box: bool) -> np.ndarray:
    """Return (..., 4) boxes as (y_min, x_min, y_max, x_max) in their own type: from
    [y1, x1, y2, x2] (any two opposite corners) or from [x_center, y_center, width, height]."""
    if center_point_box:
        half_w, half_h = boxes[..., 2] / 2, boxes[..., 3] / 2
        return np.stack([boxes[..., 1] - half_h, boxes[..., 0] - half_w,
                         boxes[..., 1] + half_h, boxes[..., 0] + half_w], axis=-1)
    return np.stack([np.minimum(boxes[..., 0], boxes[..., 2]),
                     np.minimum(boxes[..., 1], boxes[..., 3]),
                     np.maximum(boxes[..., 0], boxes[..., 2]),
                     np.maximum(boxes[..., 1], boxes[..., 3])], axis=-1)


def overlaps(box: np.ndarray, kept: np.ndarray, threshold: float) -> bool:
    """Return whether `box` has an IoU above `threshold` with any box of `kept` (both in
    corner form); a box of no area, or no intersection, overlaps nothing."""
    if not len(kept):
        return False
    low = np.maximum(box[:2], kept[:, :2])
    high = np.minimum(box[2:], kept[:, 2:])
    sides = high - low
    inter = np.where((sides > 0).all(axis=1), sides[:, 0] * sides[:, 1], 0)
    area = (box[2] - box[0]) * (box[3] - box[1])
    areas = (kept[:, 2] - kept[:, 0]) * (kept[:, 3] - kept[:, 1])
    union = area + areas - inter
    valid = (inter > 0) & (area > 0) & (areas > 0) & (union > 0)
    with np.errstate(divide="ignore", invalid="ignore"):
        return bool((valid & (inter / union > threshold)).any())


class NonMaxSuppression(Op):
    """NonMaxSuppression-10, -11. boxes (B, N, 4), scores (B, C, N), both float32 as the
    spec says; optional scalars
    max_output_boxes_per_class (int64, default 0: nothing is kept), iou_threshold (default
    0) and score_threshold (a box needs a score above it). Per batch and class, candidates
    are taken by falling score (ties: the lower box index first) and kept unless their IoU
    with a kept box exceeds iou_threshold. The output is (kept, 3) int64 rows of
    (batch, class, box), by batch, class and keeping order. Its size depends on the
    inputs' values, so they must all be known before running: the reference needs static
    shapes."""

    op_type = "NonMaxSuppression"
    since_versions = (10, 11)

    def __init__(self, attrs: Attrs, version: int, node_label: str) -> None:
        super().__init__(attrs, version, node_label)
        self.center = int_attr(self, "center_point_box", 0)
        if self.center not in (0, 1):
            raise self.error(f"center_point_box must be 0 or 1, got {self.center}")

    def _check(self, boxes: tuple[int, ...], scores: tuple[int, ...]) -> None:
        if len(boxes) != 3 or boxes[2] != 4 or len(scores) != 3 or (
                scores[0], scores[2]) != boxes[:2]:
            raise self.error(f"boxes {list(boxes)} and scores {list(scores)} must be "
                             "(B, N, 4) and (B, C, N)")

    def infer(self, inputs: Sequence[TensorInfo | None]) -> list[TensorInfo]:
        boxes, scores, *_ = inputs
        assert boxes is not None and scores is not None
        check_type(self, boxes, frozenset({DataType.FLOAT}), "boxes")
        if scores.dtype != boxes.dtype:
            raise self.error(f"scores ({scores.dtype.short}) must have boxes' type")
        self._check(boxes.shape, scores.shape)
        if any(info is not None and info.value is None for info in inputs):
            raise ShapeKnownWhenRunning(
                f"node {self.node_label!r} (ai.onnx.NonMaxSuppression:{self.version}): its "
                "output size depends on the boxes' and scores' values, which are known only "
                "when running; the reference needs static shapes")
        (out,) = self.run([None if info is None else info.value for info in inputs])
        return [TensorInfo(DataType.INT64, out.shape, out)]

    def run(self, inputs: Sequence[np.ndarray | None]) -> list[np.ndarray]:
        boxes, scores, *rest = (*inputs, None, None, None)
        assert boxes is not None and scores is not None
        self._check(boxes.shape, scores.shape)
        limit, iou, floor = (None if x is None or x.size == 0 else x.reshape(-1)[0]
                             for x in rest[:3])
        keep = int(limit) if limit is not None else 0
        box_corners = corners(boxes, bool(self.center))
        rows = [(b, c, i)
                for b in range(scores.shape[0]) for c in range(scores.shape[1])
                for i in self._select(box_corners[b], scores[b, c], keep, iou, floor)]
        return [np.array(rows, np.int64).reshape(-1, 3)]

    def _select(self, boxes: np.ndarray, scores: np.ndarray, keep: int,
                iou: np.generic | None, floor: np.generic | None) -> list[int]:
        """Return the kept box indices of one batch entry and class, in keeping order."""
        order = np.argsort(-scores.astype(np.float64), kind="stable")
        if floor is not None:
            order = order[scores[order] > floor]
        threshold = float(iou) if iou is not None else 0.0
        kept: list[int] = []
        for index in order.tolist():
            if len(kept) >= keep:
                break
            if not overlaps(boxes[index], boxes[kept], threshold):
                kept.append(index)
        return kept


OPS = (NonMaxSuppression,)
