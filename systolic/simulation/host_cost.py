"""An optional cost model of the host layers (`systolic simulate --host-ops-per-cycle N`).

Without it, host layers cost no cycles and every total says "accelerator only". With it, a
host layer costs `ceil((macs + elements) / N)` cycles of the accelerator's clock: one
operation per multiply-accumulate and one per element an elementwise layer produces (layout
layers, which produce no elementwise work, cost none), run after the accelerator's previous
run and before its next (no overlap). Moving the host layers' tensors (the coverage line's
bytes to/from the host) is not costed: it depends on the host's memory system, not on N.
"""

import math

__all__ = ["check_host_ops_per_cycle", "host_layer_cycles"]


def check_host_ops_per_cycle(value: float) -> float:
    """Return `value` when it is a finite number above 0; raise ValueError otherwise."""
    if not (isinstance(value, int | float) and 0 < value < math.inf):
        raise ValueError(f"host operations per cycle must be a number above 0, not {value!r}")
    return float(value)


def host_layer_cycles(macs: int, elements: int, ops_per_cycle: float) -> int:
    """The cycles of one host layer doing `macs` MACs and producing `elements` elements."""
    return math.ceil((macs + elements) / ops_per_cycle)
