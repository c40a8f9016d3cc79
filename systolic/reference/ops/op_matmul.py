"""MatMul: numpy matmul semantics (batched, broadcast batch dimensions, 1-D operands)."""

from collections.abc import Sequence

import numpy as np

from systolic.reference.ops._shared import NUMERIC_TYPES, broadcast_shape, check_type
from systolic.reference.ops.base import Op, TensorInfo


def matmul_shape(op: Op, a: tuple[int, ...], b: tuple[int, ...]) -> tuple[int, ...]:
    """Return the shape of matmul(a, b) under numpy's rules, or raise ModelError naming `op`."""
    if not a or not b:
        raise op.error("MatMul inputs must have at least one dimension")
    a2 = (1, *a) if len(a) == 1 else a
    b2 = (*b, 1) if len(b) == 1 else b
    if a2[-1] != b2[-2]:
        raise op.error(f"inner dimensions differ: A is {list(a)}, B is {list(b)}")
    batch = broadcast_shape(op, a2[:-2], b2[:-2])
    shape = (*batch, a2[-2], b2[-1])
    if len(b) == 1:
        shape = shape[:-1]
    if len(a) == 1:
        shape = (*shape[:-2], shape[-1]) if len(b) > 1 else shape[:-1]
    return shape


class MatMul(Op):
    """MatMul-1, -9, -13 (later versions only widen the types)."""

    op_type = "MatMul"
    since_versions = (1, 9, 13)

    def infer(self, inputs: Sequence[TensorInfo | None]) -> list[TensorInfo]:
        a, b = inputs
        assert a is not None and b is not None
        check_type(self, a, NUMERIC_TYPES, "A")
        if a.dtype != b.dtype:
            raise self.error(f"A is {a.dtype.short} but B is {b.dtype.short}")
        return [TensorInfo(a.dtype, matmul_shape(self, a.shape, b.shape))]

    def run(self, inputs: Sequence[np.ndarray | None]) -> list[np.ndarray]:
        a, b = inputs
        assert a is not None and b is not None
        matmul_shape(self, a.shape, b.shape)
        return [np.matmul(a, b)]


OPS = (MatMul,)
