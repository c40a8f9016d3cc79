"""The C golden machine against the Python `Machine` on issue 13's second step: SOFTMAX, the
exp table (TABLE with `wide`) and STORE with `raw`.

Random instructions of these kinds, mixed with every other class (`ActivationFuzzer`), are
compared one instruction at a time (the C engine must execute each itself, not hand it to
Python) and as whole programs; the exp table is compared with the rest of the state. The
configurations include dim 5 (512 bytes are not a whole number of rows), 2-byte operands
(SOFTMAX writes 2-byte elements) and input_width 16, which refuses SOFTMAX and the wide table
with Python's exact message. Edge cases: an empty exp table (S = 0), capped reciprocals,
rows longer than dim with other values in the unused lanes, values no LOAD makes (handed to
Python), raw accumulators wrapped from 64 bits.
"""

import dataclasses
from collections.abc import Callable

import numpy as np
import pytest

from systolic.config import ArrayConfig, Dataflow
from systolic.ir import DataType, Graph, Tensor
from systolic.isa.encode_batch import encode_words
from systolic.isa.instructions import (
    Compute,
    Halt,
    Instruction,
    Load,
    LoadTarget,
    Preload,
    Softmax,
    Store,
    Table,
)
from systolic.isa.memories import Memory, depth
from systolic.isa.row_instruction import RowInstruction
from systolic.isa.softmax import softmax_row_chunks
from systolic.isa.table import exp_table_rows
from systolic.mapper.lowering import compile_model
from systolic.sim.golden.machine import Machine
from systolic.sim.golden.native_machine import NativeStatus, native_execute, run_native

from ...mapper.lowering.graphs import graph, node
from .test_native_machine import CONFIGS as ALL_CONFIGS
from .test_native_machine import (
    MODELS,
    WRITES_END,
    assert_refused,
    assert_same_state,
    compare_compiled,
    compare_generated,
    compare_run,
    compare_step_by_step,
    compiled_or_skip,
    config,
    kinds_of,
    machines,
    requires_native,
    run_both,
)
from .test_native_machine_activation import ActivationFuzzer, assert_same_table

WS, OS = Dataflow.WS, Dataflow.OS

CONFIGS = [
    config(4, 4),
    config(8, 8, OS),
    config(16, 16),
    config(5, 5),  # (512 is not a multiple of dim: the last wide TABLE row is partly used)
    config(3, 5, OS, acc_width=20, bus_bytes=1),
    config(6, 2, OS, weight_width=16, spad_kib=4),  # (input_width 8, 2-byte operands)
    config(128, 2, acc_width=24),  # (the wide TABLE reads 4 rows of 128)
    config(4, 4, acc_width=64),  # (raw wraps 64-bit accumulators to int32)
    config(4, 4, input_width=16, weight_width=16),  # (SOFTMAX, TABLE wide refused; raw not)
]


def _id(cfg: ArrayConfig) -> str:
    return f"{cfg.shape_text}{cfg.dataflow.value}-{cfg.input_width}/{cfg.weight_width}" + (
        f"-acc{cfg.acc_width}" if cfg.acc_width != 32 else "")


def assert_same_tables(native: Machine, python: Machine, where: str = "") -> None:
    assert_same_table(native, python, where)
    np.testing.assert_array_equal(native.exp_table, python.exp_table,
                                  err_msg=f"exp_table {where}")


class SoftmaxFuzzer(ActivationFuzzer):
    """`ActivationFuzzer` plus wide TABLEs, SOFTMAXes and STOREs with `raw` (those the
    configuration accepts)."""

    def wide_table(self) -> Instruction | None:
        rows = exp_table_rows(self.cfg)
        if not self.eight_bit or rows > self.spad:
            return None
        return Table(self.int(0, self.spad - rows), wide=True)

    def row_instruction(self, kind: type[RowInstruction], shifts: Callable[[], list[int]],
                        own: Callable[[], dict[str, int]] = dict) -> Instruction | None:
        """A random `kind` (SOFTMAX, LAYERNORM) of up to 4 rows of up to 3 dim elements, its
        shift drawn from `shifts()`, its own fields from `own()`; None where the configuration
        refuses it (no 8-bit activations) or no row pattern fits."""
        if not self.eight_bit:
            return None
        dim = self.cfg.dim
        length = self.int(1, min(3 * dim, self.spad * dim))
        chunks = softmax_row_chunks(length, self.cfg)
        m = self.int(1, max(1, min(4, self.spad // chunks)))
        pattern = self.row_pattern(m, length * self.ob, WRITES_END)
        if pattern is None:
            return None
        zero_point, lo, hi = self.clamp()
        multiplier = int(self.rng.choice([self.int(2**30, 2**31 - 1), -(2**31), 1, -1,
                                          self.int(-(2**31), 2**31 - 1)]))
        shift = int(self.rng.choice(shifts()))
        fields = own()
        return kind(self.int(0, self.spad - m * chunks), m, length, multiplier, shift,
                    zero_point, lo, hi, **pattern, **fields,  # type: ignore[call-arg]
                    flip_sign=self.flip(self.cfg.input_width))

    def softmax(self) -> Instruction | None:
        # realistic factors 1 / (2^15 s_y) (shift about -8), both extremes and random ones
        return self.row_instruction(
            Softmax, lambda: [self.int(-10, -6), -31, 31, self.int(-31, 31)])

    def raw_store(self) -> Instruction | None:
        cfg = self.cfg
        m, n = self.int(1, min(6, cfg.acc_depth)), self.int(1, cfg.cols)
        pattern = self.row_pattern(m, 4 * n, WRITES_END)
        if pattern is None:
            return None
        return Store(self.int(0, cfg.acc_depth - m), m, n, self.int(0, 1), 0, 0, 0, **pattern,
                     raw=True)

    def makers(self) -> tuple[Callable[[], Instruction | None], ...]:
        return (self.load, self.load, self.execute, self.wide_table, self.softmax, self.softmax,
                self.raw_store, self.table, self.lut_store, self.store, self.vector)


def compare_tables_step_by_step(cfg: ArrayConfig, instructions: list[Instruction],
                                image: np.ndarray) -> None:
    """`compare_step_by_step`, and both tables after every instruction."""
    compare_step_by_step(cfg, instructions, image, also=assert_same_tables)


@requires_native
@pytest.mark.parametrize("cfg", CONFIGS, ids=_id)
def test_random_instructions_match_execute(cfg: ArrayConfig) -> None:
    rng = np.random.default_rng(cfg.rows * 100 + cfg.cols + cfg.input_width + cfg.acc_width)
    fuzzer = SoftmaxFuzzer(cfg, rng)
    kinds: set[str] = set()
    for _ in range(2):
        program = fuzzer.program(150)
        compare_tables_step_by_step(cfg, program, fuzzer.image())
        kinds |= kinds_of(program)
    expected = {"Store raw"} | ({"Table wide", "Softmax"} if cfg.input_width == 8 else set())
    assert expected <= kinds


@requires_native
@pytest.mark.parametrize("cfg", CONFIGS, ids=_id)
def test_random_programs_match_run(cfg: ArrayConfig) -> None:
    rng = np.random.default_rng(11 + cfg.rows + cfg.acc_width)
    fuzzer = SoftmaxFuzzer(cfg, rng)
    for _ in range(3):
        compare_run(cfg, fuzzer.program(300), fuzzer.image(), also=assert_same_tables)


@requires_native
@pytest.mark.parametrize("cfg", ALL_CONFIGS, ids=_id)
def test_generated_programs_with_softmax_match_run(cfg: ArrayConfig) -> None:
    """The mapper-like programs of `random_program(activation=True, softmax=True)` on every
    configuration of test_native_machine (1x1 to 128x2, acc_width 10 to 64, 4- to 16-bit
    operands): SOFTMAX layers where input_width is 8, raw GEMM outputs everywhere."""
    rng = np.random.default_rng(90 + cfg.rows)
    seen = compare_generated(cfg, rng, 4, also=assert_same_tables, layers=5, activation=True,
                             softmax=True)
    assert "Store raw" in seen
    if cfg.input_width == 8 and exp_table_rows(cfg) <= depth(cfg, Memory.SPAD_IN):
        assert {"Softmax", "Table wide"} <= seen


# -- SOFTMAX's arithmetic at its edges ---------------------------------------------------------


def exp_table_bytes(s_x: float) -> np.ndarray:
    """The 512 bytes of the exp table docs/numeric-contract.md gives for input scale s_x:
    E[k] = round_half_to_even(2^15 exp(-s_x k)), little-endian u16."""
    entries = np.rint(2.0**15 * np.exp(-s_x * np.arange(256))).astype("<u2")
    return np.frombuffer(entries.tobytes(), np.uint8)


def softmax_program(cfg: ArrayConfig, table: np.ndarray | None, values: np.ndarray,
                    length: int, **fields: int) -> tuple[list[Instruction], np.ndarray]:
    """LOAD an exp table (unless None) and TABLE wide it; LOAD `values` (rows of
    ceil(length / dim) * dim int8 lanes, the lanes beyond `length` included); SOFTMAX them."""
    dim, ob = cfg.dim, cfg.operand_bytes
    table_rows = exp_table_rows(cfg) if table is not None else 0
    chunks = softmax_row_chunks(length, cfg)
    m = values.size // (chunks * dim)
    padded = np.zeros(table_rows * dim, np.uint8)
    if table is not None:
        padded[: table.size] = table
    data = values.astype(np.int8).view(np.uint8)
    out = padded.size + data.size
    image = np.concatenate([padded, data, np.zeros(m * length * ob + 64, np.uint8)])
    instrs: list[Instruction] = []
    if table is not None:
        instrs += [Load.dense(LoadTarget.SPAD_IN, 0, table_rows, 0, dim, dim),
                   Table(0, wide=True)]
    instrs += [Load.dense(LoadTarget.SPAD_IN, table_rows, m * chunks, padded.size, dim, dim),
               Softmax(table_rows, m, length, fields.get("multiplier", 2**30 + 12345),
                       fields.get("shift", -8), fields.get("zero_point", -128), -128, 127, out,
                       row_stride1=length * ob), Halt()]
    return instrs, image


def compare_tables_run(cfg: ArrayConfig, instrs: list[Instruction],
                       image: np.ndarray) -> Machine:
    """`compare_run`, and both tables."""
    return compare_run(cfg, instrs, image, also=assert_same_tables)


@requires_native
@pytest.mark.parametrize("cfg", [config(5, 5), config(16, 16),
                                 config(6, 2, OS, weight_width=16, spad_kib=4)], ids=_id)
def test_softmax_of_the_contract_table_matches_and_ignores_unused_lanes(cfg: ArrayConfig
                                                                          ) -> None:
    rng = np.random.default_rng(cfg.dim)
    for length in (1, cfg.dim - 1, cfg.dim, 2 * cfg.dim + 3):
        if length < 1:
            continue
        chunks = softmax_row_chunks(length, cfg)
        values = rng.integers(-128, 128, (3, chunks * cfg.dim))
        values[0] = 7  # (a row of equal values: each p is E[0] r / 2^31)
        values[1, length:] = 127  # (larger values in the unused lanes are not the maximum)
        instrs, image = softmax_program(cfg, exp_table_bytes(0.05), values.reshape(-1), length)
        compare_tables_run(cfg, instrs, image)


@requires_native
def test_softmax_before_any_wide_table_sums_to_zero() -> None:
    """E is zero after reset: S = 0, r = 2^32 - 1, every p = 0, y = the zero point."""
    cfg = config(4, 4)
    instrs, image = softmax_program(cfg, None, np.arange(-8, 8), 6, zero_point=-3)
    native = compare_tables_run(cfg, instrs, image)
    out = native.memory[16 : 16 + 12].view(np.int8)
    np.testing.assert_array_equal(out, np.full(12, -3))


@requires_native
def test_small_sums_cap_the_reciprocal_and_half_way_products_round_to_even() -> None:
    """E entries 0..3 (S below 2^14: r capped at 2^32 - 1) and multiplier 1 with shift 0 or 1
    (p / 2 and p / 4 meet half-way cases)."""
    cfg = config(4, 4)
    entries = np.zeros(256, "<u2")
    entries[:8] = [3, 1, 2, 0, 1, 3, 2, 1]
    table = np.frombuffer(entries.tobytes(), np.uint8)
    values = np.array([5, 4, 3, 2, 1, 0, -1, -2], np.int64)
    for shift in (-31, 0, 1):
        instrs, image = softmax_program(cfg, table, values, 8, multiplier=1, shift=shift,
                                        zero_point=0)
        compare_tables_run(cfg, instrs, image)


# -- the exp table as state ------------------------------------------------------------------


@requires_native
def test_the_exp_table_is_taken_from_and_left_in_the_state() -> None:
    cfg = config(4, 4)
    native, python = machines(cfg, np.arange(128, dtype=np.uint8))
    exp_table = np.random.default_rng(2).integers(0, 65536, 256)
    for machine in (native, python):
        machine.exp_table[:] = exp_table
    program = [Load.dense(LoadTarget.SPAD_IN, 0, 2, 0, 4, 4),
               Softmax(0, 2, 4, 2**30, -8, 0, -128, 127, 64, row_stride1=4), Halt()]
    python.run(program)
    assert run_native(cfg, encode_words(program), native.memory, state=native)
    assert_same_state(native, python)
    assert_same_tables(native, python)


@requires_native
def test_values_no_load_makes_are_left_to_python() -> None:
    cfg = config(4, 4)
    image = np.zeros(256, np.uint8)
    # an exp table entry outside u16 in the state: the C engine does not start
    for entry in (-1, 65536):
        native, _ = machines(cfg, image)
        native.exp_table[3] = entry
        status, failed = native_execute(cfg, encode_words([Halt()]), native.memory, native)
        assert (status, failed) == (NativeStatus.STATE, 0)
    # spad_in values beyond int8 read by SOFTMAX: the C engine stops, Python computes (the
    # distances stay within the table) or raises (they leave it) as it does alone
    for values, raises in (([200, 300, 250, 260], False), ([-129, 127, 0, 0], True)):
        program = [Softmax(0, 1, 4, 2**30, -8, 0, -128, 127, 64), Halt()]
        native, python = machines(cfg, image)
        for machine in (native, python):
            machine.spad_in[0] = values
            machine.exp_table[:] = np.arange(256) * 200
        status, failed = native_execute(cfg, encode_words(program), native.memory, native)
        assert (status, failed) == (NativeStatus.ARITHMETIC, 0)
        if raises:
            with pytest.raises(IndexError):
                python.run(program)
            with pytest.raises(IndexError):
                run_native(cfg, encode_words(program), native.memory, state=native)
        else:
            python.run(program)
            assert run_native(cfg, encode_words(program), native.memory, state=native)
        assert_same_state(native, python)
        assert_same_tables(native, python)


@requires_native
def test_a_wide_table_takes_every_spad_value_modulo_256() -> None:
    """u8(v) = v mod 256 also for spad_in values beyond int8 (16-bit state values)."""
    cfg = config(8, 8)
    rows = exp_table_rows(cfg)
    native, python = machines(cfg, np.zeros(64, np.uint8))
    values = np.random.default_rng(4).integers(-(2**15), 2**15, (rows, cfg.dim))
    for machine in (native, python):
        machine.spad_in[:rows] = values
    program = [Table(0, wide=True), Halt()]
    python.run(program)
    status, _ = native_execute(cfg, encode_words(program), native.memory, native)
    assert status == NativeStatus.OK
    assert_same_state(native, python)
    assert_same_tables(native, python)


# -- STORE raw ---------------------------------------------------------------------------------


@requires_native
@pytest.mark.parametrize("cfg", [config(4, 4, acc_width=64), config(3, 5, acc_width=20),
                                 config(4, 4, input_width=16, weight_width=16)], ids=_id)
def test_raw_stores_wrap_accumulators_plus_bias_to_int32(cfg: ArrayConfig) -> None:
    """Extreme accumulators and biases (acc + bias beyond int32 and, at acc_width 64, beyond
    int64), params rows whose shift is outside -31..31 (not used by raw)."""
    cols = cfg.cols
    native, python = machines(cfg, np.zeros(256, np.uint8))
    rng = np.random.default_rng(cfg.acc_width)
    low, high = -(2 ** (cfg.acc_width - 1)), 2 ** (cfg.acc_width - 1) - 1
    acc = rng.integers(low, high, (3, cols), endpoint=True)
    acc[0, 0], acc[1, 0] = low, high
    bias = rng.integers(-(2**31), 2**31, cols)
    bias[0] = 2**31 - 1
    for machine in (native, python):
        machine.acc[:3] = acc
        machine.bias[1, :cols] = bias
        machine.shift[1, :cols] = 99
    program = [Store(0, 3, cols, 1, 0, 0, 0, 8, row_stride1=4 * cols + 4, raw=True), Halt()]
    python.run(program)
    status, _ = native_execute(cfg, encode_words(program), native.memory, native)
    assert status == NativeStatus.OK
    assert_same_state(native, python)


# -- refusals ---------------------------------------------------------------------------------


@requires_native
@pytest.mark.parametrize(("instr", "message"), [
    (Table(0, wide=True), "TABLE needs 8-bit activations (input_width 8), not 16"),
    (Softmax(0, 1, 4, 2**30, -8, 0, -128, 127, 0),
     "SOFTMAX needs 8-bit activations (input_width 8), not 16"),
])
def test_16_bit_activations_refuse_softmax_and_the_wide_table(instr: Instruction,
                                                              message: str) -> None:
    cfg = config(4, 4, input_width=16, weight_width=16)
    program = [Load.dense(LoadTarget.SPAD_IN, 0, 2, 0, 8, 4), instr, Halt()]
    assert_refused(cfg, program, np.zeros(64, np.uint8), message)


@requires_native
def test_rows_beyond_spad_in_and_writes_beyond_memory_are_refused() -> None:
    cfg = config(5, 5)
    spad = depth(cfg, Memory.SPAD_IN)
    image = np.zeros(64, np.uint8)
    wide = Table(spad - exp_table_rows(cfg) + 1, wide=True)
    _, _, message = run_both(cfg, [wide, Halt()], image)
    assert "row + ceil(512 / dim)" in message
    softmax = Softmax(spad - 2 * 3 + 1, 2, 11, 2**30, -8, 0, -128, 127, 0)  # (C = 3)
    _, _, message = run_both(cfg, [softmax, Halt()], image)
    assert "in_row + m * ceil(length / dim)" in message
    for instr in (dataclasses.replace(softmax, in_row=0, ext=60),
                  Store(0, 1, 5, 0, 0, 0, 0, 50, raw=True)):  # (20 bytes from 50)
        native, _ = machines(cfg, image)
        status, failed = native_execute(cfg, encode_words([instr, Halt()]), native.memory,
                                        native)
        assert (status, failed) == (NativeStatus.MEMORY, 0), instr
        run_both(cfg, [instr, Halt()], image)


@requires_native
def test_a_raw_store_after_a_gemm_matches() -> None:
    """PRELOAD, COMPUTE and a raw STORE, the MatMulInteger path, at 8x8 WS."""
    cfg = config(8, 8)
    rng = np.random.default_rng(8)
    image = rng.integers(0, 256, 512, dtype=np.uint8)
    program = [Load.dense(LoadTarget.SPAD_WT, 0, 8, 0, 8, 8),
               Load.dense(LoadTarget.SPAD_IN, 0, 8, 64, 8, 8),
               Load.params(0, 1, 128, 72), Preload(0, 8, 8), Compute(0, 8, 0),
               Store(0, 8, 8, 0, 0, 0, 0, 256, row_stride1=32, raw=True), Halt()]
    native = compare_tables_run(cfg, program, image)
    written = native.memory[256:512].view("<i4").reshape(8, 8)
    assert np.any(written != 0)


# -- a compiled transformer ---------------------------------------------------------------------


@requires_native
@pytest.mark.parametrize("cfg", [config(4, 4, spad_kib=32, acc_kib=8),
                                 config(8, 8, OS, spad_kib=32, acc_kib=8),
                                 config(16, 16, spad_kib=64, acc_kib=16)], ids=_id)
def test_a_compiled_transformer_with_softmax_runs_natively(cfg: ArrayConfig) -> None:
    """bert_tiny (tests/models/realistic) compiled: its attention's SOFTMAXes and their exp
    tables run in the C engine (no instruction handed to Python), state equal to Python's."""
    compiled = compiled_or_skip(MODELS / "realistic" / "bert_tiny_qdq.onnx", cfg)
    assert {"Softmax", "Table wide"} <= kinds_of(list(compiled.program.instructions))
    compare_compiled(compiled.program, cfg.rows, also=assert_same_tables)


def integer_matmul_graph() -> Graph:
    """y = wrap32(a B + bias): the QMatMulInt of dynamic quantization, lowered with STORE raw
    (a uint8 a of 19 x 37, B 37 x 20, a bias that wraps)."""
    rng = np.random.default_rng(6)
    bias = rng.integers(-(2**31), 2**31, 20).astype(np.int32)
    bias[0] = 2**31 - 1
    constants = [Tensor("B", DataType.INT8, rng.integers(-128, 128, (37, 20)).astype(np.int8)),
                 Tensor("bias", DataType.INT32, bias)]
    return graph({"a": (DataType.UINT8, (19, 37))}, {"y": DataType.INT32},
                 [node("QMatMulInt", ["a", "B", "bias"], "y")], constants)


@requires_native
@pytest.mark.parametrize("cfg", [config(4, 4), config(8, 8, OS), config(16, 16)], ids=_id)
def test_a_compiled_integer_matmul_with_raw_stores_runs_natively(cfg: ArrayConfig) -> None:
    compiled = compile_model(integer_matmul_graph(), cfg)
    assert "Store raw" in kinds_of(list(compiled.program.instructions))
    compare_compiled(compiled.program, cfg.rows)
