"""`ConvAttrs`: the attributes Conv and ConvTranspose share, read and checked once."""

from collections.abc import Sequence

from systolic.ir import Attrs
from systolic.reference.kernels.conv import AUTO_PADS
from systolic.reference.ops._shared import FLOAT_TYPES, check_type, int_attr, ints_attr, str_attr
from systolic.reference.ops.base import Op, TensorInfo

__all__ = ["ConvAttrs"]


class ConvAttrs(Op):
    """Reads auto_pad (one of AUTO_PADS), group (>= 1), kernel_shape, strides and dilations
    (positive when given) and pads (not negative when given); absent lists are None. Checks
    the operands both operators take the same way."""

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

    def check_operand_types(self, x: TensorInfo, w: TensorInfo, b: TensorInfo | None) -> None:
        """Require a float X, and W and B (when given) of X's type."""
        check_type(self, x, FLOAT_TYPES, "X")
        if w.dtype != x.dtype or (b is not None and b.dtype != x.dtype):
            raise self.error("X, W and B must have the same element type")

    def spatial_kernel(self, x_shape: Sequence[int], w_shape: Sequence[int]) -> tuple[int, ...]:
        """Return W's spatial shape, checking X and W are [N, C, *spatial] of one rank (at
        least one spatial axis) and that kernel_shape, when given, agrees."""
        if len(x_shape) < 3 or len(w_shape) != len(x_shape):
            raise self.error(f"X {list(x_shape)} and W {list(w_shape)} must both be "
                             "[N, C, *spatial] of the same rank, with at least one spatial axis")
        kernel = tuple(int(k) for k in w_shape[2:])
        if self.kernel_shape is not None and self.kernel_shape != kernel:
            raise self.error(f"kernel_shape {list(self.kernel_shape)} disagrees with W's "
                             f"spatial shape {list(kernel)}")
        return kernel
