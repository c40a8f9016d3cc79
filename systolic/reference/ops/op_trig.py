"""The trigonometric and hyperbolic functions numpy has and op_unary does not: Tan, Asin,
Acos, Atan, Sinh, Cosh, Asinh, Acosh, Atanh (float types; NaN outside the domain, ±inf at a
pole), each the numpy function of the same name (`function`) in the input's type."""

from typing import ClassVar

import numpy as np

from systolic.reference.ops.op_unary import _Unary


class _NumpyFunction(_Unary):
    """A unary operator computed by one numpy function (`function`)."""

    function: ClassVar[np.ufunc]

    def compute(self, x: np.ndarray) -> np.ndarray:
        with np.errstate(divide="ignore"):
            return np.asarray(type(self).function(x))


class Tan(_NumpyFunction):
    """Tan-7, -22."""

    op_type, since_versions, function = "Tan", (7, 22), np.tan


class Asin(_NumpyFunction):
    """Asin-7, -22."""

    op_type, since_versions, function = "Asin", (7, 22), np.arcsin


class Acos(_NumpyFunction):
    """Acos-7, -22."""

    op_type, since_versions, function = "Acos", (7, 22), np.arccos


class Atan(_NumpyFunction):
    """Atan-7, -22."""

    op_type, since_versions, function = "Atan", (7, 22), np.arctan


class Sinh(_NumpyFunction):
    """Sinh-9, -22."""

    op_type, since_versions, function = "Sinh", (9, 22), np.sinh


class Cosh(_NumpyFunction):
    """Cosh-9, -22."""

    op_type, since_versions, function = "Cosh", (9, 22), np.cosh


class Asinh(_NumpyFunction):
    """Asinh-9, -22."""

    op_type, since_versions, function = "Asinh", (9, 22), np.arcsinh


class Acosh(_NumpyFunction):
    """Acosh-9, -22."""

    op_type, since_versions, function = "Acosh", (9, 22), np.arccosh


class Atanh(_NumpyFunction):
    """Atanh-9, -22 (±1 give ±inf)."""

    op_type, since_versions, function = "Atanh", (9, 22), np.arctanh


OPS = (Acos, Acosh, Asin, Asinh, Atan, Atanh, Cosh, Sinh, Tan)
