"""The golden model's issue-13 semantics against direct numpy and exact rationals: the
activation table (TABLE, STORE and COPY with `lut`) and ADD's `mul` and `b_broadcast` modes
(docs/isa.md "Activation unit", "ADD modes"; docs/numeric-contract.md "Activation tables",
"Element-wise multiply")."""

import dataclasses
from fractions import Fraction

import numpy as np
import pytest

from systolic.config import ArrayConfig
from systolic.isa.instructions import (
    Add,
    Compute,
    Copy,
    Halt,
    Instruction,
    Load,
    LoadTarget,
    Preload,
    Store,
    Table,
)
from systolic.isa.params import pack_params
from systolic.sim.golden.machine import Machine

from ...support.random_programs import random_program
from .test_machine import assert_hazard_orders_match

WS = ArrayConfig(rows=8, cols=8, spad_kib=16, acc_kib=4)
TABLE_ADDR, X_ADDR, Y_ADDR, W_ADDR, PARAMS_ADDR = 0x0, 0x400, 0x800, 0xC00, 0x1000


def exact_round(numerator: int, shift: int) -> int:
    """round_half_to_even(numerator / 2**(31 + shift)), with exact rationals."""
    return round(Fraction(numerator, 2 ** (31 + shift)))


def table_load(config: ArrayConfig, entries: np.ndarray, row: int, ext: int) -> Load:
    """LOAD the 256 table bytes at `ext` as ceil(256/dim) spad_in rows from `row` (the last
    row reads past entry 255: those elements are ignored by TABLE)."""
    dim = config.dim
    return Load.dense(LoadTarget.SPAD_IN, row, -(-entries.size // dim), ext, dim, dim)


def run(config: ArrayConfig, instrs: list[Instruction], data: dict[int, bytes]) -> Machine:
    machine = Machine(config, 0x2000)
    for address, raw in data.items():
        machine.memory[address : address + len(raw)] = np.frombuffer(raw, np.uint8)
    machine.run([*instrs, Halt()])
    return machine


def read_int8(machine: Machine, address: int, shape: tuple[int, int]) -> np.ndarray:
    size = shape[0] * shape[1]
    return machine.memory[address : address + size].view(np.int8).reshape(shape).astype(int)


@pytest.mark.parametrize("config", [WS, dataclasses.replace(WS, rows=3, cols=5)],
                         ids=["dim8", "dim5"])
def test_copy_lut_maps_every_value_through_the_table(config: ArrayConfig) -> None:
    rng = np.random.default_rng(config.dim)
    table = rng.integers(-128, 128, 256)
    m, lanes = 40, config.dim
    x = rng.integers(-128, 128, (m, lanes))
    x[0, :2] = (-128, 127)  # both ends of the index range
    machine = run(config, [
        table_load(config, table, 100, TABLE_ADDR),
        Table(row=100),
        Load.dense(LoadTarget.SPAD_IN, 0, m, X_ADDR, lanes, lanes),
        Copy(0, m, lanes, Y_ADDR, row_stride1=lanes, lut=True),
    ], {TABLE_ADDR: table.astype(np.int8).tobytes() + bytes(64),
        X_ADDR: x.astype(np.int8).tobytes()})
    np.testing.assert_array_equal(machine.table, table)
    np.testing.assert_array_equal(read_int8(machine, Y_ADDR, (m, lanes)), table[x + 128])


def test_the_table_is_zero_after_reset_and_follows_program_order() -> None:
    rng = np.random.default_rng(3)
    first, second = rng.integers(-128, 128, 256), rng.integers(-128, 128, 256)
    x = rng.integers(-128, 128, (4, 8))
    copy = [Load.dense(LoadTarget.SPAD_IN, 0, 4, X_ADDR, 8, 8)]
    outs = [0x1400, 0x1500, 0x1600]
    machine = run(WS, [
        *copy, Copy(0, 4, 8, outs[0], row_stride1=8, lut=True),
        table_load(WS, first, 40, TABLE_ADDR), Table(row=40),
        Copy(0, 4, 8, outs[1], row_stride1=8, lut=True),
        table_load(WS, second, 40, 0x100), Table(row=40),
        Copy(0, 4, 8, outs[2], row_stride1=8, lut=True),
    ], {TABLE_ADDR: first.astype(np.int8).tobytes(), 0x100: second.astype(np.int8).tobytes(),
        X_ADDR: x.astype(np.int8).tobytes()})
    np.testing.assert_array_equal(read_int8(machine, outs[0], (4, 8)), 0)
    np.testing.assert_array_equal(read_int8(machine, outs[1], (4, 8)), first[x + 128])
    np.testing.assert_array_equal(read_int8(machine, outs[2], (4, 8)), second[x + 128])


def test_copy_lut_with_flip_sign_writes_uint8() -> None:
    table = np.arange(256) - 128  # the identity: y -> y
    x = np.arange(-128, 128).reshape(32, 8)
    machine = run(WS, [
        table_load(WS, table, 64, TABLE_ADDR), Table(row=64),
        Load.dense(LoadTarget.SPAD_IN, 0, 32, X_ADDR, 8, 8),
        Copy(0, 32, 8, Y_ADDR, row_stride1=8, lut=True, flip_sign=True),
    ], {TABLE_ADDR: table.astype(np.int8).tobytes(), X_ADDR: x.astype(np.int8).tobytes()})
    np.testing.assert_array_equal(machine.memory[Y_ADDR : Y_ADDR + 256].reshape(32, 8), x + 128)


def test_store_lut_looks_up_the_clamped_output() -> None:
    rng = np.random.default_rng(7)
    m, k, n = 6, 8, 8
    a, w = rng.integers(-128, 128, (m, k)), rng.integers(-128, 128, (k, n))
    bias = rng.integers(-5000, 5000, n)
    multiplier, shift = rng.integers(2**30, 2**31, n), rng.integers(4, 9, n)
    table = rng.integers(-128, 128, 256)
    zp, lo, hi = 3, -90, 100
    machine = run(WS, [
        table_load(WS, table, 200, TABLE_ADDR), Table(row=200),
        Load.dense(LoadTarget.SPAD_IN, 0, m, X_ADDR, k, k),
        Load.dense(LoadTarget.SPAD_WT, 0, k, W_ADDR, n, n),
        Preload(0, k, n), Compute(0, m, 0),
        Load.params(2, 1, PARAMS_ADDR, 0),
        Store(0, m, n, 2, zp, lo, hi, Y_ADDR, row_stride1=n, lut=True),
    ], {TABLE_ADDR: table.astype(np.int8).tobytes(), X_ADDR: a.astype(np.int8).tobytes(),
        W_ADDR: w.astype(np.int8).tobytes(),
        PARAMS_ADDR: pack_params(bias, multiplier, shift)})
    acc = a @ w
    expected = np.zeros((m, n), dtype=int)
    for (i, j), value in np.ndenumerate(acc):
        q = exact_round((int(value) + int(bias[j])) * int(multiplier[j]), int(shift[j]))
        expected[i, j] = table[min(max(q + zp, lo), hi) + 128]
    np.testing.assert_array_equal(read_int8(machine, Y_ADDR, (m, n)), expected)


def _add_program(a: np.ndarray, b: np.ndarray, **fields: object) -> Machine:
    m, lanes = a.shape
    instrs = [
        Load.dense(LoadTarget.SPAD_IN, 0, m, X_ADDR, lanes, lanes),
        Load.dense(LoadTarget.SPAD_IN, 30, b.shape[0], W_ADDR, lanes, lanes),
        Add(a_row=0, b_row=30, m=m, lanes=lanes, ext=Y_ADDR, row_stride1=lanes,
            **fields),  # type: ignore[arg-type]
    ]
    return run(WS, instrs, {X_ADDR: a.astype(np.int8).tobytes(),
                            W_ADDR: b.astype(np.int8).tobytes()})


@pytest.mark.parametrize(
    ("multiplier_a", "shift"), [(2**30, 0), (1518500250, 3), (-(2**31), -1), (3, -31)]
)
@pytest.mark.parametrize("broadcast", [False, True])
def test_add_mul_is_one_rounding_of_the_exact_product(multiplier_a: int, shift: int,
                                                      broadcast: bool) -> None:
    rng = np.random.default_rng(abs(multiplier_a) % 997 + shift + 31)
    m, lanes = 9, 7
    a = rng.integers(-128, 128, (m, lanes))
    a[0, :2] = (-128, 127)
    b = rng.integers(-128, 128, (1 if broadcast else m, lanes))
    zp_a, zp_b, zp_out, lo, hi = 127, -128, 5, -120, 126
    machine = _add_program(a, b, multiplier_a=multiplier_a, multiplier_b=0, shift=shift,
                           zp_a=zp_a, zp_b=zp_b, zp_out=zp_out, lo=lo, hi=hi, mul=True,
                           b_broadcast=broadcast)
    expected = np.zeros((m, lanes), dtype=int)
    for (i, j), value in np.ndenumerate(a):
        bv = int(b[0 if broadcast else i, j])
        t = (int(value) - zp_a) * (bv - zp_b) * multiplier_a
        expected[i, j] = min(max(exact_round(t, shift) + zp_out, lo), hi)
    np.testing.assert_array_equal(read_int8(machine, Y_ADDR, (m, lanes)), expected)


def test_add_mul_rounds_ties_to_even() -> None:
    # t / 2**31 = (a * b) / 2 with multiplier 2**30, shift 0: odd products are ties.
    a = np.array([[1, 3, 5, -1, -3, 7, 9, 11]])
    b = np.ones((1, 8), dtype=int)
    machine = _add_program(a, b, multiplier_a=2**30, multiplier_b=0, shift=0, zp_a=0, zp_b=0,
                           zp_out=0, lo=-128, hi=127, mul=True)
    np.testing.assert_array_equal(read_int8(machine, Y_ADDR, (1, 8)),
                                  [[0, 2, 2, 0, -2, 4, 4, 6]])


def test_add_b_broadcast_adds_one_row_to_every_row() -> None:
    rng = np.random.default_rng(11)
    m, lanes = 12, 8
    a, b = rng.integers(-128, 128, (m, lanes)), rng.integers(-128, 128, (1, lanes))
    fields = {"multiplier_a": 1518500250, "multiplier_b": -1073741824, "shift": 1,
              "zp_a": -3, "zp_b": 9, "zp_out": -2, "lo": -128, "hi": 127}
    machine = _add_program(a, b, b_broadcast=True, **fields)
    t = (a - fields["zp_a"]) * fields["multiplier_a"] + (b - fields["zp_b"]) * fields[
        "multiplier_b"]
    expected = [[min(max(exact_round(int(v), 1) - 2, -128), 127) for v in row] for row in t]
    np.testing.assert_array_equal(read_int8(machine, Y_ADDR, (m, lanes)), expected)


def _looks_up_after_a_table(instrs: tuple[Instruction, ...]) -> bool:
    tables = [k for k, instr in enumerate(instrs) if isinstance(instr, Table)]
    return bool(tables) and any(getattr(instr, "lut", False) for instr in instrs[tables[0]:])


@pytest.mark.parametrize("seed", range(4))
def test_any_order_the_hazards_allow_matches_program_order(seed: int) -> None:
    # The table is ST-unit state: the ST queue's order (a `dependencies` edge from each ST
    # instruction to the previous one) keeps every lookup after its TABLE.
    rng = np.random.default_rng(seed)
    config = ArrayConfig(rows=4, cols=4, spad_kib=2, acc_kib=2, bus_bytes=8)
    case = next(c for c in (random_program(config, rng, layers=5, activation=True)
                            for _ in range(200))
                if _looks_up_after_a_table(c.program.instructions))
    assert_hazard_orders_match(case, rng)
