"""Conv: N-D float convolution with optional bias, via `kernels.conv.conv_nd`."""

from collections.abc import Sequence
from typing import ClassVar

import numpy as np

from systolic.ir import Attrs
from systolic.reference.kernels.conv import conv_nd, conv_output_shape, resolve_auto_pad
from systolic.reference.ops._conv_attrs import ConvAttrs
from systolic.reference.ops.base import TensorInfo


class Conv(ConvAttrs):
    """Conv-1, -11, -22 (the later versions only reword the padding text and widen types).

    kernel_shape defaults to W's spatial shape; strides and dilations default to 1, pads to 0.
    Every float type is accumulated in float64 and rounded once to X's type: float32 sums in
    another order differ by a few ulps, and ill-conditioned models (SqueezeNet's softmax over
    near-equal logits of 1e10) then give visibly different outputs; float64 keeps the
    reference within rounding of the exact result. It costs about 2x a float32 matmul.
    """

    op_type = "Conv"
    since_versions: ClassVar[tuple[int, ...]] = (1, 11, 22)

    def __init__(self, attrs: Attrs, version: int, node_label: str) -> None:
        super().__init__(attrs, version, node_label)
        if self.pads is not None and self.auto_pad != "NOTSET":
            raise self.error("pads and auto_pad are both set; remove one of them")

    def geometry(
        self, x_shape: Sequence[int], w_shape: Sequence[int]
    ) -> tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...], tuple[int, ...]]:
        """Return (kernel, strides, pads, dilations) for inputs of these shapes, checked."""
        kernel = self.spatial_kernel(x_shape, w_shape)
        rank = len(kernel)
        strides = self.strides or (1,) * rank
        dilations = self.dilations or (1,) * rank
        if len(strides) != rank or len(dilations) != rank:
            raise self.error(f"strides and dilations need {rank} values for a {rank}-D conv")
        if self.pads is not None and len(self.pads) != 2 * rank:
            raise self.error(f"pads needs {2 * rank} values for a {rank}-D conv, "
                             f"got {len(self.pads)}")
        pads = resolve_auto_pad(self.auto_pad, x_shape[2:], kernel, strides, dilations,
                                self.pads)
        c, m = x_shape[1], w_shape[0]
        if c != w_shape[1] * self.group or m % self.group != 0:
            raise self.error(f"X has {c} channels and W is {list(w_shape)}: with group="
                             f"{self.group}, W must be [M, C/group, ...] with M divisible "
                             "by group")
        return kernel, strides, pads, dilations

    def infer(self, inputs: Sequence[TensorInfo | None]) -> list[TensorInfo]:
        x, w, *rest = inputs
        b = rest[0] if rest else None
        assert x is not None and w is not None
        self.check_operand_types(x, w, b)
        kernel, strides, pads, dilations = self.geometry(x.shape, w.shape)
        if b is not None and b.shape != (w.shape[0],):
            raise self.error(f"B must have shape [{w.shape[0]}], got {list(b.shape)}")
        out = conv_output_shape(x.shape[2:], kernel, strides, pads, dilations)
        if any(size < 1 for size in out):
            raise self.error(f"kernel {list(kernel)} does not fit input {list(x.shape)} "
                             f"with pads {list(pads)}")
        return [TensorInfo(x.dtype, (x.shape[0], w.shape[0], *out))]

    def run(self, inputs: Sequence[np.ndarray | None]) -> list[np.ndarray]:
        x, w, *rest = inputs
        b = rest[0] if rest else None
        assert x is not None and w is not None
        _kernel, strides, pads, dilations = self.geometry(x.shape, w.shape)
        y = conv_nd(x, w, strides=strides, pads=pads, dilations=dilations, group=self.group,
                    acc_dtype=np.float64, bias=b, out_dtype=x.dtype)
        return [y]


OPS = (Conv,)
