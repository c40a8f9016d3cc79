"""Simulate a model on a backend and check it bit for bit: `simulate` (what `systolic
simulate` does, `systolic.simulation.run.simulate_model`).

>>> import systolic
>>> run = systolic.simulate(None, backend="model")  # the bundled LeNet, 8x8 ws
>>> run.bit_exact
True
>>> sum(run.layers.column("cycles")) == run.total_cycles
True
>>> sorted(run.outputs)
['output']
"""

import contextlib
import dataclasses
import html
import os
import tempfile
from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, Any

from systolic.api.sources import ModelSource, model_source
from systolic.api.table import Table
from systolic.config import ArrayConfig

if TYPE_CHECKING:
    import numpy as np

    from systolic.simulation.report import SimulationReport

__all__ = ["LAYER_COLUMNS", "Simulation", "simulate"]

LAYER_COLUMNS = ("layer", "op", "unit", "macs", "cycles", "stall_cycles", "utilization")
"""The columns of `Simulation.layers`."""


@dataclasses.dataclass(frozen=True)
class Simulation:
    """One simulated run: the report of `systolic simulate` (`report`, whose `to_json()` is
    the `systolic.simulate/1` document) and the model's final outputs by name."""

    report: "SimulationReport"
    outputs: Mapping[str, "np.ndarray"]

    @property
    def total_cycles(self) -> int:
        """Cycles of every accelerator run, summed."""
        return self.report.total_cycles

    @property
    def energy_uj(self) -> float:
        """The energy of one inference in microjoules (0 when nothing ran on the
        accelerator; docs/energy.md)."""
        energy = self.report.energy
        return energy.total_pj * 1e-6 if energy is not None else 0.0

    @property
    def bit_exact(self) -> bool:
        """Whether every tensor the accelerator computed equals the reference's."""
        return self.report.mismatch is None

    @property
    def layers(self) -> Table:
        """One row per layer (`LAYER_COLUMNS`); host layers have 0 cycles, utilization is a
        fraction (array layers only)."""
        pes = self.report.pes
        rows = tuple((layer.name, layer.op, layer.unit, layer.macs, layer.cycles,
                      layer.stall_cycles, round(layer.utilization(pes), 4))
                     for layer in self.report.layers)  # fmt: skip
        return Table(LAYER_COLUMNS, rows, title=self.heading)

    @property
    def heading(self) -> str:
        """One line: model, configuration, backend, cycles and the bit-exact check."""
        config = self.report.config
        check = "bit-exact" if self.bit_exact else "MISMATCH"
        return (f"{self.report.model}: {config['rows']}x{config['cols']} {config['dataflow']}, "
                f"{self.report.backend} backend, {self.total_cycles:,} cycles, {check}")  # fmt: skip

    def to_json(self) -> dict[str, Any]:
        """Return the `systolic.simulate/1` JSON document (README, "simulate JSON")."""
        return self.report.to_json()

    def __str__(self) -> str:
        from systolic.simulation.report import render_table

        mismatch = f"\nmismatch: {self.report.mismatch.text()}" if self.report.mismatch else ""
        return f"{self.heading}\n\n{render_table(self.report).rstrip()}{mismatch}"

    def _repr_html_(self) -> str:
        mismatch = self.report.mismatch
        note = f"<p>mismatch: {html.escape(mismatch.text())}</p>" if mismatch else ""
        return note + self.layers._repr_html_()


def simulate(
    model: ModelSource = None,
    config: ArrayConfig | None = None,
    *,
    backend: str = "model",
    inputs: "str | os.PathLike[str] | Mapping[str, np.ndarray] | np.ndarray | None" = None,
    seed: int = 0,
    onnxruntime: bool = False,
    energy_table: "str | os.PathLike[str] | None" = None,
    clock_mhz: float | None = None,
    host_ops_per_cycle: float | None = None,
) -> Simulation:
    """Simulate the ONNX model at `model` (None: the bundled LeNet) on `config` (default
    `ArrayConfig()`) with `backend` ("model": the golden values and the cycle model, fast;
    "rtl": the Amaranth simulator; "verilator") and check it against the reference.

    `inputs` is an .npy/.npz file, arrays by input name, or one array for a model with one
    input (default: random inputs seeded by `seed`); arrays are checked exactly as the files
    of `systolic simulate --input` are. `onnxruntime` also compares the final outputs with
    onnxruntime on the original model. A difference from the reference does not raise: see
    `bit_exact` and `report.mismatch`. The energy of the run (docs/energy.md) is computed
    with the per-action table at `energy_table` (a TOML file, as `--energy-table`; default:
    the shipped 45 nm table) and, with `clock_mhz`, the latency and TOPS/W: `energy_uj`,
    `report.energy`. `host_ops_per_cycle` turns on the host cost model
    (`systolic.simulation.host_cost`, as `--host-ops-per-cycle`): the totals and the latency
    then include the host layers' estimated cycles.

    >>> import numpy as np, systolic
    >>> x = np.zeros((1, 1, 16, 16), np.float32)
    >>> run = systolic.simulate(None, inputs={"input": x}, clock_mhz=500)
    >>> run.bit_exact, run.energy_uj > 0, run.to_json()["energy"]["latency_ms"] > 0
    (True, True, True)
    """
    from systolic.simulation.run import simulate_model

    path, label = model_source(model)
    from systolic.sim.energy.table import EnergyTable
    from systolic.simulation.energy import with_energy
    from systolic.simulation.host_cost import check_host_ops_per_cycle

    table = EnergyTable.default() if energy_table is None else EnergyTable.load(os.fspath(energy_table))
    if host_ops_per_cycle is not None:
        host_ops_per_cycle = check_host_ops_per_cycle(host_ops_per_cycle)
    with _input_file(inputs) as input_path:
        outcome = simulate_model(
            path, config if config is not None else ArrayConfig(), label=label,
            backend=backend, input_path=input_path, seed=seed, compare_onnxruntime=onnxruntime,
        )  # fmt: skip
    report = dataclasses.replace(outcome.report, host_ops_per_cycle=host_ops_per_cycle)
    if outcome.compiled is not None:
        report = with_energy(report, outcome.compiled, table, clock_mhz)
    return Simulation(report, outcome.outputs)


@contextlib.contextmanager
def _input_file(
    inputs: "str | os.PathLike[str] | Mapping[str, np.ndarray] | np.ndarray | None",
) -> Iterator[str | os.PathLike[str] | None]:
    """Yield a path for `inputs`: arrays are written to a temporary .npz/.npy (removed after)
    so they take the same checked path as the CLI's --input files."""
    if inputs is None or isinstance(inputs, (str, os.PathLike)):
        yield inputs
        return
    import numpy as np

    with tempfile.TemporaryDirectory(prefix="systolic-inputs-") as folder:
        if isinstance(inputs, Mapping):
            path = os.path.join(folder, "inputs.npz")
            arrays = {name: np.asarray(value) for name, value in inputs.items()}
            np.savez(path, **arrays)  # type: ignore[arg-type]  # (numpy's stub: allow_pickle)
        else:
            path = os.path.join(folder, "inputs.npy")
            np.save(path, np.asarray(inputs))
        yield path
