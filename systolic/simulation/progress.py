"""A tiny progress bar on standard error for long simulations (no dependency).

`ProgressBar(total, label)` draws `label [#####.....] done/total (percent, elapsed, rate,
time left)` on one line of `stream`: the rate is the units of work per second since the bar was
made, the time left the remaining units at that rate. It is redrawn at most ten times a second, and only when the stream is a terminal and the work has
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
        done = min(max(done, 0), self.total)
        rate = done / elapsed if elapsed > 0 else 0.0
        left = _duration((self.total - done) / rate) + " left" if rate else "time left unknown"
        self.stream.write(
            f"\r{self.label} [{bar}] {done:,}/{self.total:,} "
            f"({100 * fraction:.0f}%, {_duration(elapsed)}, {_rate(rate)}, {left})"
        )
        self.stream.flush()
        self._drawn = True

    def close(self) -> None:
        """Clear the bar's line (if it was drawn)."""
        if self._drawn:
            self.stream.write("\r\033[K")
            self.stream.flush()
            self._drawn = False


def _duration(seconds: float) -> str:
    """Return `seconds` as "42 s", "3 min 05 s" or "2 h 07 min"."""
    whole = round(seconds)
    if whole < 60:
        return f"{whole} s"
    if whole < 3600:
        return f"{whole // 60} min {whole % 60:02d} s"
    return f"{whole // 3600} h {whole % 3600 // 60:02d} min"


def _rate(per_second: float) -> str:
    """Return a rate of work units as "12.5/s", "3.4 k/s" or "1.2 M/s"."""
    if per_second >= 1e6:
        return f"{per_second / 1e6:.1f} M/s"
    if per_second >= 1e3:
        return f"{per_second / 1e3:.1f} k/s"
    return f"{per_second:.1f}/s"
