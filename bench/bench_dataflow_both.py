"""`--dataflow both` on the light ResNet-50 (not a test): per-layer and whole-model cycles.

Runs the mapper passes once on the onnx wheel's light ResNet-50
(onnx/backend/test/data/light/light_resnet50.onnx; float, quantized by the passes with their
seeded random calibration), compiles it for each array size as WS, OS and BOTH (the array
that runs either dataflow; the mapper keeps, per array layer, the lowering the cycle model
finds faster) and times each with the analytic cycle model (`systolic compare`'s default
backend). Prints, per array size:

- for each dataflow: array-layer cycles (conv + Gemm) and their ratio to the ideal
  MACs / (rows·cols), the whole model's cycles (accelerator layers) and their ratio to that
  same ideal, and how many array layers ran each dataflow;
- the per-layer check: every array layer's cycles under BOTH against min(WS, OS) for that
  layer (the number of layers above it, and the worst ones).

Usage:

    python bench/bench_dataflow_both.py [--arrays 16x16,32x32] [--bus-bytes 16] [--worst 5]
                                        [--spad-kib N] [--acc-kib N|auto]

(`--acc-kib auto`: 64 KiB, or the least the array accepts, as `bench_large_arrays.py`.)
"""

import argparse
import dataclasses
import time
from pathlib import Path

import onnx

from systolic.compare.grid import parse_list
from systolic.compare.layer_cycles import accelerator_runs
from systolic.compare.sweep import prepare_model
from systolic.config import ArrayConfig, Dataflow
from systolic.isa.instructions import ComputeOS, Preload
from systolic.mapper.lowering import compile_model
from systolic.sim.timing.layer_cycles import layer_cycles
from systolic.simulation.layer_rows import layer_rows

MODEL = Path(onnx.__file__).parent / "backend/test/data/light/light_resnet50.onnx"
ARRAY_OPS = ("QConv", "QMatMul")


def _run(integer, config: ArrayConfig):  # type: ignore[no-untyped-def]
    """Return the compiled model, its per-layer rows and its accelerator cycles (as
    `run_config` reports them: cycle model)."""
    compiled = compile_model(integer, config, layer_cycles=layer_cycles)
    runs = accelerator_runs(compiled, "model", {})
    return compiled, layer_rows(compiled, runs), sum(run.total_cycles for run in runs)


def _families(program) -> tuple[int, int]:  # type: ignore[no-untyped-def]
    """Return how many array layers `program` runs weight- and output-stationary."""
    ws = os = 0
    for layer in program.layers:
        code = program.instructions[layer.first:layer.first + layer.count]
        if layer.op in ARRAY_OPS and code:
            kinds = {type(instr) for instr in code}
            ws += Preload in kinds
            os += ComputeOS in kinds
    return ws, os


def _acc_kib(value: str, rows: int, cols: int) -> int:
    """`--acc-kib`: a number, or auto (64, or two tiles of `rows` rows of `cols` int32 sums
    when that is more)."""
    if value != "auto":
        return int(value)
    return max(64, -(-2 * rows * cols * 4 // 1024))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--arrays", default="16x16,32x32")
    parser.add_argument("--bus-bytes", type=int, default=ArrayConfig().bus_bytes)
    parser.add_argument("--worst", type=int, default=5, help="layers above min(WS, OS) to list")
    parser.add_argument("--spad-kib", type=int, default=ArrayConfig().spad_kib)
    parser.add_argument("--acc-kib", default=str(ArrayConfig().acc_kib))
    args = parser.parse_args()
    start = time.perf_counter()
    prepared = prepare_model(MODEL)
    print(f"passes: {time.perf_counter() - start:.1f} s")
    for shape in parse_list("--arrays", args.arrays):
        rows, cols = ArrayConfig.parse_shape(shape)
        base = ArrayConfig(rows=rows, cols=cols, bus_bytes=args.bus_bytes,
                           spad_kib=args.spad_kib, acc_kib=_acc_kib(args.acc_kib, rows, cols))
        rows_of = {}
        for flow in Dataflow:
            config = dataclasses.replace(base, dataflow=flow)
            start = time.perf_counter()
            compiled, rows, total = _run(prepared.integer, config)
            layers = rows_of[flow] = [layer for layer in rows if layer.op in ARRAY_OPS]
            cycles = sum(layer.cycles for layer in layers)
            ideal = sum(layer.macs for layer in layers) / config.pes
            ws_layers, os_layers = _families(compiled.program)
            print(f"{shape} {flow.value:4s}: array layers {cycles:,} cycles, ratio "
                  f"{cycles / ideal:.4f}; whole model {total:,} cycles, ratio "
                  f"{total / ideal:.4f}; {ws_layers} array layers WS, {os_layers} OS "
                  f"[{time.perf_counter() - start:.1f} s]")
        above = []
        for ws, os, both in zip(*(rows_of[flow] for flow in Dataflow), strict=True):
            best = min(ws.cycles, os.cycles)
            if both.cycles > best:
                above.append((both.cycles - best, both.name, both.cycles, ws.cycles, os.cycles))
        print(f"{shape} per layer: {len(rows_of[Dataflow.BOTH]) - len(above)} of "
              f"{len(rows_of[Dataflow.BOTH])} array layers at most min(WS, OS); "
              f"{len(above)} above (by {sum(item[0] for item in above):,} cycles in all)")
        for excess, name, both_cycles, ws_cycles, os_cycles in sorted(above, reverse=True)[
                :args.worst]:
            print(f"    {name}: both {both_cycles:,}, ws {ws_cycles:,}, os {os_cycles:,} "
                  f"(+{excess:,})")


if __name__ == "__main__":
    main()
