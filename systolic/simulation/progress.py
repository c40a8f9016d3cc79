"""A tiny progress bar on standard error for long simulations (no dependency).

`ProgressBar(total, label)` draws `label [#####.....] done/total` on one line of `stream`,
redrawn at most ten times a second, and only when the stream is a terminal and the work has
already taken `delay` seconds (short runs print nothing). `total` may be a function that
computes it: it is called only when the bar is first drawn, so an estimate that costs time is
never made for a run that shows no bar. `close()` clears the line.
"""

import sys
import time
from collections.abc import Callable
from typing import TextIO

__all__ = ["ProgressBar"]

_WIDTH = 30


class ProgressBar:
    """See the module docstring."""

    def __init__(
        self,
        total: int | Callable[[], int],
        label: str,
        *,
        stream: TextIO | None = None,
        delay: float = 3.0,
        clock: Callable[[], float] | None = None,
    ) -> None:
        self._total = total
        self.label = label
        self.stream = sys.stderr if stream is None else stream
        self.delay = delay
        self._clock = clock or time.monotonic
        self._start = self._clock()
        self._last_draw = -1.0
        self._drawn = False
        isatty = getattr(self.stream, "isatty", None)
        self.enabled = bool(isatty and isatty())

    @property
    def total(self) -> int:
        """The amount of work (computed on first use when given as a function)."""
        if callable(self._total):
            self._total = self._total()
        return max(1, self._total)

    def update(self, done: int) -> None:
        """Show that `done` of `total` units of work are finished."""
        if not self.enabled:
            return
        now = self._clock()
        if now - self._start < self.delay or now - self._last_draw < 0.1:
            return
        self._last_draw = now
        fraction = min(1.0, max(0.0, done / self.total))
        filled = int(fraction * _WIDTH)
        bar = "#" * filled + "." * (_WIDTH - filled)
        elapsed = now - self._start
        self.stream.write(
            f"\r{self.label} [{bar}] {min(done, self.total):,}/{self.total:,} "
            f"({100 * fraction:.0f}%, {elapsed:.0f} s)"
        )
        self.stream.flush()
        self._drawn = True

    def close(self) -> None:
        """Clear the bar's line (if it was drawn)."""
        if self._drawn:
            self.stream.write("\r\033[K")
            self.stream.flush()
            self._drawn = False
