"""Measure the whole user flow's speed (compile, cycle model, golden values) and prove results.

For every model (the light ResNet-50 of the onnx wheel at 16x16 WS and OS, and the small models
of tests/models at 8x8 WS and OS) prints: CPU and wall seconds of the mapper passes, of
`compile_model`, of `CompiledModel.save`, the instruction count, the seconds of the analytic
cycle model (`ProgramModel.run`, timing only) and of the golden machine (values only, whole
program from a seeded random input image), and the total cycles.

`--save DIR` writes, per case, the program bytes (`CompiledModel.save`), the model's
per-instruction accept/issue/complete times, total cycles and counters, and the golden
machine's final memory image (`.npz`); `--check DIR` compares a run with such a baseline:
programs byte-identical, times equal, golden memory identical (or, when the instruction count
changed, memory identical and total cycles not higher). Usage:

    python bench/bench_compile.py [--only resnet|small] [--save DIR | --check DIR]
"""

import argparse
import hashlib
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import onnx

from systolic.commands.compile import integer_model
from systolic.commands.model_loading import load_user_model
from systolic.config import ArrayConfig, Dataflow
from systolic.mapper.lowering import CompiledModel, compile_model
from systolic.sim.golden.machine import Machine
from systolic.sim.timing.program_model import ProgramModel

RESNET = Path(onnx.__file__).parent / "backend/test/data/light/light_resnet50.onnx"
MODELS = Path(__file__).resolve().parent.parent / "tests" / "models"


def cases(only: str | None) -> Iterator[tuple[str, Path, ArrayConfig]]:
    """Yield (label, model path, config) for every benchmarked case."""
    if only in (None, "resnet"):
        for dataflow in (Dataflow.WS, Dataflow.OS):
            yield (f"resnet50_{dataflow.value}", RESNET,
                   ArrayConfig(rows=16, cols=16, dataflow=dataflow))
    if only in (None, "small"):
        for path in sorted(MODELS.glob("*.onnx")):
            for dataflow in (Dataflow.WS, Dataflow.OS):
                yield (f"{path.stem}_{dataflow.value}", path,
                       ArrayConfig(rows=8, cols=8, dataflow=dataflow))


def timed(fn: Callable[..., Any], *args: Any) -> tuple[Any, float, float]:
    """Return fn(*args)'s result, its CPU seconds and its wall seconds."""
    cpu, wall = time.process_time(), time.perf_counter()
    result = fn(*args)
    return result, time.process_time() - cpu, time.perf_counter() - wall


def load_and_pass(path: Path) -> Any:
    """Load the model and run the mapper passes (what `systolic compile` does first)."""
    return integer_model(load_user_model(path))


def golden_memory(compiled: CompiledModel) -> np.ndarray:
    """Run the whole program on the golden machine from the image plus seeded random bytes in
    every input placement's span; return the final memory."""
    program = compiled.program
    machine = Machine.for_program(program)
    rng = np.random.default_rng(0)
    for placement in compiled.inputs:
        machine.memory[placement.address : placement.end] = rng.integers(
            0, 256, placement.end - placement.address, dtype=np.uint8)
    machine.run(program.instructions)
    return machine.memory


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", choices=("resnet", "small"))
    parser.add_argument("--save", type=Path)
    parser.add_argument("--check", type=Path)
    parser.add_argument("--no-golden", action="store_true", help="skip the golden machine run")
    args = parser.parse_args()
    failures = 0
    for label, path, config in cases(args.only):
        model, passes_cpu, passes_wall = timed(load_and_pass, path)
        compiled, compile_cpu, compile_wall = timed(compile_model, model, config)
        with tempfile.TemporaryDirectory() as tmp:
            target = Path(tmp) / "prog.pb"
            _, save_cpu, _ = timed(compiled.save, target)
            data = target.read_bytes()
        program = compiled.program
        timing, model_cpu, model_wall = timed(ProgramModel(config).run, program.instructions)
        times = np.array([timing.accept, timing.issue, timing.complete], dtype=np.int64)
        memory, golden_cpu, golden_wall = (None, 0.0, 0.0)
        if not args.no_golden:
            memory, golden_cpu, golden_wall = timed(golden_memory, compiled)
        print(f"{label:<22} passes {passes_cpu:6.2f}/{passes_wall:6.2f} s  compile "
              f"{compile_cpu:6.2f}/{compile_wall:6.2f} s  save {save_cpu:5.2f} s  "
              f"{len(program.instructions):>7} instr  model {model_cpu:5.2f}/{model_wall:5.2f} s "
              f"golden {golden_cpu:6.2f}/{golden_wall:6.2f} s  {timing.total_cycles:>10} cycles  "
              f"(CPU/wall)", flush=True)
        digest = hashlib.sha256(memory.tobytes()).hexdigest() if memory is not None else ""
        if args.save:
            args.save.mkdir(parents=True, exist_ok=True)
            (args.save / f"{label}.pb").write_bytes(data)
            np.savez_compressed(args.save / f"{label}.npz", times=times,
                                total=timing.total_cycles,
                                counters=np.array(sorted(timing.counters.items()), dtype=object),
                                memory_sha=digest)
        if args.check:
            failures += check(args.check, label, data, times, timing, digest)
    return 1 if failures else 0


def check(base: Path, label: str, data: bytes, times: np.ndarray, timing: Any,
          digest: str) -> int:
    """Compare one case with the baseline in `base`; print the verdict, return 1 on failure."""
    old = np.load(base / f"{label}.npz", allow_pickle=True)
    same_program = (base / f"{label}.pb").read_bytes() == data
    same_memory = not digest or str(old["memory_sha"]) == digest
    counters = dict(old["counters"].tolist())
    if same_program:
        ok = (np.array_equal(old["times"], times) and int(old["total"]) == timing.total_cycles
              and counters == dict(timing.counters) and same_memory)
        verdict = "identical program, times, counters, golden memory" if ok else "MISMATCH"
    else:
        ok = same_memory and timing.total_cycles <= int(old["total"])
        verdict = (f"program changed: golden memory {'same' if same_memory else 'DIFFERENT'}, "
                   f"cycles {int(old['total'])} -> {timing.total_cycles}")
    print(f"  check {label}: {verdict if ok else 'FAIL: ' + verdict}", flush=True)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
