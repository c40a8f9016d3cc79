"""Yosys' FPGA cells by component: which unit of the accelerator the logic belongs to.

`component_cells(netlist, top)` counts the cells of the flattened harness netlist that
`synth_ecp5` writes by the accelerator's unit they come from: the first name below the
harness's `accelerator` instance (`accelerator.dispatcher.ranges6[2]...` is `dispatcher`), as
the flattening names cells and as ABC's `-dress` option keeps the name of the net a LUT drives.
Cells named after a net of the accelerator's own top module count as `top`; cells without the
instance's name (the harness's shift chains) as `other`.

Kinds: `logic` (LUT4, the wide-function muxes PFUMX and L6MUX21, and the carry cells CCU2C:
nextpnr packs them into the TRELLIS_COMB cells it reports as LUTs), `flip_flops`
(TRELLIS_FF), `dsps` (MULT18X18D) and `brams` (DP16KD). These are Yosys' cells before packing,
so the totals are close to, not equal to, nextpnr's figures.
"""

from typing import Any

__all__ = ["CELL_KINDS", "component_cells"]

CELL_KINDS = {
    "LUT4": "logic", "PFUMX": "logic", "L6MUX21": "logic", "CCU2C": "logic",
    "TRELLIS_FF": "flip_flops", "MULT18X18D": "dsps", "DP16KD": "brams",
}
"""The kind each counted cell type adds to."""

_INSTANCE = "accelerator."
_OTHER = "other"
_TOP = "top"


def _component(cell_name: str) -> str:
    if not cell_name.startswith(_INSTANCE):
        return _OTHER
    unit, dot, _ = cell_name[len(_INSTANCE):].partition(".")
    return unit if dot and unit[:1] not in ("$", "_") else _TOP


def component_cells(netlist: dict[str, Any], top: str) -> dict[str, dict[str, int]]:
    """Return component -> {logic, flip_flops, dsps, brams} for module `top` of a Yosys JSON
    netlist, the components in decreasing order of logic cells (`other` last)."""
    counts: dict[str, dict[str, int]] = {}
    for name, cell in netlist["modules"][top]["cells"].items():
        kind = CELL_KINDS.get(cell["type"])
        if kind is None:
            continue
        row = counts.setdefault(_component(name), dict.fromkeys(
            ("logic", "flip_flops", "dsps", "brams"), 0))
        row[kind] += 1
    order = sorted(counts, key=lambda unit: (unit == _OTHER, -counts[unit]["logic"], unit))
    return {unit: counts[unit] for unit in order}
