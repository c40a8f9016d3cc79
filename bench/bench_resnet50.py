"""Whole-model runs of the light ResNet-50 through `systolic simulate` (not a test).

Runs the onnx wheel's light ResNet-50 (onnx/backend/test/data/light/light_resnet50.onnx: float,
quantized by the passes with their seeded random calibration) on a seeded random input exactly
as `systolic simulate MODEL --array 16x16 --backend ...` does
(`systolic.simulation.run.simulate_model`: passes, compile, reference values, onnxruntime,
accelerator runs with the bit-exact check after each, quantization accuracy), once per backend:

- `model`: the analytic cycle model with golden values;
- `verilator cold`: a fresh cache folder, so the Verilog is emitted and the simulator built;
- `verilator warm`: the same cache folder in a fresh state of this process (the in-process
  design cache cleared), as a second `systolic simulate` would find it.

Every phase is timed by wrapping the functions `simulate_model` calls (wall time, and CPU
time of this process plus its finished children, which is steadier on a busy machine). It
prints per run: passes, compile, reference, onnxruntime, Verilog emission, build and
simulator times; total cycles, simulated cycles per second (wall and simulator CPU), array
utilization, array cycles / ideal over the conv and Gemm layers, the bit-exact result and the
onnxruntime comparison; then whether the backends agree (total cycles, per-layer cycles,
counters, outputs). Usage:

    python bench/bench_resnet50.py [--array 16x16] [--os] [--backends model verilator]
                                   [--bus-bytes 16] [--seed 0] [--reuse-cache]

Targets (issue 5): Verilator at 16x16 under 2 minutes including the build, bit-exact; the
model backend under 1 s; array cycles / ideal <= 1.10 at 16x16 and <= 1.15 at 32x32;
>= 200 k cycles/s on Verilator at 16x16.
"""

import argparse
import contextlib
import dataclasses
import os
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import onnx

import systolic.sim.verilator.backend as verilator_backend
import systolic.sim.verilator.design as verilator_design
import systolic.simulation.prepare as simulation_prepare
import systolic.simulation.run as simulation_run
import systolic.simulation.runner as simulation_runner
from systolic.config import ArrayConfig, Dataflow
from systolic.simulation.run import SimulationOutcome, simulate_model

MODEL = Path(onnx.__file__).parent / "backend/test/data/light/light_resnet50.onnx"

PHASES = {  # phase name -> (module, attribute) wrapped while a run is timed
    "passes": (simulation_prepare, "run_passes"),
    "compile": (simulation_run, "compile_model"),
    "reference": (simulation_run, "reference_values"),
    "onnxruntime": (simulation_run, "run_onnxruntime"),
    "accelerator": (simulation_runner, "run_program"),
    "verilog": (verilator_backend, "emitted_accelerator"),
    "build": (verilator_design, "build_simulator"),
    "simulator": (verilator_design, "run_harness"),
}
"""What each phase's time covers: the function `simulate_model` (or the backend) calls."""


def _clock() -> tuple[float, float]:
    times = os.times()
    cpu = times.user + times.system + times.children_user + times.children_system
    return time.perf_counter(), cpu


@dataclasses.dataclass
class Timing:
    """Wall and CPU seconds spent in one phase, summed over its calls."""

    wall: float = 0.0
    cpu: float = 0.0
    calls: int = 0

    def text(self) -> str:
        return f"{self.wall:6.1f} s wall {self.cpu:6.1f} s CPU"


@contextlib.contextmanager
def timed_phases() -> Iterator[dict[str, Timing]]:
    """Wrap every function of `PHASES` for the duration; yield the timings by phase."""
    timings = {name: Timing() for name in PHASES}
    originals: list[tuple[Any, str, Callable[..., Any]]] = []

    def wrap(name: str, function: Callable[..., Any]) -> Callable[..., Any]:
        def timed(*args: Any, **kwargs: Any) -> Any:
            wall, cpu = _clock()
            try:
                return function(*args, **kwargs)
            finally:
                end_wall, end_cpu = _clock()
                timings[name].wall += end_wall - wall
                timings[name].cpu += end_cpu - cpu
                timings[name].calls += 1
        return timed

    for name, (module, attribute) in PHASES.items():
        original = getattr(module, attribute)
        originals.append((module, attribute, original))
        setattr(module, attribute, wrap(name, original))
    try:
        yield timings
    finally:
        for module, attribute, original in originals:
            setattr(module, attribute, original)


class _QuietBar:
    def update(self, value: int) -> None:
        pass

    def close(self) -> None:
        pass


@dataclasses.dataclass
class Run:
    """One simulate run: its label, outcome, phase timings and total wall / CPU seconds."""

    label: str
    outcome: SimulationOutcome
    timings: dict[str, Timing]
    wall: float
    cpu: float


def simulate(label: str, config: ArrayConfig, backend: str, seed: int) -> Run:
    """Run `simulate_model` on the light ResNet-50 and time it."""
    verilator_backend.accelerator_design.cache_clear()  # as a new process would start
    print(f"-- {label}: running ...", flush=True)
    with timed_phases() as timings:
        wall, cpu = _clock()
        outcome = simulate_model(MODEL, config, label="light_resnet50", backend=backend,
                                 seed=seed, progress=lambda total, text: _QuietBar())
        end_wall, end_cpu = _clock()
    run = Run(label, outcome, timings, end_wall - wall, end_cpu - cpu)
    print_run(run, config)
    return run


def conv_gemm_ratio(outcome: SimulationOutcome, config: ArrayConfig) -> tuple[int, float, float]:
    """Return (array cycles, ideal, ratio) over the conv and Gemm layers (QConv, QMatMul)."""
    layers = [layer for layer in outcome.report.layers if layer.op in ("QConv", "QMatMul")]
    cycles = sum(layer.cycles for layer in layers)
    ideal = sum(layer.macs for layer in layers) / config.pes
    return cycles, ideal, cycles / ideal


def print_run(run: Run, config: ArrayConfig) -> None:
    report = run.outcome.report
    print(f"{run.label}: {run.wall:.1f} s wall, {run.cpu:.1f} s CPU in all")
    for name, timing in run.timings.items():
        if timing.calls:
            print(f"    {name:<12} {timing.text()}")
    cycles = report.total_cycles
    accelerator = run.timings["accelerator"]
    simulator = run.timings["simulator"]
    print(f"    total cycles {cycles:,} in {len(report.runs)} accelerator run(s)")
    print(f"    backend speed: {cycles / accelerator.wall:,.0f} cycles/s wall, "
          f"{cycles / max(accelerator.cpu, 1e-9):,.0f} cycles/s CPU (whole backend call)")
    if simulator.calls:
        print(f"    Verilated simulator alone: {cycles / simulator.wall:,.0f} cycles/s wall, "
              f"{cycles / max(simulator.cpu, 1e-9):,.0f} cycles/s CPU")
    totals = report.totals()
    array_cycles, ideal, ratio = conv_gemm_ratio(run.outcome, config)
    print(f"    array utilization {totals['utilization']:.4f}; conv+Gemm array cycles "
          f"{array_cycles:,} / ideal {ideal:,.0f} = {ratio:.4f}; whole model / ideal "
          f"{cycles / ideal:.4f}")
    exact = "bit-exact" if report.mismatch is None else f"MISMATCH {report.mismatch.text()}"
    print(f"    reference check: {exact}")
    if report.onnxruntime is not None:
        ort = ", ".join(f"{k} {v}" for k, v in report.onnxruntime.items())
        print(f"    onnxruntime: {ort}")
    if report.quantization is not None:
        quant = ", ".join(f"{k} {v}" for k, v in report.quantization.items())
        print(f"    quantization vs float model: {quant}")
    print(flush=True)


def compare_runs(first: Run, second: Run) -> None:
    """Print whether two runs agree in cycles, per-layer cycles, counters and outputs."""
    a, b = first.outcome, second.outcome
    same_cycles = a.report.total_cycles == b.report.total_cycles
    same_layers = [(x.cycles, x.stall_cycles) for x in a.report.layers] == [
        (x.cycles, x.stall_cycles) for x in b.report.layers]
    same_counters = [r["counters"] for r in a.report.runs] == [r["counters"] for r in b.report.runs]
    same_outputs = a.outputs.keys() == b.outputs.keys() and all(
        np.array_equal(a.outputs[k], b.outputs[k]) for k in a.outputs)
    print(f"{first.label} vs {second.label}: total cycles "
          f"{'equal' if same_cycles else 'DIFFER'} ({a.report.total_cycles:,} / "
          f"{b.report.total_cycles:,}), per-layer cycles {'equal' if same_layers else 'DIFFER'}, "
          f"counters {'equal' if same_counters else 'DIFFER'}, outputs "
          f"{'equal' if same_outputs else 'DIFFER'}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--array", default="16x16", help="RxC (default 16x16)")
    parser.add_argument("--os", action="store_true", help="output-stationary (default ws)")
    parser.add_argument("--backends", nargs="+", default=["model", "verilator"],
                        choices=["model", "verilator"])
    parser.add_argument("--bus-bytes", type=int, default=ArrayConfig().bus_bytes,
                        help="external bus width (default: the configuration's default)")
    parser.add_argument("--seed", type=int, default=0, help="input and calibration seed")
    parser.add_argument("--reuse-cache", action="store_true",
                        help="Verilator: use the normal cache (no cold run) instead of a fresh one")
    args = parser.parse_args()
    rows, _, cols = args.array.partition("x")
    config = ArrayConfig(rows=int(rows), cols=int(cols), bus_bytes=args.bus_bytes,
                         dataflow=Dataflow.OS if args.os else Dataflow.WS)
    load = os.getloadavg()
    print(f"light ResNet-50, {args.array} {config.dataflow.value}, bus {config.bus_bytes} bytes, "
          f"seed {args.seed}; "
          f"{os.cpu_count()} CPUs, load average {load[0]:.1f} {load[1]:.1f} {load[2]:.1f}; "
          f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}\n", flush=True)
    runs: list[Run] = []
    if "model" in args.backends:
        runs.append(simulate("model", config, "model", args.seed))
    if "verilator" in args.backends:
        with tempfile.TemporaryDirectory(prefix="bench-resnet50-") as fresh:
            if not args.reuse_cache:
                os.environ["SYSTOLIC_CACHE_DIR"] = fresh
                runs.append(simulate("verilator cold", config, "verilator", args.seed))
            runs.append(simulate("verilator warm", config, "verilator", args.seed))
    for other in runs[1:]:
        compare_runs(runs[0], other)
    load = os.getloadavg()
    print(f"load average at the end {load[0]:.1f} {load[1]:.1f} {load[2]:.1f}")


if __name__ == "__main__":
    main()
