"""`run_program`: run a Program on a named simulation backend.

Backends are functions `(program, memory, *, watchdog, vcd) -> RunResult` registered by name
in `BACKENDS`; "rtl" is the Amaranth simulator (`systolic.sim.rtl.pysim_driver`). Other
backends ("verilator", "model") add one entry with `register_backend`.
"""

from collections.abc import Callable
from pathlib import Path
from typing import Protocol

from systolic.errors import ConfigError
from systolic.isa.program import Program
from systolic.sim.result import RunResult
from systolic.sim.timing.native_facts import memory_end

__all__ = ["BACKENDS", "Backend", "initial_memory", "register_backend", "run_program"]


class Backend(Protocol):
    """A simulation backend: run `program` from the memory image to HALT."""

    def __call__(self, program: Program, memory: bytes | bytearray, *, watchdog: int | None,
                 vcd: str | Path | None) -> RunResult: ...


def _rtl(program: Program, memory: bytes | bytearray, *, watchdog: int | None,
         vcd: str | Path | None) -> RunResult:
    from systolic.sim.rtl.pysim_driver import run_pysim  # amaranth only when this backend runs

    return run_pysim(program, memory, watchdog=watchdog, vcd=vcd)


def _model(program: Program, memory: bytes | bytearray, *, watchdog: int | None,
           vcd: str | Path | None) -> RunResult:
    from systolic.sim.run.model_backend import run_model

    return run_model(program, memory, watchdog=watchdog, vcd=vcd)


def _verilator(program: Program, memory: bytes | bytearray, *, watchdog: int | None,
               vcd: str | Path | None) -> RunResult:
    from systolic.sim.verilator.backend import run  # builds only when this backend runs

    return run(program, memory, watchdog=watchdog, vcd=vcd)


BACKENDS: dict[str, Callable[..., RunResult]] = {
    "rtl": _rtl, "model": _model, "verilator": _verilator,
}
"""Backend functions by name."""


def register_backend(name: str, backend: Callable[..., RunResult]) -> None:
    """Make `backend` available to `run_program` as `name`."""
    BACKENDS[name] = backend


def initial_memory(program: Program, size: int | None = None) -> bytearray:
    """Return a zeroed external memory image with the program's segments in place.

    `size` defaults to `program.memory_end` rounded up to a whole bus beat.
    """
    bus = program.config.bus_bytes
    end = memory_end(program) if size is None else size
    image = bytearray(-(-end // bus) * bus)
    for segment in program.segments:
        image[segment.address:segment.end] = segment.data
    return image


def run_program(program: Program, memory: bytes | bytearray, *, backend: str = "rtl",
                watchdog: int | None = None, vcd: str | Path | None = None) -> RunResult:
    """Run `program` from the external memory image `memory` (not modified) to HALT.

    `memory` is the whole initial image from address 0 (segments and inputs in place:
    `initial_memory`). `watchdog`: a run whose HALT is not accepted by cycle `watchdog` - 1
    raises SimulationError naming the last instruction issued; `vcd`: a waveform file of the run
    ("rtl" writes one; see each backend for its support).
    """
    try:
        run = BACKENDS[backend]
    except KeyError:
        known = ", ".join(sorted(BACKENDS))
        raise ConfigError(f"unknown simulation backend {backend!r}: use one of {known}") from None
    return run(program, memory, watchdog=watchdog, vcd=vcd)
