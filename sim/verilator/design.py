"""`VerilatedDesign`: an accelerator-like component's Verilog, built and run by Verilator.

Works for any component with the Accelerator's top-level ports (`ports.PortMap`): the real
`systolic.hdl.accelerator.Accelerator` and the small designs the tests use. What Verilator
builds is the component's Verilog plus the harness wrapper around it (`PortMap.wrapper`), with
the wrapper as the top module.
"""

import dataclasses
from collections.abc import Callable, Sequence
from pathlib import Path

from amaranth.lib import wiring

from systolic.sim.verilator.build import Build, build_simulator
from systolic.sim.verilator.ports import PortMap, wrapper_name
from systolic.sim.verilator.process import HarnessResult, encode_commands, run_harness

__all__ = ["HarnessParts", "VerilatedDesign", "harness_parts"]


@dataclasses.dataclass(frozen=True)
class HarnessParts:
    """What a build needs: the `verilog` text (the design and its wrapper), the wrapper's
    module name `top`, the harness `header` and the `command_width` of the command port."""

    verilog: str
    top: str
    header: str
    command_width: int


def harness_parts(component: wiring.Component, *, verilog: str, top: str, bus_bytes: int,
                  mem_latency: int) -> HarnessParts:
    """Return the build inputs for `component`, whose Verilog is `verilog` (module `top`)."""
    ports = PortMap(component)
    wrapper = wrapper_name(top)
    return HarnessParts(
        verilog=verilog + "\n" + ports.wrapper(top, mem_latency=mem_latency),
        top=wrapper,
        header=ports.header(top_class=f"V{wrapper}", bus_bytes=bus_bytes,
                            mem_latency=mem_latency),
        command_width=ports.port("i_instr__payload").width,
    )


class VerilatedDesign:
    """`component` as the Verilog text `verilog` (top module `top`), with a `bus_bytes`-wide
    external memory of `mem_latency` cycles.

    `build()` compiles it (or finds it in the cache: `cache_dir`, default `build.cache_root()`);
    `run()` simulates one command list. `from_parts` makes one from `HarnessParts` computed
    before (no component needed). The attributes `verilog` and `top` are the built text and
    top module (design plus wrapper), `header` the harness header.
    """

    def __init__(self, component: wiring.Component, *, verilog: str, top: str,
                 bus_bytes: int, mem_latency: int, cache_dir: Path | None = None) -> None:
        self._setup(harness_parts(component, verilog=verilog, top=top, bus_bytes=bus_bytes,
                                  mem_latency=mem_latency), cache_dir)

    @classmethod
    def from_parts(cls, parts: HarnessParts, *,
                   cache_dir: Path | None = None) -> "VerilatedDesign":
        """Return the design whose build inputs are already known."""
        design = cls.__new__(cls)
        design._setup(parts, cache_dir)
        return design

    def _setup(self, parts: HarnessParts, cache_dir: Path | None) -> None:
        self.verilog = parts.verilog
        self.top = parts.top
        self.header = parts.header
        self.command_width = parts.command_width
        self.cache_dir = cache_dir
        self._build: Build | None = None

    def build(self) -> Build:
        """Return the built simulator, compiling it on first use."""
        if self._build is None or not self._build.executable.is_file():
            self._build = build_simulator(self.verilog, self.header, top=self.top,
                                          cache_dir=self.cache_dir)
        return self._build

    def run(self, commands: Sequence[tuple[int, bool]], memory: bytes | bytearray, *,
            watchdog: int, stall_limit: int = 0,
            progress: Callable[[int], None] | None = None) -> HarnessResult:
        """Simulate `commands` ((command integer, is HALT) in program order) on `memory`;
        `progress(cycle)` is called every 65536 cycles. The run stops at the `watchdog`
        cycle, or after `stall_limit` cycles without an instruction event (0: never)."""
        executable = self.build().executable
        encoded = encode_commands(commands, self.command_width)
        return run_harness(executable, encoded, memory, watchdog=watchdog,
                           stall_limit=stall_limit, progress=progress)
