"""The EXECUTE completion merge (`systolic.hdl.completion_merge`) as the cycle model sees it.

The EXECUTE unit strobes PRELOAD and COMPUTE completions separately. The merge delivers them
to the dispatcher in strobe order, COMPUTE first on a tie (then program order), one per
cycle: d_k = max(t_k, d_(k-1) + 1). `exact_deliveries` computes this for a whole program.

The cycle model times instructions in program order, which is not strobe order: a younger
PRELOAD may strobe before an older COMPUTE and delay its delivery after a younger
instruction already used it (waited for it, or was accepted because of it on a full table).
`CompletionMerge` keeps the strobes that a later strobe may still precede (the window), in
merge order, with their deliveries, and the first instruction that used each delivery. A new
strobe is inserted in order and the deliveries after it are recomputed; a moved delivery of a
timed instruction is written to `completes`, and one that an instruction used makes the
model return to a checkpoint (`Stale`). A strobe known ahead of its instruction's timing (a
replay after such a return) is `announce`d: it takes its place without a delivery written.
"""

import bisect
import dataclasses

import numpy as np

__all__ = ["CompletionMerge", "Stale", "Strobe", "earlier", "exact_deliveries"]

Stale = tuple[int, int]
"""(reader, cycle): the first instruction that used a delivery which then moved, and the
earlier of that delivery's old and new cycles."""


@dataclasses.dataclass(order=True, slots=True)
class Strobe:
    """One completion strobe, ordered as the merge delivers them."""

    cycle: int
    key: int  # COMPUTE (and COMPUTE.OS) 0, PRELOAD 1
    index: int  # the instruction's index in the program
    delivered: int = dataclasses.field(default=0, compare=False)
    announced: bool = dataclasses.field(default=False, compare=False)
    """The instruction is not timed yet (its strobe is known from an earlier attempt)."""


def earlier(first: Stale | None, second: Stale | None) -> Stale | None:
    """Return the stale delivery with the earlier reader (`first` on a tie)."""
    if first is None or (second is not None and second[0] < first[0]):
        return second
    return first


class CompletionMerge:
    """The merge window over one program (see the module docstring).

    `completes[i]` holds the delivery of every timed instruction i whose strobe is in the
    window (the window's deliveries are written there as they move).
    """

    def __init__(self, completes: list[int]) -> None:
        self.completes = completes
        self.window: list[Strobe] = []
        self.last_dropped = -(10**18)  # delivery of the last strobe that left the window
        self.readers: dict[int, int] = {}  # instruction in the window -> its first reader
        self._open: set[int] = set()  # the instructions in the window

    def copy(self) -> "CompletionMerge":
        """Return an independent copy (a checkpoint; it shares `completes`)."""
        clone = CompletionMerge(self.completes)
        clone.window = [dataclasses.replace(strobe) for strobe in self.window]
        clone.last_dropped = self.last_dropped
        clone.readers = dict(self.readers)
        clone._open = set(self._open)
        return clone

    def write_back(self) -> None:
        """Write the window's deliveries of timed instructions to `completes` (after a
        return to this checkpoint)."""
        for strobe in self.window:
            if not strobe.announced:
                self.completes[strobe.index] = strobe.delivered

    def use(self, index: int, reader: int) -> None:
        """Record that instruction `reader` used instruction `index`'s delivery."""
        if index in self._open:
            self.readers.setdefault(index, reader)

    def close_before(self, cycle: int) -> None:
        """Drop the strobes before `cycle`: no strobe still to come can precede them (an
        instruction accepted in `cycle` strobes later), so their deliveries are final."""
        window = self.window
        while window and window[0].cycle < cycle:
            dropped = window.pop(0)
            self.last_dropped = dropped.delivered
            self.readers.pop(dropped.index, None)
            self._open.discard(dropped.index)

    def deliver(self, index: int, cycle: int, key: int) -> tuple[int, Stale | None]:
        """Merge the strobe of instruction `index` (being timed); return its delivery and
        the stale delivery its insertion caused, if any."""
        stale = None
        if index in self._open:  # announced
            position = self._position(index)
            strobe = self.window[position]
            if strobe.cycle == cycle:
                strobe.announced = False
                return strobe.delivered, None
            del self.window[position]
            stale = self._remerge(position, new=False)
        strobe = Strobe(cycle, key, index)
        self._open.add(index)
        window = self.window
        if not window or strobe > window[-1]:  # the latest strobe: nothing moves
            last = window[-1].delivered if window else self.last_dropped
            strobe.delivered = max(cycle, last + 1)
            window.append(strobe)
            return strobe.delivered, stale
        position = bisect.bisect(window, strobe)
        window.insert(position, strobe)
        stale = earlier(stale, self._remerge(position, new=True))
        return strobe.delivered, stale

    def announce(self, index: int, cycle: int, key: int) -> Stale | None:
        """Place the known strobe of instruction `index` (not timed yet); return the stale
        delivery this caused, if any."""
        stale = None
        if index in self._open:
            position = self._position(index)
            if self.window[position].cycle == cycle:
                return None
            del self.window[position]
            stale = self._remerge(position, new=False)
        strobe = Strobe(cycle, key, index, announced=True)
        position = bisect.bisect(self.window, strobe)
        self.window.insert(position, strobe)
        self._open.add(index)
        return earlier(stale, self._remerge(position, new=True))

    def _position(self, index: int) -> int:
        return next(p for p, strobe in enumerate(self.window) if strobe.index == index)

    def _remerge(self, position: int, *, new: bool) -> Stale | None:
        """Recompute the deliveries from `position` on (a new strobe there if `new`), write
        those that moved to `completes`; return the stale one with the earliest reader."""
        window = self.window
        stale = None
        last = window[position - 1].delivered if position else self.last_dropped
        for j in range(position, len(window)):
            strobe = window[j]
            cycle = max(strobe.cycle, last + 1)
            if j > position or not new:
                if cycle == strobe.delivered:
                    break  # (the deliveries after it do not move either)
                if not strobe.announced:
                    reader = self.readers.get(strobe.index)
                    if reader is not None and (stale is None or reader < stale[0]):
                        stale = (reader, min(strobe.delivered, cycle))
                    self.completes[strobe.index] = cycle
            strobe.delivered = last = cycle
        return stale


def exact_deliveries(cycles: np.ndarray, keys: np.ndarray) -> np.ndarray:
    """Return the delivery of every strobe (`cycles`, `keys`: COMPUTE 0 / PRELOAD 1, both in
    program order) when all are merged at once.

    In merge order (cycle, key, program order), d_k = max(t_k, d_(k-1) + 1): d_k - k is the
    running maximum of t_j - j.
    """
    order = np.lexsort((np.arange(cycles.size), keys, cycles))
    steps = np.arange(order.size, dtype=np.int64)
    delivered = np.empty(cycles.size, dtype=np.int64)
    delivered[order] = np.maximum.accumulate(cycles[order] - steps) + steps
    return delivered
