"""The Pareto-optimal configurations of a sweep: those no other configuration beats on every
figure at once.

`pareto_front(points)` takes one tuple of figures to minimise per configuration (None for one
that failed, never optimal) and says which are optimal: a point is dominated when another is
no worse on every figure and better on one, so equal points are optimal together.
`mark_pareto` applies it to workload results over their `costs()`: the weighted time, and the
cost figures that exist (the PE count rows·cols, the on-chip SRAM spad_kib + acc_kib, and the
weighted energy per inference, and the area model's estimated mm²).
"""

import dataclasses
from collections.abc import Sequence

from systolic.compare.workload import WorkloadResult

__all__ = ["dominates", "mark_pareto", "pareto_front"]


def dominates(a: Sequence[float], b: Sequence[float]) -> bool:
    """Whether `a` is no worse than `b` on every figure and better on at least one."""
    return all(x <= y for x, y in zip(a, b, strict=True)) and any(
        x < y for x, y in zip(a, b, strict=True)
    )


def pareto_front(points: Sequence[Sequence[float] | None]) -> list[bool]:
    """Return, for every point, whether no other point dominates it (None: False)."""
    present = [p for p in points if p is not None]
    return [p is not None and not any(dominates(q, p) for q in present) for p in points]


def mark_pareto(results: Sequence[WorkloadResult]) -> list[WorkloadResult]:
    """Return the results with `pareto` set (module docstring)."""
    front = pareto_front([None if r.error else r.costs() for r in results])
    return [
        dataclasses.replace(r, pareto=optimal) for r, optimal in zip(results, front, strict=True)
    ]
