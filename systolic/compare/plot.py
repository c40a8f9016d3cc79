"""`systolic compare --plot out.png`: total cycles and array utilization per configuration.

matplotlib is optional (`pip install 'systolic[plot]'`) and imported only here, when a plot
is asked for; without it `plot_bytes` raises a one-line ConfigError naming the extra.
"""

import io
from collections.abc import Sequence
from typing import Any

from systolic.compare.result import ConfigResult
from systolic.errors import ConfigError

__all__ = ["check_plot_available", "plot_bytes"]

_MISSING = "--plot needs matplotlib: install it with pip install 'systolic[plot]'"


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


def plot_bytes(results: Sequence[ConfigResult], title: str, suffix: str = "png") -> bytes:
    """Return the figure (format from the file suffix, e.g. "png", "svg", "pdf"): a bar chart of
    total cycles (stall cycles stacked on top of the busy part) and one of utilization."""
    pyplot = _pyplot()
    labels = [result.label for result in results]
    positions = range(len(results))
    figure, (cycles_axis, util_axis) = pyplot.subplots(
        1, 2, figsize=(max(6.0, 1.2 * len(results) + 4.0), 4.0), constrained_layout=True
    )
    try:
        busy = [result.total_cycles - result.stall_cycles for result in results]
        stalls = [result.stall_cycles for result in results]
        cycles_axis.bar(positions, busy, label="busy")
        cycles_axis.bar(positions, stalls, bottom=busy, label="stalls")
        cycles_axis.set_ylabel("cycles")
        cycles_axis.set_title("total cycles")
        cycles_axis.legend()
        util_axis.bar(positions, [100 * result.utilization for result in results])
        util_axis.set_ylabel("array utilization (%)")
        util_axis.set_ylim(0, 100)
        util_axis.set_title("utilization of array layers")
        for axis in (cycles_axis, util_axis):
            axis.set_xticks(list(positions))
            axis.set_xticklabels(labels, rotation=30, ha="right")
        figure.suptitle(title)
        out = io.BytesIO()
        figure.savefig(out, format=suffix)
    finally:
        pyplot.close(figure)
    return out.getvalue()
