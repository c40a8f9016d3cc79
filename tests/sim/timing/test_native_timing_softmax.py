"""The native cycle model against the Python one on issue 13's second step: SOFTMAX, TABLE
with `wide` and STORE with `raw`.

The whole chain is compared, as in test_native_timing_activation: the facts from the native
external facts (facts.c) timed by the C loop (timing.c), against the facts from the Python
`Describer` (`store_timing.duration`) timed by the Python pass: every accept, issue and
complete cycle, the total and the counters (`native_timing` refuses the Python pass; facts.c
must take every instruction of the random programs). SOFTMAX's duration is its own sum over rows
(docs/isa.md: `sum_i (3 C + 40 + b_i) + 3`), not the max-plus form of the other STORE-unit
instructions; a lone one is checked against that formula.
"""

import numpy as np
import pytest

from systolic.commands.compile import integer_model
from systolic.commands.model_loading import load_user_model
from systolic.config import ArrayConfig, Dataflow
from systolic.errors import SystolicError
from systolic.isa.instructions import Halt, Instruction, Load, LoadTarget, Softmax, Store, Table
from systolic.isa.program import Program
from systolic.isa.softmax import softmax_row_chunks
from systolic.isa.table import exp_table_rows
from systolic.mapper.lowering import compile_model
from systolic.sim.native.build import unavailable_reason
from systolic.sim.timing import program_model
from systolic.sim.timing.native_facts import external_facts
from systolic.sim.timing.native_pass import timing_library

from ...support.random_programs import random_program, synthetic_program
from ..golden.test_native_machine_softmax import integer_matmul_graph
from .test_native_pass import MODELS, assert_same
from .test_native_timing_activation import native_timing, python_timing

WS, OS = Dataflow.WS, Dataflow.OS

CONFIGS = [
    ArrayConfig(rows=4, cols=4, dataflow=WS, bus_bytes=8, mem_latency=3),
    ArrayConfig(rows=8, cols=8, dataflow=OS, bus_bytes=16, mem_latency=10),
    ArrayConfig(rows=16, cols=16, dataflow=WS, bus_bytes=64, mem_latency=20),
    ArrayConfig(rows=5, cols=5, dataflow=WS, bus_bytes=4, mem_latency=5),  # (512 % dim != 0)
    ArrayConfig(rows=3, cols=5, dataflow=OS, bus_bytes=1, mem_latency=0),
    ArrayConfig(rows=6, cols=2, dataflow=OS, weight_width=16, bus_bytes=8),  # (2-byte outputs)
    ArrayConfig(rows=4, cols=4, dataflow=WS, input_width=16, weight_width=16, bus_bytes=4),
]


@pytest.fixture(autouse=True)
def _library() -> None:
    if timing_library() is None or external_facts(np.zeros((0, 8), np.uint64),
                                                  CONFIGS[0]) is None:
        pytest.skip(f"no native engine: {unavailable_reason('timing')}")


def _id(config: ArrayConfig) -> str:
    return f"{config.shape_text}{config.dataflow.value}-in{config.input_width}"


def kinds(instructions: list[Instruction]) -> set[str]:
    """The second step's instructions and flags among `instructions`."""
    found = set()
    for instr in instructions:
        if isinstance(instr, Softmax):
            found.add("SOFTMAX")
        elif isinstance(instr, Table) and instr.wide:
            found.add("TABLE wide")
        elif isinstance(instr, Store) and instr.raw:
            found.add("STORE raw")
    return found


@pytest.mark.parametrize("config", CONFIGS, ids=_id)
def test_random_programs_time_the_same(config: ArrayConfig,
                                       monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(program_model, "MAX_ROLLBACKS", 2000)
    seen: set[str] = set()
    for seed in range(30):
        rng = np.random.default_rng(seed)
        case = random_program(config, rng, layers=int(rng.integers(2, 6)), activation=True,
                              softmax=True)
        instructions = list(case.program.instructions)
        seen |= kinds(instructions)
        assert external_facts(case.program.words, config) is not None  # (facts.c took all)
        assert_same(native_timing(config, instructions, monkeypatch),
                    python_timing(config, instructions, monkeypatch))
    expected = {"STORE raw"} | ({"SOFTMAX", "TABLE wide"} if config.input_width == 8 else set())
    assert expected <= seen


@pytest.mark.parametrize("config", CONFIGS[:4], ids=_id)
def test_a_longer_program_times_the_same(config: ArrayConfig,
                                         monkeypatch: pytest.MonkeyPatch) -> None:
    program = synthetic_program(config, 2000, seed=13, scale=1, activation=True, softmax=True)
    instructions = list(program.instructions)
    assert {"SOFTMAX", "TABLE wide", "STORE raw"} <= kinds(instructions)
    native = native_timing(config, instructions, monkeypatch)
    assert_same(native, python_timing(config, instructions, monkeypatch))
    assert native.total_cycles > len(instructions)


def softmax_cycles(instr: Softmax, config: ArrayConfig) -> int:
    """docs/isa.md's duration: sum over rows i of (3 C + 40 + b_i) + 3, b_i the aligned beats
    of output row i's `length * operand_bytes` bytes."""
    chunks = softmax_row_chunks(instr.length, config)
    row_bytes, bus = instr.length * config.operand_bytes, config.bus_bytes
    total = 3
    for i in range(instr.m):
        base = instr.ext + i * instr.row_stride1  # (n0 = 1)
        total += 3 * chunks + 40 + (base + row_bytes - 1) // bus - base // bus + 1
    return total


@pytest.mark.parametrize("config", CONFIGS[:6], ids=_id)
def test_a_lone_softmax_takes_its_sum_over_rows(config: ArrayConfig,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    dim = config.dim
    for length, m, ext, stride in ((1, 1, 0, 1), (dim, 3, 3, dim + 5), (2 * dim + 1, 2, 7,
                                                                       3 * dim)):
        softmax = Softmax(0, m, length, 2**30, -8, 0, -128, 127, ext, row_stride1=stride)
        timing = native_timing(config, [softmax, Halt()], monkeypatch)
        assert timing.complete[0] - timing.issue[0] == softmax_cycles(softmax, config)
        assert_same(timing, python_timing(config, [softmax, Halt()], monkeypatch))


@pytest.mark.parametrize("config", CONFIGS[:6], ids=_id)
def test_a_wide_table_and_a_raw_store_take_their_cycles(
        config: ArrayConfig, monkeypatch: pytest.MonkeyPatch) -> None:
    """TABLE wide: ceil(512 / dim) + 2 from its issue; STORE raw: the STORE of the same rows
    written as 4-byte elements (a plain STORE with 4n operands would write as many bytes)."""
    table = native_timing(config, [Table(0, wide=True), Halt()], monkeypatch)
    assert table.complete[0] - table.issue[0] == -(-512 // config.dim) + 2
    assert_same(table, python_timing(config, [Table(0, wide=True), Halt()], monkeypatch))
    n = min(config.cols, 4)
    raw = Store(0, 2, n, 0, 0, 0, 0, 3, row_stride1=4 * n + 1, raw=True)
    raw_timing = native_timing(config, [raw, Halt()], monkeypatch)
    assert_same(raw_timing, python_timing(config, [raw, Halt()], monkeypatch))
    if config.operand_bytes == 1 and 4 * n <= config.cols:
        plain = Store(0, 2, 4 * n, 0, 0, -128, 127, 3, row_stride1=4 * n + 1)
        plain_timing = native_timing(config, [plain, Halt()], monkeypatch)
        assert (raw_timing.complete[0] - raw_timing.issue[0]
                == plain_timing.complete[0] - plain_timing.issue[0])


def test_softmax_waits_for_its_rows_and_a_later_load_waits_for_it(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """LOAD of the exp table, TABLE wide, LOAD of the rows, SOFTMAX, a LOAD overwriting the
    rows, a second SOFTMAX: the hazards on spad_in order them as in Python."""
    config = CONFIGS[0]
    dim, table_rows = config.dim, exp_table_rows(config)
    program = [Load.dense(LoadTarget.SPAD_IN, 0, table_rows, 0, dim, dim),
               Table(0, wide=True),
               Load.dense(LoadTarget.SPAD_IN, table_rows, 6, 1024, dim, dim),
               Softmax(table_rows, 3, 2 * dim, 2**30, -8, 0, -128, 127, 2048),
               Load.dense(LoadTarget.SPAD_IN, table_rows, 6, 4096, dim, dim),
               Softmax(table_rows, 3, 2 * dim, 2**30, -8, 0, -128, 127, 3072), Halt()]
    native = native_timing(config, program, monkeypatch)
    assert_same(native, python_timing(config, program, monkeypatch))
    assert native.issue[3] >= native.complete[2]  # (SOFTMAX after its rows are loaded)
    assert native.issue[4] >= native.complete[3]  # (the overwriting LOAD after SOFTMAX)


@pytest.mark.parametrize(("instr", "what"), [
    (Softmax(0, 1, 4, 2**30, -8, 0, -128, 127, 0), "SOFTMAX"),
    (Table(0, wide=True), "TABLE"),
])
def test_16_bit_activations_refuse_softmax_and_the_wide_table(instr: Instruction,
                                                              what: str) -> None:
    with pytest.raises(SystolicError, match=rf"^{what} needs 8-bit activations \(input_width "
                                            r"8\), not 16$"):
        Program(CONFIGS[-1], (instr, Halt()))


@pytest.mark.parametrize("config", CONFIGS[:3], ids=_id)
def test_a_compiled_transformer_with_softmax_times_the_same(
        config: ArrayConfig, monkeypatch: pytest.MonkeyPatch) -> None:
    """bert_tiny (tests/models/realistic) compiled, its SOFTMAXes and exp tables included."""
    path = MODELS / "realistic" / "bert_tiny_qdq.onnx"
    try:
        program = compile_model(integer_model(load_user_model(path)), config).program
    except SystolicError as error:
        pytest.skip(f"{path.name} does not compile: {error}")
    instructions = list(program.instructions)
    assert {"SOFTMAX", "TABLE wide"} <= kinds(instructions)
    assert external_facts(program.words, config) is not None
    assert_same(native_timing(config, instructions, monkeypatch),
                python_timing(config, instructions, monkeypatch))


@pytest.mark.parametrize("config", CONFIGS[:3], ids=_id)
def test_a_compiled_integer_matmul_with_raw_stores_times_the_same(
        config: ArrayConfig, monkeypatch: pytest.MonkeyPatch) -> None:
    program = compile_model(integer_matmul_graph(), config).program
    instructions = list(program.instructions)
    assert "STORE raw" in kinds(instructions)
    assert_same(native_timing(config, instructions, monkeypatch),
                python_timing(config, instructions, monkeypatch))
