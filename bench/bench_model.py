"""Measure the analytic cycle model's speed on long synthetic programs (not a test).

Builds a program of about `--instructions` instructions from random layers
(`tests.support.random_programs.synthetic_program`: tiled GEMMs and im2col
convolutions with double-buffered LOADs, STOREs, POOLs, ADDs, COPYs) for a WS and an OS
array, times `ProgramModel.run` on it and prints instructions per second (wall clock and
process CPU time, which is steadier on a busy machine) and the simulated cycles.

`--resnet` instead compiles the onnx wheel's light ResNet-50 for 16x16 WS and OS (default
configuration otherwise) and times `run_model` on it (the `model` backend: cycle model plus
golden values, from the program's memory image and instruction words), with the CPU seconds
of each part (least of `--repeat` runs) and of making the instruction words (once per
program, `Program.words`); `--python` also times the Python cycle model and golden machine
(what runs without a C compiler). Usage:

    python bench/bench_model.py [--instructions 100000] [--size 16] [--scale 4]
    python bench/bench_model.py --resnet [--repeat 3] [--python]
"""

import argparse
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import repository_root  # noqa: F401  (puts the repository root on sys.path)

from systolic.config import ArrayConfig, Dataflow
from systolic.isa.encode_batch import encode_words
from systolic.isa.program import Program
from systolic.sim.golden.machine import Machine
from systolic.sim.result import RunResult
from systolic.sim.run.model_backend import run_golden, run_model
from systolic.sim.timing.program_model import ProgramModel, ProgramTiming
from tests.support.random_programs import synthetic_program


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--instructions", type=int, default=100_000)
    parser.add_argument("--size", type=int, default=16, help="array rows = cols")
    parser.add_argument("--scale", type=int, default=4, help="layer size factor")
    parser.add_argument("--resnet", action="store_true",
                        help="time run_model on ResNet-50 16x16 WS and OS instead")
    parser.add_argument("--repeat", type=int, default=3,
                        help="--resnet: runs of each part (the least CPU time is shown)")
    parser.add_argument("--python", action="store_true",
                        help="--resnet: also time the Python cycle model and golden machine")
    args = parser.parse_args()
    if args.resnet:
        resnet(args.repeat, args.python)
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


def _cpu(action: Callable[[], object], repeat: int) -> tuple[float, object]:
    """Return the least process CPU seconds of `repeat` calls of `action`, and its result."""
    best, result = float("inf"), None
    for _ in range(repeat):
        started = time.process_time()
        result = action()
        best = min(best, time.process_time() - started)
    return best, result


def resnet(repeat: int, python: bool) -> None:
    """Time `run_model` and its parts on the light ResNet-50 at 16x16, WS and OS."""
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from bench_compile import RESNET, load_and_pass

    from systolic.mapper.lowering import compile_model
    from systolic.sim.native.build import load_library, unavailable_reason

    for name in ("facts", "timing", "golden"):
        if load_library(name) is None:
            print(f"native {name} engine unavailable: {unavailable_reason(name)}")
    model = load_and_pass(RESNET)
    for dataflow in (Dataflow.WS, Dataflow.OS):
        config = ArrayConfig(rows=16, cols=16, dataflow=dataflow)
        _resnet_parts(compile_model(model, config).program, repeat, python)


def _resnet_parts(program: Program, repeat: int, python: bool) -> None:
    """Print the CPU seconds of `run_model` on `program` and of each of its parts."""
    config, instructions = program.config, program.instructions
    image = Machine.for_program(program).memory.tobytes()
    encode, words = _cpu(lambda: encode_words(instructions), repeat)
    assert isinstance(words, np.ndarray)
    program.__dict__["words"] = words  # (what Program.words caches)
    timing_cpu, timing = _cpu(
        lambda: ProgramModel(config).run(instructions, words=words), repeat)

    golden_cpu, _ = _cpu(
        lambda: run_golden(program, np.frombuffer(bytearray(image), dtype=np.uint8)), repeat)
    wall = time.perf_counter()
    total_cpu, result = _cpu(lambda: run_model(program, image), repeat)
    wall = (time.perf_counter() - wall) / repeat
    assert isinstance(result, RunResult) and isinstance(timing, ProgramTiming)
    print(f"resnet50 {config.dataflow.value} 16x16: {len(instructions)} instructions, "
          f"{result.total_cycles} cycles: run_model {total_cpu:.3f} s CPU ({wall:.3f} s "
          f"wall, mean of {repeat}) = cycle model {timing_cpu:.3f} s + golden values "
          f"{golden_cpu:.3f} s + the rest; instruction words (made once per program, "
          f"Program.words) {encode:.3f} s", flush=True)
    if not python:
        return
    slow_timing, _ = _cpu(
        lambda: ProgramModel(config, native=False).run(instructions, words=words), 1)

    def python_golden() -> None:
        machine = Machine(config, len(image))
        machine.memory[:] = np.frombuffer(image, dtype=np.uint8)
        machine.run(instructions)

    slow_golden, _ = _cpu(python_golden, 1)
    print(f"  without native code: cycle model {slow_timing:.3f} s, golden values "
          f"{slow_golden:.3f} s CPU", flush=True)


if __name__ == "__main__":
    main()
