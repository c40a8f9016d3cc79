"""Energy by component: each component is its events times its per-action energies."""

import pytest

from systolic.config import ArrayConfig
from systolic.sim.energy.energy import COMPONENTS, component_energy
from systolic.sim.energy.table import ACTIONS

CONFIG = ArrayConfig(rows=4, cols=4, bus_bytes=8)


def test_each_component_counts_its_own_events() -> None:
    actions = {name: float(index + 1) for index, name in enumerate(ACTIONS)}
    a = actions.__getitem__
    events = {"mac_slots": 100, "macs": 60, "spad_in_reads": 7, "spad_in_writes": 3,
              "spad_wt_reads": 5, "spad_wt_writes": 2, "params_reads": 1, "params_writes": 4,
              "acc_reads": 6, "acc_writes": 8, "acc_rmw": 5, "output_stage_lanes": 24,
              "vector_lanes": 16, "vector_mul_lanes": 4, "lut_lookups": 9, "lut_writes": 256,
              "ext_read_beats": 11, "ext_write_beats": 13, "ext_read_bytes": 80}  # fmt: skip
    parts = component_energy(events, actions, CONFIG)
    assert list(parts) == list(COMPONENTS)
    assert parts["pe_array"] == 60 * a("pe.mac") + 40 * a("pe.idle")
    assert parts["spad_in"] == 7 * a("spad_in.read") + 3 * a("spad_in.write")
    assert parts["spad_wt"] == 5 * a("spad_wt.read") + 2 * a("spad_wt.write")
    assert parts["params"] == a("params.read") + 4 * a("params.write")
    assert parts["accumulator"] == (6 * a("acc.read") + 8 * a("acc.write")
                                    + 5 * (a("acc.read") + 4 * a("acc.add")))  # fmt: skip
    assert parts["output_vector"] == (24 * a("output_stage.lane") + 16 * a("vector.lane")
                                      + 4 * a("vector.mul_lane") + 9 * a("lut.lookup")
                                      + 256 * a("lut.write"))  # fmt: skip
    assert parts["external"] == 64 * (11 * a("dram.read_bit") + 13 * a("dram.write_bit"))


def test_no_events_cost_nothing() -> None:
    actions = dict.fromkeys(ACTIONS, 1.0)
    assert component_energy({}, actions, CONFIG) == pytest.approx(dict.fromkeys(COMPONENTS, 0.0))
