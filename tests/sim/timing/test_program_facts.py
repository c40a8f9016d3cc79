"""The cycle model's per-program facts against the instructions' own footprints and costs."""

import numpy as np
import pytest

from systolic.config import ArrayConfig, Dataflow
from systolic.isa.instructions import Compute, ComputeOS, Load, Preload
from systolic.sim.timing.dispatch_model import MEMORY_ID
from systolic.sim.timing.load_timing import load_beats
from systolic.sim.timing.program_facts import (
    ALL_MEMORIES,
    EX,
    K_COMPUTE,
    K_COMPUTE_OS,
    K_LD,
    K_PRELOAD,
    K_ST,
    LD,
    MEMORY_SETS,
    SHARED,
    ST,
    Describer,
    ProgramFacts,
    overlap,
)
from systolic.sim.timing.store_timing import duration

from ...support.random_programs import random_program, synthetic_program

_KIND = {Load: K_LD, Compute: K_COMPUTE, Preload: K_PRELOAD, ComputeOS: K_COMPUTE_OS}


def program_and_config(seed: int, activation: bool = False,
                       softmax: bool = False) -> tuple[ArrayConfig, list]:
    rng = np.random.default_rng(seed)
    config = ArrayConfig(
        rows=int(rng.integers(1, 9)), cols=int(rng.integers(1, 9)),
        dataflow=(Dataflow.WS, Dataflow.OS)[seed % 2], bus_bytes=int(2 ** rng.integers(0, 7)))
    if seed < 2:  # long programs with every instruction class
        return config, list(synthetic_program(config, 3000, seed=seed, scale=2,
                                              activation=activation,
                                              softmax=softmax).instructions)
    return config, list(random_program(config, rng, layers=3, activation=activation,
                                       softmax=softmax).program.instructions)


@pytest.mark.parametrize("seed", range(12))
def test_facts_equal_footprints_and_costs(seed: int) -> None:
    assert_facts_are_the_instructions(*program_and_config(seed))


@pytest.mark.parametrize("native", ["1", "0"])
@pytest.mark.parametrize("seed", range(6))
def test_facts_of_activation_programs(seed: int, native: str, monkeypatch) -> None:
    # TABLE (no external range, a cost of the configuration), lut and mul (longer K),
    # b_broadcast (a one-row footprint)
    monkeypatch.setenv("SYSTOLIC_NATIVE", native)
    config, program = program_and_config(100 + seed, activation=True)
    assert_facts_are_the_instructions(config, program)


@pytest.mark.parametrize("native", ["1", "0"])
@pytest.mark.parametrize("seed", range(6))
def test_facts_of_softmax_programs(seed: int, native: str, monkeypatch) -> None:
    # SOFTMAX (a spad_in range of m * ceil(length / dim) rows, a sum over rows), TABLE wide
    # (ceil(512 / dim) rows), STORE raw (4 * n-byte rows)
    monkeypatch.setenv("SYSTOLIC_NATIVE", native)
    config, program = program_and_config(200 + seed, activation=True, softmax=True)
    assert any(type(i).__name__ == "Softmax" or getattr(i, "raw", False) for i in program)
    assert_facts_are_the_instructions(config, program)


def assert_facts_are_the_instructions(config: ArrayConfig, program: list) -> None:
    """The ProgramFacts of `program` (HALT last) equal its instructions' own footprints,
    kinds, units and costs."""
    body = program[:-1]
    facts = ProgramFacts(Describer(config), body, config.dataflow is Dataflow.WS)
    for i, instr in enumerate(body):
        ranges = tuple((MEMORY_ID[a.memory], a.first, a.last, a.write)
                       for a in instr.footprint(config))
        assert sorted(facts.footprint(i)) == sorted(ranges)
        mask = 0
        for mem, _, _, write in ranges:
            mask |= (1 << mem) | (write << (8 + mem))
        shared = len({mem for mem, _, _, _ in ranges}) < len(ranges)
        assert facts.masks[i] == mask | (SHARED if shared else 0)
        kind = _KIND.get(type(instr), K_ST)
        assert facts.kinds[i] == kind
        assert facts.units[i] == {K_LD: LD, K_ST: ST}.get(kind, EX)
        if kind == K_LD:
            assert facts.args[i] == load_beats(instr, config)
        elif kind == K_ST:
            assert facts.args[i] == duration(instr, config)
        elif kind in (K_COMPUTE, K_COMPUTE_OS):
            assert facts.args[i] == instr.m
        if kind == K_COMPUTE_OS:
            assert facts.ks[i] == instr.k


def test_span_check_equals_the_range_overlap() -> None:
    # The main loop's test for two instructions without SHARED: the memories where one writes
    # and the other has a range, then their rows there.
    config, program = program_and_config(0)
    body = program[:-1]
    facts = ProgramFacts(Describer(config), body, True)
    rng = np.random.default_rng(5)
    plain = [i for i in range(len(body)) if not facts.masks[i] & SHARED]
    hits = 0
    for a, b in rng.choice(plain, size=(4000, 2)).tolist():
        ma, mb = facts.masks[a], facts.masks[b]
        common = ((ma >> 8) & mb | ma & (mb >> 8)) & ALL_MEMORIES
        firsts, lasts = facts.firsts, facts.lasts
        found = any(firsts[m][a] <= lasts[m][b] and firsts[m][b] <= lasts[m][a]
                    for m in MEMORY_SETS[common])
        assert found == overlap(facts.footprint(a), facts.footprint(b))
        hits += found
    assert 0 < hits < 4000


def test_execute_instructions_of_the_other_dataflow_are_refused() -> None:
    config = ArrayConfig(rows=2, cols=2, dataflow=Dataflow.OS)
    with pytest.raises(ValueError, match="PRELOAD is not an EXECUTE instruction of a os array"):
        ProgramFacts(Describer(config), [Preload(row=0, k=1, n=1)], False)
