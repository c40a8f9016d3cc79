"""`systolic compare --plot out.png`: where the cycles go, per configuration and per layer.

One figure, `FIGURE_WIDTH` inches wide whatever the number of configurations (the bars are
horizontal, one row per configuration, so the figure grows in height, up to `MAX_HEIGHT`):

- total cycles, the stall cycles stacked on the busy part, each bar labelled with its total;
- array utilization, each bar labelled with its percentage;
- per layer (below, across the width): the cycles of every accelerator layer that takes any
  (`layer_names`), one line per configuration, on a log scale.

Configurations are labelled with their array size and dataflow always, then whatever else
varies (`ConfigResult.label`, which names only the varying fields, e.g. "os bus 8" becomes
"8x8 os bus 8"). matplotlib is optional (`pip install 'systolic[plot]'`) and imported only
here, when a plot is asked for; without it `plot_bytes` raises a one-line ConfigError naming
the extra.
"""

import io
import math
from collections.abc import Sequence
from typing import Any

from systolic.compare.result import ConfigResult
from systolic.errors import ConfigError

__all__ = ["FIGURE_WIDTH", "MAX_HEIGHT", "check_plot_available", "figure", "layer_names",
           "plot_bytes", "plot_label"]  # fmt: skip

_MISSING = "--plot needs matplotlib: install it with pip install 'systolic[plot]'"
FIGURE_WIDTH = 12.0
"""Inches, for any number of configurations."""
MAX_HEIGHT = 40.0
"""Inches: past about 70 configurations the bars get thinner instead."""
_ROW = 0.32  # inches per configuration in the bar charts
_MAX_LAYER_TICKS = 40  # past this, only every n-th layer is named


def _pyplot() -> Any:
    try:
        import matplotlib

        matplotlib.use("Agg")  # files only: no display needed
        from matplotlib import pyplot
    except ImportError:
        raise ConfigError(_MISSING) from None
    return pyplot


def check_plot_available() -> None:
    """Raise the ConfigError `plot_bytes` would raise, before any long work."""
    _pyplot()


def plot_label(result: ConfigResult) -> str:
    """Return the configuration's label with its array size and dataflow always in front."""
    config = result.config
    head = [config.shape_text, config.dataflow.value]
    return " ".join([*head, *(word for word in result.label.split() if word not in head)])


def plot_bytes(results: Sequence[ConfigResult], title: str, suffix: str = "png") -> bytes:
    """Return the figure (module docstring) in the format of the file suffix ("png", "svg",
    "pdf", ...)."""
    pyplot = _pyplot()
    drawn = figure(results, title)
    try:
        out = io.BytesIO()
        drawn.savefig(out, format=suffix)
    finally:
        pyplot.close(drawn)
    return out.getvalue()


def figure(results: Sequence[ConfigResult], title: str) -> Any:
    """Return the matplotlib Figure of the module docstring (close it with pyplot.close)."""
    pyplot = _pyplot()
    bars_height = 1.2 + _ROW * len(results)
    height = min(MAX_HEIGHT, bars_height + 4.0)
    drawn = pyplot.figure(figsize=(FIGURE_WIDTH, height), layout="constrained")
    grid = drawn.add_gridspec(2, 2, height_ratios=[bars_height, 4.0])
    labels = [plot_label(result) for result in results]
    _cycles_chart(drawn.add_subplot(grid[0, 0]), results, labels)
    _utilization_chart(drawn.add_subplot(grid[0, 1]), results)
    _layer_chart(drawn.add_subplot(grid[1, :]), results, labels)
    drawn.suptitle(title)
    return drawn


def _cycles_chart(axis: Any, results: Sequence[ConfigResult], labels: list[str]) -> None:
    rows = list(range(len(results)))
    busy = [result.total_cycles - result.stall_cycles for result in results]
    stalls = [result.stall_cycles for result in results]
    axis.barh(rows, busy, label="busy")
    top = axis.barh(rows, stalls, left=busy, label="stalls")
    axis.bar_label(top, labels=[f"{result.total_cycles:,}" for result in results], padding=3)
    axis.set_yticks(rows, labels)
    axis.invert_yaxis()  # the first configuration on top
    axis.set_xlabel("cycles")
    axis.set_title("total cycles")
    axis.margins(x=0.25)  # room for the value labels
    axis.legend(loc="lower right")


def _utilization_chart(axis: Any, results: Sequence[ConfigResult]) -> None:
    rows = list(range(len(results)))
    percent = [100 * result.utilization for result in results]
    bars = axis.barh(rows, percent, color="tab:green")
    axis.bar_label(bars, labels=[f"{value:.1f}%" for value in percent], padding=3)
    axis.set_yticks(rows, [""] * len(rows))  # the rows of the cycles chart, beside it
    axis.invert_yaxis()
    axis.set_xlim(0, 115)
    axis.set_xlabel("array utilization (%)")
    axis.set_title("utilization of array layers")


def _layer_chart(axis: Any, results: Sequence[ConfigResult], labels: list[str]) -> None:
    names = layer_names(results)
    positions = list(range(len(names)))
    for result, label in zip(results, labels, strict=True):
        cycles = {layer.name: layer.cycles for layer in result.layers}
        axis.plot(positions, [cycles.get(name) or math.nan for name in names], marker=".",
                  label=label)  # fmt: skip
    step = max(1, -(-len(names) // _MAX_LAYER_TICKS))
    axis.set_xticks(positions[::step], names[::step], rotation=45, ha="right", fontsize="small")
    axis.set_yscale("log")
    axis.set_ylabel("cycles (log)")
    axis.set_title("cycles per layer (accelerator layers, in execution order)")
    if results:
        axis.legend(fontsize="small", ncols=max(1, min(6, len(results) // 4 + 1)))


def layer_names(results: Sequence[ConfigResult]) -> list[str]:
    """Return the layers of the per-layer chart: those off the host that take cycles in some
    configuration, in the first configuration's order (a layer taking none is a gap)."""
    busy = {layer.name for result in results for layer in result.layers if layer.cycles}
    first = results[0].layers if results else ()
    return [layer.name for layer in first if layer.unit != "host" and layer.name in busy]
