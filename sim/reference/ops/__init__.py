"""Every operator the numpy reference implements, one file per operator (or family).

`ALL_OPS` is the explicit list the registry reads, one entry per module, alphabetical by
module name.
"""

from ..op import Op
from . import (
    op_conv,
    op_conv_integer,
    op_dequantize_linear,
    op_matmul_integer,
    op_qgemm,
    op_qlinear_conv,
    op_qlinear_matmul,
    op_quantize_linear,
    op_relu,
)

ALL_OPS: tuple[type[Op], ...] = (
    *op_conv.OPS,
    *op_conv_integer.OPS,
    *op_dequantize_linear.OPS,
    *op_matmul_integer.OPS,
    *op_qgemm.OPS,
    *op_qlinear_conv.OPS,
    *op_qlinear_matmul.OPS,
    *op_quantize_linear.OPS,
    *op_relu.OPS,
)
