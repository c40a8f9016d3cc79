"""Measure the analytic cycle model's speed on long synthetic programs (not a test).

Builds a program of about `--instructions` instructions from random layers
(`systolic.sim.timing.synthetic_programs.synthetic_program`: tiled GEMMs and im2col
convolutions with double-buffered LOADs, STOREs, POOLs, ADDs, COPYs) for a WS and an OS
array, times `ProgramModel.run` on it and prints instructions per second (wall clock and
process CPU time, which is steadier on a busy machine) and the simulated cycles. Usage:

    python bench/bench_model.py [--instructions 100000] [--size 16] [--scale 4]
"""

import argparse
import time

from systolic.sim.timing.program_model import ProgramModel
from systolic.sim.timing.synthetic_programs import synthetic_program

from systolic.config import ArrayConfig, Dataflow


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--instructions", type=int, default=100_000)
    parser.add_argument("--size", type=int, default=16, help="array rows = cols")
    parser.add_argument("--scale", type=int, default=4, help="layer size factor")
    args = parser.parse_args()
    for dataflow in (Dataflow.WS, Dataflow.OS):
        config = ArrayConfig(rows=args.size, cols=args.size, dataflow=dataflow)
        program = synthetic_program(config, args.instructions, scale=args.scale)
        count = len(program.instructions)
        wall, cpu = time.perf_counter(), time.process_time()
        timing = ProgramModel(config).run(program.instructions)
        wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
        print(f"{dataflow.value} {args.size}x{args.size}: {count} instructions, "
              f"{timing.total_cycles} cycles: {wall:.2f} s wall ({count / wall:,.0f} instr/s), "
              f"{cpu:.2f} s CPU ({count / cpu:,.0f} instr/s), "
              f"{timing.rollbacks} merge rollbacks")


if __name__ == "__main__":
    main()
