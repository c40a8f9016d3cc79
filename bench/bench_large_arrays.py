"""Why large arrays lose on the light ResNet-50 (not a test): per-layer loss causes, SCALE-Sim.

Runs the mapper passes once on the onnx wheel's light ResNet-50, compiles it for each array
size and dataflow (bus 256 bytes, as `bench_resnet50_efficiency.py`, so the bus is not the
limit; spad 256 KiB; acc 64 KiB or the smallest the array allows, 128 KiB at 128x128) and
times it with the analytic cycle model. For every array layer (QConv, QMatMul) it prints M
(output pixels), K, N, our cycles, the ideal (MACs / PEs), the ratio, and the lost cycles
(cycles - ideal) split into causes computed from the layer's own EXECUTE instructions (the
tiles the mapper emitted: `mapper/lowering/tiling.py`, `schedule.py`):

Weight-stationary (a PRELOAD of k x n weights, then COMPUTEs of m rows through them; back to
back a weight tile occupies the array max(sum of its m, rows) cycles, docs/cycle-model.md):
  k_under  m·(1 - k/rows) per COMPUTE: K chunk shorter than rows (K < rows, K mod rows);
  n_under  m·(k/rows)·(1 - n/cols): N < cols (N mod cols);
  short    max(rows - sum of m, 0) per weight tile: fewer A rows than the `rows` beats of the
           next PRELOAD (small feature maps, M < rows; the FC's single row).
Output-stationary (COMPUTE.OS of m pixels x n outputs over k steps; back to back it
occupies max(sum over dim-wide chunks of max(m, chunk), rows) cycles):
  m_under  k·(1 - m/rows): fewer pixels than rows in the tile (small feature maps);
  n_under  k·(m/rows)·(1 - n/cols);
  k_ragged sum over chunks of max(m, chunk) - k: a last K chunk narrower than m;
  short    max(rows - chunks' cycles, 0): K < rows, the tile cannot leave the array sooner.
Both, for the rest (cycles - the array's occupancy from the above): load = the LOAD unit's
occupancy on the layer's LOADs (max(beats, 2) each, from the cycle model's times) beyond the
array's occupancy (the array waited for operands: im2col gathers, A reloaded per column
group); wait = the layer's stall cycles (`systolic compare`: the array had nothing in
flight) beyond `load` (the previous layer's STOREs, hazards); edges = the remainder
(pipeline fill and drain at the layer's ends, dispatch gaps between tiles; negative when
the layer's work started in the previous layer's window). The causes add up to
cycles - ideal exactly.

With `--scalesim PYTHON` (a Python with `scalesim==3.0.0`, e.g. /work/scalesim-env/bin/python)
it also runs SCALE-Sim 3.0 on the same layers (`systolic compare --scalesim-topology`'s rows)
for the sizes in `--scalesim-arrays` and prints its per-layer compute cycles next to ours.
SCALE-Sim runs with InterfaceBandwidth CALC (its DRAM bandwidth is sized so it never
stalls), so its "Total Cycles" column is the compute cycles: folds with their fill and
drain, no DRAM stalls. Usage:

    python bench/bench_large_arrays.py [--arrays 16x16,32x32,64x64,128x128] [--dataflows ws,os]
        [--bus-bytes 256] [--acc-kib auto] [--worst 8] [--json out.json]
        [--scalesim /work/scalesim-env/bin/python --scalesim-arrays 64x64,128x128
         --scalesim-layers n0,n7,...]
"""

import argparse
import dataclasses
import json
import subprocess
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import onnx

from systolic.compare.grid import parse_list
from systolic.compare.layer_cycles import accelerator_runs
from systolic.compare.sweep import prepare_model
from systolic.compare.to_topology import model_topology
from systolic.compare.topology import TopologyLayer, format_topology
from systolic.config import ArrayConfig, Dataflow
from systolic.isa.execute import Compute, ComputeOS, Preload
from systolic.isa.instruction_base import Instruction
from systolic.isa.load import Load
from systolic.mapper.lowering import compile_model
from systolic.sim.result import times_columns
from systolic.simulation.layer_rows import layer_rows
from systolic.simulation.layer_timing import RunTimes
from systolic.simulation.report import LayerResult

MODEL = Path(onnx.__file__).parent / "backend/test/data/light/light_resnet50.onnx"
WS_CAUSES = ("k_under", "n_under", "short", "load", "wait", "edges")
OS_CAUSES = ("m_under", "n_under", "k_ragged", "short", "load", "wait", "edges")


@dataclasses.dataclass
class LayerLoss:
    """One array layer on one configuration: shape, cycles, ideal and the lost cycles by
    cause (module docstring)."""

    name: str
    m: int
    k: int
    n: int
    cycles: int
    ideal: float
    causes: dict[str, float]

    @property
    def lost(self) -> float:
        return self.cycles - self.ideal

    @property
    def ratio(self) -> float:
        return self.cycles / self.ideal


def ws_structure(instructions: Sequence[Instruction], config: ArrayConfig) -> dict[str, float]:
    """Return the structural losses (k_under, n_under, short) and the MACs of a WS layer's
    PRELOAD/COMPUTE sequence."""
    rows, cols = config.rows, config.cols
    out = {"k_under": 0.0, "n_under": 0.0, "short": 0.0, "macs": 0.0}
    k = n = tile_rows = 0
    for instr in instructions:
        if isinstance(instr, Preload):
            if k:
                out["short"] += max(rows - tile_rows, 0)
            k, n, tile_rows = instr.k, instr.n, 0
        elif isinstance(instr, Compute):
            m = instr.m
            tile_rows += m
            out["k_under"] += m * (1 - k / rows)
            out["n_under"] += m * (k / rows) * (1 - n / cols)
            out["macs"] += m * k * n
    if k:
        out["short"] += max(rows - tile_rows, 0)
    return out


def os_structure(instructions: Sequence[Instruction], config: ArrayConfig) -> dict[str, float]:
    """Return the structural losses (m_under, n_under, k_ragged, short) and the MACs of an OS
    layer's COMPUTE.OS sequence."""
    rows, cols, dim = config.rows, config.cols, config.dim
    out = {"m_under": 0.0, "n_under": 0.0, "k_ragged": 0.0, "short": 0.0, "macs": 0.0}
    for instr in instructions:
        if not isinstance(instr, ComputeOS):
            continue
        m, n, k = instr.m, instr.n, instr.k
        chunks = sum(max(m, min(dim, k - k0)) for k0 in range(0, k, dim))
        out["m_under"] += k * (1 - m / rows)
        out["n_under"] += k * (m / rows) * (1 - n / cols)
        out["k_ragged"] += chunks - k
        out["short"] += max(rows - chunks, 0)
        out["macs"] += m * k * n
    return out


def layer_loss(result: LayerResult, shape: TopologyLayer, instructions: Sequence[Instruction],
               load_cycles: int, config: ArrayConfig) -> LayerLoss:  # fmt: skip
    """Return the layer's losses by cause; they add up to cycles - MACs / PEs.

    After the structural causes, the rest (cycles - the array's own occupancy) is split into
    `load` (the LOAD unit's occupancy on the layer's LOADs beyond the array's occupancy: the
    array waited for operands), `wait` (the layer's measured stall cycles beyond `load`:
    the array idle for the previous layer's results, hazards) and `edges` (what remains)."""
    structure = (ws_structure if config.dataflow is Dataflow.WS else os_structure)(
        instructions, config
    )
    macs = structure.pop("macs")
    if macs != result.macs:
        raise AssertionError(f"{result.name}: tiles cover {macs:,.0f} MACs of {result.macs:,}")
    ideal = result.macs / config.pes
    occupancy = ideal + sum(structure.values())
    rest = result.cycles - occupancy
    load = min(max(load_cycles - occupancy, 0.0), max(rest, 0.0))
    wait = min(max(result.stall_cycles - load, 0.0), max(rest - load, 0.0))
    causes = dict(structure, load=load, wait=wait, edges=rest - load - wait)
    m, n, k = shape.gemm_shape
    return LayerLoss(result.name, m, k, n, result.cycles, ideal, causes)


def load_occupancy(runs: Sequence[RunTimes], instructions: Sequence[Instruction],
                   config: ArrayConfig) -> np.ndarray:  # fmt: skip
    """Return, per instruction of the program, the cycles it held the LOAD unit (max(beats,
    2) for a LOAD, from complete = issue + beats + mem_latency + 2; 0 for the others)."""
    held = np.zeros(len(instructions), dtype=np.int64)
    for run in runs:
        _, issue, complete = times_columns(run.times)
        for i in range(len(run.times) - 1):
            if isinstance(instructions[run.first + i], Load):
                beats = int(complete[i] - issue[i]) - config.mem_latency - 2
                held[run.first + i] = max(beats, 2)
    return held


def memories(rows: int, cols: int, args: argparse.Namespace) -> tuple[int, int]:
    """Return (spad_kib, acc_kib) for an array: --spad-kib, and --acc-kib or (auto) 64 KiB
    raised to the two accumulator tiles the array needs."""
    if args.acc_kib != "auto":
        return args.spad_kib, int(args.acc_kib)
    acc_row = cols * 4
    return args.spad_kib, max(64, -(-2 * rows * acc_row // 1024))


def run_size(integer: object, config: ArrayConfig,
             shapes: dict[str, TopologyLayer]) -> tuple[list[LayerLoss], int]:  # fmt: skip
    """Compile and time the model on `config`; return its array layers' losses and the
    whole model's cycles."""
    compiled = compile_model(integer, config)  # type: ignore[arg-type]
    runs = accelerator_runs(compiled, "model", {})
    results = layer_rows(compiled, runs)
    instructions = compiled.program.instructions
    held = load_occupancy(runs, instructions, config)
    losses = []
    for layer, result in zip(compiled.layers, results, strict=True):
        if result.unit != "array":
            continue
        losses.append(layer_loss(result, shapes[layer.name],
                                 instructions[layer.first : layer.end],
                                 int(held[layer.first : layer.end].sum()), config))  # fmt: skip
    return losses, sum(run.total_cycles for run in runs)


SCALESIM_CONFIG = """[general]
run_name = run
[architecture_presets]
ArrayHeight: {rows}
ArrayWidth: {cols}
IfmapSramSzkB: {ifmap_kib}
FilterSramSzkB: {filter_kib}
OfmapSramSzkB: {ofmap_kib}
IfmapOffset: 0
FilterOffset: 10000000
OfmapOffset: 20000000
Dataflow: {dataflow}
ReadRequestBuffer: 32
WriteRequestBuffer: 32
[layout]
IfmapCustomLayout: False
FilterCustomLayout: False
IfmapSRAMBankBandwidth: 10
IfmapSRAMBankNum: 10
IfmapSRAMBankPort: 2
FilterSRAMBankBandwidth: 10
FilterSRAMBankNum: 10
FilterSRAMBankPort: 2
[sparsity]
SparsitySupport: false
[run_presets]
InterfaceBandwidth: CALC
UseRamulatorTrace: False
"""

SCALESIM_DRIVER = """
import csv, json, sys
from pathlib import Path
from scalesim.scale_sim import scalesim
from scalesim.scale_config import scale_config
from scalesim.topology_utils import topologies
from scalesim.layout_utils import layouts
from scalesim.compute.operand_matrix import operand_matrix
from scalesim.compute.systolic_compute_ws import systolic_compute_ws
from scalesim.compute.systolic_compute_os import systolic_compute_os
topology, config, layout, mode, out = sys.argv[1:6]
if mode == "full":  # the whole simulator; its COMPUTE_REPORT's Total Cycles
    sim = scalesim(save_disk_space=True, verbose=False, config=config, topology=topology,
                   layout=layout)
    sim.run_scale(top_path=out)
    with open(Path(out) / "run" / "COMPUTE_REPORT.csv") as f:
        rows = [[c.strip() for c in r] for r in csv.reader(f)]
    print(json.dumps([int(r[2]) for r in rows[1:]]))
    sys.exit()
cfg = scale_config(); cfg.read_conf_file(config)
topo = topologies(); topo.load_arrays(topofile=topology)
lay = layouts(); lay.load_arrays(layoutfile=layout)
cycles = []
for i in range(topo.get_num_layers()):  # its compute model alone: the demand matrices' rows
    op = operand_matrix()
    op.set_params(layer_id=i, config_obj=cfg, topoutil_obj=topo, layoututil_obj=lay)
    _, a = op.get_ifmap_matrix(); _, b = op.get_filter_matrix(); _, c = op.get_ofmap_matrix()
    if cfg.df == "ws":
        comp = systolic_compute_ws()
        comp.set_params(config_obj=cfg, ifmap_op_mat=a, filter_op_mat=b, ofmap_op_mat=c,
                        ifmap_op_mat_original=op.ifmap_addr_matrix_original,
                        sparsity_filter_array=op.sparse_filter_array)
    else:
        comp = systolic_compute_os()
        comp.set_params(config_obj=cfg, ifmap_op_mat=a, filter_op_mat=b, ofmap_op_mat=c)
    demand, _, _ = comp.get_demand_matrices()
    cycles.append(demand.shape[0] - 1)  # the report's Total Cycles (checked with "full")
print(json.dumps(cycles))
"""


def scalesim_cycles(python: str, layers: list[TopologyLayer], config: ArrayConfig,
                    mode: str) -> dict[str, int]:  # fmt: skip
    """Return SCALE-Sim 3.0's compute cycles per layer name for `config`'s array and dataflow
    (scratchpad halves as its ifmap and filter SRAMs, the accumulator as its ofmap SRAM)."""
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder)
        (path / "topology.csv").write_text(format_topology(layers))
        (path / "layout.csv").write_text("Layer name,\n")
        (path / "scale.cfg").write_text(SCALESIM_CONFIG.format(
            rows=config.rows, cols=config.cols, dataflow=config.dataflow.value,
            ifmap_kib=config.spad_kib // 2, filter_kib=config.spad_kib // 2,
            ofmap_kib=config.acc_kib))  # fmt: skip
        done = subprocess.run(
            [python, "-c", SCALESIM_DRIVER, str(path / "topology.csv"), str(path / "scale.cfg"),
             str(path / "layout.csv"), mode, str(path / "out")],
            capture_output=True, text=True, check=True,
        )  # fmt: skip
    cycles = json.loads(done.stdout.strip().splitlines()[-1])
    return {layer.name: c for layer, c in zip(layers, cycles, strict=True)}


def causes_of(config: ArrayConfig) -> tuple[str, ...]:
    return WS_CAUSES if config.dataflow is Dataflow.WS else OS_CAUSES


def print_layers(losses: list[LayerLoss], causes: Sequence[str]) -> None:
    """Print one row per layer: shape, cycles, ideal, ratio and the lost cycles by cause."""
    head = f"{'layer':<6}{'M':>7}{'K':>6}{'N':>6}{'cycles':>9}{'ideal':>9}{'ratio':>7}"
    print(head + "".join(f"{c:>10}" for c in causes))
    for loss in losses:
        print(f"{loss.name:<6}{loss.m:>7}{loss.k:>6}{loss.n:>6}{loss.cycles:>9,}"
              f"{loss.ideal:>9,.0f}{loss.ratio:>7.2f}"
              + "".join(f"{loss.causes[c]:>10,.0f}" for c in causes))  # fmt: skip


def summary(losses: list[LayerLoss], causes: Sequence[str]) -> dict[str, float]:
    """Return the totals: cycles, ideal, ratio and each cause's cycles."""
    cycles = sum(loss.cycles for loss in losses)
    ideal = sum(loss.ideal for loss in losses)
    totals = {c: sum(loss.causes[c] for loss in losses) for c in causes}
    return {"cycles": cycles, "ideal": ideal, "ratio": cycles / ideal, **totals}


def print_summary(label: str, losses: list[LayerLoss], causes: Sequence[str], whole: int,
                  worst: int) -> None:  # fmt: skip
    totals = summary(losses, causes)
    lost = totals["cycles"] - totals["ideal"]
    print(
        f"{label}: array layers {totals['cycles']:,.0f} cycles, ideal "
        f"{totals['ideal']:,.0f}: ratio {totals['ratio']:.3f}; whole model {whole:,}"
    )
    print("  lost by cause: " + ", ".join(
        f"{c} {totals[c]:,.0f} ({totals[c] / lost:.0%}, +{totals[c] / totals['ideal']:.3f}x)"
        for c in causes))  # fmt: skip
    print(f"  worst {worst} layers (lost cycles):")
    for loss in sorted(losses, key=lambda x: x.lost, reverse=True)[:worst]:
        top = max(causes, key=lambda c: loss.causes[c])
        print(f"    {loss.name} M={loss.m} K={loss.k} N={loss.n}: {loss.cycles:,} vs "
              f"{loss.ideal:,.0f} ({loss.ratio:.2f}x), lost {loss.lost:,.0f}, most {top} "
              f"{loss.causes[top]:,.0f}")  # fmt: skip


def print_scalesim(losses: list[LayerLoss], theirs: dict[str, int], label: str) -> None:
    """Print our cycles and SCALE-Sim's compute cycles per layer, and the totals."""
    print(f"{label}: ours / SCALE-Sim 3.0 compute cycles (CALC bandwidth: no DRAM stalls)")
    print(f"{'layer':<6}{'ideal':>10}{'ours':>11}{'SCALE-Sim':>11}{'ours/ideal':>11}"
          f"{'SS/ideal':>10}")  # fmt: skip
    for loss in losses:
        if loss.name in theirs:
            s = theirs[loss.name]
            print(f"{loss.name:<6}{loss.ideal:>10,.0f}{loss.cycles:>11,}{s:>11,}"
                  f"{loss.ratio:>11.2f}{s / loss.ideal:>10.2f}")  # fmt: skip
    shared = [loss for loss in losses if loss.name in theirs]
    ideal = sum(loss.ideal for loss in shared)
    ours = sum(loss.cycles for loss in shared)
    s = sum(theirs[loss.name] for loss in shared)
    print(f"{'total':<6}{ideal:>10,.0f}{ours:>11,}{s:>11,}{ours / ideal:>11.3f}{s / ideal:>10.3f}")


def print_by_size(losses: list[LayerLoss], causes: Sequence[str], theirs: dict[str, int]) -> None:
    """Print the layers grouped by M (the stem, each stage's feature map, the FC): cycles,
    ideal, ratio, the causes and SCALE-Sim's cycles when given."""
    print(f"{'M':>6}{'layers':>7}{'cycles':>10}{'ideal':>10}{'ratio':>7}"
          + "".join(f"{c:>9}" for c in causes) + ("  SCALE-Sim" if theirs else ""))  # fmt: skip
    for m in sorted({loss.m for loss in losses}, reverse=True):
        group = [loss for loss in losses if loss.m == m]
        cycles = sum(x.cycles for x in group)
        ideal = sum(x.ideal for x in group)
        row = f"{m:>6}{len(group):>7}{cycles:>10,}{ideal:>10,.0f}{cycles / ideal:>7.2f}"
        row += "".join(f"{sum(x.causes[c] for x in group):>9,.0f}" for c in causes)
        if theirs and all(x.name in theirs for x in group):
            ss = sum(theirs[x.name] for x in group)
            row += f"{ss:>11,} ({ss / ideal:.2f}x)"
        elif theirs:
            row += f"{'-':>11}"
        print(row)


def both_estimate(results: dict[tuple[str, str], list[LayerLoss]], array: str) -> None:
    """Print the array layers' ratio if each layer ran in its faster dataflow (`both`)."""
    ws, os_ = results.get((array, "ws")), results.get((array, "os"))
    if not ws or not os_:
        return
    best = sum(min(a.cycles, b.cycles) for a, b in zip(ws, os_, strict=True))
    ideal = sum(a.ideal for a in ws)
    picks = sum(b.cycles < a.cycles for a, b in zip(ws, os_, strict=True))
    print(
        f"{array} per-layer faster dataflow (`both`): {best:,} cycles, ratio "
        f"{best / ideal:.3f} ({picks} of {len(ws)} layers OS)"
    )


def unique_shapes(layers: list[TopologyLayer]) -> tuple[list[TopologyLayer], dict[str, str]]:
    """Return one layer per distinct shape and, per layer name, its representative's name."""
    first: dict[tuple[int, ...], TopologyLayer] = {}
    for layer in layers:
        first.setdefault(dataclasses.astuple(layer)[1:], layer)
    same = {layer.name: first[dataclasses.astuple(layer)[1:]].name for layer in layers}
    return list(first.values()), same


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--arrays", default="16x16,32x32,64x64,128x128")
    parser.add_argument("--dataflows", default="ws,os")
    parser.add_argument("--bus-bytes", type=int, default=256)
    parser.add_argument("--spad-kib", type=int, default=256)
    parser.add_argument("--acc-kib", default="auto", help="KiB, or auto: 64 or the least the "
                        "array allows (128 at 128x128)")  # fmt: skip
    parser.add_argument("--worst", type=int, default=8, help="layers listed per configuration")
    parser.add_argument("--quiet-layers", action="store_true", help="no per-layer tables")
    parser.add_argument("--json", help="write every layer's figures here")
    parser.add_argument("--scalesim", help="a Python with scalesim==3.0.0 installed")
    parser.add_argument("--scalesim-arrays", default="64x64,128x128")
    parser.add_argument("--scalesim-mode", choices=("compute", "full"), default="compute",
                        help="compute: SCALE-Sim's compute model alone (fast); full: the "
                        "whole simulator (its memory system too: minutes per layer)")  # fmt: skip
    parser.add_argument("--scalesim-layers", default="", help="names (default: every layer; "
                        "layers of equal shape are simulated once)")  # fmt: skip
    return parser.parse_args()


def main() -> None:
    args = parse_args()
    start = time.process_time()
    prepared = prepare_model(MODEL)
    topology = model_topology(prepared.integer)
    shapes = {layer.name: layer for layer in topology}
    print(f"passes: {time.process_time() - start:.1f} s CPU; {len(topology)} array layers")
    results: dict[tuple[str, str], list[LayerLoss]] = {}
    dump: list[dict[str, object]] = []
    arrays = parse_list("--arrays", args.arrays)
    for array in arrays:
        rows, cols = (int(x) for x in array.split("x"))
        spad, acc = memories(rows, cols, args)
        for dataflow in parse_list("--dataflows", args.dataflows):
            config = ArrayConfig(rows=rows, cols=cols, dataflow=Dataflow(dataflow),
                                 spad_kib=spad, acc_kib=acc, bus_bytes=args.bus_bytes)  # fmt: skip
            label = f"{array} {dataflow} (spad {spad} KiB, acc {acc} KiB, bus {args.bus_bytes})"
            start = time.process_time()
            losses, whole = run_size(prepared.integer, config, shapes)
            results[array, dataflow] = losses
            print(f"\n== {label} [{time.process_time() - start:.1f} s CPU]")
            if not args.quiet_layers:
                print_layers(losses, causes_of(config))
            print_summary(label, losses, causes_of(config), whole, args.worst)
            theirs: dict[str, int] = {}
            if args.scalesim and array in parse_list("--scalesim-arrays", args.scalesim_arrays):
                theirs = run_scalesim(args, topology, config)
                print_scalesim(losses, theirs, label)
            print_by_size(losses, causes_of(config), theirs)
            dump.append({"array": array, "dataflow": dataflow, "spad_kib": spad,
                         "acc_kib": acc, "bus_bytes": args.bus_bytes, "whole_cycles": whole,
                         "summary": summary(losses, causes_of(config)),
                         "layers": [dict(dataclasses.asdict(x), scalesim=theirs.get(x.name))
                                    for x in losses]})  # fmt: skip
    print()
    for array in arrays:
        both_estimate(results, array)
    if args.json:
        Path(args.json).write_text(json.dumps(dump, indent=1))


def run_scalesim(args: argparse.Namespace, topology: list[TopologyLayer],
                 config: ArrayConfig) -> dict[str, int]:  # fmt: skip
    """Return SCALE-Sim's cycles per layer (each distinct shape simulated once)."""
    wanted = set(parse_list("--scalesim-layers", args.scalesim_layers)) if (
        args.scalesim_layers) else {layer.name for layer in topology}  # fmt: skip
    layers = [layer for layer in topology if layer.name in wanted]
    unique, same = unique_shapes(layers)
    start = time.perf_counter()
    cycles = scalesim_cycles(args.scalesim, unique, config, args.scalesim_mode)
    print(f"SCALE-Sim ({args.scalesim_mode}): {len(unique)} distinct layers of {len(layers)}, "
          f"{time.perf_counter() - start:.1f} s wall")  # fmt: skip
    return {name: cycles[rep] for name, rep in same.items()}


if __name__ == "__main__":
    main()
