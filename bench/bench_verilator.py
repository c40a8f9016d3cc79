"""Measure the Verilator backend on the whole accelerator (not a test).

For each array size (WS), emits the Accelerator's Verilog, builds the simulator in a fresh
cache folder (or the normal one with `--reuse-cache`) and runs a long program of random layers
(`tests.support.random_programs.synthetic_program`: tiled GEMMs and im2col
convolutions with double-buffered LOADs, STOREs, POOL/ADD/COPY, at network-like sizes) on a
zeroed memory image through `run_program(..., backend="verilator")`. Prints the emission and
build times, and the simulated cycles per second of the whole run (process start and files
included) and of the simulator process's CPU time. Usage:

    python bench/bench_verilator.py [--sizes 8 16] [--with-32] [--instructions 20000]
                                    [--scale 16] [--dataflows ws os] [--reuse-cache]
"""

import argparse
import os
import tempfile
import time

import repository_root  # noqa: F401  (puts the repository root on sys.path)

from systolic.config import ArrayConfig, Dataflow
from systolic.sim.run.backends import initial_memory, run_program
from systolic.sim.verilator.backend import accelerator_design
from tests.support.random_programs import synthetic_program


def measure(size: int, instructions: int, scale: int, dataflow: Dataflow) -> None:
    config = ArrayConfig(rows=size, cols=size, dataflow=dataflow)
    label = f"{dataflow.value} {size}x{size}"
    started = time.perf_counter()
    design = accelerator_design(config)
    emitted = time.perf_counter() - started
    build = design.build()
    how = "from the cache" if build.cached else f"{build.seconds:.1f} s"
    print(f"{label}: Verilog emitted in {emitted:.1f} s, build {how}", flush=True)

    program = synthetic_program(config, instructions, seed=size, scale=scale)
    memory = initial_memory(program)
    wall, cpu = time.perf_counter(), os.times()
    result = run_program(program, memory, backend="verilator", watchdog=1 << 40)
    wall = time.perf_counter() - wall
    after = os.times()
    child_cpu = after.children_user - cpu.children_user + after.children_system - cpu.children_system
    cycles = result.total_cycles
    print(f"{label}: {len(program.instructions)} instructions, {cycles:,} cycles in {wall:.2f} s "
          f"wall = {cycles / wall:,.0f} cycles/s ({child_cpu:.2f} s simulator CPU = "
          f"{cycles / max(child_cpu, 1e-9):,.0f} cycles/s)", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[8, 16])
    parser.add_argument("--with-32", action="store_true", help="also 32x32 (a build of minutes)")
    parser.add_argument("--instructions", type=int, default=20_000,
                        help="instructions in the program (about)")
    parser.add_argument("--scale", type=int, default=16, help="layer size factor")
    parser.add_argument("--dataflows", nargs="+", default=["ws"], choices=["ws", "os"])
    parser.add_argument("--reuse-cache", action="store_true",
                        help="use the normal build cache instead of a fresh one")
    args = parser.parse_args()
    sizes = args.sizes + ([32] if args.with_32 else [])
    with tempfile.TemporaryDirectory(prefix="bench-verilator-") as fresh:
        if not args.reuse_cache:
            os.environ["SYSTOLIC_CACHE_DIR"] = fresh
        for size in sizes:
            for name in args.dataflows:
                measure(size, args.instructions, args.scale, Dataflow.parse(name))


if __name__ == "__main__":
    main()
