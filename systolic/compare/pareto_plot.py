"""`systolic compare --pareto-plot out.png`: the Pareto front of a sweep.

Panels side by side, the weighted time (ms, at `--clock-mhz`) against each cost figure
(PE count, on-chip SRAM KiB, weighted energy per inference in uJ when every point has one): every configuration that ran is
a point, the dominated ones faded, the Pareto-optimal ones drawn solid and labelled, and the
front joined in order of cost. Log scales where the figures span more than a factor of 10.
matplotlib is optional, as for `--plot` (`systolic.compare.plot.check_plot_available`).
"""

import io
from collections.abc import Sequence
from typing import Any

from systolic.compare.plot import check_plot_available
from systolic.compare.workload import WorkloadResult

__all__ = ["COSTS", "ENERGY", "pareto_figure", "pareto_plot_bytes"]

COSTS = (("PEs (rows·cols)", lambda e: e.config.pes), ("on-chip SRAM (KiB)", lambda e: e.sram_kib))
"""The cost figures on the x axes, with how to read them from a `WorkloadResult`."""
ENERGY = ("energy per inference (uJ)", lambda e: e.energy_pj * 1e-6)
"""The energy axis, drawn when every configuration that ran has an energy."""


def _panel(axes: Any, workload: Sequence[WorkloadResult], name: str, cost: Any) -> None:
    dominated = [e for e in workload if not e.pareto]
    front = sorted((e for e in workload if e.pareto), key=lambda e: (cost(e), e.time_ms))
    axes.scatter([cost(e) for e in dominated], [e.time_ms for e in dominated], color="0.6",
                 alpha=0.35, label="dominated")  # fmt: skip
    axes.plot([cost(e) for e in front], [e.time_ms for e in front], "o-", color="C0",
              label="Pareto-optimal")  # fmt: skip
    for entry in front:
        axes.annotate(entry.label, (cost(entry), entry.time_ms), textcoords="offset points",
                      xytext=(4, 4), fontsize=7)  # fmt: skip
    for axis, values in (("x", [cost(e) for e in workload]), ("y", [e.time_ms for e in workload])):
        if values and min(values) > 0 and max(values) > 10 * min(values):
            getattr(axes, f"set_{axis}scale")("log")
    axes.set_xlabel(name)
    axes.set_ylabel("time (ms)")
    axes.grid(True, alpha=0.3)
    axes.legend(fontsize=8)


def pareto_figure(workload: Sequence[WorkloadResult]) -> Any:
    """Return the matplotlib figure (module docstring); failed configurations are left out."""
    check_plot_available()
    from matplotlib import pyplot

    ran = [entry for entry in workload if not entry.error]
    costs = COSTS + ((ENERGY,) if ran and all(e.energy_pj is not None for e in ran) else ())
    figure, panels = pyplot.subplots(1, len(costs), figsize=(6 * len(costs), 5), squeeze=False)
    for axes, (name, cost) in zip(panels[0], costs, strict=True):
        _panel(axes, ran, name, cost)
    clock = f"{workload[0].clock_mhz:g} MHz" if workload else ""
    figure.suptitle(f"Pareto front: weighted time at {clock} against cost")
    figure.tight_layout()
    return figure


def pareto_plot_bytes(workload: Sequence[WorkloadResult], suffix: str) -> bytes:
    """Return the figure as a `suffix` ("png", "svg", "pdf") file's bytes."""
    from matplotlib import pyplot

    figure = pareto_figure(workload)
    out = io.BytesIO()
    figure.savefig(out, format=suffix)
    pyplot.close(figure)
    return out.getvalue()
