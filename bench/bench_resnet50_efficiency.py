"""Array efficiency on ResNet-50 (not a test): total array cycles / ideal cycles.

Runs the mapper passes once on the onnx wheel's light ResNet-50
(onnx/backend/test/data/light/light_resnet50.onnx; float, quantized by the passes with their
seeded random calibration), compiles it for each configuration (16x16 and 32x32, WS and OS,
a bus wide enough not to stall: --bus-bytes 256) and times it with the analytic cycle model
(`systolic compare`'s default backend). Over the conv and Gemm layers (the array layers) it
prints array cycles / (MACs / (rows·cols)) — the figure SCALE-Sim reports as about 1.17 for
16x16 OS — and the layers furthest from ideal. Usage:

    python bench/bench_resnet50_efficiency.py [--arrays 16x16,32x32] [--bus-bytes 256] [--worst 5]

Targets: <= 1.10 at 16x16 and <= 1.15 at 32x32.
"""

import argparse
import time
from pathlib import Path

import onnx

from systolic.compare.grid import config_grid, config_label, parse_list
from systolic.compare.sweep import prepare_model, run_config
from systolic.config import ArrayConfig

MODEL = Path(onnx.__file__).parent / "backend/test/data/light/light_resnet50.onnx"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--arrays", default="16x16,32x32")
    parser.add_argument("--dataflows", default="ws,os")
    parser.add_argument("--bus-bytes", type=int, default=256)
    parser.add_argument("--worst", type=int, default=5, help="layers to list per configuration")
    args = parser.parse_args()
    start = time.perf_counter()
    prepared = prepare_model(MODEL)
    print(f"passes: {time.perf_counter() - start:.1f} s")
    configs = config_grid(ArrayConfig(), arrays=parse_list("--arrays", args.arrays),
                          dataflows=parse_list("--dataflows", args.dataflows),
                          bus_bytes=[args.bus_bytes])  # fmt: skip
    for config in configs:
        start = time.perf_counter()
        label = config_label(config, ("array", "dataflow", "bus_bytes"))
        result = run_config(prepared.integer, config, label=label)
        layers = [layer for layer in result.layers if layer.op in ("QConv", "QMatMul")]
        cycles = sum(layer.cycles for layer in layers)
        macs = sum(layer.macs for layer in layers)
        ideal = macs / config.pes
        print(
            f"{label}: {len(layers)} conv/gemm layers, {macs:,} MACs, array cycles "
            f"{cycles:,}, ideal {ideal:,.0f}: ratio {cycles / ideal:.4f} (stalls "
            f"{sum(layer.stall_cycles for layer in layers):,}; whole model "
            f"{result.total_cycles:,} cycles) [{time.perf_counter() - start:.1f} s]"
        )
        worst = sorted(layers, key=lambda layer: layer.cycles - layer.macs / config.pes,
                       reverse=True)[: args.worst]  # fmt: skip
        for layer in worst:
            print(f"    {layer.name}: {layer.cycles:,} cycles, ideal "
                  f"{layer.macs / config.pes:,.0f} (ratio "
                  f"{layer.cycles * config.pes / layer.macs:.3f}), "
                  f"stalls {layer.stall_cycles:,}")  # fmt: skip


if __name__ == "__main__":
    main()
