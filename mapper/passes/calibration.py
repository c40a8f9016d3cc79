"""Calibration for post-training quantization: the range of every value over a set of
inputs, and the seeded random set used when the caller gives none."""

from collections.abc import Callable, Iterable, Mapping, Sequence

import numpy as np

from systolic.errors import ModelError
from systolic.ir import DataType, Graph, Model, Node
from systolic.mapper.passes.constant_layout import filled
from systolic.reference.executor import run_model
from systolic.reference.kernels.blas_threads import single_threaded_blas
from systolic.reference.kernels.conv import reused_scratch

__all__ = ["RANDOM_SAMPLES", "NodeObserver", "calibrate", "random_calibration"]

NodeObserver = Callable[[Node, list[np.ndarray | None], list[np.ndarray]], None]
"""Called with each node, its inputs and its outputs as a reference run computes them."""

RANDOM_SAMPLES = 8
"""Inputs in the random calibration set."""


def random_calibration(graph: Graph, seed: int) -> list[dict[str, np.ndarray]]:
    """Return RANDOM_SAMPLES feeds drawn from numpy's default_rng(seed): float inputs
    standard normal (mean 0, deviation 1) in the input's shape (symbolic dimensions taken
    as 1), other inputs zero. Inputs that have an initializer keep it (no feed)."""
    rng = np.random.default_rng(seed)
    frozen = {t.name for t in graph.initializers}
    feeds = []
    for _ in range(RANDOM_SAMPLES):
        feed = {}
        for info in graph.inputs:
            if info.name in frozen:
                continue
            shape = tuple(d if isinstance(d, int) else 1 for d in info.type.shape or ())
            if info.type.dtype in (DataType.FLOAT, DataType.DOUBLE, DataType.FLOAT16):
                feed[info.name] = rng.standard_normal(shape).astype(info.type.dtype.numpy)
            else:
                feed[info.name] = np.zeros(shape, info.type.dtype.numpy)
        feeds.append(feed)
    return feeds


def calibrate(
    model: Model,
    feeds: Sequence[Mapping[str, np.ndarray]],
    names: Iterable[str],
    *,
    also: NodeObserver | None = None,
) -> dict[str, tuple[float, float]]:
    """Return (min, max) of each value in `names` over all `feeds` (graph inputs included),
    running the model once per feed with the reference executor (no run without a feed).
    `also`, when given, observes every node of the same runs (what else the quantizer needs
    from them: Softmax row maxima, `softmax_ranges.RowFloors`), so nothing runs twice. A
    value that is NaN or infinite in any feed is a ModelError naming it: it has no range to
    quantize. Repeated-value constants are filled in first (`constant_layout.filled`)."""
    if feeds:
        model = filled(model)
    wanted = set(names)
    ranges: dict[str, tuple[float, float]] = {}

    def observe(name: str, value: np.ndarray, where: str) -> None:
        if name not in wanted or value.size == 0:
            return
        low, high = float(np.min(value)), float(np.max(value))
        if not (np.isfinite(low) and np.isfinite(high)):
            raise ModelError(
                f"value {name!r} ({where}) is NaN or infinite during calibration, so it has no "
                "quantization range: make the float model's weights and constants finite, or "
                "pass --input values it computes finite results for"
            )
        if name in ranges:
            low, high = min(low, ranges[name][0]), max(high, ranges[name][1])
        ranges[name] = (low, high)

    def on_node(node: Node, inputs: list[np.ndarray | None], outputs: list[np.ndarray]) -> None:
        for name, value in zip(node.outputs, outputs, strict=False):
            if name:
                observe(name, value, f"output of node {node.label!r}")
        if also is not None:
            also(node, inputs, outputs)

    with single_threaded_blas(), reused_scratch():
        for feed in feeds:
            for name, value in feed.items():
                observe(name, np.asarray(value), "a graph input")
            run_model(model, feed, on_node=on_node)
    return ranges
