"""How much of a run ran where, from its per-layer rows (`layer_rows`): the honest account
beside the cycle totals, which count the accelerator only.

- MACs on the array and on the host (host layers cost 0 accelerator cycles);
- elementwise work, as the elements produced by layers that are neither array nor layout
  layers, on the vector unit and on the host;
- how many layers run on the host, of all layers;
- the bytes moved to and from the host around host layers: the placed tensors each host
  step reads and writes.
"""

import dataclasses
from collections.abc import Sequence
from typing import Any

from systolic.simulation.report import LayerResult

__all__ = ["Coverage", "coverage"]


@dataclasses.dataclass(frozen=True)
class Coverage:
    """The account of one run; see the module docstring."""

    array_macs: int
    host_macs: int
    vector_elements: int
    host_elements: int
    host_layers: int
    layers: int
    host_bytes: int

    @property
    def array_mac_share(self) -> float:
        """The fraction of MACs on the array (1 when the model has none)."""
        total = self.array_macs + self.host_macs
        return self.array_macs / total if total else 1.0

    def to_json(self) -> dict[str, Any]:
        """The JSON report's `coverage` object."""
        return {
            "array_macs": self.array_macs,
            "host_macs": self.host_macs,
            "array_mac_fraction": round(self.array_mac_share, 6),
            "vector_elements": self.vector_elements,
            "host_elements": self.host_elements,
            "host_layers": self.host_layers,
            "layers": self.layers,
            "host_bytes": self.host_bytes,
        }

    def text(self, *, host_modelled: bool = False) -> str:
        """The one line `systolic simulate` prints (`host_modelled`: the totals include the
        host layers' estimated cycles, `systolic.simulation.host_cost`)."""
        return (
            f"coverage: {100 * self.array_mac_share:.1f}% of MACs on the array; "
            f"elementwise: {_count(self.vector_elements)} elements on the vector unit, "
            f"{_count(self.host_elements)} on the host; "
            f"{self.host_layers} of {self.layers} layers on the host "
            f"({_count(self.host_elements)} elements, {_bytes(self.host_bytes)} to/from the "
            "host); " + ("totals include the host's estimated cycles" if host_modelled
                         else "totals are accelerator cycles only")
        )


def coverage(rows: Sequence[LayerResult]) -> Coverage:
    """Return the account of the run whose per-layer rows are `rows`."""
    host = [row for row in rows if row.unit == "host"]
    return Coverage(
        array_macs=sum(row.macs for row in rows if row.unit == "array"),
        host_macs=sum(row.macs for row in host),
        vector_elements=sum(row.elements for row in rows if row.unit == "vector"),
        host_elements=sum(row.elements for row in host),
        host_layers=len(host),
        layers=len(rows),
        host_bytes=sum(row.host_bytes for row in host),
    )


def _count(value: int) -> str:
    for size, suffix in ((10**9, " G"), (10**6, " M"), (10**3, " k")):
        if value >= size:
            return f"{value / size:.1f}{suffix}"
    return str(value)


def _bytes(value: int) -> str:
    for size, suffix in ((10**9, " GB"), (10**6, " MB"), (10**3, " kB")):
        if value >= size:
            return f"{value / size:.1f}{suffix}"
    return f"{value} B"
