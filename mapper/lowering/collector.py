"""The cyclic garbage collector paused around work that builds many objects that stay alive.

A compile allocates some 10^5 to 10^6 objects that outlive it (the instructions, their field
dictionaries, the layer templates), and makes almost no reference cycles (a light ResNet-50
point, compile to energy, leaves a few hundred unreachable objects). With the collector on,
every 700 allocations start a young collection and every few of those an older one, each
walking the growing heap again for nothing: about a fifth of a compile's CPU. Inside
`collector_paused()` no automatic collection runs; reference counting still frees every
object that dies, and the collector resumes (if it was on) when the block ends, however it
ends. Pauses nest: an inner block leaves the collector as the outer one wants it.
"""

import contextlib
import gc
from collections.abc import Iterator

__all__ = ["collector_paused"]


@contextlib.contextmanager
def collector_paused() -> Iterator[None]:
    """Within the block, no automatic cyclic collection (module docstring)."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()
