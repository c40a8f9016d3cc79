"""When Yosys or nextpnr fails for another reason than the design not fitting.

A design too large for a part is a result (`FpgaResult.shortfall`), and a slow one too (its
Fmax); a tool that stops with an error is neither. Such a failure is not the user's input being
wrong, but neither is it a crash of this tool: `FpgaToolError` carries one line, the tool's own
first `ERROR:` line with the part and where its whole log was kept, and the command line
prints it with exit status 2. The log is copied out of the run's temporary folder, which the
flow removes, to `<cache>/failed-<tool>-<part>.log` (the latest failure of that tool on that
part).
"""

import shutil
from pathlib import Path

from systolic.errors import SystolicError

__all__ = ["FpgaToolError", "first_error", "tool_failure"]


class FpgaToolError(SystolicError):
    """An FPGA tool (Yosys, nextpnr) failed on a design; `str()` is one line."""


def first_error(log_text: str) -> str:
    """Return the first `ERROR:` line of a Yosys or nextpnr log without its prefix, else the
    last non-empty line, else "no output" (one line, whitespace collapsed)."""
    lines = [line.strip() for line in log_text.splitlines() if line.strip()]
    errors = [line for line in lines if line.startswith("ERROR:")]
    chosen = errors[0].removeprefix("ERROR:") if errors else (lines[-1] if lines else "")
    return " ".join(chosen.split()) or "no output"


def tool_failure(tool: str, part: str, log: Path, keep_in: Path) -> FpgaToolError:
    """Return the error of `tool` failing on `part`, its log `log` copied into `keep_in`."""
    text = log.read_text(encoding="utf-8", errors="replace") if log.exists() else ""
    kept = keep_in / f"failed-{tool}-{part}.log"
    keep_in.mkdir(parents=True, exist_ok=True)
    if log.exists():
        shutil.copyfile(log, kept)
    where = f"log: {kept}" if log.exists() else "no log"
    return FpgaToolError(f"{tool} failed on {part}: {first_error(text)} ({where})")
