"""Compiled pysim simulators kept and reset between runs.

Elaborating a design and compiling it for pysim costs most of a short run, so a caller keeps
the simulators of its last few designs (`KeptDesigns`) and starts every run but the first with
`Simulator.reset()`, which restores every signal and memory to its initial value and restarts
every testbench (`ResetBeforeRun`): a run on a reused simulator is the run on a fresh one. A
run that raised leaves its simulator half way: the caller forgets it (`KeptDesigns.run`).
"""

from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Generic, Protocol, TypeVar

from amaranth.sim import Simulator

__all__ = ["KeptDesigns", "ResetBeforeRun"]


class ResetBeforeRun:
    """A simulator whose runs each start from the design's initial state."""

    def __init__(self, sim: Simulator) -> None:
        self.sim = sim
        self._used = False  # a fresh simulator's testbenches have not started: no reset

    def fresh(self) -> Simulator:
        """Return the simulator at its initial state (reset unless it never ran)."""
        if self._used:
            self.sim.reset()
        self._used = True
        return self.sim


class _Harness(Protocol):
    runner: ResetBeforeRun


H = TypeVar("H", bound=_Harness)


class KeptDesigns(Generic[H]):
    """The harnesses of the last `kept` keys, built on first use, oldest dropped first."""

    def __init__(self, kept: int) -> None:
        self.kept = kept
        self._harnesses: OrderedDict[Hashable, H] = OrderedDict()

    def get(self, key: Hashable, build: Callable[[], H]) -> H:
        """Return the harness of `key`, building it with `build` on first use."""
        if key in self._harnesses:
            self._harnesses.move_to_end(key)
            return self._harnesses[key]
        while len(self._harnesses) >= self.kept:
            self._harnesses.popitem(last=False)
        harness = self._harnesses[key] = build()
        return harness

    def run(self, key: Hashable, harness: H,
            action: Callable[[Simulator], None] = Simulator.run) -> None:
        """Apply `action` (a whole run) to `harness`' simulator at its initial state; forget
        the harness when the run raises."""
        try:
            action(harness.runner.fresh())
        except BaseException:
            self._harnesses.pop(key, None)
            raise
