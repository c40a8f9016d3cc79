"""Energy per layer and per inference of a compiled model (docs/energy.md).

`layer_energies(compiled, table)` counts the events of every layer's instructions
(`systolic.sim.energy.event_sums.group_event_sums`, the sums of `events.program_events`;
each accelerator run starts from reset) and returns per layer of `compiled.layers` its event
counts and its picojoules per component
(`systolic.sim.energy.energy.COMPONENTS`); host layers cost nothing here.

`EnergySummary` is what `simulate` reports: the table, the per-action energies, the summed
events and components, the model's MACs on the array (the mapper's count: a depthwise
convolution's block-diagonal weight tiles make the array's `macs` event larger), and with a
clock (MHz) the latency, inferences per second, average power and TOPS/W (2 operations per
model MAC: TOPS/W = 2 * MACs / pJ).
`with_energy(report, compiled, table, clock_mhz)` puts both into a `SimulationReport`.
"""

import dataclasses
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from systolic.mapper.lowering.compiled import AcceleratorStep, CompiledModel
from systolic.sim.energy.energy import COMPONENTS, component_energy
from systolic.sim.energy.event_sums import group_event_sums
from systolic.sim.energy.events import sum_events
from systolic.sim.energy.table import EnergyTable
from systolic.sim.native.build import native_status
from systolic.sim.timing.native_facts import external_facts

if TYPE_CHECKING:
    from systolic.simulation.report import SimulationReport

__all__ = ["EnergySummary", "LayerEnergy", "layer_energies", "micro", "summarize", "with_energy"]


@dataclasses.dataclass(frozen=True)
class LayerEnergy:
    """One layer's event counts (`EVENTS` names) and pJ per component (`COMPONENTS`)."""

    events: Mapping[str, int]
    components: tuple[float, ...]

    @property
    def total_pj(self) -> float:
        return sum(self.components)


def layer_energies(compiled: CompiledModel, table: EnergyTable) -> list[LayerEnergy]:
    """Return every layer's events and energy (module docstring)."""
    config = compiled.config
    instructions = compiled.program.instructions
    groups = np.full(len(instructions), -1, dtype=np.int64)
    for index, layer in enumerate(compiled.layers):
        groups[layer.first : layer.end] = index
    starts = [step.first for step in compiled.steps() if isinstance(step, AcceleratorStep)]
    facts = None  # LOAD beats, natively when the engine runs (the words are made only then)
    if native_status()[0]:
        facts = external_facts(compiled.program.words, config)
    sums = group_event_sums(instructions, config, groups, len(compiled.layers), starts,
                            None if facts is None else facts[0], compiled.program.words)  # fmt: skip
    actions = table.actions(config)
    layers = []
    for events in sums:
        parts = component_energy(events, actions, config)
        layers.append(LayerEnergy(events, tuple(parts[name] for name in COMPONENTS)))
    return layers


@dataclasses.dataclass(frozen=True)
class EnergySummary:
    """The energy of one inference (module docstring)."""

    table: EnergyTable
    actions: Mapping[str, float]
    events: Mapping[str, int]
    components: Mapping[str, float]
    total_cycles: int
    macs: int
    """The model's MACs on the array (the mapper's count of its array layers)."""
    clock_mhz: float | None = None

    @property
    def total_pj(self) -> float:
        return sum(self.components.values())

    def clocked(self) -> dict[str, float] | None:
        """Latency (ms), inferences/s, average power (W) and TOPS/W at `clock_mhz`."""
        if self.clock_mhz is None or self.total_cycles == 0:
            return None
        seconds = self.total_cycles / (self.clock_mhz * 1e6)
        joules = self.total_pj * 1e-12
        return {"latency_ms": seconds * 1e3, "inferences_per_second": 1 / seconds,
                "average_power_w": joules / seconds,
                "tops_per_watt": 2 * self.macs / self.total_pj if self.total_pj else 0.0}  # fmt: skip

    def to_json(self) -> dict[str, Any]:
        clocked = self.clocked()
        return {
            "table": self.table.name,
            "table_source": self.table.source,
            "unit": "pJ",
            "total_pj": round(self.total_pj, 3),
            "macs": self.macs,
            "pj_per_mac": round(self.total_pj / self.macs, 6) if self.macs else None,
            "components": {k: round(v, 3) for k, v in self.components.items()},
            "events": dict(self.events),
            "actions": {k: round(v, 6) for k, v in self.actions.items()},
            "clock_mhz": self.clock_mhz,
            **({k: round(v, 9) for k, v in clocked.items()} if clocked else {}),
        }

    def lines(self) -> list[str]:
        """The text `simulate` prints: total and breakdown, and the clocked figures."""
        total = self.total_pj
        parts = ", ".join(f"{name} {micro(value)} ({100 * value / total:.1f}%)"
                          for name, value in self.components.items() if value)  # fmt: skip
        lines = [f"energy per inference: {micro(total)} ({self.table.name})",
                 f"  by component: {parts}" if parts else "  by component: none"]  # fmt: skip
        if self.macs:
            lines.append(f"  {total / self.macs:.3f} pJ per MAC ({self.macs:,} MACs on the array)")
        clocked = self.clocked()
        if clocked is not None:
            lines.append(
                f"at {self.clock_mhz:g} MHz: latency {clocked['latency_ms']:.4g} ms, "
                f"{clocked['inferences_per_second']:,.1f} inferences/s, "
                f"{clocked['average_power_w']:.4g} W, {clocked['tops_per_watt']:.3f} TOPS/W"
            )
        return lines


def micro(picojoules: float) -> str:
    """Return an energy with four significant digits in uJ, or in mJ from 1 mJ on
    ("12.34 uJ", "18.83 mJ")."""
    if picojoules >= 1e9:
        return f"{picojoules * 1e-9:.4g} mJ"
    return f"{picojoules * 1e-6:.4g} uJ"


def summarize(
    layers: Sequence[LayerEnergy],
    table: EnergyTable,
    actions: Mapping[str, float],
    total_cycles: int,
    macs: int,
    clock_mhz: float | None = None,
) -> EnergySummary:
    """Return the summary of a model's layer energies (`macs`: the model's MACs on the
    array)."""
    events = sum_events(layer.events for layer in layers)
    components = {name: sum(layer.components[i] for layer in layers)
                  for i, name in enumerate(COMPONENTS)}  # fmt: skip
    return EnergySummary(table, actions, events, components, total_cycles, macs, clock_mhz)


def with_energy(
    report: "SimulationReport",
    compiled: CompiledModel,
    table: EnergyTable,
    clock_mhz: float | None = None,
) -> "SimulationReport":
    """Return `report` (whose layers are `compiled.layers`, in order) with every layer's energy
    and the summary of one inference on `table`, at `clock_mhz` when given."""
    energies = layer_energies(compiled, table)
    layers = [dataclasses.replace(row, energy=energy.components)
              for row, energy in zip(report.layers, energies, strict=True)]  # fmt: skip
    macs = sum(layer.macs for layer in report.layers if layer.unit == "array")
    summary = summarize(energies, table, table.actions(compiled.config), report.latency_cycles,
                        macs, clock_mhz)  # fmt: skip
    return dataclasses.replace(report, layers=layers, energy=summary)
