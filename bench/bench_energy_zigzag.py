"""Our energy per layer next to ZigZag's on the same layers and per-access energies (not a test).

Compiles a float ONNX model (default: tests/models/resnet_tiny_float.onnx, quantized by the
passes with their seeded random calibration) for one configuration, counts our events per
layer (`systolic.simulation.energy.layer_energies`, the bundled 45 nm table), then describes
the same accelerator to ZigZag (`pip install zigzag-dse`; it reads the float ONNX model) with
the same per-access energies and runs its mapper on the model's Conv and Gemm layers:

- operational array: rows x cols MAC units (D1 = cols over output channels K, D2 = rows over
  input channels C, weight-stationary as ours), `unit_energy` = our `pe.mac`;
- memories: a one-weight register per PE and a partial-sum register per PE at no cost (our
  `pe.mac` includes them), spad_in (I1) and spad_wt (I2) of spad_kib/2 each with our row width
  and our `spad_in.read`/`spad_wt.read` per row access, the accumulator (O) with our row width
  and `acc.read`/`acc.write`, and DRAM (I1, I2, O) with our bus width and 8 pJ per bit;
- mapping: our spatial mapping (K over the columns, C over the rows), ZigZag's LOMA temporal
  mapping search minimising energy.

Prints per array layer both tools' MACs, on-chip memory accesses (rows of each memory),
DRAM traffic (bits) and energy, and the totals. Usage:

    python bench/bench_energy_zigzag.py [--model PATH] [--array 8x8] [--lpf-limit 6]
"""

import argparse
import contextlib
import io
import logging
import math
import tempfile
from pathlib import Path
from typing import Any

import repository_root  # puts the repository root on sys.path

from systolic.config import ArrayConfig
from systolic.isa.program import LayerUnit
from systolic.mapper.lowering import compile_model
from systolic.mapper.lowering.compiled import CompiledModel
from systolic.sim.energy.table import EnergyTable
from systolic.simulation.energy import LayerEnergy, layer_energies
from systolic.simulation.prepare import prepare_model

DEFAULT_MODEL = repository_root.ROOT / "tests/models/resnet_tiny_float.onnx"


def _memory(name: str, bits: int, operands: list[str], width: int, read: float, write: float,
            served: list[str]) -> str:
    allocation = {"I1": ["I1, tl", "I1, fh"], "I2": ["I2, tl", "I2, fh"],
                  "O": ["O, tl", "O, th", "O, fh", "O, fl"]}  # fmt: skip
    reads = [a for op in operands for a in allocation[op] if a.endswith(("tl", "th"))]
    writes = [a for op in operands for a in allocation[op] if a.endswith(("fh", "fl"))]
    lines = [f"  {name}:", f"    size: {bits}", f"    r_cost: {read}", f"    w_cost: {write}",
             "    area: 0", "    latency: 1", f"    operands: [{', '.join(operands)}]",
             "    ports:",
             "      - name: r_port_1", "        type: read",
             f"        bandwidth_min: {width}", f"        bandwidth_max: {width}",
             "        allocation:", *[f"          - {a}" for a in reads],
             "      - name: w_port_1", "        type: write",
             f"        bandwidth_min: {width}", f"        bandwidth_max: {width}",
             "        allocation:", *[f"          - {a}" for a in writes],
             f"    served_dimensions: [{', '.join(served)}]"]  # fmt: skip
    return "\n".join(lines)


def accelerator_yaml(config: ArrayConfig, actions: dict[str, float]) -> str:
    """Return ZigZag's description of our accelerator (module docstring)."""
    bus = config.bus_bytes * 8
    dram_read, dram_write = bus * actions["dram.read_bit"], bus * actions["dram.write_bit"]
    spad_bits = config.spad_kib * 512 * 8
    memories = [
        _memory("w_reg", config.weight_width, ["I2"], config.weight_width, 0, 0, []),
        _memory("o_reg", config.acc_width, ["O"], config.acc_width, 0, 0, []),
        _memory("spad_wt", spad_bits, ["I2"], config.dim * config.weight_width,
                actions["spad_wt.read"], actions["spad_wt.write"], ["D1", "D2"]),
        _memory("spad_in", spad_bits, ["I1"], config.dim * config.input_width,
                actions["spad_in.read"], actions["spad_in.write"], ["D1", "D2"]),
        _memory("acc", config.acc_kib * 8192, ["O"], config.cols * config.acc_width,
                actions["acc.read"], actions["acc.write"], ["D1", "D2"]),
        _memory("dram", 10**12, ["I1", "I2", "O"], bus, dram_read, dram_write, ["D1", "D2"]),
    ]  # fmt: skip
    return "\n".join([
        "name: systolic_ws", "memories:", *memories, "operational_array:",
        f"  unit_energy: {actions['pe.mac']}", "  unit_area: 1", "  dimensions: [D1, D2]",
        f"  sizes: [{config.cols}, {config.rows}]", "  systolic_dimensions: [D1, D2]",
    ]) + "\n"  # fmt: skip


def mapping_yaml(config: ArrayConfig) -> str:
    """Return ZigZag's mapping: K over the columns, C over the rows (weight-stationary)."""
    return "\n".join([
        "- name: default", "  spatial_mapping:", "    D1:", f"      - K, {config.cols}",
        "    D2:", f"      - C, {config.rows}", "  memory_operand_links:", "    O: O",
        "    W: I2", "    I: I1",
    ]) + "\n"  # fmt: skip


def run_zigzag(model: Path, config: ArrayConfig, actions: dict[str, float],
               lpf_limit: int) -> list[Any]:
    """Return ZigZag's cost model evaluations, one per Conv/Gemm layer, in model order."""
    from zigzag.api import get_hardware_performance_zigzag

    with tempfile.TemporaryDirectory() as folder:
        accelerator, mapping = Path(folder, "acc.yaml"), Path(folder, "map.yaml")
        accelerator.write_text(accelerator_yaml(config, actions))
        mapping.write_text(mapping_yaml(config))
        logging.disable(logging.INFO)
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            _, _, cmes = get_hardware_performance_zigzag(
                workload=str(model), accelerator=str(accelerator), mapping=str(mapping),
                opt="energy", dump_folder=f"{folder}/out", lpf_limit=lpf_limit,
                loma_show_progress_bar=False,
            )  # fmt: skip
    return [cme for cme, _ in cmes[0][1]]


def zigzag_figures(cme: Any) -> dict[str, Any]:
    """Return a ZigZag layer's name, MACs, accesses per memory (words of the memory's port
    width: our rows), DRAM bits and energy (pJ)."""
    from zigzag.hardware.architecture.memory_port import DataDirection

    accesses: dict[str, float] = {}
    dram_bits = 0.0
    hierarchy = cme.accelerator.memory_hierarchy
    for op, counts in cme.memory_word_access.items():
        levels = hierarchy.get_memory_levels(cme.memory_operand_links.layer_to_mem_op(op))
        for count, level in zip(counts, levels, strict=True):
            words = sum(float(count.get(direction)) for direction in DataDirection)
            name = level.memory_instance.name
            accesses[name] = accesses.get(name, 0.0) + words
            if name == "dram":
                dram_bits += words * level.memory_instance.ports[0].bw_max
    return {"name": str(cme.layer.name), "macs": float(cme.layer.total_mac_count),
            "energy": float(cme.energy_total), "dram_bits": dram_bits,
            **{f"{k}_accesses": v for k, v in accesses.items()}}  # fmt: skip


def ours(compiled: CompiledModel, energies: list[LayerEnergy]) -> list[dict[str, float]]:
    """Return our figures of every array layer, in order."""
    bus = compiled.config.bus_bytes * 8
    rows = []
    for layer, energy in zip(compiled.layers, energies, strict=True):
        if layer.unit is not LayerUnit.ARRAY:
            continue
        e = energy.events
        rows.append({"name": layer.name, "macs": e["macs"], "energy": energy.total_pj,
                     "spad_in_accesses": e["spad_in_reads"] + e["spad_in_writes"],
                     "spad_wt_accesses": e["spad_wt_reads"] + e["spad_wt_writes"],
                     "acc_accesses": e["acc_reads"] + e["acc_writes"] + e["acc_rmw"],
                     "dram_bits": (e["ext_read_beats"] + e["ext_write_beats"]) * bus})  # fmt: skip
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", type=Path, default=DEFAULT_MODEL)
    parser.add_argument("--array", default="8x8")
    parser.add_argument("--lpf-limit", type=int, default=6)
    args = parser.parse_args()
    rows, cols = ArrayConfig.parse_shape(args.array)
    config = ArrayConfig(rows=rows, cols=cols)
    table = EnergyTable.default()
    actions = table.actions(config)
    compiled = compile_model(prepare_model(args.model).integer, config)
    mine = ours(compiled, layer_energies(compiled, table))
    theirs = [zigzag_figures(cme) for cme in run_zigzag(args.model, config, actions,
                                                        args.lpf_limit)]  # fmt: skip
    print(f"{args.model.name} at {args.array} WS; per-access energies: pe.mac "
          f"{actions['pe.mac']:.3f}, spad_in row {actions['spad_in.read']:.1f}, spad_wt row "
          f"{actions['spad_wt.read']:.1f}, acc row {actions['acc.read']:.1f} pJ, DRAM "
          f"{actions['dram.read_bit']:g} pJ/bit")  # fmt: skip
    header = ("layer", "MACs ours/zz", "spad_in ours/zz", "spad_wt ours/zz", "acc ours/zz",
              "DRAM kbit ours/zz", "energy uJ ours/zz")  # fmt: skip
    print(" | ".join(header))
    keys = ("macs", "spad_in_accesses", "spad_wt_accesses", "acc_accesses")
    totals = {key: [0.0, 0.0] for key in (*keys, "dram_bits", "energy")}
    by_name = {their["name"].replace("/", "_").strip("_"): their for their in theirs}
    pairs = [(our, by_name.get(our["name"])) for our in mine]
    if any(their is None for _, their in pairs):  # names differ: pair them in order
        pairs = list(zip(mine, theirs, strict=False))
    for our, their in pairs:
        assert their is not None
        cells = [our["name"]]
        for key in keys:
            cells.append(f"{our[key]:,.0f} / {their.get(key, math.nan):,.0f}")
        cells.append(f"{our['dram_bits'] / 1e3:,.1f} / {their['dram_bits'] / 1e3:,.1f}")
        cells.append(f"{our['energy'] * 1e-6:.3f} / {their['energy'] * 1e-6:.3f}")
        for key, pair in totals.items():
            pair[0] += our[key]
            pair[1] += their.get(key, 0.0)
        print(" | ".join(cells))
    if len(mine) != len(theirs):
        print(f"(layers: ours {len(mine)}, ZigZag {len(theirs)}: compared pairwise in order)")
    print("total | " + " | ".join(
        f"{a:,.0f} / {b:,.0f}" for a, b in (totals[k] for k in keys))
        + f" | {totals['dram_bits'][0] / 1e3:,.1f} / {totals['dram_bits'][1] / 1e3:,.1f}"
        + f" | {totals['energy'][0] * 1e-6:.3f} / {totals['energy'][1] * 1e-6:.3f}")  # fmt: skip


if __name__ == "__main__":
    main()
