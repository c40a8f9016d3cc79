"""Measure the analytic cycle model's speed on long synthetic programs (not a test).

Builds a program of about `--instructions` instructions from random layers
(`systolic.sim.timing.synthetic_programs.synthetic_program`: tiled GEMMs and im2col
convolutions with double-buffered LOADs, STOREs, POOLs, ADDs, COPYs) for a WS and an OS
array, times `ProgramModel.run` on it and prints instructions per second (wall clock and
process CPU time, which is steadier on a busy machine) and the simulated cycles.

`--resnet` instead compiles the onnx wheel's light ResNet-50 for 16x16 WS and OS (default
configuration otherwise) and times `run_model` on it (the `model` backend: cycle model plus
golden values, from the program's memory image), with the CPU seconds of each part. Usage:

    python bench/bench_model.py [--instructions 100000] [--size 16] [--scale 4]
    python bench/bench_model.py --resnet
"""

import argparse
import sys
import time
from pathlib import Path

import numpy as np
from systolic.sim.golden.machine import Machine
from systolic.sim.run.model_backend import run_model
from systolic.sim.timing.program_model import ProgramModel
from systolic.sim.timing.synthetic_programs import synthetic_program

from systolic.config import ArrayConfig, Dataflow


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--instructions", type=int, default=100_000)
    parser.add_argument("--size", type=int, default=16, help="array rows = cols")
    parser.add_argument("--scale", type=int, default=4, help="layer size factor")
    parser.add_argument("--resnet", action="store_true",
                        help="time run_model on ResNet-50 16x16 WS and OS instead")
    args = parser.parse_args()
    if args.resnet:
        resnet()
        return
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


def resnet() -> None:
    """Time `run_model` and its two parts on the light ResNet-50 at 16x16, WS and OS."""
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from bench_compile import RESNET, load_and_pass
    from systolic.mapper.lowering import compile_model

    model = load_and_pass(RESNET)
    for dataflow in (Dataflow.WS, Dataflow.OS):
        config = ArrayConfig(rows=16, cols=16, dataflow=dataflow)
        program = compile_model(model, config).program
        image = Machine.for_program(program).memory.tobytes()
        cpu = time.process_time()
        ProgramModel(config).run(program.instructions)
        model_cpu = time.process_time() - cpu
        machine = Machine(config, len(image))
        machine.memory[:] = np.frombuffer(image, dtype=np.uint8)
        cpu = time.process_time()
        machine.run(program.instructions)
        golden_cpu = time.process_time() - cpu
        wall, cpu = time.perf_counter(), time.process_time()
        result = run_model(program, image)
        wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
        print(f"resnet50 {dataflow.value} 16x16: {len(program.instructions)} instructions, "
              f"{result.total_cycles} cycles: run_model {cpu:.2f} s CPU ({wall:.2f} s wall); "
              f"cycle model {model_cpu:.2f} s CPU, golden values {golden_cpu:.2f} s CPU",
              flush=True)


if __name__ == "__main__":
    main()
