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
so the totals are close to, not equal to, nextpnr's figures. `synth_nexus` and `synth_gowin`
write other cell types (fpga_parts.py's Nexus and Gowin parts), counted the same way: Nexus'
LUT4, WIDEFN9 and CCU2, its FD1P3?X flip-flops, its MULT*/MULTADDSUB*/MULTPREADD* DSP cells
and its block RAMs (DP16K, PDP16K, PDPSC16K, SP16K) and large RAMs (the *512K cells);
Gowin's LUT1-LUT4, MUX2_LUT5-8 and ALU, its DFF* flip-flops, its MULT9X9/18X18/36X36 and its
block RAMs (SP, SDPB, DPB and their X9 forms).
"""

from typing import Any

__all__ = ["CELL_KINDS", "component_cells"]

_NEXUS_KINDS = {
    "WIDEFN9": "logic", "CCU2": "logic",
    **dict.fromkeys(("FD1P3BX", "FD1P3DX", "FD1P3IX", "FD1P3JX"), "flip_flops"),
    **dict.fromkeys(("MULT9X9", "MULT18X18", "MULT18X36", "MULT36X36", "MULTPREADD9X9",
                     "MULTPREADD18X18", "MULTADDSUB18X18", "MULTADDSUB36X36",
                     "MULTADDSUB9X9WIDE"), "dsps"),
    **dict.fromkeys(("DP16K", "PDP16K", "PDPSC16K", "SP16K", "DPSC512K", "PDPSC512K",
                     "SP512K"), "brams"),
}
_GOWIN_KINDS = {
    **dict.fromkeys(("LUT1", "LUT2", "LUT3", "MUX2_LUT5", "MUX2_LUT6", "MUX2_LUT7",
                     "MUX2_LUT8", "ALU"), "logic"),
    **{f"DFF{edge}{kind}": "flip_flops" for edge in ("", "N")
       for kind in ("", "E", "S", "SE", "R", "RE", "P", "PE", "C", "CE")},
    "MULT36X36": "dsps",
    **dict.fromkeys(("SP", "SPX9", "SDPB", "SDPX9B", "DPB", "DPX9B"), "brams"),
}
CELL_KINDS = {
    "LUT4": "logic", "PFUMX": "logic", "L6MUX21": "logic", "CCU2C": "logic",
    "TRELLIS_FF": "flip_flops", "MULT18X18D": "dsps", "DP16KD": "brams",
    **_NEXUS_KINDS, **_GOWIN_KINDS,
}
"""The kind each counted cell type adds to (ECP5's, Nexus' and Gowin's cell types: no name
means different kinds in two families)."""

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
