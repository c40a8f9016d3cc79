"""Where the whole light ResNet-50 loses cycles against the array's ideal (not a test).

Runs the mapper passes once on the onnx wheel's light ResNet-50 (as `bench_resnet50.py`),
compiles it per configuration and times it with the analytic cycle model (`systolic
compare`'s backend; the per-instruction accept, issue and complete cycles). Prints per
configuration the whole-model cycles against the conv+Gemm ideal (MACs / PEs), then, per
kind of layer (op), the cycles the layers add to the run, what the array lost in them (their
cycles minus the ideal of their MACs) and how busy each unit was in their windows (the union
of [issue, complete) of that unit's instructions, whatever layer they belong to): LD (the
LOAD unit), EX (the array), ST (the STORE unit with the vector path: STORE, ADD, POOL), and
the worst layers. With `--sequential`, each configuration is also compiled with the vector
layers after their producers (issue 14's interleaving off), for a before/after in the same
conditions. Usage:

    python bench/bench_whole_model.py [--arrays 16x16,32x32] [--dataflows ws,os,both]
                                      [--bus-bytes 16] [--worst 8] [--sequential]
"""

import argparse
import collections
import importlib
import os
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import onnx

from systolic.compare.grid import config_grid, config_label, parse_list
from systolic.compare.layer_cycles import accelerator_runs
from systolic.compare.sweep import prepare_model
from systolic.config import ArrayConfig
from systolic.ir import Model
from systolic.isa.program import LayerUnit
from systolic.mapper.lowering import compile_model
from systolic.sim.timing.layer_cycles import layer_cycles
from systolic.simulation.layer_timing import RunTimes, program_units

MODEL = Path(onnx.__file__).parent / "backend/test/data/light/light_resnet50.onnx"
UNITS = ("LD", "EX", "ST")
ARRAY_OPS = ("QConv", "QMatMul")
COMPILER = importlib.import_module("systolic.mapper.lowering.compile_model")


def _union(starts: np.ndarray, ends: np.ndarray, low: int, high: int) -> int:
    """The cycles of [low, high) covered by the intervals [starts[i], ends[i])."""
    starts, ends = np.clip(starts, low, high), np.clip(ends, low, high)
    keep = ends > starts
    starts, ends = starts[keep], ends[keep]
    if not starts.size:
        return 0
    order = np.argsort(starts, kind="stable")
    starts, ends = starts[order], ends[order]
    reach = np.concatenate([[starts[0]], np.maximum.accumulate(ends[:-1])])
    return int(np.maximum(0, ends - np.maximum(starts, reach)).sum())


class Layer:
    """One layer's window [start, end) in its run, its op, ideal and units' busy cycles."""

    def __init__(self, name: str, op: str, start: int, end: int, ideal: float,
                 busy: Sequence[int]) -> None:
        self.name, self.op, self.start, self.end = name, op, start, end
        self.ideal, self.busy = ideal, tuple(busy)

    @property
    def cycles(self) -> int:
        return self.end - self.start


def layer_windows(compiled, runs: Sequence[RunTimes], config: ArrayConfig) -> list[Layer]:  # type: ignore[no-untyped-def]
    """Per accelerator layer its window (layer_timing's rule: from the previous layer's end
    to the completion of its last instruction, non-decreasing) and the units' busy cycles."""
    program = compiled.program
    units = program_units(program)
    layers: list[Layer] = []
    for run in runs:
        issue = np.array([t.issue for t in run.times], dtype=np.int64)
        complete = np.array([t.complete for t in run.times], dtype=np.int64)
        n = len(issue) - 1  # (HALT last)
        own = [layer for layer in program.layers if layer.unit is not LayerUnit.HOST
               and run.first <= layer.first < run.first + n]  # fmt: skip
        previous = 0
        for index, layer in enumerate(own):
            last = run.total_cycles if index == len(own) - 1 else (
                int(complete[layer.end - 1 - run.first]) if layer.count else previous)
            end = max(previous, last)
            code = units[run.first:run.first + n]
            busy = [_union(issue[:n][code == u], complete[:n][code == u], previous, end)
                    for u in range(3)]  # fmt: skip
            ideal = layer.macs / config.pes if layer.op in ARRAY_OPS else 0.0
            layers.append(Layer(layer.name, layer.op, previous, end, ideal, busy))
            previous = end
    return layers


def report(label: str, layers: Sequence[Layer], config: ArrayConfig, worst: int) -> None:
    total = sum(layer.cycles for layer in layers)
    ideal = sum(layer.ideal for layer in layers)
    print(f"{label}: whole model {total:,} cycles, conv+Gemm ideal {ideal:,.0f}: "
          f"{total / ideal:.4f} (lost {total - ideal:,.0f})")
    by_op: dict[str, list[Layer]] = collections.defaultdict(list)
    for layer in layers:
        by_op[layer.op].append(layer)
    print(f"    {'op':<14}{'layers':>7}{'cycles':>12}{'lost':>11}   busy " + " ".join(
        f"{u:>6}" for u in UNITS))
    for op, group in sorted(by_op.items(), key=lambda kv: -sum(x.cycles for x in kv[1])):
        cycles = sum(x.cycles for x in group)
        if not cycles:
            continue
        lost = cycles - sum(x.ideal for x in group)
        busy = [sum(x.busy[u] for x in group) / cycles for u in range(3)]
        print(f"    {op:<14}{len(group):>7}{cycles:>12,}{lost:>11,.0f}        "
              + " ".join(f"{share:>6.1%}" for share in busy))
    print("    worst layers (cycles - ideal):")
    for layer in sorted(layers, key=lambda x: x.ideal - x.cycles)[:worst]:
        shares = " ".join(f"{u} {b / max(1, layer.cycles):.1%}" for u, b in zip(UNITS, layer.busy,
                                                                              strict=True))
        print(f"      {layer.name:<10}{layer.op:<14}{layer.cycles:>10,} ideal {layer.ideal:>10,.0f}"
              f"  lost {layer.cycles - layer.ideal:>8,.0f}  busy {shares}")


def run(integer: Model, config: ArrayConfig, label: str, worst: int) -> None:
    start = time.process_time()
    compiled = compile_model(integer, config, layer_cycles=layer_cycles)  # (both: the choice)
    compile_cpu = time.process_time() - start
    runs = accelerator_runs(compiled, "model", {})
    report(f"{label} (compile {compile_cpu:.1f} s CPU)", layer_windows(compiled, runs, config),
           config, worst)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--arrays", default="16x16")
    parser.add_argument("--dataflows", default="ws,os")
    parser.add_argument("--bus-bytes", type=int, default=ArrayConfig().bus_bytes)
    parser.add_argument("--worst", type=int, default=8, help="layers to list per configuration")
    parser.add_argument("--sequential", action="store_true",
                        help="also compile without interleaving the vector layers")
    args = parser.parse_args()
    load = os.getloadavg()
    print(f"light ResNet-50; {os.cpu_count()} CPUs, load average {load[0]:.1f} {load[1]:.1f} "
          f"{load[2]:.1f}; {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}", flush=True)
    integer = prepare_model(MODEL).integer
    configs = config_grid(ArrayConfig(), arrays=parse_list("--arrays", args.arrays),
                          dataflows=parse_list("--dataflows", args.dataflows),
                          bus_bytes=[args.bus_bytes])  # fmt: skip
    for config in configs:
        label = config_label(config, ("array", "dataflow", "bus_bytes"))
        run(integer, config, label, args.worst)
        if args.sequential:
            interleaving = COMPILER.plan_overlap
            COMPILER.plan_overlap = lambda *_: None  # type: ignore[attr-defined]
            try:
                run(integer, config, f"{label} sequential", args.worst)
            finally:
                COMPILER.plan_overlap = interleaving  # type: ignore[attr-defined]
        print(flush=True)
    load = os.getloadavg()
    print(f"load average at the end {load[0]:.1f} {load[1]:.1f} {load[2]:.1f}")


if __name__ == "__main__":
    main()
