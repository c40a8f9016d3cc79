"""`systolic verilog --fpga PART`: the option's errors, and its text and JSON (the flow itself
replaced by a recorded result: the real runs are in test_fpga_flow.py)."""

import dataclasses
import json
from pathlib import Path

import pytest

from systolic.commands.cli import main
from systolic.verilog import fpga_flow, fpga_tools
from systolic.verilog.fpga_failures import FpgaToolError
from systolic.verilog.fpga_flow import FpgaResult

SMALL = ["--array", "2x2", "--spad-kib", "8", "--acc-kib", "2"]
RESULT = FpgaResult(
    part="ecp5-85k", device="LFE5U-85F-6CABGA381", fits=False,
    resources={name: {"used": 3, "available": 2} for name in
               ("luts", "flip_flops", "dsps", "brams")},
    shortfall=[{"resource": "luts", "cell_type": "TRELLIS_COMB", "used": 3, "available": 2,
                "over": 1}],
    fmax_mhz=None, target_mhz=50.0, critical_path=None, harness_flip_flops=1_679,
    synthesis="synth_ecp5", phase_seconds={"synthesis": 1.0, "place_and_route": 2.0},
    tools={}, cached=False, cache_folder="/cache",
)


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (["--fpga", "virtex"], ("--fpga virtex: unknown FPGA part; choose one of ecp5-25k, "
                                "ecp5-45k, ecp5-85k, nexus-17k, nexus-40k, gw1n-9c, gw2a-18")),
        (["--fpga-mhz", "50"], "--fpga-mhz is the clock constraint of --fpga: add --fpga PART"),
        (["--fpga", "ecp5-25k", "--fpga-mhz", "0"],
         "--fpga-mhz 0: give a clock between 0 and 1000 MHz"),
    ],
)
def test_bad_fpga_options_are_one_line_and_write_nothing(tmp_path: Path, capsys,
                                                         options: list[str],
                                                         message: str) -> None:
    assert main(["verilog", *SMALL, *options, "-o", str(tmp_path / "out")]) == 2
    assert capsys.readouterr().err == f"systolic: error: {message}\n"
    assert list(tmp_path.iterdir()) == []


def test_missing_wheel_is_one_line(tmp_path: Path, capsys, monkeypatch) -> None:
    monkeypatch.setattr(fpga_tools.importlib.util, "find_spec", lambda name: None)
    assert main(["verilog", *SMALL, "--fpga", "ecp5-85k", "-o", str(tmp_path / "out")]) == 2
    assert "pip install 'systolic[fpga]'" in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == []


def test_result_goes_to_text_and_json(tmp_path: Path, capsys, monkeypatch) -> None:
    calls = []

    def fake(verilog: str, top: str, part, *, target_mhz: float) -> FpgaResult:
        calls.append((top, part.name, target_mhz, verilog.count("\nendmodule")))
        return RESULT

    monkeypatch.setattr(fpga_tools, "check_tools", lambda part: None)
    monkeypatch.setattr(fpga_flow, "implement", fake)
    out = tmp_path / "out"
    assert main(["verilog", *SMALL, "--fpga", "ecp5-85k", "--fpga-mhz", "50", "--json",
                 str(tmp_path / "r.json"), "-o", str(out)]) == 0  # not fitting is a result
    (top, part, mhz, modules), = calls
    assert (top, part, mhz) == ("systolic_accel_2x2_ws", "ecp5-85k", 50.0) and modules > 1
    summary = json.loads((tmp_path / "r.json").read_text())
    assert summary["fpga"] == dataclasses.asdict(RESULT)
    text = capsys.readouterr().out
    assert "\nFPGA ecp5-85k (LFE5U-85F-6CABGA381; ; synthesis 1 s, place and route 2 s):\n" in text
    assert "    LUTs: 3 needed, 2 available (1 over)\n" in text


def test_tool_failure_is_one_line_exit_2(tmp_path: Path, capsys, monkeypatch) -> None:
    message = ("nextpnr failed on nexus-40k: Failed to route arc 0.0 of net "
               "'accelerator.clk' (log: /cache/failed-nextpnr-nexus-40k.log)")

    def failing(verilog: str, top: str, part, *, target_mhz: float) -> FpgaResult:
        raise FpgaToolError(message)

    monkeypatch.setattr(fpga_tools, "check_tools", lambda part: None)
    monkeypatch.setattr(fpga_flow, "implement", failing)
    assert main(["verilog", *SMALL, "--fpga", "nexus-40k", "-o", str(tmp_path / "out")]) == 2
    assert capsys.readouterr().err == f"systolic: error: {message}\n"
