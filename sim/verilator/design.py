"""`VerilatedDesign`: an accelerator-like component's Verilog, built and run by Verilator.

Works for any component with the Accelerator's top-level ports (`ports.PortMap`): the real
`systolic.hdl.accelerator.Accelerator` and the small designs the tests use.
"""

from collections.abc import Callable, Sequence
from pathlib import Path

from amaranth.back import verilog
from amaranth.lib import wiring

from .build import Build, build_simulator
from .ports import PortMap
from .process import HarnessResult, encode_commands, run_harness

__all__ = ["VerilatedDesign", "emit_verilog"]


def emit_verilog(component: wiring.Component, top: str) -> str:
    """Return the Verilog of `component` with top module `top`, its ports named as `PortMap`
    lists them, without source locations (so the text, and with it the build cache key, does
    not depend on where the code lives)."""
    return str(verilog.convert(
        component, name=top, ports=dict(PortMap(component).verilog_ports),
        emit_src=False, strip_internal_attrs=True,
    ))


class VerilatedDesign:
    """`component` as the Verilog text `verilog` (top module `top`), with a `bus_bytes`-wide
    external memory of `mem_latency` cycles.

    `build()` compiles it (or finds it in the cache: `cache_dir`, default `build.cache_root()`);
    `run()` simulates one command list.
    """

    def __init__(self, component: wiring.Component, *, verilog: str, top: str,
                 bus_bytes: int, mem_latency: int, cache_dir: Path | None = None) -> None:
        self.ports = PortMap(component)
        self.verilog = verilog
        self.top = top
        self.header = self.ports.header(
            top_class=f"V{top}", bus_bytes=bus_bytes, mem_latency=mem_latency
        )
        self.command_width = self.ports.port("i_instr__payload").width
        self.cache_dir = cache_dir
        self._build: Build | None = None

    def build(self) -> Build:
        """Return the built simulator, compiling it on first use."""
        if self._build is None or not self._build.executable.is_file():
            self._build = build_simulator(self.verilog, self.header, top=self.top,
                                          cache_dir=self.cache_dir)
        return self._build

    def run(self, commands: Sequence[tuple[int, bool]], memory: bytes | bytearray, *,
            watchdog: int, progress: Callable[[int], None] | None = None) -> HarnessResult:
        """Simulate `commands` ((command integer, is HALT) in program order) on `memory`;
        `progress(cycle)` is called every 65536 cycles."""
        executable = self.build().executable
        encoded = encode_commands(commands, self.command_width)
        return run_harness(executable, encoded, memory, watchdog=watchdog, progress=progress)
