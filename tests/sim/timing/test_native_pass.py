"""The cycle model's C main loop (`native_pass`) against the Python specification
(`ProgramModel.python_pass`).

Both passes time the same `ProgramFacts`: every accept, issue and complete cycle, the total
and every counter must be equal, on random programs over configurations, dataflows, bus
widths, memory latencies, table and queue sizes, on programs whose EXECUTE completion merge
needs rollbacks, and on the compiled test models.
"""

import copy
from pathlib import Path

import numpy as np
import pytest

from systolic.commands.compile import integer_model
from systolic.commands.model_loading import load_user_model
from systolic.config import ArrayConfig, Dataflow
from systolic.errors import SystolicError
from systolic.mapper.lowering import compile_model
from systolic.sim.native.build import unavailable_reason
from systolic.sim.timing import program_model
from systolic.sim.timing.layer_cycles import layer_cycles
from systolic.sim.timing.native_pass import native_pass, timing_library
from systolic.sim.timing.program_facts import ProgramFacts
from systolic.sim.timing.program_model import ProgramModel
from systolic.sim.timing.program_timing import ProgramTiming

from ...support.random_programs import random_program, synthetic_program
from .test_program_model import random_config

MODELS = Path(__file__).resolve().parents[2] / "models"


@pytest.fixture(autouse=True)
def _library(monkeypatch: pytest.MonkeyPatch) -> None:
    if timing_library() is None:
        pytest.skip(f"no native timing library: {unavailable_reason('timing')}")
    # Both passes give up after this many rollbacks (a merge that does not settle): the
    # default, 10**6, costs the Python pass a minute and a half.
    monkeypatch.setattr(program_model, "MAX_ROLLBACKS", 2000)


def both_passes(config: ArrayConfig, instructions, *, table_entries: int = 16,
                queue_depth: int = 4, settles: bool = True
                ) -> tuple[ProgramTiming | None, ProgramTiming | None, ProgramFacts]:
    """Return the native and the Python timing of a program (HALT last) and its facts.

    When the native pass gives up because the completion merge does not settle, the Python
    pass must raise its error, and both timings are None (refused unless not `settles`).
    """
    model = ProgramModel(config, table_entries=table_entries, queue_depth=queue_depth)
    facts = ProgramFacts(model.describer, instructions[:-1], config.dataflow is Dataflow.WS)
    native = native_pass(config, table_entries, queue_depth, facts)
    if native is None:
        with pytest.raises(RuntimeError, match=r"^the EXECUTE completion merge did not settle$"):
            model.python_pass(facts)
        assert not settles, "the native pass gave up on a program the Python pass times"
        return None, None, facts
    return native, model.python_pass(facts), facts


def assert_same(native: ProgramTiming | None, python: ProgramTiming | None) -> None:
    assert native is not None and python is not None
    assert native.accept == python.accept
    assert native.issue == python.issue
    assert native.complete == python.complete
    assert native.total_cycles == python.total_cycles
    assert native.counters == python.counters
    assert list(native.counters) == list(python.counters)


def test_random_programs_of_both_dataflows() -> None:
    """`Dataflow.BOTH`: GEMMs of either dataflow in one program."""
    mixed = 0
    for seed in range(200):
        rng = np.random.default_rng(seed)
        config = random_config(rng, Dataflow.BOTH, largest=int(rng.choice([2, 4, 8])))
        case = random_program(config, rng, layers=int(rng.integers(1, 5)))
        kinds = {type(i).__name__ for i in case.program.instructions}
        mixed += {"Compute", "ComputeOS"} <= kinds
        native, python, _ = both_passes(config, case.program.instructions)
        assert_same(native, python)
    assert mixed > 50


def test_random_programs_over_configurations_and_sizes() -> None:
    with_shared = unsettled = 0
    for seed in range(1000):
        rng = np.random.default_rng(seed)
        config = random_config(rng, (Dataflow.WS, Dataflow.OS)[seed % 2],
                               largest=int(rng.choice([2, 4, 8])))
        case = random_program(config, rng, layers=int(rng.integers(1, 4)))
        native, python, facts = both_passes(
            config, case.program.instructions, table_entries=int(rng.choice([1, 2, 3, 5, 16])),
            queue_depth=int(rng.choice([1, 2, 4])), settles=False)
        if native is None:  # (the Python model's own limit: see the next test)
            unsettled += 1
            continue
        assert_same(native, python)
        with_shared += bool(facts.shared)
    assert with_shared > 50  # (ADDs, COPYs and POOLs with two ranges in one memory)
    assert unsettled <= 2


def test_both_passes_give_up_on_the_same_unsettled_merge() -> None:
    # A PRELOAD accepted on a full table whose own strobe delays a delivery it counted: the
    # rollback learns nothing and repeats (a limit of the Python pass, mirrored by the C loop).
    rng = np.random.default_rng(7572)  # (2066 with issue from accept + 2, 824 from + 1)
    config = random_config(rng, Dataflow.WS, largest=int(rng.choice([2, 4, 8])))
    case = random_program(config, rng, layers=int(rng.integers(1, 4)))
    native, _, _ = both_passes(config, case.program.instructions, table_entries=5,
                               settles=False)
    assert native is None


def test_programs_whose_completion_merge_rolls_back() -> None:
    # Small weight-stationary layers: a PRELOAD strobe delays an older COMPUTE's delivery
    # after a younger instruction used it; both passes return to a checkpoint.
    found = 0
    for seed in range(0, 6000, 2):
        rng = np.random.default_rng(seed)
        config = random_config(rng, Dataflow.WS, largest=int(rng.choice([2, 4, 8])))
        case = random_program(config, rng, layers=1)
        entries = int(rng.choice([2, 3, 16, 16]))
        native, python, _ = both_passes(config, case.program.instructions,
                                        table_entries=entries)
        assert_same(native, python)
        if python.rollbacks:
            assert native.rollbacks > 0
            found += 1
            if found == 8:
                return
    pytest.fail(f"only {found} programs needed the merge's rollback")


@pytest.mark.parametrize("seed", range(16))
def test_longer_programs_with_small_tables(seed: int) -> None:
    rng = np.random.default_rng(1000 + seed)
    config = random_config(rng, (Dataflow.WS, Dataflow.OS)[seed % 2],
                           largest=int(rng.choice([2, 4, 8])))
    program = synthetic_program(config, 3000, seed=seed, scale=int(rng.integers(1, 3)))
    native, python, _ = both_passes(config, program.instructions,
                                    table_entries=(2, 16, 3, 16)[seed % 4],
                                    queue_depth=(1, 4, 2, 4)[seed // 2 % 4])
    assert_same(native, python)


@pytest.mark.parametrize("dataflow", [
    *(d for d in Dataflow if d is not Dataflow.BOTH),
    pytest.param(Dataflow.BOTH, marks=pytest.mark.slow),  # each layer compiled twice: ~35 s
])  # (mixed programs are checked by default in test_random_programs_of_both_dataflows)
@pytest.mark.parametrize("path", [
    pytest.param(path, marks=pytest.mark.slow) if path.stem.startswith("gru2bi") else path
    for path in sorted([*MODELS.glob("*.onnx"), *(MODELS / "realistic").glob("*.onnx")])
], ids=lambda p: p.stem)  # gru2bi's unrolled GRUs (3-7 s each idle) in the slow set: lstm2 stays
def test_compiled_test_models(path: Path, dataflow: Dataflow) -> None:
    """Every test model (tests/models and its realistic/ networks) the mapper compiles; one
    it refuses with a SystolicError is skipped with the reason (this tests the timing engine,
    not the mapper)."""
    for size in (4, 8):
        config = ArrayConfig(rows=size, cols=size, dataflow=dataflow)
        try:
            program = compile_model(integer_model(load_user_model(path)), config,
                                    layer_cycles=layer_cycles).program
        except SystolicError as error:
            pytest.skip(f"{path.name} does not compile: {error}")
        native, python, _ = both_passes(config, program.instructions)
        assert_same(native, python)


def test_empty_program() -> None:
    from systolic.isa.instructions import Halt

    config = ArrayConfig(rows=2, cols=2, spad_kib=1, acc_kib=1)
    native, python, _ = both_passes(config, [Halt()])
    assert_same(native, python)
    assert native.accept == (1,)


def test_the_model_runs_the_native_pass_unless_told_not_to(monkeypatch) -> None:
    config = ArrayConfig(rows=3, cols=2, bus_bytes=8, mem_latency=5)
    instructions = synthetic_program(config, 500, seed=3, scale=1).instructions
    python = ProgramModel(config, native=False).run(instructions)

    def no_python_pass(*_):
        raise AssertionError("the Python pass ran")

    with monkeypatch.context() as patch:
        patch.setattr(ProgramModel, "python_pass", no_python_pass)
        assert_same(ProgramModel(config).run(instructions), python)
        with pytest.raises(AssertionError, match="the Python pass ran"):
            ProgramModel(config, native=False).run(instructions)
    monkeypatch.setenv("SYSTOLIC_NATIVE", "0")
    assert timing_library() is None
    calls = []
    original = ProgramModel.python_pass
    monkeypatch.setattr(ProgramModel, "python_pass",
                        lambda self, *a: calls.append(1) or original(self, *a))
    assert_same(ProgramModel(config).run(instructions), python)
    assert calls == [1]


def _facts(config: ArrayConfig) -> tuple[ProgramFacts, list]:
    instructions = synthetic_program(config, 300, seed=5, scale=1).instructions
    return ProgramFacts(program_model.Describer(config), instructions[:-1], True), instructions


def _replace(facts: ProgramFacts, name: str, values: list[int]) -> ProgramFacts:
    """A copy of `facts` whose array of `name` (what the native pass reads) holds `values`."""
    changed = copy.copy(facts)
    array = {"kinds": "kind_array", "units": "unit_array", "ks": "k_array"}[name]
    setattr(changed, array, np.array(values, dtype=np.int64))
    return changed


def test_inconsistent_facts_are_refused_not_trusted() -> None:
    # The C pass checks what it indexes with: a unit that is not its kind's, a kind out of
    # range, an array of the wrong length. The wrapper then returns None (the model falls
    # back to the Python pass, which raises its own errors).
    config = ArrayConfig(rows=2, cols=2, bus_bytes=4)
    facts, _ = _facts(config)
    assert native_pass(config, 16, 4, facts) is not None
    units = list(facts.units)
    units[7] = (units[7] + 1) % 3
    assert native_pass(config, 16, 4, _replace(facts, "units", units)) is None
    kinds = list(facts.kinds)
    kinds[0] = 9
    assert native_pass(config, 16, 4, _replace(facts, "kinds", kinds)) is None
    assert native_pass(config, 16, 4, _replace(facts, "ks", list(facts.ks)[:-1])) is None
