"""The events equal what the RTL does, on random programs and whole models run on the Amaranth
accelerator (`backend="rtl"`): every counter of the accelerator's `events` ports
(`systolic.hdl.event_counters.RTL_EVENTS`, every event of the model, read into
`RunResult.events`) equals the cycle model's `program_events` summed (docs/energy.md, "RTL
counters")."""

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from systolic.config import ArrayConfig, Dataflow
from systolic.hdl.event_counters import RTL_EVENTS
from systolic.sim.energy.events import EVENTS, program_events, sum_events
from systolic.sim.result import RunResult
from systolic.sim.run.backends import run_program

from ...support.random_programs import SyntheticProgram, random_program

MODELS = Path(__file__).resolve().parents[2] / "models"


def _model_counts(instructions: Any, config: ArrayConfig) -> dict[str, int]:
    events = sum_events(program_events(instructions, config))
    return {name: events[name] for name in RTL_EVENTS}


def _assert_counters_equal(case: SyntheticProgram, config: ArrayConfig) -> RunResult:
    result = run_program(case.program, case.memory, backend="rtl", watchdog=400_000)
    expected = _model_counts(case.program.instructions, config)
    assert dict(result.events) == expected
    assert dict(run_program(case.program, case.memory, backend="model").events) == expected
    return result


SMALL = [
    (ArrayConfig(rows=2, cols=2, spad_kib=4, acc_kib=1, bus_bytes=8, mem_latency=3), 1),
    (ArrayConfig(rows=2, cols=3, dataflow=Dataflow.OS, spad_kib=4, acc_kib=1, bus_bytes=4,
                 mem_latency=1), 2),
    (ArrayConfig(rows=4, cols=4, spad_kib=8, acc_kib=2, bus_bytes=8, mem_latency=0), 3),
    (ArrayConfig(rows=4, cols=4, dataflow=Dataflow.OS, spad_kib=8, acc_kib=2, bus_bytes=16,
                 mem_latency=2), 4),
]  # fmt: skip


LANE_EVENTS = ("output_stage_lanes", "vector_lanes", "vector_mul_lanes", "lut_lookups",
               "lut_writes")
"""The STORE unit's lane events (output stage, vector unit, tables)."""


def test_every_event_is_counted_in_the_rtl() -> None:
    assert set(RTL_EVENTS) == set(EVENTS)


LANE_SEEDS = (82, 265, 595, 176)
"""Per configuration of SMALL, a seed whose random program (activation and softmax) has
SOFTMAX, ADD mul, a `lut` lookup and a STORE through the output stage."""


# The 2x2 and 2x3 configurations by default; the 4x4 ones (~4 s each idle) in the slow set.
@pytest.mark.parametrize(("config", "seed"), [
    pytest.param(c, s, marks=pytest.mark.slow) if c.rows == 4 else (c, s)
    for (c, _), s in zip(SMALL, LANE_SEEDS)
], ids=lambda v: f"{v.shape_text}-{v.dataflow.value}" if
                         isinstance(v, ArrayConfig) else str(v))  # fmt: skip
def test_rtl_event_counters_equal_the_model(config: ArrayConfig, seed: int) -> None:
    """Every counter, the STORE unit's lane events among them, equals the model's."""
    case = random_program(config, np.random.default_rng(seed), layers=3, activation=True,
                          softmax=True)
    result = _assert_counters_equal(case, config)
    used = ("mac_slots", "macs", "spad_in_reads", "spad_in_writes", "spad_wt_writes",
            "acc_writes", "acc_reads", "ext_read_bytes", "ext_write_bytes", *LANE_EVENTS)
    assert all(result.events[name] > 0 for name in used), result.events
    assert any(getattr(i, "lut", False) for i in case.program.instructions)


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(10, 16))
@pytest.mark.parametrize("config", [config for config, _ in SMALL],
                         ids=lambda c: f"{c.shape_text}-{c.dataflow.value}")  # fmt: skip
def test_rtl_event_counters_equal_the_model_on_more_programs(config: ArrayConfig,
                                                             seed: int) -> None:
    case = random_program(config, np.random.default_rng(seed), layers=3, activation=True,
                          softmax=seed % 2 == 1)
    _assert_counters_equal(case, config)


@pytest.mark.slow
@pytest.mark.parametrize("config", [ArrayConfig(rows=4, cols=4),
                                    ArrayConfig(rows=4, cols=4, dataflow=Dataflow.OS)],
                         ids=lambda c: f"{c.shape_text}-{c.dataflow.value}")  # fmt: skip
def test_rtl_event_counters_equal_the_model_on_lenet(config: ArrayConfig) -> None:
    """Every accelerator run of the compiled LeNet (QDQ) counts what the model counts."""
    from systolic.mapper.lowering import compile_model
    from systolic.simulation.prepare import prepare_model
    from systolic.simulation.runner import run_compiled

    compiled = compile_model(prepare_model(MODELS / "lenet_qdq.onnx").integer, config)
    (placement,) = compiled.inputs
    value = np.random.default_rng(0).standard_normal(placement.shape).astype(np.float32)
    compared = []

    def run(program: Any, memory: bytearray) -> RunResult:
        result = run_program(program, memory, backend="rtl")
        assert dict(result.events) == _model_counts(program.instructions, config)
        compared.append(result.events["macs"])
        return result

    run_compiled(compiled, {placement.name: value}, run)
    assert compared and sum(compared) > 0


def test_rtl_event_counters_equal_the_model_with_both_dataflows() -> None:
    """`Dataflow.BOTH`: a program with GEMMs of either dataflow; the EXECUTE events come from
    the sequencer of the instruction's mode."""
    config = ArrayConfig(rows=2, cols=3, dataflow=Dataflow.BOTH, spad_kib=4, acc_kib=1,
                         bus_bytes=8, mem_latency=1)
    rng = np.random.default_rng(7)
    while True:
        case = random_program(config, rng, layers=3)
        kinds = {type(i).__name__ for i in case.program.instructions}
        if {"Compute", "ComputeOS"} <= kinds and len(case.program.instructions) < 120:
            break
    result = _assert_counters_equal(case, config)
    assert result.events["macs"] > 0
