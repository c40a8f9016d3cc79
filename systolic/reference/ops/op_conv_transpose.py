"""ConvTranspose: N-D float transposed convolution (the gradient of Conv with respect to its
input), with groups, strides, dilations, pads, output_padding, output_shape and auto_pad."""

from collections.abc import Sequence
from itertools import product

import numpy as np

from systolic.ir import Attrs
from systolic.reference.ops._conv_attrs import ConvAttrs
from systolic.reference.ops._shared import ints_attr
from systolic.reference.ops.base import TensorInfo

Geometry = tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...], tuple[int, ...],
                 tuple[int, ...]]
"""(kernel, strides, dilations, pads as all begins then all ends, output spatial shape)."""


class ConvTranspose(ConvAttrs):
    """ConvTranspose-1, -11, -22 (later versions reword the text and widen types).

    X is [N, C, *in], W is [C, M / group, *kernel]. Input cell i adds X * W[k] to output cell
    i * stride + k * dilation - pad_begin. Per axis the full output has
    stride * (in - 1) + output_padding + (kernel - 1) * dilation + 1 cells, of which
    pad_begin and pad_end are cut. With `output_shape` (or auto_pad SAME_UPPER/SAME_LOWER,
    whose output is in * stride) the pads are derived from the total padding as the spec says:
    SAME_UPPER puts the smaller half first, otherwise the larger half goes first. Accumulated
    in float64 and rounded once to X's type, as Conv is.
    """

    op_type = "ConvTranspose"
    since_versions = (1, 11, 22)

    def __init__(self, attrs: Attrs, version: int, node_label: str) -> None:
        super().__init__(attrs, version, node_label)
        self.output_padding = ints_attr(self, "output_padding")
        self.output_shape = ints_attr(self, "output_shape")
        if self.output_padding is not None and any(v < 0 for v in self.output_padding):
            raise self.error(f"output_padding must not be negative, got "
                             f"{list(self.output_padding)}")

    def geometry(self, x_shape: Sequence[int], w_shape: Sequence[int]) -> Geometry:
        """Return the checked geometry for inputs of these shapes."""
        kernel = self.spatial_kernel(x_shape, w_shape)
        rank = len(kernel)
        if w_shape[0] != x_shape[1]:
            raise self.error(f"W {list(w_shape)} must be [C, M / group, ...] with C = "
                             f"{x_shape[1]}, X's channels")
        if x_shape[1] % self.group:
            raise self.error(f"X's {x_shape[1]} channels are not divisible by group="
                             f"{self.group}")
        strides = self.strides or (1,) * rank
        dilations = self.dilations or (1,) * rank
        extra = self.output_padding or (0,) * rank
        for name, values in (("strides", strides), ("dilations", dilations),
                             ("output_padding", extra)):
            if len(values) != rank:
                raise self.error(f"{name} needs {rank} values for a {rank}-D ConvTranspose, "
                                 f"got {len(values)}")
        for i in range(rank):
            if extra[i] >= max(strides[i], dilations[i]):
                raise self.error(f"output_padding {list(extra)} must be smaller than the "
                                 "stride or the dilation on every axis")
        full = tuple(strides[i] * (x_shape[2 + i] - 1) + extra[i]
                     + (kernel[i] - 1) * dilations[i] + 1 for i in range(rank))
        pads = self._pads(rank, x_shape[2:], strides, full)
        out = tuple(full[i] - pads[i] - pads[rank + i] for i in range(rank))
        if any(size < 1 for size in out):
            raise self.error(f"pads {list(pads)} leave no output cells")
        return kernel, strides, dilations, pads, out

    def _pads(self, rank: int, in_spatial: Sequence[int], strides: Sequence[int],
              full: Sequence[int]) -> tuple[int, ...]:  # fmt: skip
        if self.output_shape is not None:
            wanted = self.output_shape[-rank:]
            if len(wanted) != rank:
                raise self.error(f"output_shape {list(self.output_shape)} needs {rank} spatial "
                                 "sizes")
        elif self.auto_pad in ("SAME_UPPER", "SAME_LOWER"):
            wanted = tuple(in_spatial[i] * strides[i] for i in range(rank))
        elif self.auto_pad == "VALID" or self.pads is None:
            return (0,) * (2 * rank)
        else:
            if len(self.pads) != 2 * rank:
                raise self.error(f"pads needs {2 * rank} values for a {rank}-D "
                                 f"ConvTranspose, got {len(self.pads)}")
            return self.pads
        totals = [full[i] - wanted[i] for i in range(rank)]
        if any(total < 0 for total in totals):
            raise self.error(f"output size {list(wanted)} exceeds the full transposed "
                             f"convolution {list(full)}; lower output_shape or add "
                             "output_padding")
        small = [t // 2 for t in totals]
        large = [t - t // 2 for t in totals]
        upper = self.auto_pad == "SAME_UPPER"
        return (*(small if upper else large), *(large if upper else small))

    def infer(self, inputs: Sequence[TensorInfo | None]) -> list[TensorInfo]:
        x, w, *rest = inputs
        b = rest[0] if rest else None
        assert x is not None and w is not None
        self.check_operand_types(x, w, b)
        *_, out = self.geometry(x.shape, w.shape)
        m = w.shape[1] * self.group
        if b is not None and b.shape != (m,):
            raise self.error(f"B must have shape [{m}], got {list(b.shape)}")
        return [TensorInfo(x.dtype, (x.shape[0], m, *out))]

    def run(self, inputs: Sequence[np.ndarray | None]) -> list[np.ndarray]:
        x, w, *rest = inputs
        b = rest[0] if rest else None
        assert x is not None and w is not None
        kernel, strides, dilations, pads, out = self.geometry(x.shape, w.shape)
        rank, n, in_spatial = len(kernel), x.shape[0], x.shape[2:]
        c_per, m_per = x.shape[1] // self.group, w.shape[1]
        full = [strides[i] * (in_spatial[i] - 1) + (kernel[i] - 1) * dilations[i] + 1
                for i in range(rank)]
        size = [max(full[i], pads[i] + out[i]) for i in range(rank)]
        y = np.zeros((n, m_per * self.group, *size), np.float64)
        xg = x.astype(np.float64).reshape(n, self.group, c_per, *in_spatial)
        wg = w.astype(np.float64).reshape(self.group, c_per, m_per, -1)
        taps_first = np.moveaxis(wg, -1, 0)  # [kernel cells, group, C/group, M/group]
        for cell, offset in enumerate(product(*(range(k) for k in kernel))):
            # [N, group, M/group, *in]: every input cell's contribution at this kernel offset
            part = np.einsum("ngc...,gcm->ngm...", xg, taps_first[cell])
            where = tuple(slice(offset[i] * dilations[i],
                                offset[i] * dilations[i] + strides[i] * (in_spatial[i] - 1) + 1,
                                strides[i]) for i in range(rank))
            y[(slice(None), slice(None), *where)] += part.reshape(n, -1, *in_spatial)
        crop = tuple(slice(pads[i], pads[i] + out[i]) for i in range(rank))
        result = y[(slice(None), slice(None), *crop)]
        if b is not None:
            result = result + b.astype(np.float64).reshape(1, -1, *(1,) * rank)
        return [np.ascontiguousarray(result).astype(x.dtype)]


OPS = (ConvTranspose,)
