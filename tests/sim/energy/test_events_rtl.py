"""The events equal what the RTL does, on random programs run on the Amaranth accelerator
(`backend="rtl"`): the external read requests, write beats and their strobed bytes (counted
by the external memory the pysim driver drives), and the on-chip accesses the units' ports
strobe (LOAD's row writes, the STORE unit's accumulator and spad_in reads, the accumulator's
writes), counted by a process beside the driver's testbench (docs/energy.md, "RTL counters").
The EXECUTE unit's scratchpad reads are not counted here: its read enables are also high in
idle cycles (docs/energy.md, "Idle enables")."""

from typing import Any, ClassVar

import numpy as np
import pytest

from systolic.config import ArrayConfig, Dataflow
from systolic.sim.energy.events import program_events, sum_events
from systolic.sim.rtl import pysim_driver
from systolic.sim.rtl.external_memory import ExternalMemory
from systolic.sim.run.backends import run_program

from ...support.random_programs import SyntheticProgram, random_program


class CountingMemory(ExternalMemory):
    """The driver's external memory, also summing the bytes every write beat's strobe enables
    (`reads` and `writes` count requests and beats already)."""

    made: ClassVar[list["CountingMemory"]] = []

    def __init__(self, image: bytearray, *, bus_bytes: int, latency: int) -> None:
        super().__init__(image, bus_bytes=bus_bytes, latency=latency)
        self.strobed = 0
        CountingMemory.made.append(self)

    def write_beat(self, address: int, data: int, strobe: int) -> None:
        self.strobed += strobe.bit_count()
        super().write_beat(address, data, strobe)


@pytest.mark.parametrize(("config", "seed"), [
    (ArrayConfig(rows=2, cols=2, spad_kib=4, acc_kib=1, bus_bytes=8, mem_latency=3), 1),
    (ArrayConfig(rows=2, cols=3, dataflow=Dataflow.OS, spad_kib=4, acc_kib=1, bus_bytes=4,
                 mem_latency=1), 2),
])  # fmt: skip
def test_external_events_equal_the_rtl_ports(
    config: ArrayConfig, seed: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(pysim_driver, "ExternalMemory", CountingMemory)
    CountingMemory.made.clear()
    case = random_program(config, np.random.default_rng(seed), layers=2, activation=True)
    run_program(case.program, case.memory, backend="rtl", watchdog=200_000)
    (memory,) = CountingMemory.made
    events = sum_events(program_events(case.program.instructions, config))
    assert events["ext_read_beats"] == memory.reads > 0
    assert events["ext_write_beats"] == memory.writes > 0
    assert events["ext_write_bytes"] == memory.strobed


class _Units:
    """The unit instances the accelerator elaborates in one run (recorded by subclasses)."""

    made: ClassVar[dict[str, Any]] = {}


def _recording(cls: type, name: str) -> type:
    class Recording(cls):  # type: ignore[misc, valid-type]
        def __init__(self, *args: object, **kwargs: object) -> None:
            super().__init__(*args, **kwargs)
            _Units.made[name] = self

    return Recording


ON_CHIP = ("spad_in_writes", "spad_wt_writes", "params_writes", "acc_reads", "acc_writes",
           "acc_rmw", "st_spad_in_reads", "output_stage_lanes", "vector_lanes", "lut_lookups",
           "lut_writes", "array_beats")  # fmt: skip
RECORDED = (  # (name, module of the class the accelerator's elaboration uses, class)
    ("load", "accelerator", "LoadUnit"), ("store", "accelerator", "StoreUnit"),
    ("acc", "accelerator", "Accumulator"), ("stage", "store_unit", "OutputStage"),
    ("vector", "store_unit", "VectorUnit"), ("table", "store_unit", "ActivationTable"),
    ("array", "execute_unit", "SystolicArray"),
)  # fmt: skip


def _case_with_every_unit(config: ArrayConfig, seed: int) -> SyntheticProgram:
    """Return the first small random program (seeds from `seed`) that uses the output stage,
    the vector unit, a TABLE and a `lut` lookup."""
    for attempt in range(seed, seed + 300):
        case = random_program(config, np.random.default_rng(attempt), layers=3, activation=True)
        instrs = case.program.instructions
        names = {i.MNEMONIC for i in instrs}
        lut = any(getattr(i, "lut", False) for i in instrs)
        if len(instrs) <= 80 and lut and {"STORE", "TABLE"} <= names and names & {"POOL", "ADD"}:
            return case
    raise AssertionError(f"no such program from seed {seed}")


def _strobes(config: ArrayConfig) -> dict[str, tuple[Any, Any]]:
    """Return, per counted event, (the signals sampled each cycle, the increment from their
    values) at the recorded units' ports (docs/energy.md, "RTL counters")."""
    units = _Units.made
    ld, st, acc, array = units["load"], units["store"], units["acc"], units["array"]
    stage, vector, table = units["stage"], units["vector"], units["table"]
    dim = config.dim
    def one(v: tuple[int, ...]) -> int:
        return int(v[0])

    def entries(v: tuple[int, ...]) -> int:
        return min(dim, 256 - v[1] * dim) if v[0] else 0

    return {
        "spad_in_writes": ((ld.spad_in.en,), one), "spad_wt_writes": ((ld.spad_wt.en,), one),
        "params_writes": ((ld.params.en,), one),
        "acc_reads": ((st.acc_read.req.valid & st.acc_read.req.ready,), one),
        "acc_writes": ((acc.i_write.valid,), one),
        "acc_rmw": ((acc.i_write.valid & acc.i_write.payload.accumulate,), one),
        "st_spad_in_reads": ((st.spad_read.en,), one),
        "output_stage_lanes": ((stage.i_acc.valid & stage.i_acc.ready,),
                               lambda v: v[0] * config.cols),
        "vector_lanes": ((vector.i_elem.valid & vector.i_elem.ready,), lambda v: v[0] * dim),
        "lut_lookups": ((table.i_row.valid,), lambda v: v[0] * dim),
        "lut_writes": ((table.i_load.valid, table.i_load.payload.row), entries),
        "array_beats": ((array.i_a.valid & array.i_a.ready,), one),
    }  # fmt: skip


def _monitor(config: ArrayConfig, counts: dict[str, int]) -> type:
    """Return a Simulator that also counts, every cycle, the unit port strobes of `_strobes`."""
    from amaranth.sim import Simulator

    class Monitoring(Simulator):
        def __init__(self, dut: object) -> None:
            super().__init__(dut)
            strobes = _strobes(config)
            signals = [signal for group, _ in strobes.values() for signal in group]

            async def monitor(ctx: Any) -> None:
                async for _, _, *values in ctx.tick().sample(*signals):
                    at = 0
                    for name, (group, increment) in strobes.items():
                        counts[name] += increment(tuple(values[at : at + len(group)]))
                        at += len(group)

            self.add_process(monitor)

    return Monitoring


@pytest.mark.parametrize(("config", "seed"), [
    (ArrayConfig(rows=2, cols=2, spad_kib=4, acc_kib=1, bus_bytes=8, mem_latency=2), 3),
    (ArrayConfig(rows=3, cols=2, dataflow=Dataflow.OS, spad_kib=4, acc_kib=1, bus_bytes=4,
                 mem_latency=0), 4),
])  # fmt: skip
def test_on_chip_events_equal_the_unit_port_strobes(
    config: ArrayConfig, seed: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """LOAD's row writes, the STORE unit's accumulator and spad_in reads, the accumulator's
    (accumulating) writes, the output stage's, vector unit's and activation table's lanes,
    and (output-stationary) the array's columns, counted at the units' ports in the RTL."""
    import importlib

    for name, module, attribute in RECORDED:
        where = importlib.import_module(f"systolic.hdl.{module}")
        monkeypatch.setattr(where, attribute, _recording(getattr(where, attribute), name))
    counts = dict.fromkeys(ON_CHIP, 0)
    monkeypatch.setattr(pysim_driver, "Simulator", _monitor(config, counts))
    case = _case_with_every_unit(config, seed)
    run_program(case.program, case.memory, backend="rtl", watchdog=200_000)
    instructions = case.program.instructions
    counted = program_events(instructions, config)
    events = sum_events(counted)
    st_reads = sum(e.get("spad_in_reads", 0) for i, e in zip(instructions, counted, strict=True)
                   if i.MNEMONIC in ("COPY", "POOL", "ADD", "TABLE"))  # fmt: skip
    expected = {name: events[name] for name in ON_CHIP if name in events}
    expected["st_spad_in_reads"] = st_reads
    if config.dataflow is Dataflow.OS:  # one array beat per column: rows x cols slots each
        expected["array_beats"] = events["mac_slots"] // config.pes
    else:  # WS beats also carry the dummy rows that close weight tiles: not an event
        counts.pop("array_beats")
    assert counts == expected
    used = ("spad_in_writes", "acc_writes", "acc_reads", "output_stage_lanes", "vector_lanes",
            "lut_lookups", "lut_writes")  # fmt: skip
    assert all(counts[name] > 0 for name in used), counts
