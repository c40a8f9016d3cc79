"""Reading a fused integer node's attributes for the lowering, with layer-named errors.

Zero points and clamp bounds arrive in the tensors' own types (uint8 or int8, section C of
the session contracts); the hardware works in the int8 domain, where a uint8 value v is
v − 128 and LOAD/STORE flip the top bit (docs/isa.md, "uint8 tensors").
"""

import dataclasses
from collections.abc import Mapping

import numpy as np

from systolic.config import ArrayConfig
from systolic.errors import ModelError, UnsupportedError
from systolic.ir import DataType, Node
from systolic.isa.program import TensorPlacement

__all__ = [
    "OutputSide",
    "constant_input",
    "input_side",
    "int_attr",
    "ints_attr",
    "output_side",
    "per_channel",
]

_FLIP = 128


def int_attr(node: Node, name: str, default: int | None = None) -> int:
    """Return integer attribute `name` (or `default`; required when `default` is None)."""
    value = node.attrs.get(name, default)
    if value is None:
        raise ModelError(f"node {node.label!r} ({node.op_type}) lacks attribute {name!r}")
    if not isinstance(value, int) or isinstance(value, bool):
        raise ModelError(f"node {node.label!r}: attribute {name!r} must be an integer")
    return value


def ints_attr(node: Node, name: str, default: tuple[int, ...] | None = None) -> tuple[int, ...]:
    """Return integer-list attribute `name` (or `default`; required when `default` is None)."""
    value = node.attrs.get(name, default)
    if value is None:
        raise ModelError(f"node {node.label!r} ({node.op_type}) lacks attribute {name!r}")
    if isinstance(value, int) and not isinstance(value, bool):
        return (value,)
    if not isinstance(value, tuple):
        raise ModelError(f"node {node.label!r}: attribute {name!r} must be a list of integers")
    items: list[int] = []
    for item in value:
        if not isinstance(item, int) or isinstance(item, bool):
            raise ModelError(f"node {node.label!r}: attribute {name!r} must be a list of integers")
        items.append(item)
    return tuple(items)


def per_channel(node: Node, name: str, count: int) -> np.ndarray:
    """Return attribute `name` as `count` int64 values (one per output channel)."""
    values = ints_attr(node, name)
    if len(values) != count:
        raise ModelError(
            f"node {node.label!r}: {name} has {len(values)} values, expected {count} "
            f"(one per output channel)"
        )
    return np.asarray(values, dtype=np.int64)


def _eight_bit(placement: TensorPlacement, node: Node, config: ArrayConfig) -> bool:
    """Return whether `placement` is uint8 (else int8); raise for what LOAD/STORE cannot do."""
    if placement.dtype not in (DataType.UINT8, DataType.INT8):
        raise UnsupportedError(
            f"layer {node.label!r}: tensor {placement.name!r} is {placement.dtype.name}; "
            f"the array reads and writes uint8 or int8"
        )
    if config.input_width < 8:
        raise UnsupportedError(
            f"layer {node.label!r}: 8-bit activations need input_width >= 8, "
            f"not {config.input_width}"
        )
    is_uint8 = placement.dtype is DataType.UINT8
    if is_uint8 and (config.input_width != 8 or config.operand_bytes != 1):
        raise UnsupportedError(
            f"layer {node.label!r}: uint8 tensor {placement.name!r} needs 8-bit operands "
            f"in one byte (input_width 8, weight_width <= 8) to flip its sign bit"
        )
    return is_uint8


def input_side(
    placement: TensorPlacement, zero_point: int, node: Node, config: ArrayConfig
) -> tuple[int, bool]:
    """Return (zero point in the int8 domain, LOAD flip_sign) of an activation input."""
    flip = _eight_bit(placement, node, config)
    low, high = (0, 255) if flip else (-128, 127)
    if not low <= zero_point <= high:
        raise ModelError(f"node {node.label!r}: input zero point {zero_point} is outside "
                         f"{placement.dtype.name.lower()}")  # fmt: skip
    return zero_point - (_FLIP if flip else 0), flip


@dataclasses.dataclass(frozen=True)
class OutputSide:
    """The STORE's zero point, clamp bounds (int8 domain) and flip_sign."""

    zero_point: int
    lo: int
    hi: int
    flip: bool


def output_side(node: Node, y: TensorPlacement, config: ArrayConfig) -> OutputSide:
    """Return the output stage fields of `node` writing `y` (attributes of section C)."""
    flip = _eight_bit(y, node, config)
    y_type = int_attr(node, "y_type", int(y.dtype))
    if y_type != int(y.dtype):
        raise ModelError(f"node {node.label!r}: y_type {y_type} but Y is placed as "
                         f"{y.dtype.name}")  # fmt: skip
    low, high = (0, 255) if flip else (-128, 127)
    zero_point = int_attr(node, "y_zero_point", 0)
    lo, hi = int_attr(node, "y_lo", low), int_attr(node, "y_hi", high)
    if not (low <= zero_point <= high and low <= lo <= hi <= high):
        raise ModelError(f"node {node.label!r}: y_zero_point {zero_point}, y_lo {lo}, y_hi "
                         f"{hi} must lie in {y.dtype.name.lower()} with y_lo <= y_hi")  # fmt: skip
    shift = _FLIP if flip else 0
    return OutputSide(zero_point - shift, lo - shift, hi - shift, flip)


def constant_input(constants: Mapping[str, np.ndarray], name: str, node: Node) -> np.ndarray:
    """Return the constant input `name` of `node`; raise when it is not a constant."""
    if name not in constants:
        raise UnsupportedError(
            f"layer {node.label!r}: input {name!r} must be a constant (an initializer) to run "
            f"on the array"
        )
    return np.asarray(constants[name])
