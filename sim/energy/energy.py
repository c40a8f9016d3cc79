"""Energy by component: event counts times per-action energies (docs/energy.md).

`component_energy(events, actions, config)` returns the picojoules of each of `COMPONENTS`
for the event counts `events` (`events.EVENTS` names; missing names count 0) with the
per-action energies `actions` (`EnergyTable.actions(config)`):

- `pe_array`: `macs * pe.mac + (mac_slots - macs) * pe.idle`;
- `spad_in`, `spad_wt`, `params`: reads and writes times their access energies;
- `accumulator`: STORE reads and EXECUTE writes, plus per accumulating write the old row's
  read and `cols` adds (`acc.read + cols * acc.add`);
- `output_vector`: the output stage's lanes, the vector unit's lanes and element products,
  and the activation table's lookups and writes;
- `external`: every bus beat's `bus_bytes * 8` bits at `dram.read_bit` / `dram.write_bit`.
"""

from collections.abc import Mapping

from systolic.config import ArrayConfig

__all__ = ["COMPONENTS", "component_energy"]

COMPONENTS = ("pe_array", "spad_in", "spad_wt", "params", "accumulator", "output_vector",
              "external")  # fmt: skip
"""The components of the breakdown, in report order."""


def component_energy(
    events: Mapping[str, int], actions: Mapping[str, float], config: ArrayConfig
) -> dict[str, float]:
    """Return pJ per component (module docstring)."""
    count = events.get
    e = actions.__getitem__
    beat_bits = config.bus_bytes * 8

    def memory(name: str) -> float:
        return (count(f"{name}_reads", 0) * e(f"{name}.read")
                + count(f"{name}_writes", 0) * e(f"{name}.write"))  # fmt: skip

    macs = count("macs", 0)
    return {
        "pe_array": macs * e("pe.mac") + (count("mac_slots", 0) - macs) * e("pe.idle"),
        "spad_in": memory("spad_in"),
        "spad_wt": memory("spad_wt"),
        "params": memory("params"),
        "accumulator": memory("acc")
        + count("acc_rmw", 0) * (e("acc.read") + config.cols * e("acc.add")),
        "output_vector": count("output_stage_lanes", 0) * e("output_stage.lane")
        + count("vector_lanes", 0) * e("vector.lane")
        + count("vector_mul_lanes", 0) * e("vector.mul_lane")
        + count("lut_lookups", 0) * e("lut.lookup") + count("lut_writes", 0) * e("lut.write"),
        "external": beat_bits * (count("ext_read_beats", 0) * e("dram.read_bit")
                                 + count("ext_write_beats", 0) * e("dram.write_bit")),
    }
