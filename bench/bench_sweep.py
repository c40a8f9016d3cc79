"""Sweep throughput of `systolic compare` (not a test): a 100-point sweep of the light
ResNet-50 on worker processes, and where one point's time goes.

Runs the mapper passes once on the onnx wheel's light ResNet-50
(onnx/backend/test/data/light/light_resnet50.onnx), then:

1. sweeps the first `--points` configurations (default 100) of the grid arrays 4x4, 4x8, 8x8,
   8x16, 16x16, 16x32, 32x32, 32x64, 64x64 × dataflows ws, os × scratchpads 128, 256, 512 KiB ×
   buses 16, 64 bytes on the model backend with `--jobs` worker processes (default 2), no
   cache, and prints the wall time (and each point as it finishes);
2. compiles and times (cycle model) the 16x16 WS point in this process, `--repeat` times, and
   prints the CPU seconds of each part (the smallest of the repeats);
3. profiles that point once (cProfile) and prints the `--top` entries by own time and by
   cumulative time.

    python bench/bench_sweep.py [--points 100] [--arrays 4x4,...] [--jobs 2] [--repeat 3] [--top 15]
    python bench/bench_sweep.py --per-array [--arrays 4x4,...]   (per array and dataflow,
        largest first, the bus-16 point from scratch and the bus-64 point after it, timed:
        compile, cycle model + rows, energy; and the sweep's CPU estimated from them)
"""

import argparse
import cProfile
import io
import os
import pstats
import time
from pathlib import Path

import onnx

from systolic.compare.grid import config_grid
from systolic.compare.layer_cycles import accelerator_runs
from systolic.compare.point import run_config
from systolic.compare.points import Engine
from systolic.compare.sweep import PreparedModel, prepare_model, sweep
from systolic.config import ArrayConfig, Dataflow
from systolic.ir import Model
from systolic.mapper.lowering import compile_model
from systolic.mapper.lowering.jobs import forget_schedules
from systolic.sim.energy.table import EnergyTable
from systolic.simulation.energy import layer_energies
from systolic.simulation.layer_rows import layer_rows

MODEL = Path(onnx.__file__).parent / "backend/test/data/light/light_resnet50.onnx"
ARRAYS = ["4x4", "4x8", "8x8", "8x16", "16x16", "16x32", "32x32", "32x64", "64x64"]


def _sweep(prepared: PreparedModel, arrays: list[str], points: int, jobs: int) -> None:
    configs = config_grid(ArrayConfig(), arrays=arrays, dataflows=["ws", "os"],
                          spad_kib=[128, 256, 512], bus_bytes=[16, 64])[:points]  # fmt: skip
    wall, cpu = time.perf_counter(), time.process_time()
    done = []

    def progress(label: str) -> None:  # a partial run still shows the rate
        done.append(label)
        print(f"  {len(done)}/{len(configs)} {label}: {time.perf_counter() - wall:.0f} s",
              flush=True)  # fmt: skip

    results = sweep(prepared, configs, engine=Engine(jobs=jobs), progress=progress)
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    failed = sum(result.failed for result in results)
    print(f"sweep: {len(configs)} points, --jobs {jobs}: {wall:.1f} s wall "
          f"({wall / len(configs):.2f} s per point; this process {cpu:.1f} s CPU); "
          f"{failed} failed")  # fmt: skip


def _per_array(integer: Model, arrays: list[str]) -> None:
    """Per (array, dataflow) of the grid, largest array first (default scratchpad): the point
    at bus 16 from scratch, then the point at bus 64 after it (a worker runs them one after
    the other, sharing the layers whose plan the bus leaves alone: `compare.parallel`);
    each one's compile and cycle-model CPU seconds, and the sweep's CPU estimated from them
    (each pair stands for its 6 points: 3 scratchpads x 2 buses)."""
    total = 0.0
    for array in reversed(arrays):
        rows, cols = map(int, array.split("x"))
        for dataflow in (Dataflow.WS, Dataflow.OS):
            forget_schedules()
            for bus in (16, 64):
                config = ArrayConfig(rows=rows, cols=cols, dataflow=dataflow, bus_bytes=bus)
                total += 3 * _timed_point(integer, config, f"{array} {dataflow.value} bus {bus}")
    print(f"estimated sweep of {6 * 2 * len(arrays)} points: {total:.0f} s CPU, "
          f"{total / 2:.0f} s wall on 2 idle cores")


def _timed_point(integer: Model, config: ArrayConfig, label: str) -> float:
    """Compile, run the cycle model (and the layer rows) and count the energy of one point,
    as `run_config` does; print and return its CPU seconds."""
    start = time.process_time()
    compiled = compile_model(integer, config)
    compiled_at = time.process_time()
    runs = accelerator_runs(compiled, "model", {})
    modelled_at = time.process_time()
    energies = layer_energies(compiled, EnergyTable.default())
    counted_at = time.process_time()
    layer_rows(compiled, runs, energies)
    end = time.process_time()
    print(f"  {label}: compile {compiled_at - start:.2f} s, cycle model + rows "
          f"{modelled_at - compiled_at + end - counted_at:.2f} s, energy "
          f"{counted_at - modelled_at:.2f} s CPU ({len(compiled.program.instructions)} "
          f"instructions); load average {os.getloadavg()[0]:.1f}", flush=True)  # fmt: skip
    return end - start


def _point_cpu(integer: Model, repeat: int) -> None:
    config = ArrayConfig(rows=16, cols=16)
    compile_s, model_s = [], []
    for _ in range(repeat):
        forget_schedules()  # (each compile from scratch)
        start = time.process_time()
        compiled = compile_model(integer, config)
        middle = time.process_time()
        layer_rows(compiled, accelerator_runs(compiled, "model", {}))
        compile_s.append(middle - start)
        model_s.append(time.process_time() - middle)
    print(f"16x16 ws point (best of {repeat}): compile {min(compile_s):.2f} s CPU, cycle model "
          f"+ rows {min(model_s):.2f} s CPU, total {min(compile_s) + min(model_s):.2f} s")  # fmt: skip


def _profile(integer: Model, top: int) -> None:
    forget_schedules()
    profile = cProfile.Profile()
    profile.enable()
    run_config(integer, ArrayConfig(rows=16, cols=16), label="16x16 ws")
    profile.disable()
    for order in ("tottime", "cumulative"):
        out = io.StringIO()
        pstats.Stats(profile, stream=out).sort_stats(order).print_stats(top)
        body = out.getvalue()
        print(f"profile of one 16x16 ws point, top {top} by {order}:")
        print(body[body.index("   ncalls") :].rstrip())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--points", type=int, default=100)
    parser.add_argument("--arrays", default=",".join(ARRAYS), help="a subset of the grid's arrays")
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--top", type=int, default=15)
    parser.add_argument("--per-array", action="store_true",
                        help="instead of the sweep, one point per (array, dataflow), timed")
    args = parser.parse_args()
    start = time.process_time()
    prepared = prepare_model(MODEL)
    print(f"passes: {time.process_time() - start:.1f} s CPU (once per model)")
    if args.per_array:
        _per_array(prepared.integer, args.arrays.split(","))
        return
    _sweep(prepared, args.arrays.split(","), args.points, args.jobs)
    _point_cpu(prepared.integer, args.repeat)
    _profile(prepared.integer, args.top)


if __name__ == "__main__":
    main()
