"""The golden model of the instruction set against straightforward numpy and exact integers.

Every test builds a real program (LOADs with the DMA's address patterns, PRELOAD/COMPUTE or
COMPUTE.OS, STORE through the output stage, POOL, ADD, COPY, HALT), runs it on `Machine` and
compares whole outputs with an independent oracle: numpy integer matmuls and loops, and
`fractions.Fraction` for rounding (Python's `round` on a Fraction rounds half to even).
"""

import dataclasses
import re
from collections.abc import Iterable
from fractions import Fraction

import numpy as np
import pytest

from systolic.config import ArrayConfig, Dataflow
from systolic.errors import SimulationError
from systolic.ir import DataType
from systolic.isa.hazards import dependencies
from systolic.isa.instructions import (
    Add,
    Compute,
    ComputeOS,
    Copy,
    Halt,
    Instruction,
    Load,
    LoadTarget,
    Pool,
    PoolMode,
    Preload,
    Store,
)
from systolic.isa.params import pack_params
from systolic.isa.program import MemorySegment, Program, TensorPlacement, TensorRole
from systolic.isa.requant import requantize
from systolic.sim.golden.machine import Machine, run_program

from ...support.random_programs import SyntheticProgram

WS = ArrayConfig(rows=8, cols=8, spad_kib=16, acc_kib=4)
OS = dataclasses.replace(WS, rows=4, cols=6, dataflow=Dataflow.OS)
IN, OUT, CONST = TensorRole.INPUT, TensorRole.OUTPUT, TensorRole.CONSTANT
PARAMS_ADDR = 0x8000


def placed(name: str, role: TensorRole, address: int, array_or_shape, dtype=DataType.INT8):
    shape = array_or_shape if isinstance(array_or_shape, tuple) else array_or_shape.shape
    return TensorPlacement.contiguous(name, role, address, shape, dtype)


def exact_round(numerator: int, shift: int) -> int:
    return round(Fraction(numerator, 2 ** (31 + shift)))


def random_params(rng: np.random.Generator, n: int, shifts=(6, 12)):
    bias = rng.integers(-5000, 5000, n)
    multiplier = rng.integers(2**30, 2**31, n)
    shift = rng.integers(*shifts, n)
    return bias, multiplier, shift


# -- GEMM ------------------------------------------------------------------------------------


def ws_gemm(config: ArrayConfig, a: np.ndarray, b: np.ndarray) -> list[Instruction]:
    """K split in chunks of `rows`, double-buffered, accumulated in acc rows 0..m-1."""
    m, k_total = a.shape
    n = b.shape[1]
    instrs: list[Instruction] = []
    for chunk, k0 in enumerate(range(0, k_total, config.rows)):
        k = min(config.rows, k_total - k0)
        in_row, wt_row = (chunk % 2) * m, (chunk % 2) * config.rows
        instrs += [
            Load(
                LoadTarget.SPAD_IN,
                in_row,
                m,
                0,
                row_stride1=k_total,
                k0=k0,
                length=k,
                run=k_total,
                n_mid=1,
            ),
            Load.dense(LoadTarget.SPAD_WT, wt_row, k, 0x1000 + k0 * n, n, n),
            Preload(wt_row, k, n),
            Compute(in_row, m, 0, accumulate=chunk > 0),
        ]
    return instrs


@pytest.mark.parametrize(
    ("config", "m", "k", "n"),
    [
        (WS, 13, 20, 8),
        (WS, 5, 8, 3),
        (WS, 1, 1, 1),
        (dataclasses.replace(WS, rows=4, cols=6), 17, 30, 5),
    ],
)
def test_ws_gemm_and_store(config: ArrayConfig, m: int, k: int, n: int) -> None:
    rng = np.random.default_rng(m * 1000 + k * 10 + n)
    a = rng.integers(-128, 128, (m, k))
    b = rng.integers(-128, 128, (k, n))
    bias, multiplier, shift = random_params(rng, config.cols)
    zp, lo, hi = -7, -100, 120
    store = Store(0, m, n, 3, zp, lo, hi, 0x4000, row_stride1=n)
    program = Program(
        config,
        (*ws_gemm(config, a, b), Load.params(3, 1, PARAMS_ADDR, 0), store, Halt()),
        (
            MemorySegment(0x1000, b.astype(np.int8).tobytes()),
            MemorySegment(PARAMS_ADDR, pack_params(bias, multiplier, shift)),
        ),
        (placed("a", IN, 0, a), placed("y", OUT, 0x4000, (m, n))),
    )
    machine = Machine.for_program(program)
    machine.write_tensor(program.tensor("a"), a)
    machine.run(program.instructions)
    expected = a @ b
    np.testing.assert_array_equal(machine.acc[:m, :n], expected)
    np.testing.assert_array_equal(machine.acc[:m, n:], 0)
    y = machine.read_tensor(program.tensor("y"))
    np.testing.assert_array_equal(
        y, requantize(expected, bias[:n], multiplier[:n], shift[:n], zp, lo, hi)
    )
    # The output stage once more, element by element with exact rationals.
    for (i, j), value in np.ndenumerate(y):
        q = exact_round((int(expected[i, j]) + int(bias[j])) * int(multiplier[j]), int(shift[j]))
        assert value == min(max(q + zp, lo), hi)


def test_compute_is_exact_beyond_float64() -> None:
    """Operands too large for an exact float64 product (written into the scratchpads
    directly) take the int64 path: the result is the exact product, wrapped to acc_width."""
    config = dataclasses.replace(WS, acc_width=64)
    rng = np.random.default_rng(11)
    machine = Machine(config, 64)
    k, m = config.rows, 5
    machine.spad_wt[:k] = rng.integers(-(2**40), 2**40, (k, config.dim))
    machine.spad_in[:m] = rng.integers(-(2**20), 2**20, (m, config.dim))
    machine.run((Preload(0, k, config.cols), Compute(0, m, 0), Halt()))
    a = machine.spad_in[:m, :k].astype(object)
    b = machine.spad_wt[:k, : config.cols].astype(object)
    expected = (a @ b).astype(np.int64)  # |products| < 2**63: no wrap
    np.testing.assert_array_equal(machine.acc[:m, : config.cols], expected)


def test_ws_accumulator_wraps_around() -> None:
    config = dataclasses.replace(WS, acc_width=16)
    rng = np.random.default_rng(5)
    a = rng.choice([-128, 127], (6, 24))
    b = rng.choice([-128, 127], (24, 8))
    program = Program(
        config,
        (*ws_gemm(config, a, b), Halt()),
        (MemorySegment(0x1000, b.astype(np.int8).tobytes()),),
        (placed("a", IN, 0, a),),
    )
    machine = Machine.for_program(program)
    machine.write_tensor(program.tensor("a"), a)
    machine.run(program.instructions)
    exact = a @ b
    assert np.abs(exact).max() >= 2**15  # the test really overflows 16 bits
    np.testing.assert_array_equal(machine.acc[:6], (exact + 2**15) % 2**16 - 2**15)


def test_ws_weights_stay_until_the_next_preload() -> None:
    rng = np.random.default_rng(9)
    a = rng.integers(-128, 128, (4, 8))
    b = rng.integers(-128, 128, (8, 8))
    instrs = ws_gemm(WS, a, b)  # one chunk: LOAD, LOAD, PRELOAD, COMPUTE
    program = Program(
        WS,
        (*instrs, Compute(0, 4, 10), Compute(0, 4, 10, accumulate=True), Halt()),
        (MemorySegment(0x1000, b.astype(np.int8).tobytes()),),
        (placed("a", IN, 0, a),),
    )
    machine = Machine.for_program(program)
    machine.write_tensor(program.tensor("a"), a)
    machine.run(program.instructions)
    np.testing.assert_array_equal(machine.acc[10:14], 2 * (a @ b))


@pytest.mark.parametrize(("m", "k", "n", "split"), [(4, 20, 6, 12), (3, 7, 2, 6), (1, 6, 1, 0)])
def test_os_gemm(m: int, k: int, n: int, split: int) -> None:
    """A in k-chunks of dim operands at in_row + c * a_stride; optionally two COMPUTE.OS."""
    config, dim = OS, OS.dim
    rng = np.random.default_rng(k * 7 + m)
    a = rng.integers(-128, 128, (m, k))
    b = rng.integers(-128, 128, (k, n))
    a_stride = m + 1
    loads = [
        Load(
            LoadTarget.SPAD_IN,
            c * a_stride,
            m,
            0,
            row_stride1=k,
            k0=c * dim,
            length=min(dim, k - c * dim),
            run=k,
            n_mid=1,
        )
        for c in range(-(-k // dim))
    ]
    loads.append(Load.dense(LoadTarget.SPAD_WT, 0, k, 0x1000, n, n))
    if split:
        chunks = split // dim
        computes = [
            ComputeOS(0, m, n, split, 0, 2, a_stride=a_stride if split > dim else 0),
            ComputeOS(
                chunks * a_stride,
                m,
                n,
                k - split,
                split,
                2,
                accumulate=True,
                a_stride=a_stride if k - split > dim else 0,
            ),
        ]
    else:
        computes = [ComputeOS(0, m, n, k, 0, 2, a_stride=a_stride if k > dim else 0)]
    program = Program(
        config,
        (*loads, *computes, Halt()),
        (MemorySegment(0x1000, b.astype(np.int8).tobytes()),),
        (placed("a", IN, 0, a),),
    )
    machine = Machine.for_program(program)
    machine.write_tensor(program.tensor("a"), a)
    machine.acc[2 : 2 + m] = 12345  # overwritten, not accumulated
    machine.run(program.instructions)
    np.testing.assert_array_equal(machine.acc[2 : 2 + m, :n], a @ b)
    np.testing.assert_array_equal(machine.acc[2 : 2 + m, n:], 0)


# -- convolution -----------------------------------------------------------------------------


def conv_program(x_pad: np.ndarray, w: np.ndarray, params, zp_out: int, folded_run: bool):
    """3x3 stride-2 convolution of a zero-point-padded NHWC input, im2col by the DMA."""
    hp, wp, c = x_pad.shape
    kh, kw, _, co = w.shape
    oh, ow = (hp - kh) // 2 + 1, (wp - kw) // 2 + 1
    k_total, pixels = kh * kw * c, oh * ow
    x_addr, w_addr, y_addr = 0, 0x1000, 0x2000
    instrs: list[Instruction] = []
    for chunk, k0 in enumerate(range(0, k_total, WS.rows)):
        k = min(WS.rows, k_total - k0)
        buf = chunk % 2
        element = (
            {"run": kw * c, "n_mid": 1, "stride_mid": 0}
            if folded_run
            else {"run": c, "n_mid": kw, "stride_mid": c}
        )
        instrs += [
            Load(
                LoadTarget.SPAD_IN,
                buf * pixels,
                pixels,
                x_addr,
                n0=ow,
                row_stride0=2 * c,
                row_stride1=2 * wp * c,
                k0=k0,
                length=k,
                stride_outer=wp * c,
                **element,
            ),
            Load.dense(LoadTarget.SPAD_WT, buf * WS.rows, k, w_addr + k0 * co, co, co),
            Preload(buf * WS.rows, k, co),
            Compute(buf * pixels, pixels, 0, accumulate=chunk > 0),
        ]
    # The output goes into the interior of a [oh+2, ow+2, co] buffer with a one-pixel halo.
    instrs += [
        Load.params(0, 1, PARAMS_ADDR, 0),
        Store(
            0,
            pixels,
            co,
            0,
            zp_out,
            -128,
            127,
            y_addr + (ow + 2 + 1) * co,
            n0=ow,
            row_stride0=co,
            row_stride1=(ow + 2) * co,
        ),
        Halt(),
    ]
    segments = (
        MemorySegment(w_addr, w.astype(np.int8).tobytes()),
        MemorySegment(PARAMS_ADDR, pack_params(*params)),
        MemorySegment(y_addr, np.full((oh + 2) * (ow + 2) * co, zp_out, np.int8).tobytes()),
    )
    tensors = (placed("x", IN, x_addr, x_pad), placed("y", OUT, y_addr, (oh + 2, ow + 2, co)))
    return Program(WS, tuple(instrs), segments, tensors)


@pytest.mark.parametrize("folded_run", [False, True])
def test_conv3x3_stride2_with_zero_point_halo(folded_run: bool) -> None:
    rng = np.random.default_rng(42)
    h, w_, c, co, zp_in, zp_out = 7, 9, 3, 5, -5, 3
    x = rng.integers(-128, 128, (h, w_, c))
    x_pad = np.pad(x, ((1, 1), (1, 1), (0, 0)), constant_values=zp_in)
    w = rng.integers(-128, 128, (3, 3, c, co))
    bias, multiplier, shift = random_params(rng, WS.cols, (8, 12))
    # The activation zero point folded into the bias (numeric contract).
    folded = bias.copy()
    folded[:co] -= zp_in * w.reshape(-1, co).sum(axis=0)
    program = conv_program(x_pad, w, (folded, multiplier, shift), zp_out, folded_run)
    y = run_program(program, {"x": x_pad})["y"]

    oh, ow = (h + 2 - 3) // 2 + 1, (w_ + 2 - 3) // 2 + 1
    conv = np.zeros((oh, ow, co), dtype=np.int64)
    for oy in range(oh):
        for ox in range(ow):
            patch = x_pad[2 * oy : 2 * oy + 3, 2 * ox : 2 * ox + 3, :] - zp_in
            conv[oy, ox] = np.einsum("yxc,yxco->o", patch, w)
    expected = requantize(conv, bias[:co], multiplier[:co], shift[:co], zp_out, -128, 127)
    np.testing.assert_array_equal(y[1:-1, 1:-1], expected)
    halo = np.ones(y.shape[:2], bool)
    halo[1:-1, 1:-1] = False
    np.testing.assert_array_equal(y[halo], zp_out)


# -- uint8 -----------------------------------------------------------------------------------


def test_uint8_flip_on_load_and_store() -> None:
    rng = np.random.default_rng(3)
    a_u8 = rng.integers(0, 256, (6, 8))
    b = rng.integers(-128, 128, (8, 4))
    ones = np.ones(8, np.int64)
    instrs = (
        Load.dense(LoadTarget.SPAD_IN, 0, 6, 0, 8, 8, flip_sign=True),
        Load.dense(LoadTarget.SPAD_WT, 0, 8, 0x1000, 4, 4),
        Preload(0, 8, 4),
        Compute(0, 6, 0),
        Load.params(0, 1, PARAMS_ADDR, 0),
        Store(0, 6, 4, 0, 0, -128, 127, 0x2000, row_stride1=4, flip_sign=True),
        Copy(0, 6, 8, 0x3000, row_stride1=8, flip_sign=True),
        Halt(),
    )
    # multiplier 2**30 and shift -1: q = acc * 2**30 / 2**30 = acc, clamped to int8.
    params = pack_params(np.zeros(8, np.int64), ones * 2**30, ones * -1)
    program = Program(
        WS,
        instrs,
        (MemorySegment(0x1000, b.astype(np.int8).tobytes()), MemorySegment(PARAMS_ADDR, params)),
        (
            placed("a", IN, 0, a_u8, DataType.UINT8),
            placed("y", OUT, 0x2000, (6, 4), DataType.UINT8),
            placed("copy", OUT, 0x3000, (6, 8), DataType.UINT8),
        ),
    )
    out = run_program(program, {"a": a_u8})
    np.testing.assert_array_equal(out["copy"], a_u8)  # flipped in, flipped back out
    acc = (a_u8 - 128) @ b
    np.testing.assert_array_equal(out["y"], np.clip(acc, -128, 127) + 128)


# -- pooling ---------------------------------------------------------------------------------


POOLS = [  # kh, kw, sh, sw, pad_top, pad_left, oh, ow over a 6 x 7 tile
    (3, 3, 2, 2, 1, 1, 3, 4),
    (2, 2, 2, 2, 0, 0, 3, 3),
    (3, 2, 1, 2, 0, 1, 4, 4),
    (6, 7, 1, 1, 0, 0, 1, 1),
    (2, 2, 1, 1, -1, -2, 3, 3),  # a tile offset inside the window grid: starts at (1, 2)
]


def pool_program(x: np.ndarray, mode: PoolMode, geometry, **avg) -> Program:
    h, w, c = x.shape
    kh, kw, sh, sw, pt, pl, oh, ow = geometry
    pool = Pool(
        mode,
        0,
        c,
        h,
        w,
        kh,
        kw,
        sh,
        sw,
        pt,
        pl,
        oh,
        ow,
        -120,
        125,
        0x1000,
        n0=ow,
        row_stride0=c,
        row_stride1=ow * c,
        **avg,
    )
    return Program(
        WS,
        (Load.dense(LoadTarget.SPAD_IN, 0, h * w, 0, c, c), pool, Halt()),
        (),
        (placed("x", IN, 0, x), placed("y", OUT, 0x1000, (oh, ow, c))),
    )


def windows(x: np.ndarray, geometry, fill: int):
    """Yield (oy, ox, window) with out-of-tile positions set to `fill`."""
    kh, kw, sh, sw, pt, pl, oh, ow = geometry
    big = 20
    padded = np.pad(x, ((big, big), (big, big), (0, 0)), constant_values=fill)
    for oy in range(oh):
        for ox in range(ow):
            y0, x0 = oy * sh - pt + big, ox * sw - pl + big
            yield oy, ox, padded[y0 : y0 + kh, x0 : x0 + kw].reshape(-1, x.shape[2])


@pytest.mark.parametrize("geometry", POOLS)
def test_max_pool(geometry) -> None:
    x = np.random.default_rng(sum(geometry)).integers(-128, 128, (6, 7, 5))
    y = run_program(pool_program(x, PoolMode.MAX, geometry), {"x": x})["y"]
    expected = np.zeros_like(y)
    for oy, ox, window in windows(x, geometry, -(2**20)):  # padding never wins
        expected[oy, ox] = np.clip(window.max(axis=0), -120, 125)
    np.testing.assert_array_equal(y, expected)


@pytest.mark.parametrize("geometry", POOLS)
def test_average_pool(geometry) -> None:
    x = np.random.default_rng(sum(geometry) + 1).integers(-128, 128, (6, 7, 5))
    zp_in, zp_out, multiplier, shift = 9, -4, 1431655765, 1  # M / 2**32: about 1/3
    avg = {"multiplier": multiplier, "shift": shift, "zp_in": zp_in, "zp_out": zp_out}
    y = run_program(pool_program(x, PoolMode.AVG, geometry, **avg), {"x": x})["y"]
    expected = np.zeros_like(y)
    for oy, ox, window in windows(x, geometry, zp_in):  # a zp_in element adds 0: excluded
        for lane in range(x.shape[2]):
            total = sum(int(v) - zp_in for v in window[:, lane])
            q = exact_round(total * multiplier, shift)
            expected[oy, ox, lane] = min(max(q + zp_out, -120), 125)
    np.testing.assert_array_equal(y, expected)


# -- element-wise add and copy ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("multiplier_a", "multiplier_b", "shift"),
    [(2**30, 2**30, 0), (1518500250, 1073741824, 1), (2**31 - 1, -(2**31), -1), (3, 5, -31)],
)
def test_add(multiplier_a: int, multiplier_b: int, shift: int) -> None:
    rng = np.random.default_rng(abs(multiplier_a) % 1000 + shift + 31)
    a = rng.integers(-128, 128, (9, 6))
    b = rng.integers(-128, 128, (9, 6))
    zp_a, zp_b, zp_out, lo, hi = 11, -20, 5, -128, 127
    instrs = (
        Load.dense(LoadTarget.SPAD_IN, 0, 9, 0, 6, 6),
        Load.dense(LoadTarget.SPAD_IN, 20, 9, 0x100, 6, 6),
        Add(
            0,
            20,
            9,
            6,
            multiplier_a,
            multiplier_b,
            shift,
            zp_a,
            zp_b,
            zp_out,
            lo,
            hi,
            0x1000,
            row_stride1=6,
        ),
        Halt(),
    )
    program = Program(
        WS,
        instrs,
        (),
        (placed("a", IN, 0, a), placed("b", IN, 0x100, b), placed("y", OUT, 0x1000, (9, 6))),
    )
    y = run_program(program, {"a": a, "b": b})["y"]
    expected = np.zeros_like(y)
    for (i, j), _ in np.ndenumerate(y):
        total = (int(a[i, j]) - zp_a) * multiplier_a + (int(b[i, j]) - zp_b) * multiplier_b
        expected[i, j] = min(max(exact_round(total, shift) + zp_out, lo), hi)
    np.testing.assert_array_equal(y, expected)


def test_transpose_by_strided_load_and_copy() -> None:
    x = np.random.default_rng(1).integers(-128, 128, (5, 7))
    # Row j of spad_in is column j of x: element i at offset i * 7.
    load = Load(
        LoadTarget.SPAD_IN, 0, 7, 0, row_stride1=1, length=5, run=1, n_mid=1, stride_outer=7
    )
    copy = Copy(0, 7, 5, 0x100, row_stride1=5)
    program = Program(
        WS, (load, copy, Halt()), (), (placed("x", IN, 0, x), placed("t", OUT, 0x100, (7, 5)))
    )
    np.testing.assert_array_equal(run_program(program, {"x": x})["t"], x.T)


def test_wide_operands_are_little_endian_and_truncated() -> None:
    config = dataclasses.replace(WS, input_width=12, weight_width=10)
    a = np.array([[2047, -2048, 5000, -1]])  # 5000 keeps its low 12 bits: 904
    b = np.array([[1], [1], [1], [511]])
    instrs = (
        Load.dense(LoadTarget.SPAD_IN, 0, 1, 0, 8, 4),
        Load.dense(LoadTarget.SPAD_WT, 0, 4, 0x100, 2, 1),
        Preload(0, 4, 1),
        Compute(0, 1, 0),
        Copy(0, 1, 4, 0x200, row_stride1=8),
        Halt(),
    )
    program = Program(
        config,
        instrs,
        (MemorySegment(0x100, b.astype("<i2").tobytes()),),
        (
            placed("a", IN, 0, a, DataType.INT16),
            placed("c", OUT, 0x200, (1, 4), DataType.INT16),
        ),
    )
    machine = Machine.for_program(program)
    machine.write_tensor(program.tensor("a"), a)
    machine.run(program.instructions)
    assert machine.acc[0, 0] == 2047 - 2048 + 904 - 511
    np.testing.assert_array_equal(
        machine.read_tensor(program.tensor("c")), [[2047, -2048, 904, -1]]
    )


# -- ordering --------------------------------------------------------------------------------


def pipeline_program() -> tuple[Program, np.ndarray]:
    """A convolution, then a LOAD of its output (RAW through external memory), ADD and COPY."""
    rng = np.random.default_rng(8)
    x_pad = rng.integers(-128, 128, (7, 7, 2))
    w = rng.integers(-128, 128, (3, 3, 2, 4))
    params = random_params(rng, WS.cols, (8, 10))
    conv = conv_program(x_pad, w, params, 0, folded_run=False)
    body = list(conv.instructions[:-1])
    y = conv.tensor("y")
    body += [
        Load.dense(LoadTarget.SPAD_IN, 0, 25, y.address, 4, 4),  # reuses rows the conv read
        Add(0, 0, 25, 4, 2**30, 2**30, 0, 0, 0, 0, -128, 127, 0x3000, row_stride1=4),
        Copy(5, 10, 4, 0x2000, row_stride1=4),  # overwrites part of the conv output
        Halt(),
    ]
    return dataclasses.replace(conv, instructions=tuple(body)), x_pad


def run_in_order(program: Program, x_pad: np.ndarray, order) -> np.ndarray:
    machine = Machine.for_program(program, 0x9000)
    machine.write_tensor(program.tensor("x"), x_pad)
    for index in order:
        machine.execute(program.instructions[index])
    return machine.memory.copy()


def hazard_orders(deps: list[set[int]], rng: np.random.Generator,
                  count: int) -> list[list[int]]:  # fmt: skip
    """Return `count` random orders of instructions 0 .. len(deps) - 1 in which each comes
    after the instructions of its `deps` entry (the orders the hardware's hazards allow)."""
    orders = []
    for _ in range(count):
        done: list[int] = []
        while len(done) < len(deps):
            ready = [i for i in range(len(deps)) if i not in done and deps[i] <= set(done)]
            done.append(int(rng.choice(ready)))
        orders.append(done)
    return orders


def assert_hazard_orders_match(case: SyntheticProgram, rng: np.random.Generator,
                               count: int = 5) -> None:  # fmt: skip
    """Run `case`'s instructions in `count` orders its hazards allow (`hazard_orders`); each
    must leave memory as program order does."""
    instructions = case.program.instructions

    def memory_after(order: Iterable[int]) -> np.ndarray:
        machine = Machine(case.program.config, len(case.memory))
        machine.memory[:] = np.frombuffer(bytes(case.memory), np.uint8)
        for index in order:
            machine.execute(instructions[index])
        return machine.memory

    deps = dependencies(instructions, case.program.config)
    reference = memory_after(range(len(deps)))
    for order in hazard_orders(deps, rng, count):
        np.testing.assert_array_equal(memory_after(order), reference)


def test_any_order_the_hazards_allow_matches_program_order() -> None:
    program, x_pad = pipeline_program()
    deps = dependencies(program.instructions, program.config)
    reference = run_in_order(program, x_pad, range(len(program.instructions)))
    rng = np.random.default_rng(0)
    orders = set()
    for done in hazard_orders(deps, rng, 20):
        orders.add(tuple(done))
        np.testing.assert_array_equal(run_in_order(program, x_pad, done), reference)
    assert len(orders) > 1  # the units really overlap
    # Breaking one recorded dependency changes the result: the edges are not decoration.
    copy_index = len(program.instructions) - 2
    add_index = copy_index - 1
    assert add_index - 1 in deps[add_index]  # the ADD waits for the LOAD of the stored output
    broken = [i for i in range(len(deps)) if i != add_index - 1]
    broken.insert(0, add_index - 1)  # the LOAD runs before the convolution stored anything
    assert not np.array_equal(run_in_order(program, x_pad, broken), reference)


# -- errors ----------------------------------------------------------------------------------


def test_runtime_errors() -> None:
    machine = Machine(WS, 64)
    with pytest.raises(SimulationError, match=r"^LOAD accesses external bytes 60\.\.67, beyond"):
        machine.execute(Load.dense(LoadTarget.SPAD_IN, 0, 1, 60, 8, 8))
    with pytest.raises(SimulationError, match=r"^the program ended without HALT$"):
        machine.run([Compute(0, 1, 0)])
    machine.shift[2, 1] = 40
    message = (
        "STORE uses params row 2 whose lane 1 has shift 40, outside -31..31; fix the params image"
    )
    with pytest.raises(SimulationError, match=f"^{re.escape(message)}$"):
        machine.execute(Store(0, 1, 4, 2, 0, -128, 127, 0))
    machine.execute(Halt())
    with pytest.raises(SimulationError, match=r"^COMPUTE executed after HALT$"):
        machine.execute(Compute(0, 1, 0))
    program = Program(WS, (Halt(),), (), (placed("a", IN, 0, (2, 2)),))
    with pytest.raises(SimulationError, match=r"^the program takes inputs \['a'\], not \[\]$"):
        run_program(program, {})


@pytest.mark.parametrize("magnitude", [2**7, 2**20, 2**26, 2**40])
def test_compute_os_is_exact_at_any_magnitude(magnitude: int) -> None:
    """State written directly, beyond the operand widths: small operands take the float64
    path, larger ones the int64 path, exact up to the wrap of a 64-bit accumulator."""
    config = dataclasses.replace(OS, acc_width=64)
    rng = np.random.default_rng(magnitude % 1000)
    dim, m, n, k = config.dim, 3, 5, 3 * config.dim - 2
    machine = Machine(config, 64)
    machine.spad_in[: 3 * (m + 1)] = rng.integers(-magnitude, magnitude, (3 * (m + 1), dim))
    machine.spad_wt[:k] = rng.integers(-magnitude, magnitude, (k, dim))
    machine.run((ComputeOS(0, m, n, k, 0, 4, a_stride=m + 1), Halt()))
    a = np.hstack([machine.spad_in[c * (m + 1) : c * (m + 1) + m] for c in range(3)])[:, :k]
    exact = a.astype(object) @ machine.spad_wt[:k, :n].astype(object)
    wrapped = (exact + 2**63) % 2**64 - 2**63
    np.testing.assert_array_equal(machine.acc[4 : 4 + m, :n], wrapped.astype(np.int64))
    np.testing.assert_array_equal(machine.acc[4 : 4 + m, n:], 0)


def test_store_of_accumulators_beyond_int32() -> None:
    """64-bit accumulators near 2**62 reach the output stage unchanged (its exact path)."""
    config = dataclasses.replace(WS, acc_width=64)
    machine = Machine(config, 256)
    acc = np.arange(4)[:, None] * 2**60 - 2**62 + np.arange(8)
    machine.acc[:4] = acc
    machine.bias[0], machine.multiplier[0], machine.shift[0] = 7, 2**30, 20
    machine.run((Store(0, 4, 8, 0, 3, -128, 127, 0, row_stride1=8, flip_sign=True), Halt()))
    expected = requantize(acc, 7, 2**30, 20, 3, -128, 127).astype(np.uint8) ^ 0x80
    np.testing.assert_array_equal(machine.memory[:32].reshape(4, 8), expected)


def _stored_program(*tail: Instruction) -> list[Instruction]:
    """A 4 x 8 WS product stored at 0x100 with params row 0, then `tail`."""
    return [Load.params(0, 4, PARAMS_ADDR, 9 * WS.cols),
            Load.dense(LoadTarget.SPAD_IN, 0, 4, 0, 8, 8),
            Load.dense(LoadTarget.SPAD_WT, 0, 8, 0x40, 8, 8), Preload(0, 8, 8),
            Compute(0, 4, 0), Store(0, 4, 8, 0, 0, -128, 127, 0x100, row_stride1=8), *tail]


def _errored_run(program: list[Instruction], setup=None) -> tuple[str, Machine]:
    """Run `program` on a random image with valid params rows 0..3; return the error."""
    rng = np.random.default_rng(21)
    machine = Machine(WS, 0x9000)
    machine.memory[:0x100] = rng.integers(0, 256, 0x100)
    packed = pack_params(*(row.reshape(4, WS.cols) for row in random_params(rng, 4 * WS.cols)))
    machine.memory[PARAMS_ADDR : PARAMS_ADDR + len(packed)] = np.frombuffer(packed, np.uint8)
    if setup is not None:
        setup(machine)
    with pytest.raises((SimulationError, ValueError)) as error:
        machine.run(program)
    return str(error.value), machine


def _bad_shift(machine: Machine) -> None:
    machine.memory[PARAMS_ADDR + 9 * WS.cols * 3 + 8 * WS.cols + 2] = 40  # row 3, lane 2


def _bad_bias(machine: Machine) -> None:
    machine.bias[5, 1] = 2**40


_LARGER = "give Machine a larger memory_size"
FAILING = [
    (Store(0, 4, 8, 3, 0, -128, 127, 0x100), _bad_shift,
     "STORE uses params row 3 whose lane 2 has shift 40, outside -31..31; fix the params image"),
    (Store(0, 2, 8, 5, 0, -128, 127, 0x100), _bad_bias,
     "bias must lie in [-2147483648, 2147483647]"),
    (Store(0, 4, 8, 0, 0, -128, 127, 0x8FF0, row_stride1=8), None,
     "STORE accesses external bytes 36848..36879, beyond the 36864 bytes of simulated memory; "
     + _LARGER),
    (Load.dense(LoadTarget.SPAD_IN, 0, 2, 0x8FF8, 8, 8), None,
     "LOAD accesses external bytes 36856..36871, beyond the 36864 bytes of simulated memory; "
     + _LARGER),
]


@pytest.mark.parametrize(("instr", "setup", "expected"), FAILING)
def test_a_run_stops_at_the_first_error_with_the_earlier_instructions_applied(
        instr: Instruction, setup, expected: str) -> None:
    """A failing instruction leaves the state as the instructions before it made it."""
    message, complete = _errored_run(_stored_program(), setup)
    assert message == "the program ended without HALT"
    message, machine = _errored_run(_stored_program(instr, Halt()), setup)
    assert message == expected
    assert not machine.halted
    for mine, theirs in [(machine.memory, complete.memory), (machine.spad_in, complete.spad_in),
                         (machine.acc, complete.acc), (machine.shift, complete.shift)]:
        np.testing.assert_array_equal(mine, theirs)


def test_a_halted_machine_runs_nothing() -> None:
    halted = Machine(WS, 64)
    halted.run([Halt()])
    with pytest.raises(SimulationError, match=r"^COMPUTE executed after HALT$"):
        halted.run([Compute(0, 1, 0)])
