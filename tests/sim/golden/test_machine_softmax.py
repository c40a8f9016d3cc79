"""The golden model's SOFTMAX, exp table (TABLE wide) and STORE raw against direct Python-int
computations of docs/isa.md ("SOFTMAX and the exp table", "STORE.raw") and
docs/numeric-contract.md ("Softmax", "Raw accumulators")."""

import dataclasses
import math
from fractions import Fraction

import numpy as np
import pytest

from systolic.config import ArrayConfig
from systolic.isa.instructions import (
    Halt,
    Instruction,
    Load,
    LoadTarget,
    Softmax,
    Store,
    Table,
)
from systolic.isa.params import pack_params
from systolic.isa.requant import quantize_multiplier
from systolic.sim.golden.machine import Machine

from ...support.random_programs import random_program
from .test_machine import assert_hazard_orders_match

WS = ArrayConfig(rows=8, cols=8, spad_kib=16, acc_kib=4)
DIM5 = dataclasses.replace(WS, rows=3, cols=5)
EXP_ADDR, X_ADDR, Y_ADDR, PARAMS_ADDR = 0x0, 0x400, 0x1000, 0x3000
EXP_ROW = 900


def rhe(numerator: int, shift: int) -> int:
    """round_half_to_even(numerator / 2**shift), with exact rationals."""
    return round(Fraction(numerator, 2**shift))


def reference_softmax(x: list[int], table: list[int], multiplier: int, shift: int,
                      zero_point: int, lo: int, hi: int) -> list[int]:
    """docs/isa.md's SOFTMAX formulas for one row, in Python integers."""
    mx = max(x)
    exps = [table[mx - v] for v in x]
    total = sum(exps)
    r = (1 << 32) - 1 if total == 0 else min((1 << 46) // total, (1 << 32) - 1)
    out = []
    for e in exps:
        p = rhe(e * r, 31)
        out.append(min(max(rhe(p * multiplier, 31 + shift) + zero_point, lo), hi))
    return out


def exp_bytes(table: list[int]) -> bytes:
    """The 512 bytes a wide TABLE reads: each entry as a little-endian u16."""
    return b"".join(int(e).to_bytes(2, "little") for e in table)


def exp_table_load(config: ArrayConfig) -> list[Instruction]:
    """LOAD the exp table's 512 bytes at EXP_ADDR into rows from EXP_ROW, then TABLE wide."""
    dim = config.dim
    rows = -(-512 // dim)
    return [Load.dense(LoadTarget.SPAD_IN, EXP_ROW, rows, EXP_ADDR, dim, dim),
            Table(row=EXP_ROW, wide=True)]


def run(config: ArrayConfig, instrs: list[Instruction], data: dict[int, bytes]) -> Machine:
    machine = Machine(config, 0x4000)
    for address, raw in data.items():
        machine.memory[address : address + len(raw)] = np.frombuffer(raw, np.uint8)
    machine.run([*instrs, Halt()])
    return machine


def softmax_program(config: ArrayConfig, x: np.ndarray, table: list[int],
                    **fields: object) -> Machine:
    """Place rows of `x` (m x length) as C = ceil(length/dim) spad_in rows each (the unused
    lanes random), run SOFTMAX with `fields` and return the machine."""
    m, length = x.shape
    dim = config.dim
    chunks = -(-length // dim)
    padded = np.random.default_rng(length).integers(-128, 128, (m, chunks * dim))
    padded[:, :length] = x
    instrs = [
        *exp_table_load(config),
        Load.dense(LoadTarget.SPAD_IN, 3, m * chunks, X_ADDR, dim, dim),
        Softmax(in_row=3, m=m, length=length, ext=Y_ADDR, row_stride1=length + 2,
                **fields),  # type: ignore[arg-type]
    ]
    return run(config, instrs, {EXP_ADDR: exp_bytes(table) + bytes(8),
                                X_ADDR: padded.astype(np.int8).tobytes()})


def read_rows(machine: Machine, m: int, length: int, stride: int) -> np.ndarray:
    out = [machine.memory[Y_ADDR + i * stride : Y_ADDR + i * stride + length] for i in range(m)]
    return np.array(out).view(np.int8).astype(int)


def exp_entries(scale: float) -> list[int]:
    """The mapper's exp table: E[k] = rhe(2^15 exp(-scale k))."""
    return [round(Fraction(2**15 * math.exp(-scale * k))) for k in range(256)]


@pytest.mark.parametrize("config", [WS, DIM5], ids=["dim8", "dim5"])
def test_table_wide_loads_the_exp_table_only(config: ArrayConfig) -> None:
    rng = np.random.default_rng(config.dim)
    table = [int(v) for v in rng.integers(0, 1 << 16, 256)]
    table[:3] = [0xFFFF, 0x8000, 0x00FF]  # bytes with bit 7 set: read as unsigned
    machine = run(config, exp_table_load(config), {EXP_ADDR: exp_bytes(table) + bytes(8)})
    assert machine.exp_table.tolist() == table
    assert not machine.table.any()  # the activation table is not touched


@pytest.mark.parametrize(
    ("config", "m", "length"),
    [(WS, 5, 8), (WS, 3, 13), (WS, 2, 1), (DIM5, 4, 7), (DIM5, 2, 5), (WS, 2, 300)],
    ids=["dim8-whole", "dim8-13", "length1", "dim5-7", "dim5-whole", "dim8-300"],
)
def test_softmax_equals_the_python_int_formulas(config: ArrayConfig, m: int,
                                                length: int) -> None:
    rng = np.random.default_rng(m * 1000 + length)
    x = rng.integers(-128, 128, (m, length))
    x[0, 0] = -128
    if length > 1:
        x[0, 1] = 127  # the whole distance range 0 .. 255
    table = exp_entries(0.05)
    fields = {"multiplier": 1 << 30, "shift": 6, "zero_point": -128, "lo": -128, "hi": 127}
    machine = softmax_program(config, x, table, **fields)
    expected = [reference_softmax([int(v) for v in row], table, **fields) for row in x]
    assert read_rows(machine, m, length, length + 2).tolist() == expected


@pytest.mark.parametrize(("multiplier", "shift"), [(-(2**31), 0), (1518500250, 31),
                                                   (2**31 - 1, -31), (3, -20)])
def test_softmax_with_any_output_stage(multiplier: int, shift: int) -> None:
    rng = np.random.default_rng(abs(multiplier) % 1000 + shift + 31)
    x = rng.integers(-20, 20, (6, 11))
    table = [int(v) for v in rng.integers(0, 1 << 16, 256)]
    fields = {"multiplier": multiplier, "shift": shift, "zero_point": 7, "lo": -100,
              "hi": 90}
    machine = softmax_program(WS, x, table, **fields)
    expected = [reference_softmax([int(v) for v in row], table, **fields) for row in x]
    assert read_rows(machine, 6, 11, 13).tolist() == expected


def test_softmax_row_sum_zero_uses_the_capped_reciprocal() -> None:
    # E is zero beyond distance 0 (and row 1 is one value): S = E[0] * count. E[0] = 0 gives
    # S = 0 (every p = 0: the zero point); E[0] = 1 with one element gives S = 1, r = 2^32 - 1
    # (capped: 2^46 would not fit), p = rhe((2^32 - 1) / 2^31) = 2.
    fields = {"multiplier": 1 << 30, "shift": -1, "zero_point": -5, "lo": -128, "hi": 127}
    x = np.array([[3, 3, 3], [-7, -7, -7]])
    zero = softmax_program(WS, x, [0] * 256, **fields)
    assert read_rows(zero, 2, 3, 5).tolist() == [[-5] * 3] * 2
    one = softmax_program(WS, np.array([[9]]), [1] + [0] * 255, **fields)
    assert reference_softmax([9], [1] + [0] * 255, **fields) == [2 - 5]
    assert read_rows(one, 1, 1, 3).tolist() == [[2 - 5]]


def test_softmax_before_any_wide_table_sees_zeros() -> None:
    x = np.array([[1, 2, 3]])
    machine = run(WS, [Load.dense(LoadTarget.SPAD_IN, 0, 1, X_ADDR, 8, 8),
                       Softmax(in_row=0, m=1, length=3, multiplier=1 << 30, shift=0,
                               zero_point=11, lo=-128, hi=127, ext=Y_ADDR)],
                  {X_ADDR: np.resize(x, 8).astype(np.int8).tobytes()})
    assert read_rows(machine, 1, 3, 3).tolist() == [[11, 11, 11]]


def test_softmax_flip_sign_writes_uint8() -> None:
    x = np.arange(-8, 8).reshape(2, 8)
    table = exp_entries(0.3)
    fields = {"multiplier": 1 << 30, "shift": 6, "zero_point": -128, "lo": -128, "hi": 127}
    machine = softmax_program(WS, x, table, flip_sign=True, **fields)
    expected = [[v + 128 for v in reference_softmax(list(map(int, row)), table, **fields)]
                for row in x]
    raw = [machine.memory[Y_ADDR + i * 10 : Y_ADDR + i * 10 + 8].tolist() for i in range(2)]
    assert raw == expected


def test_softmax_is_within_one_step_of_the_float_softmax() -> None:
    # numeric-contract.md: E from exp(-s_x k), (multiplier, shift) of 1 / (2^15 s_y)
    s_x, s_y, z_y = 0.1, 1 / 256, -128
    multiplier, shift = quantize_multiplier(1 / (2**15 * s_y))
    rng = np.random.default_rng(5)
    x = rng.integers(-128, 128, (8, 24))
    fields = {"multiplier": multiplier, "shift": shift, "zero_point": z_y, "lo": -128,
              "hi": 127}
    machine = softmax_program(WS, x, exp_entries(s_x), **fields)
    got = read_rows(machine, 8, 24, 26)
    e = np.exp(s_x * (x - x.max(axis=1, keepdims=True)))
    ideal = np.clip(np.round(e / e.sum(axis=1, keepdims=True) / s_y) + z_y, -128, 127)
    assert np.abs(got - ideal).max() <= 1


def test_softmax_rows_read_from_the_third_spad_row() -> None:
    # the footprint and the reading agree: row i starts at in_row + i * C
    x = np.array([[5] * 9, [0] * 8 + [100]])  # C = 2 on dim 8
    table = exp_entries(0.05)
    fields = {"multiplier": 1 << 30, "shift": 6, "zero_point": -128, "lo": -128, "hi": 127}
    machine = softmax_program(WS, x, table, **fields)
    got = read_rows(machine, 2, 9, 11).tolist()
    assert got[0] == reference_softmax([5] * 9, table, **fields)
    assert got[1] == reference_softmax([0] * 8 + [100], table, **fields)
    assert got[1][8] > got[1][0]


# -- STORE raw ----------------------------------------------------------------------------------


@pytest.mark.parametrize("config", [WS, dataclasses.replace(WS, input_width=16, acc_width=48)],
                         ids=["8bit", "16bit-acc48"])
def test_store_raw_writes_wrapped_int32_of_acc_plus_bias(config: ArrayConfig) -> None:
    rng = np.random.default_rng(config.acc_width)
    m, n = 5, 6
    limit = 1 << (config.acc_width - 1)
    acc = rng.integers(-limit, limit, (m, config.cols))
    acc[0, :2] = (limit - 1, -limit)
    bias = rng.integers(-(2**31), 2**31, config.cols)
    bias[:2] = (2**31 - 1, -(2**31))  # wraps past both ends
    shifts = np.full(config.cols, 99)  # (not used with raw; invalid otherwise)
    machine = Machine(config, 0x4000)
    machine.memory[PARAMS_ADDR : PARAMS_ADDR + 2 * config.cols * 9] = 0
    params = pack_params(bias, np.zeros(config.cols, dtype=np.int64), np.zeros_like(bias))
    machine.memory[PARAMS_ADDR : PARAMS_ADDR + len(params)] = np.frombuffer(params, np.uint8)
    machine.acc[4 : 4 + m] = acc
    machine.execute(Load.params(1, 1, PARAMS_ADDR, 0))
    machine.shift[1] = shifts
    stride = 4 * n + 3
    machine.execute(Store(acc_row=4, m=m, n=n, param_row=1, zero_point=0, lo=0, hi=0,
                          ext=Y_ADDR, row_stride1=stride, raw=True))
    for i in range(m):
        row = machine.memory[Y_ADDR + i * stride : Y_ADDR + i * stride + 4 * n].tobytes()
        got = [int.from_bytes(row[4 * j : 4 * j + 4], "little", signed=True) for j in range(n)]
        wanted = [(int(acc[i, j]) + int(bias[j]) + 2**31) % 2**32 - 2**31 for j in range(n)]
        assert got == wanted
    assert not machine.memory[Y_ADDR + 4 * n : Y_ADDR + stride].any()  # the gap untouched


@pytest.mark.parametrize("seed", range(4))
def test_any_order_the_hazards_allow_matches_program_order(seed: int) -> None:
    # The exp table is ST-unit state like the activation table: the ST queue's order keeps
    # every SOFTMAX after its TABLE wide (and before the next one).
    rng = np.random.default_rng(seed)
    config = ArrayConfig(rows=4, cols=4, spad_kib=2, acc_kib=2, bus_bytes=8)
    case = next(c for c in (random_program(config, rng, layers=6, activation=True,
                                           softmax=True) for _ in range(50))
                if sum(isinstance(i, Softmax) for i in c.program.instructions) >= 2)
    assert_hazard_orders_match(case, rng)
