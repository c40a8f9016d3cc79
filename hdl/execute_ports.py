"""Port signatures of the EXECUTE unit that `hdl/instruction_fields.py` does not provide.

Until a shared `hdl/ports.py` exists, the EXECUTE unit defines its completion strobe and its
scratchpad read ports here.
"""

from amaranth import unsigned
from amaranth.lib import data, wiring
from amaranth.lib.wiring import In, Out

from .instruction_fields import TAG_WIDTH

__all__ = ["done_layout", "read_port_signature"]


def done_layout(tag_width: int = TAG_WIDTH) -> data.StructLayout:
    """Return a completion strobe {`valid`, `tag`}: valid for one cycle per instruction.

    (A strobe, not an always-ready stream: a constant `ready` cannot be a port of a design
    converted on its own.)
    """
    return data.StructLayout({"valid": 1, "tag": unsigned(tag_width)})


def read_port_signature(depth: int, row_shape: data.Layout) -> wiring.Signature:
    """Return a synchronous memory read port as its user sees it.

    `addr` and `en` are driven by the user; `data` is the row at `addr` of the cycle before in
    which `en` was high (one cycle latency, `amaranth.lib.memory` read port semantics, not
    transparent); while `en` is low `data` holds.
    """
    return wiring.Signature({
        "addr": Out(range(depth)),
        "en": Out(1),
        "data": In(row_shape),
    })
