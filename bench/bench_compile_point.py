"""Per-point compile speed (not a test): the light ResNet-50 compiled for one configuration.

Runs the mapper passes once on the onnx wheel's light ResNet-50
(onnx/backend/test/data/light/light_resnet50.onnx), then for the configuration (`--array`,
`--dataflow`; default 16x16 WS) prints, each the smallest CPU seconds of `--repeat` runs:

- `compile_model` as a whole, and the cycle model + layer rows after it (one sweep point);
- the instruction checks of `Program` construction alone: the program's instructions
  re-checked from scratch by building a `Program` of them (bulk checks, words encoded), and
  for comparison `check_once` on each instruction plus `encode_words` (`--program-only` prints
  just these);
- a cProfile of one `compile_model`, its `--top` entries by own time and the own time summed
  per source file, so the remaining time can be attributed.

    python bench/bench_compile_point.py [--array 16x16] [--dataflow ws] [--repeat 3] [--top 15]
"""

import argparse
import collections
import cProfile
import pstats
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import onnx

from systolic.commands.compile import integer_model
from systolic.commands.model_loading import load_user_model
from systolic.compare.layer_cycles import accelerator_runs
from systolic.config import ArrayConfig, Dataflow
from systolic.isa.encode_batch import encode_words
from systolic.isa.program import Program
from systolic.mapper.lowering import compile_model
from systolic.mapper.lowering.jobs import forget_schedules
from systolic.simulation.layer_rows import layer_rows

MODEL = Path(onnx.__file__).parent / "backend/test/data/light/light_resnet50.onnx"


def best_cpu(fn: Callable[[], Any], repeat: int) -> tuple[Any, float]:
    """Return fn()'s last result and the smallest CPU seconds of `repeat` calls, each from
    scratch (the layer templates and shared instructions of earlier calls forgotten first)."""
    best, result = float("inf"), None
    for _ in range(repeat):
        forget_schedules()
        start = time.process_time()
        result = fn()
        best = min(best, time.process_time() - start)
    return result, best


def program_checks(program: Program, repeat: int) -> float:
    """The smallest CPU seconds of building `program` again from its instructions with every
    instruction's 'already checked' mark removed first (so every check runs)."""
    best = float("inf")
    for _ in range(repeat):
        for instr in program.instructions:
            instr.__dict__["_checked_for"] = None
        start = time.process_time()
        Program(program.config, program.instructions, program.segments, program.tensors,
                program.layers, program.host_steps)
        best = min(best, time.process_time() - start)
    return best


def former_checks(program: Program, repeat: int) -> tuple[float, float]:
    """The smallest CPU seconds of the former construction's checks (`check_once` on every
    instruction, one by one, marks removed first) and of encoding the words (`encode_words`,
    which the former construction left to the first reader of `Program.words`)."""
    checks, encode = float("inf"), float("inf")
    config = program.config
    for _ in range(repeat):
        for instr in program.instructions:
            instr.__dict__["_checked_for"] = None
        start = time.process_time()
        for instr in program.instructions:
            instr.check_once(config)
        middle = time.process_time()
        encode_words(program.instructions)
        checks, encode = min(checks, middle - start), min(encode, time.process_time() - middle)
    return checks, encode


def profile(integer: Any, config: ArrayConfig, top: int) -> None:
    """Print a cProfile of one `compile_model`: top entries by own time, own time per file."""
    forget_schedules()
    profiler = cProfile.Profile()
    profiler.enable()
    compile_model(integer, config)
    profiler.disable()
    stats = pstats.Stats(profiler)
    stats.sort_stats("tottime").print_stats(top)
    per_file: collections.Counter[str] = collections.Counter()
    for (filename, _, _), (_, _, own, _, _) in stats.stats.items():  # type: ignore[attr-defined]
        per_file[filename.split("/work/main/")[-1]] += own
    total = sum(per_file.values())
    print(f"own time per file (profiled, {total:.2f} s in all):")
    for filename, own in per_file.most_common(top):
        print(f"  {own:7.2f} s  {100 * own / total:5.1f} %  {filename}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--array", default="16x16")
    parser.add_argument("--dataflow", choices=["ws", "os"], default="ws")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--top", type=int, default=15)
    parser.add_argument("--program-only", action="store_true")
    args = parser.parse_args()
    rows, cols = map(int, args.array.split("x"))
    config = ArrayConfig(rows=rows, cols=cols, dataflow=Dataflow(args.dataflow))

    start = time.process_time()
    integer = integer_model(load_user_model(MODEL))
    print(f"light ResNet-50, {args.array} {args.dataflow}: passes {time.process_time() - start:.2f} s"
          f" CPU (once)")  # fmt: skip
    compiled, compile_s = best_cpu(lambda: compile_model(integer, config), args.repeat)
    program = compiled.program
    checks_s = program_checks(program, args.repeat)
    former_s, encode_s = former_checks(program, args.repeat)
    print(f"  {len(program.instructions)} instructions; Program construction (instruction "
          f"checks from scratch, words encoded): {checks_s:.3f} s CPU; one check_once per "
          f"instruction instead: {former_s:.3f} s + encoding the words {encode_s:.3f} s")  # fmt: skip
    if args.program_only:
        return 0
    _, model_s = best_cpu(lambda: layer_rows(compiled, accelerator_runs(compiled, "model", {})),
                          args.repeat)  # fmt: skip
    print(f"  compile {compile_s:.2f} s CPU, cycle model + rows {model_s:.2f} s CPU, "
          f"point total {compile_s + model_s:.2f} s (best of {args.repeat})")  # fmt: skip
    profile(integer, config, args.top)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
