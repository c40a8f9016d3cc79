"""`systolic.verilog.fpga_failures`: a tool's failure is one line naming its first error, and
its log is kept where the line says."""

from pathlib import Path

from systolic.errors import SystolicError
from systolic.verilog.fpga_failures import FpgaToolError, first_error, tool_failure

NEXUS_CLOCK_LOG = """Info: Routing globals...
Info:     routed net 'accelerator.clk$glb_clk' using global resources
ERROR: Failed to route arc 0.0 of net 'accelerator.clk', from X87/Y17/JPADDI_SEIO33_CORE_IOA to X86/Y28/JCLKI_DCC_DCC1.
ERROR: a second error
0 warnings, 2 errors
"""


def test_first_error_line_or_the_last_line() -> None:
    assert first_error(NEXUS_CLOCK_LOG) == (
        "Failed to route arc 0.0 of net 'accelerator.clk', from "
        "X87/Y17/JPADDI_SEIO33_CORE_IOA to X86/Y28/JCLKI_DCC_DCC1.")
    assert first_error("Info: a\n\n  killed by signal   9  \n\n") == "killed by signal 9"
    assert first_error("") == "no output"


def test_failure_is_one_line_and_keeps_the_log(tmp_path: Path) -> None:
    log = tmp_path / "work" / "nextpnr.log"
    log.parent.mkdir()
    log.write_text(NEXUS_CLOCK_LOG)
    error = tool_failure("nextpnr", "nexus-40k", log, tmp_path / "cache")
    kept = tmp_path / "cache" / "failed-nextpnr-nexus-40k.log"
    assert isinstance(error, FpgaToolError) and isinstance(error, SystolicError)
    assert str(error) == ("nextpnr failed on nexus-40k: Failed to route arc 0.0 of net "
                          "'accelerator.clk', from X87/Y17/JPADDI_SEIO33_CORE_IOA to "
                          f"X86/Y28/JCLKI_DCC_DCC1. (log: {kept})")
    assert "\n" not in str(error) and kept.read_text() == NEXUS_CLOCK_LOG


def test_failure_without_a_log(tmp_path: Path) -> None:
    error = tool_failure("yosys", "ecp5-25k", tmp_path / "missing.log", tmp_path / "cache")
    assert str(error) == "yosys failed on ecp5-25k: no output (no log)"
