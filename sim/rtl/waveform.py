"""What the RTL backend's VCD waveform holds, and the writer that keeps to it.

Amaranth's `Simulator.write_vcd` dumps every signal of every module and every row of every
memory; the scratchpad and accumulator rows make a short LeNet run's waveform tens of
megabytes. `Waveform` chooses instead: signals down to `depth` levels of submodules below the
top (default `DEFAULT_DEPTH` = 1: the top's and the units' signals, not the PEs' and the
pipelines' inside them; None: all) and memory rows only with `memories`. `waveform_options(...)` sets it for the
current context (the CLI does, around a whole model run); `run_pysim` reads it with
`current_waveform()` when it writes a VCD, as a backend reports progress through
`systolic.sim.progress`.

The writer is Amaranth's own (`amaranth.sim.pysim._VCDWriter`, pinned amaranth 0.5.10) given
only the modules it should dump: the same names, scopes and value formats as `write_vcd`.
"""

import contextlib
import contextvars
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from amaranth.hdl import MemoryInstance
from amaranth.sim import Simulator
from amaranth.sim.pysim import _VCDWriter

__all__ = ["DEFAULT_DEPTH", "Waveform", "current_waveform", "waveform_options", "write_vcd"]


DEFAULT_DEPTH = 1
"""Levels of submodules a VCD holds by default: the units (LOAD, EXECUTE, STORE, dispatcher,
accumulator); the bundled LeNet's 4.7 k cycles make 25 MB (44 MB with every level)."""


@dataclass(frozen=True)
class Waveform:
    """The contents of a VCD: `depth` levels of submodules below the top (0: the top
    module's own signals; None: all), and memory rows only when `memories`."""

    depth: int | None = DEFAULT_DEPTH
    memories: bool = False

    def __post_init__(self) -> None:
        if self.depth is not None and self.depth < 0:
            raise ValueError(f"waveform depth must be >= 0 or None, not {self.depth!r}")


_CURRENT: contextvars.ContextVar[Waveform | None] = contextvars.ContextVar(
    "systolic_waveform", default=None
)


def current_waveform() -> Waveform:
    """Return the `Waveform` set by the innermost `waveform_options` (default: `Waveform()`)."""
    return _CURRENT.get() or Waveform()


@contextlib.contextmanager
def waveform_options(waveform: Waveform) -> Iterator[None]:
    """Write every VCD inside the `with` block with the contents `waveform`."""
    token = _CURRENT.set(waveform)
    try:
        yield
    finally:
        _CURRENT.reset(token)


class _Selection:
    """The part of an elaborated design (`Design.fragments`) a VCD dumps."""

    def __init__(self, design: Any, waveform: Waveform) -> None:
        self.fragments = {
            fragment: info for fragment, info in design.fragments.items()
            if (waveform.depth is None or len(info.name) <= waveform.depth + 1)
            and (waveform.memories or not isinstance(fragment, MemoryInstance))
        }  # fmt: skip


@contextlib.contextmanager
def write_vcd(sim: Simulator, path: str | Path, waveform: Waveform) -> Iterator[None]:
    """Write the VCD of the simulation run inside the `with` block to `path`.

    Must be entered before the simulation advances, as `Simulator.write_vcd`.
    """
    engine = sim._engine
    if engine.now != 0:
        raise ValueError("a waveform must be started before the simulation advances")
    writer = _VCDWriter(engine._state, _Selection(engine._design, waveform), vcd_file=str(path))
    engine._vcd_writers.append(writer)
    try:
        yield
    finally:
        writer.close(engine._now_plus_deltas(writer.fs_per_delta))
        engine._vcd_writers.remove(writer)
