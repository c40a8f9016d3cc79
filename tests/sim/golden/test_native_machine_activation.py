"""The C golden machine against the Python `Machine` on the activation unit and ADD's modes
(issue 13): TABLE, STORE and COPY with `lut`, ADD with `mul` and `b_broadcast`.

Random instructions of these kinds, mixed with the other classes (`test_native_machine.Fuzzer`),
are compared one instruction at a time (the C engine must execute each itself, not hand it to
Python) and as whole programs, random and compiled (a convolution with its table fused into
the STOREs, a per-channel multiply, a standalone table); the activation table is compared with
the rest of the state. What the configuration refuses (input_width 16) raises Python's exact
message.
"""

import dataclasses
from collections.abc import Callable

import numpy as np
import pytest

from systolic.config import ArrayConfig, Dataflow
from systolic.ir import DataType, Graph, Tensor
from systolic.isa.encode_batch import encode_words
from systolic.isa.instructions import Add, Copy, Halt, Instruction, Load, LoadTarget, Store, Table
from systolic.isa.memories import Memory, depth
from systolic.isa.program import TensorRole
from systolic.isa.table import table_rows
from systolic.mapper.lowering import compile_model
from systolic.sim.golden.machine import Machine
from systolic.sim.golden.native_machine import NativeStatus, native_execute, run_native

from ...mapper.lowering.graphs import graph, node, qconv
from .test_native_machine import CONFIGS as ALL_CONFIGS
from .test_native_machine import (
    WRITES_END,
    Fuzzer,
    assert_refused,
    assert_same_state,
    compare_compiled,
    compare_generated,
    compare_run,
    compare_step_by_step,
    config,
    machines,
    requires_native,
    run_both,
)

WS, OS = Dataflow.WS, Dataflow.OS

CONFIGS = [
    config(4, 4),
    config(8, 8, OS),
    config(16, 16),
    config(3, 5, acc_width=20, bus_bytes=1),
    config(6, 2, OS, weight_width=16),  # (input_width 8 with 2-byte operands)
    config(128, 2, acc_width=24),  # (TABLE reads 2 rows of 128)
    config(4, 4, input_width=16, weight_width=16),  # (TABLE, COPY lut and ADD mul refused)
]


def _id(cfg: ArrayConfig) -> str:
    return f"{cfg.shape_text}{cfg.dataflow.value}-{cfg.input_width}/{cfg.weight_width}"


def assert_same_table(native: Machine, python: Machine, where: str = "") -> None:
    np.testing.assert_array_equal(native.table, python.table, err_msg=f"table {where}")


class ActivationFuzzer(Fuzzer):
    """`Fuzzer` plus TABLEs, STOREs and COPYs with `lut` and ADDs with `mul`/`b_broadcast`
    (those the configuration accepts)."""

    def __init__(self, cfg: ArrayConfig, rng: np.random.Generator) -> None:
        super().__init__(cfg, rng)
        self.eight_bit = cfg.input_width == 8

    def table(self) -> Instruction | None:
        rows = table_rows(self.cfg)
        if not self.eight_bit or rows > self.spad:
            return None
        return Table(self.int(0, self.spad - rows))

    def lut_store(self) -> Instruction | None:
        store = self.store()
        return None if store is None else dataclasses.replace(store, lut=True)

    def lut_copy(self) -> Instruction | None:
        if not self.eight_bit:
            return None
        m, lanes = self.int(1, min(6, self.spad)), self.int(1, self.cfg.dim)
        pattern = self.row_pattern(m, lanes * self.ob, WRITES_END)
        if pattern is None:
            return None
        return Copy(self.int(0, self.spad - m), m, lanes, **pattern,
                    flip_sign=self.flip(self.cfg.input_width), lut=True)

    def add_mode(self) -> Instruction | None:
        mul = self.eight_bit and bool(self.rng.integers(2))
        broadcast = not mul or bool(self.rng.integers(2))
        m, lanes = self.int(1, min(6, self.spad)), self.int(1, self.cfg.dim)
        pattern = self.row_pattern(m, lanes * self.ob, WRITES_END)
        if pattern is None:
            return None
        zero_point, lo, hi = self.clamp()
        b_rows = 1 if broadcast else m
        # shifts at both ends and near the half-way cases of small products
        shift = int(self.rng.choice([-31, -30, -29, self.int(-31, 31), 31]))
        multiplier_a = int(self.rng.choice([-(2**31), 2**31 - 1, 1, -1,
                                            self.int(-(2**31), 2**31 - 1)]))
        return Add(self.int(0, self.spad - m), self.int(0, self.spad - b_rows), m, lanes,
                   multiplier_a, 0 if mul else self.int(-(2**31), 2**31 - 1), shift,
                   self.int(-128, 127), self.int(-128, 127), zero_point, lo, hi, **pattern,
                   flip_sign=self.flip(self.cfg.input_width), mul=mul, b_broadcast=broadcast)

    def makers(self) -> tuple[Callable[[], Instruction | None], ...]:
        return (self.load, self.load, self.execute, self.table, self.lut_store, self.lut_copy,
                self.add_mode, self.store, self.vector)


def compare_tables_step_by_step(cfg: ArrayConfig, instructions: list[Instruction],
                                image: np.ndarray) -> None:
    """`compare_step_by_step`, and the activation tables after every instruction."""
    compare_step_by_step(cfg, instructions, image, also=assert_same_table)


@requires_native
@pytest.mark.parametrize("cfg", CONFIGS, ids=_id)
def test_random_instructions_match_execute(cfg: ArrayConfig) -> None:
    rng = np.random.default_rng(cfg.rows * 100 + cfg.cols + cfg.input_width)
    fuzzer = ActivationFuzzer(cfg, rng)
    kinds = set()
    for _ in range(2):
        program = fuzzer.program(150)
        compare_tables_step_by_step(cfg, program, fuzzer.image())
        kinds |= {(type(i).__name__, getattr(i, "lut", False), getattr(i, "mul", False),
                   getattr(i, "b_broadcast", False)) for i in program}
    expected = {("Store", True, False, False), ("Add", False, False, True)}
    if cfg.input_width == 8:
        expected |= {("Table", False, False, False), ("Copy", True, False, False),
                     ("Add", False, True, False), ("Add", False, True, True)}
    assert expected <= kinds


@requires_native
@pytest.mark.parametrize("cfg", CONFIGS, ids=_id)
def test_random_programs_match_run(cfg: ArrayConfig) -> None:
    rng = np.random.default_rng(5 + cfg.rows)
    fuzzer = ActivationFuzzer(cfg, rng)
    for _ in range(3):
        compare_run(cfg, fuzzer.program(300), fuzzer.image(), also=assert_same_table)


@requires_native
@pytest.mark.parametrize("cfg", ALL_CONFIGS, ids=_id)
def test_generated_programs_with_activation_match_run(cfg: ArrayConfig) -> None:
    """The mapper-like programs of `random_program(activation=True)` on every configuration
    of test_native_machine (1x1 to 128x2, acc_width 10 to 64, 4- to 16-bit operands)."""
    rng = np.random.default_rng(70 + cfg.rows)
    compare_generated(cfg, rng, 4, also=assert_same_table, layers=4, activation=True)


# -- the table as state ---------------------------------------------------------------------


def table_program(cfg: ArrayConfig) -> tuple[list[Instruction], np.ndarray]:
    """LOAD a table (entry e = (e * 37) mod 256 as int8) and values to map; TABLE; a STORE
    and a COPY with `lut`, and the same COPY without it."""
    rows = table_rows(cfg)
    entries = np.zeros(rows * cfg.dim, np.uint8)
    entries[:256] = (np.arange(256) * 37) % 256
    values = np.arange(256, dtype=np.uint8).reshape(-1, 16)  # (every int8 once)
    image = np.concatenate([entries, values.reshape(-1), np.zeros(2048, np.uint8)])
    at = entries.size
    lanes = min(cfg.dim, 16)
    instrs: list[Instruction] = [
        Load.dense(LoadTarget.SPAD_IN, 0, rows, 0, cfg.dim, cfg.dim),
        Table(0),
        Load.dense(LoadTarget.SPAD_IN, 0, 16, at, 16, lanes),
        Copy(0, 16, lanes, at + 256, row_stride1=lanes, lut=True),
        Copy(0, 16, lanes, at + 512, row_stride1=lanes),
        Store(0, 2, min(cfg.cols, 8), 0, 3, -100, 90, at + 768, row_stride1=8, lut=True),
        Halt(),
    ]
    return instrs, image


@requires_native
def test_a_table_maps_every_int8_value() -> None:
    cfg = config(16, 16)
    instrs, image = table_program(cfg)
    native, python = machines(cfg, image)
    python.run(instrs)
    assert run_native(cfg, encode_words(instrs), native.memory, state=native)
    assert_same_state(native, python)
    assert_same_table(native, python)
    at = table_rows(cfg) * cfg.dim
    mapped = native.memory[at + 256 : at + 512].view(np.int8)
    inputs = np.arange(256, dtype=np.uint8).view(np.int8)
    np.testing.assert_array_equal(mapped, ((inputs.astype(np.int64) + 128) * 37 % 256)
                                  .astype(np.uint8).view(np.int8))


@requires_native
def test_the_table_is_taken_from_and_left_in_the_state() -> None:
    cfg = config(4, 4)
    image = np.arange(64, dtype=np.uint8)
    native, python = machines(cfg, image)
    table = np.random.default_rng(1).integers(-128, 128, 256)
    for machine in (native, python):
        machine.table[:] = table
    program = [Load.dense(LoadTarget.SPAD_IN, 0, 2, 0, 4, 4),
               Copy(0, 2, 4, 32, row_stride1=4, lut=True), Halt()]
    python.run(program)
    assert run_native(cfg, encode_words(program), native.memory, state=native)
    assert_same_state(native, python)
    assert_same_table(native, python)


@requires_native
def test_values_no_load_makes_are_left_to_python() -> None:
    cfg = config(4, 4)
    image = np.zeros(256, np.uint8)
    # a table entry beyond int8 in the state: the C engine does not start
    native, python = machines(cfg, image)
    for machine in (native, python):
        machine.table[5] = 300
    status, failed = native_execute(cfg, encode_words([Halt()]), native.memory, native)
    assert (status, failed) == (NativeStatus.STATE, 0)
    # spad_in values beyond int8 (16 bits fit the C engine) read by TABLE (Python keeps
    # them as entries) and by COPY lut (Python's index leaves the table)
    for instr in (Table(0), Copy(0, 1, 4, 64, lut=True)):
        program = [instr, Halt()]
        native, python = machines(cfg, image)
        for machine in (native, python):
            machine.spad_in[0, 1:3] = [-129, 1000]
        status, failed = native_execute(cfg, encode_words(program), native.memory, native)
        assert (status, failed) == (NativeStatus.ARITHMETIC, 0), instr
        if isinstance(instr, Table):
            python.run(program)
            assert run_native(cfg, encode_words(program), native.memory, state=native)
        else:
            with pytest.raises(IndexError):
                python.run(program)
            with pytest.raises(IndexError):
                run_native(cfg, encode_words(program), native.memory, state=native)
        assert_same_state(native, python)
        assert_same_table(native, python)


# -- refusals ---------------------------------------------------------------------------------


@requires_native
@pytest.mark.parametrize(("instr", "message"), [
    (Table(0), "TABLE needs 8-bit activations (input_width 8), not 16"),
    (Copy(0, 1, 4, 0, lut=True), "COPY lut needs 8-bit activations (input_width 8), not 16"),
    (Add(0, 1, 1, 4, 2**30, 0, 0, 0, 0, 0, -128, 127, 0, mul=True),
     "ADD mul needs 8-bit activations (input_width 8), not 16"),
])
def test_16_bit_activations_refuse_what_needs_8_bits(instr: Instruction, message: str) -> None:
    cfg = config(4, 4, input_width=16, weight_width=16)
    program = [Load.dense(LoadTarget.SPAD_IN, 0, 2, 0, 8, 4), instr, Halt()]
    assert_refused(cfg, program, np.zeros(64, np.uint8), message)


@requires_native
def test_a_store_with_lut_on_16_bit_activations_maps_through_the_table() -> None:
    cfg = config(4, 4, input_width=16, weight_width=16)
    instrs = [Store(0, 2, 4, 0, 0, -128, 127, 0, row_stride1=8, lut=True), Halt()]
    compare_tables_step_by_step(cfg, instrs, np.zeros(64, np.uint8))


@requires_native
def test_a_table_beyond_spad_in_and_a_broadcast_row_beyond_it_are_refused() -> None:
    cfg = config(4, 4)
    spad = depth(cfg, Memory.SPAD_IN)
    _, _, message = run_both(cfg, [Table(spad - table_rows(cfg) + 1), Halt()],
                             np.zeros(64, np.uint8))
    assert "row + ceil(256 / dim)" in message
    add = Add(0, spad, 1, 4, 2**30, 0, 0, 0, 0, 0, -128, 127, 0, b_broadcast=True)
    _, _, message = run_both(cfg, [add, Halt()], np.zeros(64, np.uint8))
    assert "b_row + 1" in message
    fits = Add(0, spad - 1, 2, 4, 2**30, 2**30, 0, 0, 0, 0, -128, 127, 0, b_broadcast=True)
    compare_step_by_step(cfg, [fits, Halt()], np.zeros(64, np.uint8))


# -- compiled programs ------------------------------------------------------------------------

U8, I8 = DataType.UINT8, DataType.INT8
COMPILED_CONFIGS = [config(4, 4), config(8, 8, OS), config(16, 16)]


def activation_graph() -> Graph:
    """x -> QConv -> QTable (fused into its STOREs) -> QMul by a per-channel gate (a 1x1
    QConv of g: ADD mul, b_broadcast) -> QTable (standalone: TABLE, COPY lut) -> z."""
    conv, conv_constants = qconv("x", "c", 4, 6, seed=3)
    gate, gate_constants = qconv("g", "b", 3, 6, seed=4, kernel=1, pads=0)
    tables = [Tensor(name, I8, np.random.default_rng(seed).integers(-128, 128, 256)
                     .astype(np.int8)) for seed, name in enumerate(("T1", "T2"))]
    multiply = node("QMul", ["t", "b"], "y", a_zero_point=9, b_zero_point=200,
                    multiplier=1_518_500_250, shift=-6, y_zero_point=128, y_type=int(U8))
    nodes = [conv, node("QTable", ["c", "T1"], "t", to=int(U8)), gate, multiply,
             node("QTable", ["y", "T2"], "z", to=int(U8))]
    return graph({"x": (U8, (1, 4, 5, 5)), "g": (U8, (1, 3, 1, 1))}, {"z": U8}, nodes,
                 [*tables, *conv_constants, *gate_constants])


@requires_native
@pytest.mark.parametrize("cfg", COMPILED_CONFIGS, ids=_id)
def test_a_compiled_model_with_tables_and_a_multiply_matches_run(cfg: ArrayConfig) -> None:
    program = compile_model(activation_graph(), cfg).program
    assert {"Table", "Store lut", "Copy lut", "Add mul b_broadcast"} <= {
        " ".join([type(i).__name__, *(f for f in ("lut", "mul", "b_broadcast")
                                      if getattr(i, f, False))]) for i in program.instructions}
    assert {placement.name for placement in program.placements(TensorRole.INPUT)} == {"x", "g"}
    compare_compiled(program, cfg.rows, also=assert_same_table)
