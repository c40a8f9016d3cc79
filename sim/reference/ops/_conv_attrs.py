"""`ConvAttrs`: the attributes Conv and ConvTranspose share, read and checked once."""

from systolic.mapper.ir import Attrs

from ..kernels.conv import AUTO_PADS
from ..op import Op
from ._shared import int_attr, ints_attr, str_attr

__all__ = ["ConvAttrs"]


class ConvAttrs(Op):
    """Reads auto_pad (one of AUTO_PADS), group (>= 1), kernel_shape, strides and dilations
    (positive when given) and pads (not negative when given); absent lists are None."""

    def __init__(self, attrs: Attrs, version: int, node_label: str) -> None:
        super().__init__(attrs, version, node_label)
        self.auto_pad = str_attr(self, "auto_pad", "NOTSET")
        if self.auto_pad not in AUTO_PADS:
            raise self.error(f"auto_pad {self.auto_pad!r} is not one of {', '.join(AUTO_PADS)}")
        self.group = int_attr(self, "group", 1)
        if self.group < 1:
            raise self.error(f"group must be at least 1, got {self.group}")
        self.kernel_shape = ints_attr(self, "kernel_shape")
        self.strides = ints_attr(self, "strides")
        self.dilations = ints_attr(self, "dilations")
        self.pads = ints_attr(self, "pads")
        for name in ("strides", "dilations", "kernel_shape"):
            values = getattr(self, name)
            if values is not None and any(v < 1 for v in values):
                raise self.error(f"{name} must be positive, got {list(values)}")
        if self.pads is not None and any(p < 0 for p in self.pads):
            raise self.error(f"pads must not be negative, got {list(self.pads)}")
