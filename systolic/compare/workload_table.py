"""The workload table `systolic compare` prints: one row per configuration with its cycles
on each model (several models), its weighted cycles (several models or a weight other than
1), its time at the clock, its cost figures (PEs, on-chip SRAM KiB, weighted energy per
inference in uJ, estimated area in mm²: `area_model`) and `*` when it is Pareto-optimal; a configuration that failed shows its
reason below the table."""

from collections.abc import Sequence

from systolic.compare.workload import WorkloadResult
from systolic.simulation.table_layout import fit
from systolic.text import printable

__all__ = ["render_workload"]


def _header(entry: WorkloadResult, weighted: bool) -> list[str]:
    header = ["configuration"]
    if len(entry.models) > 1:
        header += [f"{printable(m.path)} ×{m.weight:g}" for m in entry.models]
    if weighted:
        header.append("weighted cycles")
    return [*header, "time ms", "PEs", "SRAM KiB", "energy uJ", "area mm²", "*"]


def _row(entry: WorkloadResult, weighted: bool) -> list[str]:
    row = [entry.label]
    if len(entry.models) > 1:
        row += ["failed" if r.failed else f"{r.total_cycles:,}" for r in entry.results]
    failed = bool(entry.error)
    if weighted:
        row.append("failed" if failed else f"{entry.weighted_cycles:,.0f}")
    time = "failed" if failed else f"{entry.time_ms:,.6f}"
    energy = entry.energy_pj
    joules = "-" if failed or energy is None else f"{energy * 1e-6:,.3f}"
    return [*row, time, f"{entry.config.pes:,}", f"{entry.sram_kib:,}", joules,
            f"{entry.area_mm2:,.3f}", "*" if entry.pareto else ""]  # fmt: skip


def render_workload(workload: Sequence[WorkloadResult], width: int | None = None) -> str:
    """Return the table (module docstring), fitted to `width`."""
    if not workload:
        return ""
    first = workload[0]
    weighted = len(first.models) > 1 or any(m.weight != 1 for m in first.models)
    lines = [(f"time at {first.clock_mhz:g} MHz; * Pareto-optimal in time, PEs, SRAM, energy "
              "and area (area: the analytic model's estimate, bench/area_model.md)")]
    lines += fit(_header(first, weighted), [_row(e, weighted) for e in workload], left=1,
                 width=width)  # fmt: skip
    lines += [f"{printable(e.label)}: {printable(e.error)}" for e in workload if e.error]
    return "\n".join(lines) + "\n"
