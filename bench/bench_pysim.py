"""Measure the Amaranth simulator's speed on the whole accelerator (not a test).

Runs WS and OS programs (LOADs, then many back-to-back array passes, then a STORE)
through `run_program(..., backend="rtl")` on 4x4 and 8x8 arrays and
prints the run time, the set-up time (elaboration: a HALT-only run) and simulated cycles\nper second net of set-up. Usage:

    python bench/bench_pysim.py [--sizes 4 8] [--m 32] [--reps 60]
"""

import argparse
import time

import numpy as np

from systolic.config import ArrayConfig, Dataflow
from systolic.isa.instructions import (
    Compute,
    ComputeOS,
    Halt,
    Instruction,
    Load,
    LoadTarget,
    Preload,
    Store,
)
from systolic.isa.program import Program
from systolic.sim.run.backends import initial_memory, run_program

A_ADDR, B_ADDR, P_ADDR, Y_ADDR = 0x0000, 0x4000, 0x6000, 0x7000


def gemm(config: ArrayConfig, m: int, reps: int) -> tuple[Program, bytearray]:
    """Return a program: LOAD A (m x dim) and B (dim x dim), `reps` array passes over them
    (PRELOAD + COMPUTE of m rows, or COMPUTE.OS tiles), a STORE; and its memory image."""
    rng = np.random.default_rng(0)
    dim = config.dim
    instrs: list[Instruction] = [
        Load.dense(LoadTarget.SPAD_IN, 0, m, A_ADDR, dim, dim),
        Load.dense(LoadTarget.SPAD_WT, 0, dim, B_ADDR, dim, dim),
        Load.params(0, 1, P_ADDR, 0),
    ]
    for rep in range(reps):
        if config.dataflow is Dataflow.WS:
            instrs += [Preload(0, config.rows, config.cols),
                       Compute(0, m, 0, accumulate=rep > 0)]
        else:
            instrs.append(ComputeOS((rep * config.rows) % (m - config.rows + 1), config.rows,
                                    config.cols, dim, 0, 0, accumulate=rep > 0))
    instrs.append(Store(0, config.rows, config.cols, 0, 0, -128, 127, Y_ADDR,
                        row_stride1=config.cols))
    program = Program(config, (*instrs, Halt()))
    image = initial_memory(program, 0x8000)
    image[A_ADDR:A_ADDR + m * dim] = rng.integers(-128, 128, m * dim).astype(np.int8).tobytes()
    image[B_ADDR:B_ADDR + dim * dim] = rng.integers(-128, 128, dim * dim).astype(np.int8).tobytes()
    return program, image


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[4, 8])
    parser.add_argument("--m", type=int, default=32, help="rows of A")
    parser.add_argument("--reps", type=int, default=60, help="array passes")
    args = parser.parse_args()
    print(f"{'array':>6} {'flow':>4} {'cycles':>7} {'seconds':>8} {'setup s':>8} "
          f"{'cycles/s':>9}")
    for size in args.sizes:
        for dataflow in (Dataflow.WS, Dataflow.OS):
            config = ArrayConfig(rows=size, cols=size, dataflow=dataflow, spad_kib=4, acc_kib=4,
                                 mem_latency=8)
            program, image = gemm(config, args.m, args.reps)
            start = time.perf_counter()
            run_program(Program(config, (Halt(),)), image)  # elaboration and set-up only
            setup = time.perf_counter() - start
            start = time.perf_counter()
            result = run_program(program, image)
            seconds = time.perf_counter() - start
            rate = result.total_cycles / max(seconds - setup, 1e-9)
            print(f"{size}x{size:<4} {dataflow.value:>4} {result.total_cycles:>7} "
                  f"{seconds:>8.2f} {setup:>8.2f} {rate:>9.0f}")


if __name__ == "__main__":
    main()
