"""A hook through which a long-running backend reports how far it got (for progress bars).

`watching(callback)` installs `callback(cycle)` for the current context; a backend calls
`report_cycle(cycle)` now and then (the pysim driver every 1024 cycles). Nothing happens when
no one watches, so backends may always report.
"""

import contextlib
import contextvars
from collections.abc import Callable, Iterator

__all__ = ["report_cycle", "watching"]

_WATCHER: contextvars.ContextVar[Callable[[int], None] | None] = contextvars.ContextVar(
    "systolic_cycle_watcher", default=None
)


def report_cycle(cycle: int) -> None:
    """Tell the current watcher (if any) that the simulation reached `cycle`."""
    watcher = _WATCHER.get()
    if watcher is not None:
        watcher(cycle)


@contextlib.contextmanager
def watching(callback: Callable[[int], None]) -> Iterator[None]:
    """Call `callback(cycle)` for every `report_cycle` inside the `with` block."""
    token = _WATCHER.set(callback)
    try:
        yield
    finally:
        _WATCHER.reset(token)
