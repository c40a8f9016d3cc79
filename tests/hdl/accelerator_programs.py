"""Whole programs for the accelerator tests, built with the `systolic.isa` classes.

Each builder returns a `Program` whose memory image (`initial_memory`) holds random operands;
`golden_image` runs it on `systolic.sim.golden.machine.Machine`, the oracle the RTL's final
external memory must equal byte for byte.

External layout: A (M x K) at `A_ADDR`, B (K x N) at `B_ADDR`, params rows at `P_ADDR`,
outputs from `Y_ADDR`; elements of `operand_bytes` bytes, row-major.
"""

import dataclasses

import numpy as np

from systolic.config import ArrayConfig, Dataflow
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
from systolic.isa.program import MemorySegment, Program
from systolic.sim.golden.machine import Machine
from systolic.sim.run.backends import initial_memory

A_ADDR, B_ADDR, P_ADDR, Y_ADDR = 0x0000, 0x1000, 0x2000, 0x3000
MEMORY_BYTES = 0x4000


def small_config(rows: int, cols: int, dataflow: Dataflow = Dataflow.WS, *,
                 mem_latency: int = 1, bus_bytes: int = 8, **extra: int) -> ArrayConfig:
    """Return a configuration with small memories (fast to simulate)."""
    dim = max(rows, cols)
    spad_kib = max(1, -(-2 * (rows + cols) * dim // 1024), extra.pop("spad_kib", 1))
    acc_kib = max(1, -(-2 * rows * cols * 4 // 1024), extra.pop("acc_kib", 1))
    return ArrayConfig(rows=rows, cols=cols, dataflow=dataflow, spad_kib=spad_kib,
                       acc_kib=acc_kib, mem_latency=mem_latency, bus_bytes=bus_bytes, **extra)


def operands(rng: np.random.Generator, m: int, k: int, n: int,
             extreme: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """Return random int8 A (m x k) and B (k x n); `extreme`: all -128 (largest sums)."""
    if extreme:
        return np.full((m, k), -128), np.full((k, n), -128)
    return rng.integers(-128, 128, (m, k)), rng.integers(-128, 128, (k, n))


def params_segment(rng: np.random.Generator, config: ArrayConfig, tiles: int) -> MemorySegment:
    """Return `tiles` random params rows (one per N tile) at `P_ADDR`."""
    lanes = tiles * config.cols
    bias = rng.integers(-5000, 5000, lanes)
    multiplier = rng.integers(2**30, 2**31, lanes)
    shift = rng.integers(-2, 16, lanes)
    data = b"".join(
        pack_params(bias[t * config.cols:][:config.cols], multiplier[t * config.cols:][:config.cols],
                    shift[t * config.cols:][:config.cols])
        for t in range(tiles))
    return MemorySegment(P_ADDR, data)


def _store(config: ArrayConfig, acc_row: int, m0: int, mt: int, n0: int, nt: int, tile: int,
           n_total: int) -> Store:
    ob = config.operand_bytes
    return Store(acc_row, mt, nt, tile, -3, -120, 125, Y_ADDR + (m0 * n_total + n0) * ob,
                 row_stride1=n_total * ob)


def gemm_program(config: ArrayConfig, a: np.ndarray, b: np.ndarray, rng: np.random.Generator,
                 *, k_chunk: int | None = None, single_buffer: bool = False) -> Program:
    """Return Y = requant(A @ B) tiled for `config`'s dataflow, K split into chunks.

    WS: K chunks of at most `rows` (PRELOAD + COMPUTE, accumulating), N tiles of `cols`, all M
    rows per COMPUTE. OS: M tiles of `rows`, N tiles of `cols`, K chunks of `k_chunk`
    (default 2·dim, so chunks beyond `dim` use `a_stride`). Operand buffers alternate between two
    halves (double buffering) unless `single_buffer`, which makes every LOAD wait for the
    instruction still reading its rows.
    """
    m_total, k_total = a.shape
    n_total = b.shape[1]
    ob, dim = config.operand_bytes, config.dim
    n_tiles = -(-n_total // config.cols)
    instrs: list[Instruction] = [Load.params(0, n_tiles, P_ADDR, 9 * config.cols)]
    buffer = 0
    if config.dataflow is Dataflow.WS:
        chunk = k_chunk or config.rows
        for tile, n0 in enumerate(range(0, n_total, config.cols)):
            nt = min(config.cols, n_total - n0)
            acc_row = 0 if single_buffer else (tile % 2) * m_total
            for c, k0 in enumerate(range(0, k_total, chunk)):
                kc = min(chunk, k_total - k0)
                half = 0 if single_buffer else buffer % 2
                buffer += 1
                in_row, wt_row = half * m_total, half * config.rows
                instrs += [
                    Load.dense(LoadTarget.SPAD_IN, in_row, m_total, A_ADDR, k_total * ob, kc,
                               k0=k0),
                    Load.dense(LoadTarget.SPAD_WT, wt_row, kc, B_ADDR + (k0 * n_total + n0) * ob,
                               n_total * ob, nt),
                    Preload(wt_row, kc, nt),
                    Compute(in_row, m_total, acc_row, accumulate=c > 0),
                ]
            instrs.append(_store(config, acc_row, 0, m_total, n0, nt, tile, n_total))
    else:
        chunk = k_chunk or 2 * dim
        for m0 in range(0, m_total, config.rows):
            mt = min(config.rows, m_total - m0)
            for tile, n0 in enumerate(range(0, n_total, config.cols)):
                nt = min(config.cols, n_total - n0)
                acc_row = 0 if single_buffer else (buffer % 2) * config.rows
                for c, k0 in enumerate(range(0, k_total, chunk)):
                    kc = min(chunk, k_total - k0)
                    half = 0 if single_buffer else buffer % 2
                    buffer += 1
                    parts = -(-kc // dim)
                    a_stride = mt if parts > 1 else 0
                    in_row, wt_row = half * -(-chunk // dim) * config.rows, half * chunk
                    for p in range(parts):
                        instrs.append(Load.dense(
                            LoadTarget.SPAD_IN, in_row + p * a_stride, mt,
                            A_ADDR + m0 * k_total * ob, k_total * ob,
                            min(dim, kc - p * dim), k0=k0 + p * dim))
                    instrs += [
                        Load.dense(LoadTarget.SPAD_WT, wt_row, kc,
                                   B_ADDR + (k0 * n_total + n0) * ob, n_total * ob, nt),
                        ComputeOS(in_row, mt, nt, kc, wt_row, acc_row, a_stride=a_stride,
                                  accumulate=c > 0),
                    ]
                instrs.append(_store(config, acc_row, m0, mt, n0, nt, tile, n_total))
    segments = (
        MemorySegment(A_ADDR, _to_bytes(config, a)),
        MemorySegment(B_ADDR, _to_bytes(config, b)),
        params_segment(rng, config, n_tiles),
    )
    return Program(config, (*instrs, Halt()), segments)


def _to_bytes(config: ArrayConfig, values: np.ndarray) -> bytes:
    dtype = np.dtype("<i2") if config.operand_bytes == 2 else np.dtype("i1")
    return np.asarray(values).astype(dtype).tobytes()


def vector_program(config: ArrayConfig, rng: np.random.Generator, h: int, w: int,
                   lanes: int) -> Program:
    """Return LOAD of an h x w x lanes tile and a second tile, then POOL MAX, POOL AVG,
    ADD and COPY of them to external memory."""
    ob = config.operand_bytes
    pixels = h * w
    x = rng.integers(-128, 128, (pixels, lanes))
    z = rng.integers(-128, 128, (pixels, lanes))
    oh, ow = (h + 1) // 2, (w + 1) // 2
    out = Y_ADDR
    instrs: list[Instruction] = [
        Load.dense(LoadTarget.SPAD_IN, 0, pixels, A_ADDR, lanes * ob, lanes),
        Load.dense(LoadTarget.SPAD_IN, pixels, pixels, B_ADDR, lanes * ob, lanes),
        Pool(PoolMode.MAX, 0, lanes, h, w, 3, 3, 2, 2, 1, 1, oh, ow, -100, 110, out, n0=ow,
             row_stride0=lanes * ob, row_stride1=ow * lanes * ob),
        Pool(PoolMode.AVG, 0, lanes, h, w, 2, 2, 2, 2, 0, 0, h // 2 or 1, w // 2 or 1, -128, 127,
             out + 0x200, row_stride1=lanes * ob, multiplier=2**30, shift=1, zp_in=3, zp_out=-2),
        Add(0, pixels, pixels, lanes, 2**30, -(2**29), 0, 5, -4, 1, -128, 127, out + 0x400,
            row_stride1=lanes * ob),
        Copy(pixels, pixels, lanes, out + 0x600, row_stride1=(lanes + 1) * ob),
        Halt(),
    ]
    segments = (MemorySegment(A_ADDR, _to_bytes(config, x)),
                MemorySegment(B_ADDR, _to_bytes(config, z)))
    return Program(config, tuple(instrs), segments)


def program_image(program: Program) -> bytearray:
    """Return the program's initial external memory (`MEMORY_BYTES`)."""
    return initial_memory(program, MEMORY_BYTES)


def golden_image(program: Program, image: bytes | bytearray) -> bytes:
    """Return external memory after running `program` on the golden machine from `image`."""
    machine = Machine(program.config, len(image))
    machine.memory[:] = np.frombuffer(bytes(image), np.uint8)
    machine.run(program.instructions)
    return machine.memory.tobytes()


def with_latency(config: ArrayConfig, mem_latency: int) -> ArrayConfig:
    """Return `config` with another external read latency."""
    return dataclasses.replace(config, mem_latency=mem_latency)


def mixed_gemm_program(config: ArrayConfig, a: np.ndarray, b: np.ndarray,
                       rng: np.random.Generator, *, y_offset: int = 0x800) -> Program:
    """Return, for a `Dataflow.BOTH` configuration, Y = requant(A @ B) computed weight-
    stationary (outputs at `Y_ADDR`), then output-stationary (outputs `y_offset` bytes further),
    then weight-stationary again (over the first outputs): three changes of dataflow."""
    ws = gemm_program(dataclasses.replace(config, dataflow=Dataflow.WS), a, b, rng)
    os = gemm_program(dataclasses.replace(config, dataflow=Dataflow.OS), a, b, rng)
    os_body = [dataclasses.replace(i, ext=i.ext + y_offset) if isinstance(i, Store) else i
               for i in os.instructions[:-1]]
    body = (*ws.instructions[:-1], *os_body, *ws.instructions[:-1])
    return Program(config, (*body, Halt()), ws.segments)
