"""The events equal what the RTL does, on random programs and whole models run on the Amaranth
accelerator (`backend="rtl"`): every counter of the accelerator's `events` ports
(`systolic.hdl.event_counters.RTL_EVENTS`, read into `RunResult.events`) equals the cycle
model's `program_events` summed; the STORE unit's lane events that have no counter yet
(`PENDING_EVENTS`: output stage, vector unit and activation table lanes) are counted at the
units' ports by a process beside the driver's testbench (docs/energy.md, "RTL counters")."""

from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import pytest

from systolic.config import ArrayConfig, Dataflow
from systolic.hdl.event_counters import RTL_EVENTS
from systolic.sim.energy.events import program_events, sum_events
from systolic.sim.result import RunResult
from systolic.sim.rtl import pysim_driver
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
    return result


SMALL = [
    (ArrayConfig(rows=2, cols=2, spad_kib=4, acc_kib=1, bus_bytes=8, mem_latency=3), 1),
    (ArrayConfig(rows=2, cols=3, dataflow=Dataflow.OS, spad_kib=4, acc_kib=1, bus_bytes=4,
                 mem_latency=1), 2),
    (ArrayConfig(rows=4, cols=4, spad_kib=8, acc_kib=2, bus_bytes=8, mem_latency=0), 3),
    (ArrayConfig(rows=4, cols=4, dataflow=Dataflow.OS, spad_kib=8, acc_kib=2, bus_bytes=16,
                 mem_latency=2), 4),
]  # fmt: skip


@pytest.mark.parametrize(("config", "seed"), SMALL,
                         ids=lambda v: f"{v.shape_text}-{v.dataflow.value}" if
                         isinstance(v, ArrayConfig) else str(v))  # fmt: skip
def test_rtl_event_counters_equal_the_model(config: ArrayConfig, seed: int) -> None:
    case = random_program(config, np.random.default_rng(seed), layers=2, activation=True)
    result = _assert_counters_equal(case, config)
    used = ("mac_slots", "macs", "spad_in_reads", "spad_in_writes", "spad_wt_writes",
            "acc_writes", "acc_reads", "ext_read_bytes", "ext_write_bytes")  # fmt: skip
    assert all(result.events[name] > 0 for name in used), result.events


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(10, 16))
@pytest.mark.parametrize("config", [config for config, _ in SMALL],
                         ids=lambda c: f"{c.shape_text}-{c.dataflow.value}")  # fmt: skip
def test_rtl_event_counters_equal_the_model_on_more_programs(config: ArrayConfig,
                                                             seed: int) -> None:
    case = random_program(config, np.random.default_rng(seed), layers=3, activation=True)
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


class _Units:
    """The unit instances the accelerator elaborates in one run (recorded by subclasses)."""

    made: ClassVar[dict[str, Any]] = {}


def _recording(cls: type, name: str) -> type:
    class Recording(cls):  # type: ignore[misc, valid-type]
        def __init__(self, *args: object, **kwargs: object) -> None:
            super().__init__(*args, **kwargs)
            _Units.made[name] = self

    return Recording


ON_CHIP = ("output_stage_lanes", "vector_lanes", "lut_lookups", "lut_writes")
"""The STORE unit's lane events without an RTL counter yet (`vector_mul_lanes` is inside the
vector unit: checked against the fields only)."""
RECORDED = (  # (name, module of the class the accelerator's elaboration uses, class)
    ("stage", "store_unit", "OutputStage"), ("vector", "store_unit", "VectorUnit"),
    ("table", "store_unit", "ActivationTable"),
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
    stage, vector, table = units["stage"], units["vector"], units["table"]
    dim = config.dim

    def entries(v: tuple[int, ...]) -> int:
        return min(dim, 256 - v[1] * dim) if v[0] else 0

    return {
        "output_stage_lanes": ((stage.i_acc.valid & stage.i_acc.ready,),
                               lambda v: v[0] * config.cols),
        "vector_lanes": ((vector.i_elem.valid & vector.i_elem.ready,), lambda v: v[0] * dim),
        "lut_lookups": ((table.i_row.valid,), lambda v: v[0] * dim),
        "lut_writes": ((table.i_load.valid, table.i_load.payload.row), entries),
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
def test_store_unit_lanes_equal_the_unit_port_strobes(
    config: ArrayConfig, seed: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The output stage's, vector unit's and activation table's lanes and table entries,
    counted at the units' ports (no RTL counter yet), and the RTL counters of the same run."""
    import importlib

    for name, module, attribute in RECORDED:
        where = importlib.import_module(f"systolic.hdl.{module}")
        monkeypatch.setattr(where, attribute, _recording(getattr(where, attribute), name))
    counts = dict.fromkeys(ON_CHIP, 0)
    monkeypatch.setattr(pysim_driver, "Simulator", _monitor(config, counts))
    case = _case_with_every_unit(config, seed)
    result = run_program(case.program, case.memory, backend="rtl", watchdog=200_000)
    events = sum_events(program_events(case.program.instructions, config))
    assert counts == {name: events[name] for name in ON_CHIP}
    assert all(counts[name] > 0 for name in ON_CHIP), counts
    assert dict(result.events) == {name: events[name] for name in RTL_EVENTS}
