"""Record real nextpnr-nexus and nextpnr-himbaechel (Gowin) output for the tests of the
Nexus and Gowin parts (fpga_data/<part>_*), as make_fpga_data.py does for ECP5.

Runs the flow on the same two small designs on the smallest part of each family:

- `mac_ram` fits: nextpnr's log, its `--report` JSON and the excerpt of Yosys' netlist that
  names the critical paths' cells (<part>_fits_*);
- `dsp_hog` with more 8x8 products than the part has DSP multipliers (<part>_overflow_*):
  nextpnr's log up to its error or to where the flow stopped it.

Usage: python tests/systolic/verilog/make_fpga_family_data.py  (needs the fpga extra; minutes)
"""

import json
import os
import shutil
import sys
import tempfile
from pathlib import Path

from make_fpga_data import MAC_RAM, dsp_hog, netlist_excerpt  # this script's folder

from systolic.verilog.fpga_flow import implement
from systolic.verilog.fpga_parts import PARTS

DATA = Path(__file__).parent / "fpga_data"
OVERFLOW_PRODUCTS = {"nexus-17k": 56, "gw1n-9c": 48}
"""dsp_hog's products per part: more than its 9x9 multipliers (LIFCL-17: 48, GW1N-9C: 40)."""


def record(name: str, folder: Path) -> None:
    """Run both designs on part `name` with the cache in `folder`; copy the results to DATA."""
    os.environ["SYSTOLIC_CACHE_DIR"] = str(folder)
    part = PARTS[name]
    fits = Path(implement(MAC_RAM, "mac_ram", part, progress=sys.stderr,
                          keep_netlist=True).cache_folder)
    report = json.loads((fits / "report.json").read_text(encoding="utf-8"))
    shutil.copy(fits / "nextpnr.log", DATA / f"{name}_fits_nextpnr.log")
    shutil.copy(fits / "report.json", DATA / f"{name}_fits_report.json")
    netlist = json.loads((fits / "netlist.json").read_text(encoding="utf-8"))
    (DATA / f"{name}_fits_netlist.json").write_text(
        json.dumps(netlist_excerpt(netlist, report), indent=1, sort_keys=True) + "\n",
        encoding="utf-8")
    overflow = implement(dsp_hog(OVERFLOW_PRODUCTS[name]), "dsp_hog", part, progress=sys.stderr)
    shutil.copy(Path(overflow.cache_folder) / "nextpnr.log", DATA / f"{name}_overflow_nextpnr.log")


def main() -> None:
    """Record the data of every part in OVERFLOW_PRODUCTS into fpga_data/."""
    for name in sys.argv[1:] or OVERFLOW_PRODUCTS:
        with tempfile.TemporaryDirectory() as folder:
            record(name, Path(folder))


if __name__ == "__main__":
    main()
