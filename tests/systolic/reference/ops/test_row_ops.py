"""The row instructions' shared attribute checks and row coercion (systolic.reference.ops.
_row_ops), through both ops that use them: the same attributes are refused with the same
message by QSoftmax and QLayerNorm, and rows are X flattened from the axis on."""

import pytest

from systolic.errors import ModelError
from systolic.ir import Attrs
from systolic.reference.ops._row_ops import row_length
from systolic.reference.ops.op_systolic_qlayernorm import QLayerNorm
from systolic.reference.ops.op_systolic_qsoftmax import QSoftmax

OPS = [QSoftmax, QLayerNorm]


@pytest.mark.parametrize("cls", OPS, ids=lambda c: c.op_type)
@pytest.mark.parametrize(("attrs", "message"), [
    ({"shift": 0}, "required attribute 'multiplier' is missing"),
    ({"multiplier": 1}, "required attribute 'shift' is missing"),
    ({"multiplier": 2**31, "shift": 0}, "multiplier must be a signed 32-bit integer"),
    ({"multiplier": 1, "shift": 32}, r"shift must lie in \[-31, 31\], got 32"),
])
def test_scaling_attributes_are_checked_alike(cls: type, attrs: dict, message: str) -> None:
    with pytest.raises(ModelError, match=message):
        cls(Attrs({**attrs, "y_type": 2}), 1, "n")


@pytest.mark.parametrize(("axis", "shape", "expected"), [
    (-1, (2, 3, 4), (2, 4)), (1, (2, 3, 4), (1, 12)), (0, (5,), (0, 5)),
])
def test_rows_are_x_from_the_axis_on(axis: int, shape: tuple[int, ...],
                                     expected: tuple[int, int]) -> None:
    op = QSoftmax(Attrs({"multiplier": 1, "shift": 0, "y_type": 2, "axis": axis}), 1, "n")
    assert row_length(op, op.scaling.axis, shape) == expected


def test_a_scalar_and_a_too_long_row_are_refused() -> None:
    op = QLayerNorm(Attrs({"multiplier": 1, "shift": 0, "y_type": 2}), 1, "n")
    with pytest.raises(ModelError, match="X must have at least one dimension"):
        row_length(op, -1, ())
    with pytest.raises(ModelError, match=r"must hold 1 to 7 elements, not 8"):
        row_length(op, -1, (2, 8), 7)
