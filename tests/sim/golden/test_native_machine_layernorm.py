"""The C golden machine against the Python `Machine` on LAYERNORM (issue 13, session 8).

Random LAYERNORMs mixed with every other class (`SoftmaxFuzzer`) are compared one instruction
at a time (the C engine must execute each itself, not hand it to Python) and as whole
programs, and the mapper-like programs of `random_program(layernorm=True)` (wide, narrow and
constant rows) on every configuration of test_native_machine. Edge cases: constant rows with
and without eps (V = 0), the largest rows (H = 4096, k > 0), eps = 2^32 - 1, half-way
products, both output-stage extremes, 2-byte operands, input_width 16 (refused with Python's
message) and values no LOAD makes (handed to Python).
"""

import dataclasses
from collections.abc import Callable

import numpy as np
import pytest

from systolic.config import ArrayConfig, Dataflow
from systolic.isa.encode_batch import encode_words
from systolic.isa.instructions import Halt, Instruction, LayerNorm, Load, LoadTarget
from systolic.isa.softmax import softmax_row_chunks
from systolic.sim.golden.native_machine import NativeStatus, native_execute

from .test_native_machine import CONFIGS as ALL_CONFIGS
from .test_native_machine import (
    assert_refused,
    compare_generated,
    compare_run,
    config,
    kinds_of,
    machines,
    requires_native,
)
from .test_native_machine_softmax import (
    CONFIGS,
    SoftmaxFuzzer,
    _id,
    assert_same_tables,
    compare_tables_run,
    compare_tables_step_by_step,
)

OS = Dataflow.OS


class LayerNormFuzzer(SoftmaxFuzzer):
    """`SoftmaxFuzzer` plus LAYERNORMs (where the configuration has 8-bit activations)."""

    def layernorm(self) -> Instruction | None:
        # realistic factors 1 / (2^16 s_y) (shift about 8 .. 12), both extremes, random ones
        return self.row_instruction(
            LayerNorm, lambda: [self.int(8, 12), -31, 31, self.int(-31, 31)],
            lambda: {"eps": int(self.rng.choice([0, self.int(1, 1000), self.int(0, 2**32 - 1),
                                                 2**32 - 1])),
                     "in_zero_point": self.int(-128, 127)})

    def makers(self) -> tuple[Callable[[], Instruction | None], ...]:
        return (self.load, self.load, self.execute, self.layernorm, self.layernorm,
                self.softmax, self.wide_table, self.store, self.vector)


@requires_native
@pytest.mark.parametrize("cfg", CONFIGS, ids=_id)
def test_random_instructions_match_execute(cfg: ArrayConfig) -> None:
    rng = np.random.default_rng(cfg.rows * 100 + cfg.cols + cfg.input_width + cfg.acc_width)
    fuzzer = LayerNormFuzzer(cfg, rng)
    program = fuzzer.program(150)
    compare_tables_step_by_step(cfg, program, fuzzer.image())
    assert ("LayerNorm" in kinds_of(program)) == (cfg.input_width == 8)


@requires_native
@pytest.mark.parametrize("cfg", CONFIGS, ids=_id)
def test_random_programs_match_run(cfg: ArrayConfig) -> None:
    rng = np.random.default_rng(17 + cfg.rows + cfg.acc_width)
    fuzzer = LayerNormFuzzer(cfg, rng)
    for _ in range(2):
        compare_run(cfg, fuzzer.program(300), fuzzer.image(), also=assert_same_tables)


@requires_native
@pytest.mark.parametrize("cfg", ALL_CONFIGS, ids=_id)
def test_generated_programs_with_layernorm_match_run(cfg: ArrayConfig) -> None:
    """`random_program(layernorm=True)` on every configuration of test_native_machine:
    LAYERNORM layers (wide, narrow and constant rows) where input_width is 8."""
    rng = np.random.default_rng(190 + cfg.rows)
    seen = compare_generated(cfg, rng, 4, layers=5, activation=True, layernorm=True)
    if cfg.input_width == 8:
        assert "LayerNorm" in seen


# -- LAYERNORM's arithmetic at its edges -------------------------------------------------------


def layernorm_program(cfg: ArrayConfig, values: np.ndarray, length: int,
                      **fields: int) -> tuple[list[Instruction], np.ndarray]:
    """LOAD `values` (rows of ceil(length / dim) * dim int8 lanes, the lanes beyond `length`
    included); LAYERNORM them with `fields` over the defaults."""
    dim, ob = cfg.dim, cfg.operand_bytes
    chunks = softmax_row_chunks(length, cfg)
    m = values.size // (chunks * dim)
    data = values.astype("<i2" if ob == 2 else np.int8).view(np.uint8)
    image = np.concatenate([data, np.zeros(m * length * ob + 64, np.uint8)])
    defaults = {"multiplier": 2**30 + 12345, "shift": 10, "zero_point": -5, "lo": -128,
                "hi": 127, "in_zero_point": 0, "eps": 0}
    instrs = [Load.dense(LoadTarget.SPAD_IN, 0, m * chunks, 0, dim * ob, dim),
              LayerNorm(in_row=0, m=m, length=length, ext=data.size, row_stride1=length * ob,
                        **{**defaults, **fields}),  # type: ignore[arg-type]
              Halt()]
    return instrs, image


@requires_native
@pytest.mark.parametrize("cfg", [config(5, 5), config(16, 16),
                                 config(6, 2, OS, weight_width=16, spad_kib=4)], ids=_id)
def test_rows_of_every_kind_match_and_ignore_unused_lanes(cfg: ArrayConfig) -> None:
    rng = np.random.default_rng(cfg.dim)
    for length in (1, cfg.dim - 1, cfg.dim, 2 * cfg.dim + 3):
        if length < 1:
            continue
        chunks = softmax_row_chunks(length, cfg)
        values = rng.integers(-128, 128, (4, chunks * cfg.dim))
        values[0] = 7  # (a constant row: V = eps)
        values[1, :length] = 50 + rng.integers(-1, 2, length)  # (a narrow row)
        values[2, length:] = 127  # (other values in the unused lanes)
        for eps in (0, 3, 2**32 - 1):
            instrs, image = layernorm_program(cfg, values.reshape(-1), length, eps=eps,
                                              in_zero_point=-100)
            compare_tables_run(cfg, instrs, image)


@requires_native
def test_the_largest_rows_match() -> None:
    """H = 4096: one outlier (the largest |p|), half -128 and half 127 (the largest V, k = 4)."""
    cfg = dataclasses.replace(config(16, 16), spad_kib=64)
    values = np.full((2, 4096), -128)
    values[0, 5] = 127
    values[1, ::2] = 127
    for zero_point in (-128, 127):
        instrs, image = layernorm_program(cfg, values.reshape(-1), 4096, shift=14,
                                          in_zero_point=zero_point)
        compare_tables_run(cfg, instrs, image)


@requires_native
@pytest.mark.parametrize(("multiplier", "shift"), [(1, -31), (1, 0), (1, 1), (-(2**31), 31),
                                                   (2**31 - 1, -31)])
def test_output_stage_extremes_and_half_way_products(multiplier: int, shift: int) -> None:
    cfg = config(4, 4)
    values = np.array([5, 4, 3, 2, 1, 0, -1, -2], np.int64)
    instrs, image = layernorm_program(cfg, values, 8, multiplier=multiplier, shift=shift)
    compare_tables_run(cfg, instrs, image)


@requires_native
def test_input_width_16_is_refused_with_pythons_message() -> None:
    cfg = config(4, 4, input_width=16, weight_width=16)
    instrs, image = layernorm_program(cfg, np.arange(8), 8)
    assert_refused(cfg, instrs, image, "LAYERNORM needs 8-bit activations")


@requires_native
def test_values_no_load_makes_are_left_to_python() -> None:
    cfg = config(4, 4)
    program = [LayerNorm(0, 1, 4, 2**30, 10, 0, -128, 127, 64), Halt()]
    native, python = machines(cfg, np.zeros(256, np.uint8))
    for machine in (native, python):
        machine.spad_in[0] = [200, -300, 250, 0]
    status, failed = native_execute(cfg, encode_words(program), native.memory, native)
    assert (status, failed) == (NativeStatus.ARITHMETIC, 0)
    assert not native.memory.any()  # (stopped before writing)
    python.run(program)  # (Python computes it: every value fits its int64 arithmetic)
    assert python.memory[64:68].any()
