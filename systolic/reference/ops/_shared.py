"""Helpers shared by the float and shape operators: attribute parsing with node-named
errors, axis normalisation, broadcasting, and constant folding during inference."""

from collections.abc import Sequence

import numpy as np

from systolic.errors import UnsupportedError
from systolic.ir import DataType
from systolic.reference.ops.base import Op, TensorInfo

__all__ = [
    "FLOAT_TYPES",
    "NUMERIC_TYPES",
    "broadcast_shape",
    "check_type",
    "float_attr",
    "fold",
    "int_attr",
    "ints_attr",
    "ints_of",
    "known_ints",
    "legacy_broadcast",
    "normalize_axis",
    "str_attr",
]

FLOAT_TYPES = frozenset({DataType.FLOAT, DataType.DOUBLE, DataType.FLOAT16})
"""Float element types the reference computes in numpy."""

NUMERIC_TYPES = FLOAT_TYPES | {
    DataType.INT8, DataType.UINT8, DataType.INT16, DataType.UINT16,
    DataType.INT32, DataType.UINT32, DataType.INT64, DataType.UINT64,
}
"""Element types arithmetic operators accept."""

FOLD_LIMIT = 65536
"""Largest output (in elements) computed during inference when every input is known."""


def int_attr(op: Op, name: str, default: int) -> int:
    """Return integer attribute `name` (or `default`), rejecting other kinds."""
    value = op.attr(name, default)
    if not isinstance(value, int) or isinstance(value, bool):
        raise op.error(f"attribute {name!r} must be an integer, got {value!r}")
    return value


def float_attr(op: Op, name: str, default: float) -> float:
    """Return float attribute `name` (or `default`); an integer is accepted as a float."""
    value = op.attr(name, default)
    if not isinstance(value, (int, float)) or isinstance(value, bool):
        raise op.error(f"attribute {name!r} must be a float, got {value!r}")
    return float(value)


def str_attr(op: Op, name: str, default: str) -> str:
    """Return string attribute `name` (or `default`)."""
    value = op.attr(name, default)
    if isinstance(value, bytes):
        value = value.decode("utf-8", "replace")
    if not isinstance(value, str):
        raise op.error(f"attribute {name!r} must be a string, got {value!r}")
    return value


def ints_attr(op: Op, name: str) -> tuple[int, ...] | None:
    """Return integer-list attribute `name`, or None when the node does not set it."""
    value = op.attr(name)
    if value is None:
        return None
    if isinstance(value, int) and not isinstance(value, bool):
        return (value,)
    if not isinstance(value, tuple) or not all(
        isinstance(v, int) and not isinstance(v, bool) for v in value
    ):
        raise op.error(f"attribute {name!r} must be a list of integers (type INTS), got {value!r}")
    return tuple(v for v in value if isinstance(v, int))


def normalize_axis(op: Op, axis: int, rank: int, what: str = "axis") -> int:
    """Return `axis` in [0, rank), counting a negative axis from the end."""
    if not -rank <= axis < rank:
        raise op.error(f"{what} {axis} is out of range for a rank-{rank} input")
    return axis + rank if axis < 0 else axis


def check_type(op: Op, info: TensorInfo, allowed: frozenset[DataType], what: str) -> None:
    """Raise ModelError when `info`'s element type is not in `allowed`."""
    if info.dtype not in allowed:
        names = ", ".join(sorted(t.short for t in allowed))
        raise op.error(f"{what} has element type {info.dtype.short}; expected one of {names}")


def broadcast_shape(op: Op, *shapes: tuple[int, ...]) -> tuple[int, ...]:
    """Return the numpy (multidirectional) broadcast of `shapes`, or raise ModelError."""
    try:
        return tuple(int(d) for d in np.broadcast_shapes(*shapes))
    except ValueError:
        text = ", ".join(str(list(s)) for s in shapes)
        raise op.error(f"input shapes {text} do not broadcast together") from None


def legacy_broadcast(
    op: Op, a_shape: tuple[int, ...], b_shape: tuple[int, ...], broadcast: int, axis: int | None
) -> tuple[int, ...]:
    """Return the shape B is reshaped to under the pre-opset-7 `broadcast`/`axis` rules.

    Without `broadcast`, B must have A's shape. With it, B's shape must match a contiguous
    run of A's dimensions starting at `axis` (default: the trailing ones); a B dimension of 1
    also matches. The returned shape has A's rank, with 1 outside that run.
    """
    if not broadcast:
        if a_shape != b_shape:
            raise op.error(
                f"inputs have shapes {list(a_shape)} and {list(b_shape)}; set broadcast=1 "
                "or give them equal shapes (this operator version does not broadcast otherwise)"
            )
        return b_shape
    rank_a, rank_b = len(a_shape), len(b_shape)
    if rank_b == 1 and b_shape[0] == 1 or rank_b == 0:
        return (1,) * rank_a
    start = rank_a - rank_b if axis is None else normalize_axis(op, axis, rank_a)
    if start < 0 or start + rank_b > rank_a or any(
        b not in (1, a) for a, b in zip(a_shape[start:], b_shape, strict=False)
    ):
        raise op.error(f"input B of shape {list(b_shape)} cannot broadcast to A of shape "
                       f"{list(a_shape)} at axis {start}")
    return (1,) * start + b_shape + (1,) * (rank_a - start - rank_b)


def fold(
    op: Op, inputs: Sequence[TensorInfo | None], outputs: list[TensorInfo]
) -> list[TensorInfo]:
    """Return `outputs` with their values filled in by running `op` when every given input's
    value is known and the outputs are small, so that shape sub-graphs fold to constants."""
    if any(info is not None and info.value is None for info in inputs):
        return outputs
    if any(info.size > FOLD_LIMIT for info in outputs):
        return outputs
    values = op.run([None if info is None else info.value for info in inputs])
    return [
        TensorInfo(info.dtype, info.shape, value)
        for info, value in zip(outputs, values, strict=False)
    ]


def known_ints(op: Op, info: TensorInfo | None, what: str) -> tuple[int, ...] | None:
    """Return the values of integer input `info` as a flat tuple, None when the input is
    omitted; raise UnsupportedError when its value is not known before running."""
    if info is None:
        return None
    if info.dtype not in (DataType.INT64, DataType.INT32):
        raise op.error(f"{what} must be int64, got {info.dtype.short}")
    if info.value is None:
        raise UnsupportedError(
            f"node {op.node_label!r} ({op.domain or 'ai.onnx'}.{op.op_type}:{op.version}): "
            f"{what} is computed at run time; the reference needs static shapes, so make "
            f"{what} a constant (for example by constant-folding the model)"
        )
    return tuple(int(v) for v in np.asarray(info.value).reshape(-1))


def ints_of(x: np.ndarray | None) -> tuple[int, ...] | None:
    """Return an integer input array as a flat tuple (None when omitted)."""
    return None if x is None else tuple(int(v) for v in x.reshape(-1))


def gemm_dims(op: Op, a: tuple[int, ...], b: tuple[int, ...], trans_a: int, trans_b: int
              ) -> tuple[int, int, int]:
    """Return (M, K, N) of Gemm-style 2-D operands A and B (transposed per the flags)."""
    if len(a) != 2 or len(b) != 2:
        raise op.error(f"A and B must be 2-D, got {list(a)} and {list(b)}")
    m, k = (a[1], a[0]) if trans_a else a
    k_b, n = (b[1], b[0]) if trans_b else b
    if k != k_b:
        raise op.error(f"inner dimensions differ: A' is [{m}, {k}], B' is [{k_b}, {n}]")
    return m, k, n
