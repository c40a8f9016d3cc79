"""The golden model's LAYERNORM against direct Python-int computations of docs/isa.md
("LAYERNORM") and against the reference operator systolic.QLayerNorm (docs/numeric-contract.md,
"Layer normalization")."""

import dataclasses
from fractions import Fraction

import numpy as np
import pytest

from systolic.config import ArrayConfig
from systolic.ir import Attrs
from systolic.isa.instructions import Halt, Instruction, LayerNorm, Load, LoadTarget
from systolic.isa.layernorm import inverse_sqrt
from systolic.isa.softmax import softmax_row_chunks
from systolic.reference.ops.op_systolic_qlayernorm import QLayerNorm
from systolic.sim.golden.machine import Machine

from ...support.random_programs import random_program
from .test_machine import assert_hazard_orders_match

WS = ArrayConfig(rows=8, cols=8, spad_kib=16, acc_kib=4)
DIM5 = dataclasses.replace(WS, rows=3, cols=5)
WIDE = dataclasses.replace(WS, weight_width=16)  # (2-byte operands, input_width 8)
X_ADDR, Y_ADDR = 0x400, 0x10000
MEMORY = 0x40000
FIELDS = {"multiplier": 1 << 30, "shift": 10, "zero_point": 3, "lo": -128, "hi": 127}


def rhe(numerator: int, shift: int) -> int:
    """round_half_to_even(numerator / 2**shift), with exact rationals."""
    return round(Fraction(numerator, 2**shift))


def reference_layernorm(x: list[int], in_zero_point: int, eps: int, multiplier: int,
                        shift: int, zero_point: int, lo: int, hi: int) -> list[int]:
    """docs/isa.md's LAYERNORM formulas for one row, in Python integers."""
    h, d = len(x), [v - in_zero_point for v in x]
    s1, s2 = sum(d), sum(v * v for v in d)
    r, k = inverse_sqrt(h * s2 - s1 * s1 + eps)
    out = []
    for v in d:
        p = rhe((h * v - s1) * r, 14 + k)
        out.append(min(max(rhe(p * multiplier, 31 + shift) + zero_point, lo), hi))
    return out


def layernorm_program(config: ArrayConfig, x: np.ndarray, **fields: object) -> Machine:
    """Place rows of `x` (m x length) as C = ceil(length/dim) spad_in rows each (the unused
    lanes random), run LAYERNORM with `fields` (output rows length + 2 operands apart) and
    return the machine."""
    m, length = x.shape
    dim, ob = config.dim, config.operand_bytes
    chunks = softmax_row_chunks(length, config)
    padded = np.random.default_rng(length).integers(-128, 128, (m, chunks * dim))
    padded[:, :length] = x
    data = padded.astype("<i2" if ob == 2 else np.int8).tobytes()
    instrs: list[Instruction] = [
        Load.dense(LoadTarget.SPAD_IN, 3, m * chunks, X_ADDR, dim * ob, dim),
        LayerNorm(in_row=3, m=m, length=length, ext=Y_ADDR, row_stride1=(length + 2) * ob,
                  **fields),  # type: ignore[arg-type]
        Halt(),
    ]
    machine = Machine(config, MEMORY)
    machine.memory[X_ADDR : X_ADDR + len(data)] = np.frombuffer(data, np.uint8)
    machine.run(instrs)
    return machine


def read_rows(machine: Machine, m: int, length: int) -> np.ndarray:
    ob = machine.config.operand_bytes
    stride = (length + 2) * ob
    raw = [machine.memory[Y_ADDR + i * stride : Y_ADDR + i * stride + length * ob]
           for i in range(m)]
    return np.array(raw).view("<i2" if ob == 2 else np.int8).astype(int)


def _rows(rng: np.random.Generator, m: int, length: int) -> np.ndarray:
    x = rng.integers(-128, 128, (m, length))
    x[0] = x[0, 0]  # (a constant row)
    if m > 1:
        x[1] = np.clip(rng.integers(-2, 3, length) + 50, -128, 127)  # (a narrow one)
    return x


@pytest.mark.parametrize(
    ("config", "m", "length"),
    [(WS, 5, 8), (WS, 3, 13), (WS, 2, 1), (DIM5, 4, 7), (DIM5, 2, 5), (WS, 2, 300),
     (WIDE, 3, 11)],
    ids=["dim8-whole", "dim8-13", "length1", "dim5-7", "dim5-whole", "dim8-300", "2-byte"],
)
@pytest.mark.parametrize("eps", [0, 1, 2**32 - 1])
def test_layernorm_equals_the_python_int_formulas(config: ArrayConfig, m: int, length: int,
                                                  eps: int) -> None:
    rng = np.random.default_rng(m * 1000 + length)
    x = _rows(rng, m, length)
    fields = {**FIELDS, "in_zero_point": -7, "eps": eps}
    machine = layernorm_program(config, x, **fields)
    expected = [reference_layernorm([int(v) for v in row], **fields) for row in x]
    assert read_rows(machine, m, length).tolist() == expected


@pytest.mark.parametrize(("multiplier", "shift"), [(-(2**31), 0), (1518500250, 31),
                                                   (2**31 - 1, -31), (3, -20), (1, 0)])
def test_layernorm_with_any_output_stage(multiplier: int, shift: int) -> None:
    rng = np.random.default_rng(abs(multiplier) % 1000 + shift + 31)
    x = rng.integers(-128, 128, (6, 11))
    fields = {"multiplier": multiplier, "shift": shift, "zero_point": 7, "lo": -100, "hi": 90,
              "in_zero_point": 127, "eps": 5}
    machine = layernorm_program(WS, x, **fields)
    expected = [reference_layernorm([int(v) for v in row], **fields) for row in x]
    assert read_rows(machine, 6, 11).tolist() == expected


def test_the_largest_rows_equal_the_python_int_formulas() -> None:
    """H = 4096 (512 spad_in rows each on dim 8): one outlier (the largest |p|), d = 255 but
    one, half -128 and half 127 (the largest V, 2^38.0: k = 4), random (2^36.4, k = 4)."""
    x = np.full((4, 4096), -128)
    x[0, 0] = 127
    x[1] = 127
    x[1, 7] = -128
    x[2, ::2] = 127
    x[3] = np.random.default_rng(9).integers(-128, 128, 4096)
    fields = {**FIELDS, "in_zero_point": -128, "eps": 0}
    machine = layernorm_program(dataclasses.replace(WS, spad_kib=64), x, **fields)
    expected = [reference_layernorm([int(v) for v in row], **fields) for row in x]
    assert read_rows(machine, 4, 4096).tolist() == expected


def test_a_constant_row_without_eps_writes_the_zero_point() -> None:
    machine = layernorm_program(WS, np.full((2, 9), -40), **FIELDS, in_zero_point=0, eps=0)
    assert read_rows(machine, 2, 9).tolist() == [[3] * 9] * 2


def test_layernorm_flip_sign_writes_uint8() -> None:
    x = np.arange(-8, 8).reshape(2, 8)
    machine = layernorm_program(WS, x, flip_sign=True, **FIELDS)
    expected = [[v + 128 for v in reference_layernorm(list(map(int, row)), 0, 0, **FIELDS)]
                for row in x]
    raw = [machine.memory[Y_ADDR + i * 10 : Y_ADDR + i * 10 + 8].tolist() for i in range(2)]
    assert raw == expected


@pytest.mark.parametrize("config", [WS, DIM5], ids=["dim8", "dim5"])
def test_layernorm_equals_the_reference_operator(config: ArrayConfig) -> None:
    """The machine's rows are systolic.QLayerNorm's with the same fields as attributes."""
    rng = np.random.default_rng(config.dim)
    x = _rows(rng, 6, 37)
    fields = {**FIELDS, "in_zero_point": 20, "eps": 1234}
    machine = layernorm_program(config, x, **fields)
    op = QLayerNorm(Attrs({"multiplier": fields["multiplier"], "shift": fields["shift"],
                           "x_zero_point": 20, "eps": 1234, "y_zero_point": 3, "y_type": 3}),
                    1, "ln")
    np.testing.assert_array_equal(read_rows(machine, 6, 37), op.run([x.astype(np.int8)])[0])


@pytest.mark.parametrize("seed", range(3))
def test_any_order_the_hazards_allow_matches_program_order(seed: int) -> None:
    """LAYERNORM's footprint (its spad_in rows read, its rows written) orders it as needed."""
    rng = np.random.default_rng(seed)
    config = ArrayConfig(rows=4, cols=4, spad_kib=2, acc_kib=2, bus_bytes=8)
    case = next(c for c in (random_program(config, rng, layers=6, activation=True,
                                           softmax=True, layernorm=True) for _ in range(50))
                if sum(isinstance(i, LayerNorm) for i in c.program.instructions) >= 2)
    assert_hazard_orders_match(case, rng)
