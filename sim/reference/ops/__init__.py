"""Every operator the numpy reference implements, one file per operator (or family).

`ALL_OPS` is the explicit list the registry reads.
"""

from ..op import Op
from . import op_relu

ALL_OPS: tuple[type[Op], ...] = (
    *op_relu.OPS,
)
