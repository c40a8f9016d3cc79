"""The constraint files and arguments nextpnr gets for each family: clock and pins.

nextpnr-ecp5 reads the clock constraint from an LPF file (`clock.lpf`) and places the harness'
five pins itself (`--lpf-allow-unconstrained`). nextpnr-nexus and nextpnr-himbaechel (Gowin)
take the clock as `--freq` and refuse an unplaced I/O ("Found unconstrained IO",
"Unconstrained IO"), so their parts name a package pin for each harness pin (fpga_parts.py),
written as a PDC file for Nexus (`pins.pdc`, `ldc_set_location -site {pin} [get_ports port]`,
passed as `--pdc`) or a CST file for Gowin (`pins.cst`, `IO_LOC "port" pin;`, passed as
`--vopt cst=pins.cst`).
"""

from systolic.verilog.fpga_parts import Part

__all__ = ["constraint_args", "constraint_files"]


def constraint_files(part: Part, target_mhz: float) -> dict[str, str]:
    """Return the constraint files of a run on `part`: file name -> text ({} for none)."""
    if part.constraints == "lpf":
        return {"clock.lpf": f'FREQUENCY PORT "clk" {target_mhz:.2f} MHZ;\n'}
    if part.constraints == "pdc":
        return {"pins.pdc": "".join(f"ldc_set_location -site {{{pin}}} [get_ports {port}]\n"
                                    for port, pin in part.pins)}
    return {"pins.cst": "".join(f'IO_LOC "{port}" {pin};\n' for port, pin in part.pins)}


def constraint_args(part: Part, target_mhz: float) -> list[str]:
    """Return nextpnr's arguments that read the files of `constraint_files` (or give the
    clock directly)."""
    if part.constraints == "lpf":
        return ["--lpf", "clock.lpf", "--lpf-allow-unconstrained"]
    pins = ["--pdc", "pins.pdc"] if part.constraints == "pdc" else ["--vopt", "cst=pins.cst"]
    return ["--freq", f"{target_mhz:.2f}", *pins]
