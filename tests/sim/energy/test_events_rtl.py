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

from ...support.random_programs import random_program


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
           "acc_rmw", "st_spad_in_reads")  # fmt: skip


def _monitor(counts: dict[str, int]) -> type:
    """Return a Simulator that also counts, every cycle, the unit port strobes of the on-chip
    events (docs/energy.md, "RTL counters")."""
    from amaranth.sim import Simulator

    class Monitoring(Simulator):
        def __init__(self, dut: object) -> None:
            super().__init__(dut)
            ld, st, acc = (_Units.made[n] for n in ("load", "store", "acc"))
            strobes = {
                "spad_in_writes": ld.spad_in.en, "spad_wt_writes": ld.spad_wt.en,
                "params_writes": ld.params.en,
                "acc_reads": st.acc_read.req.valid & st.acc_read.req.ready,
                "acc_writes": acc.i_write.valid,
                "acc_rmw": acc.i_write.valid & acc.i_write.payload.accumulate,
                "st_spad_in_reads": st.spad_read.en,
            }  # fmt: skip

            async def monitor(ctx: Any) -> None:
                async for _, _, *values in ctx.tick().sample(*strobes.values()):
                    for name, value in zip(strobes, values, strict=True):
                        counts[name] += int(value)

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
    """LOAD's row writes, the STORE unit's accumulator and spad_in reads and the accumulator's
    (accumulating) writes, counted at the units' ports in the RTL."""
    from systolic.hdl import accelerator

    for name, attribute in (("load", "LoadUnit"), ("store", "StoreUnit"), ("acc", "Accumulator")):
        monkeypatch.setattr(accelerator, attribute,
                            _recording(getattr(accelerator, attribute), name))  # fmt: skip
    counts = dict.fromkeys(ON_CHIP, 0)
    monkeypatch.setattr(pysim_driver, "Simulator", _monitor(counts))
    case = random_program(config, np.random.default_rng(seed), layers=2, activation=True)
    run_program(case.program, case.memory, backend="rtl", watchdog=200_000)
    counted = program_events(case.program.instructions, config)
    events = sum_events(counted)
    store_unit = {"COPY", "POOL", "ADD", "TABLE"}
    st_reads = sum(e.get("spad_in_reads", 0) for i, e in zip(case.program.instructions, counted,
                                                            strict=True)
                   if i.MNEMONIC in store_unit)  # fmt: skip
    expected = {name: events[name] for name in ON_CHIP[:-1]} | {"st_spad_in_reads": st_reads}
    assert counts == expected
    assert all(counts[name] > 0 for name in ("spad_in_writes", "acc_writes", "acc_reads"))
