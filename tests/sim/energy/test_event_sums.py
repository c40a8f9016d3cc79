"""The vectorised per-group sums equal `program_events` summed group by group, on random
programs with random groups, run starts and known LOAD beats, with the words given or encoded
by `group_event_sums`."""

import itertools

import numpy as np
import pytest

from systolic.config import ArrayConfig, Dataflow
from systolic.isa.encode_batch import encode_words
from systolic.isa.instructions import Compute, Halt, Load, Preload
from systolic.sim.energy.event_sums import group_event_sums
from systolic.sim.energy.events import program_events, sum_events
from systolic.sim.timing.load_timing import load_beats

from ...support.random_programs import random_program

CONFIGS = [
    ArrayConfig(rows=4, cols=4, spad_kib=16, acc_kib=8, bus_bytes=8),
    ArrayConfig(rows=3, cols=5, dataflow=Dataflow.OS, spad_kib=16, acc_kib=8, bus_bytes=4),
]


def _expected(instructions, config, groups, count, starts):  # type: ignore[no-untyped-def]
    """Sum `program_events` per group, each run (from a start) counted from reset."""
    bounds = [*sorted({0, *starts}), len(instructions)]
    counts = []
    for first, end in itertools.pairwise(bounds):
        counts += program_events(instructions[first:end], config)
    return [sum_events(c for c, g in zip(counts, groups, strict=True) if g == group)
            for group in range(count)]  # fmt: skip


@pytest.mark.parametrize("config", CONFIGS, ids=["ws", "os"])
def test_group_sums_equal_the_per_instruction_counts(config: ArrayConfig) -> None:
    for seed in range(4):
        rng = np.random.default_rng(seed)
        instructions = random_program(config, rng, layers=4, activation=True,
                                      softmax=True).program.instructions  # fmt: skip
        count = 5
        groups = rng.integers(-1, count, size=len(instructions))
        starts = sorted(rng.choice(len(instructions), size=3, replace=False).tolist())
        beats = [load_beats(i, config) if isinstance(i, Load) else 0 for i in instructions]
        expected = _expected(instructions, config, groups, count, starts)
        assert group_event_sums(instructions, config, groups, count, starts) == expected
        assert group_event_sums(instructions, config, groups, count, starts, beats) == expected
        words = encode_words(instructions)
        assert group_event_sums(instructions, config, groups, count, starts, beats,
                                words) == expected  # fmt: skip


def test_weights_reset_at_halt_and_at_a_run_start() -> None:
    config = ArrayConfig(rows=4, cols=4, spad_kib=16, acc_kib=8)
    compute = Compute(in_row=0, m=2, acc_row=0)
    program = [Preload(row=0, k=2, n=3), compute, Halt(), compute, Preload(row=0, k=1, n=1),
               compute, compute]  # fmt: skip
    groups = np.arange(len(program))
    sums = group_event_sums(program, config, groups, len(program), starts=[6])
    assert [s["macs"] for s in sums] == [0, 12, 0, 0, 0, 2, 0]
