"""The window geometry of a pooling node as the systolic pooling ops take it: kernel,
strides and explicit pads, with ceil_mode turned into extra end padding."""

from systolic.ir import Node
from systolic.mapper.passes.graph_tools import attr_int, attr_ints, attr_str
from systolic.mapper.passes.quant_params import NotFusable
from systolic.reference.kernels.conv import conv_output_shape, resolve_auto_pad

__all__ = ["pool_geometry"]


def pool_geometry(node: Node, shape: tuple[int, ...], *, global_pool: bool,
                  count_include_pad: bool) -> dict[str, object]:
    """Return kernel_shape, strides and explicit pads of a pooling node on input `shape`
    (ceil_mode turned into end padding); raise NotFusable for what the ops do not take."""
    spatial = shape[2:]
    if global_pool:
        return {"kernel_shape": tuple(spatial), "strides": (1,) * len(spatial),
                "pads": (0,) * (2 * len(spatial))}
    kernel = (attr_ints(node, "kernel_shape") or ())
    rank = len(kernel)
    strides = (attr_ints(node, "strides") or (1,) * rank)
    dilations = (attr_ints(node, "dilations") or (1,) * rank)
    if any(d != 1 for d in dilations):
        raise NotFusable("dilated pooling runs on the host")
    pads = list(resolve_auto_pad(attr_str(node, "auto_pad", "NOTSET"), spatial, kernel,
                                 strides, dilations, attr_ints(node, "pads")))
    if attr_int(node, "ceil_mode", 0):
        out = conv_output_shape(spatial, kernel, strides, pads, dilations, ceil_mode=True)
        for i in range(rank):
            needed = (out[i] - 1) * strides[i] + kernel[i]
            extra = max(0, needed - (spatial[i] + pads[i] + pads[rank + i]))
            if extra and count_include_pad:
                raise NotFusable("ceil_mode with count_include_pad counts cells differently")
            pads[rank + i] += extra
    if any(p >= k for p, k in zip(pads, kernel * 2, strict=True)):
        raise NotFusable("pads as large as the kernel are not fused")
    return {"kernel_shape": kernel, "strides": strides, "pads": tuple(pads)}
