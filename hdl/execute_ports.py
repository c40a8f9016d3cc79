"""The EXECUTE unit's completion strobe (its memory ports come from `hdl/ports.py`)."""

from amaranth import unsigned
from amaranth.lib import data

from systolic.hdl.instruction_fields import TAG_WIDTH

__all__ = ["done_layout"]


def done_layout(tag_width: int = TAG_WIDTH) -> data.StructLayout:
    """Return a completion strobe {`valid`, `tag`}: valid for one cycle per instruction.

    (A strobe, not an always-ready stream: a constant `ready` cannot be a port of a design
    converted on its own.)
    """
    return data.StructLayout({"valid": 1, "tag": unsigned(tag_width)})

