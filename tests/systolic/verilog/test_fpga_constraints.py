"""`systolic.verilog.fpga_constraints`: the files and nextpnr arguments of each family."""

from systolic.verilog.fpga_constraints import constraint_args, constraint_files
from systolic.verilog.fpga_flow import nextpnr_args
from systolic.verilog.fpga_parts import PARTS


def test_ecp5_takes_the_clock_from_an_lpf_and_places_the_pins_itself() -> None:
    part = PARTS["ecp5-45k"]
    assert constraint_files(part, 62.5) == {"clock.lpf": 'FREQUENCY PORT "clk" 62.50 MHZ;\n'}
    assert constraint_args(part, 62.5) == ["--lpf", "clock.lpf", "--lpf-allow-unconstrained"]


def test_nexus_pins_are_a_pdc_and_the_clock_is_freq() -> None:
    part = PARTS["nexus-40k"]
    text = constraint_files(part, 100.0)["pins.pdc"]
    assert text.splitlines() == [f"ldc_set_location -site {{{pin}}} [get_ports {port}]"
                                 for port, pin in part.pins]
    assert constraint_args(part, 100.0) == ["--freq", "100.00", "--pdc", "pins.pdc"]


def test_gowin_pins_are_a_cst_passed_as_a_vopt() -> None:
    part = PARTS["gw2a-18"]
    text = constraint_files(part, 50.0)["pins.cst"]
    assert text.splitlines() == [f'IO_LOC "{port}" {pin};' for port, pin in part.pins]
    args = nextpnr_args(part, 50.0)
    assert args[:4] == ["--device", part.device, "--vopt", "family=GW2A-18"]
    assert args[args.index("--freq") + 1] == "50.00"
    assert "cst=pins.cst" in args and "--timing-allow-fail" in args
