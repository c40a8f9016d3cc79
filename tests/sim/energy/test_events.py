"""The event counts of `systolic.sim.energy.events` on random programs: external bytes and
beats equal the instructions' segments, on-chip accesses follow the fields as the RTL
performs them, and weight-stationary COMPUTEs count the active PRELOAD's weights."""

import numpy as np
import pytest

from systolic.config import ArrayConfig, Dataflow
from systolic.isa.instructions import (
    INSTRUCTION_TYPES,
    Compute,
    Halt,
    LayerNorm,
    Load,
    LoadTarget,
    Preload,
    Softmax,
)
from systolic.isa.patterns import Segment, total_beats
from systolic.sim.energy.events import (
    EVENTS,
    KNOWN,
    ActiveWeights,
    instruction_events,
    program_events,
    sum_events,
)
from systolic.sim.timing.load_timing import load_beats
from systolic.sim.timing.native_facts import external_facts
from systolic.sim.timing.store_timing import reader_cycles

from ...support.random_programs import random_program

CONFIGS = [
    ArrayConfig(rows=4, cols=4, spad_kib=16, acc_kib=8, bus_bytes=8),
    ArrayConfig(rows=3, cols=5, spad_kib=16, acc_kib=8, bus_bytes=16),
    ArrayConfig(rows=4, cols=4, dataflow=Dataflow.OS, spad_kib=16, acc_kib=8, bus_bytes=4),
    ArrayConfig(rows=2, cols=6, input_width=16, weight_width=16, acc_width=48, spad_kib=16,
                acc_kib=8, bus_bytes=32),
]  # fmt: skip
WRITERS = ("STORE", "COPY", "POOL", "ADD")


def _programs(activation: bool):  # type: ignore[no-untyped-def]
    for index, config in enumerate(CONFIGS):
        for seed in range(3):
            rng = np.random.default_rng(100 * index + seed)
            yield config, random_program(config, rng, layers=3, activation=activation,
                                         softmax=activation).program


@pytest.mark.parametrize("activation", [False, True])
def test_external_bytes_and_beats_are_the_segments(activation: bool) -> None:
    for config, program in _programs(activation):
        counts = program_events(program.instructions, config)
        for instr, events in zip(program.instructions, counts, strict=True):
            segments = instr.segments(config)
            size = sum(segment.length for segment in segments)
            if isinstance(instr, Softmax | LayerNorm):  # each row's chunks of dim on their own
                segments = [Segment(row.address + k, min(config.dim, row.length - k))
                            for row in segments for k in range(0, row.length, config.dim)]
            beats = total_beats(segments, config.bus_bytes)
            direction = "read" if isinstance(instr, Load) else "write"
            assert events.get(f"ext_{direction}_bytes", 0) == size, instr
            assert events.get(f"ext_{direction}_beats", 0) == beats, instr
            other = "write" if direction == "read" else "read"
            assert f"ext_{other}_bytes" not in events


@pytest.mark.parametrize("activation", [False, True])
def test_on_chip_accesses_follow_the_fields(activation: bool) -> None:
    seen = set()
    for config, program in _programs(activation):
        counts = program_events(program.instructions, config)
        for instr, events in zip(program.instructions, counts, strict=True):
            name = instr.MNEMONIC
            seen.add(name)
            if isinstance(instr, Load):
                target = {LoadTarget.SPAD_IN: "spad_in", LoadTarget.SPAD_WT: "spad_wt",
                          LoadTarget.PARAMS: "params"}[instr.mem]  # fmt: skip
                assert events[f"{target}_writes"] == instr.count
            elif name in ("COPY", "POOL", "ADD"):
                assert events["spad_in_reads"] == sum(reader_cycles(instr))
            elif name == "STORE":
                assert (events["acc_reads"], events["params_reads"]) == (instr.m, 1)
                lanes = 0 if instr.raw else instr.m * config.cols
                assert events.get("output_stage_lanes", 0) == lanes
                assert events.get("lut_lookups", 0) == (instr.m * config.dim if instr.lut else 0)
            if name == "COPY":
                assert events.get("lut_lookups", 0) == (instr.m * config.dim if instr.lut else 0)
            elif name == "SOFTMAX":
                chunks = -(-instr.length // config.dim)
                assert events["spad_in_reads"] == 3 * instr.m * chunks
                assert events["lut_lookups"] == 2 * instr.m * chunks * config.dim
            elif name == "TABLE":
                size = 512 if instr.wide else 256
                assert events == {"spad_in_reads": -(-size // config.dim), "lut_writes": size}
            elif name == "COMPUTE.OS":
                chunks = -(-instr.k // config.dim)
                assert events["mac_slots"] == config.pes * instr.k
                assert events["macs"] == instr.m * instr.n * instr.k
                assert events["spad_in_reads"] == instr.m * chunks
                assert events["spad_wt_reads"] == instr.k
            if name in ("COMPUTE", "COMPUTE.OS"):
                assert events["acc_writes"] == instr.m
                assert events.get("acc_rmw", 0) == (instr.m if instr.accumulate else 0)
            assert set(events) <= set(EVENTS)
    assert {"LOAD", "STORE", "COPY", "POOL", "ADD", "HALT"} <= seen
    if activation:
        assert {"TABLE", "SOFTMAX"} <= seen


def test_layernorm_reads_each_chunk_twice_and_multiplies_every_lane_read() -> None:
    """docs/isa.md, "LAYERNORM": spad_in_reads 2 C per row, vector_lanes and vector_mul_lanes
    dim per chunk read, no table lookups; its writes as SOFTMAX's (test above)."""
    seen = 0
    for index, config in enumerate(CONFIGS):
        for seed in range(4):
            rng = np.random.default_rng(500 + 10 * index + seed)
            program = random_program(config, rng, layers=3, activation=True,
                                     layernorm=True).program
            counts = program_events(program.instructions, config)
            for instr, events in zip(program.instructions, counts, strict=True):
                if not isinstance(instr, LayerNorm):
                    continue
                seen += 1
                reads = 2 * instr.m * -(-instr.length // config.dim)
                lanes = reads * config.dim
                assert {k: v for k, v in events.items() if not k.startswith("ext_")} == {
                    "spad_in_reads": reads, "vector_lanes": lanes, "vector_mul_lanes": lanes}
                segments = [Segment(row.address + k, min(config.dim, row.length - k))
                            for row in instr.segments(config)
                            for k in range(0, row.length, config.dim)]
                assert events["ext_write_beats"] == total_beats(segments, config.bus_bytes)
                assert events["ext_write_bytes"] == instr.m * instr.length * config.operand_bytes
    assert seen >= 3


def test_every_instruction_has_its_events() -> None:
    assert {cls.MNEMONIC for cls in INSTRUCTION_TYPES} == set(KNOWN)




def test_weight_stationary_macs_use_the_active_preload() -> None:
    config = ArrayConfig(rows=4, cols=4, spad_kib=16, acc_kib=8)
    compute = Compute(in_row=0, m=10, acc_row=0, accumulate=True)
    program = [compute, Preload(row=0, k=3, n=2), compute, compute,
               Preload(row=0, k=4, n=4), Halt(), compute]  # fmt: skip
    macs = [events.get("macs", 0) for events in program_events(program, config)]
    assert macs == [0, 0, 60, 60, 0, 0, 0]
    assert instruction_events(compute, config, ActiveWeights(4, 4))["macs"] == 160
    events = instruction_events(compute, config, ActiveWeights(2, 3))
    assert events == {"mac_slots": 160, "macs": 60, "spad_in_reads": 10, "acc_writes": 10,
                      "acc_rmw": 10}  # fmt: skip
    assert instruction_events(Preload(row=0, k=3, n=2), config) == {"spad_wt_reads": 3}


def test_sum_events_names_every_event() -> None:
    total = sum_events([{"macs": 2}, {"macs": 3, "acc_rmw": 1}, {}])
    assert list(total) == list(EVENTS)
    assert total["macs"] == 5 and total["acc_rmw"] == 1 and total["lut_writes"] == 0


def test_known_load_beats_give_the_same_counts() -> None:
    """The beats a caller passes (the Python `load_beats`, or the native `external_facts`
    when the engine runs) give exactly the counts computed from the segments."""
    for config, program in _programs(True):
        expected = program_events(program.instructions, config)
        python = [load_beats(i, config) if isinstance(i, Load) else -1
                  for i in program.instructions]  # fmt: skip
        assert program_events(program.instructions, config, python) == expected
        facts = external_facts(program.words, config)
        if facts is not None:
            assert program_events(program.instructions, config, facts[0]) == expected
