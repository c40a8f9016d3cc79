"""The trigonometric and hyperbolic functions numpy has and op_unary does not: Tan, Asin,
Acos, Atan, Sinh, Cosh, Asinh, Acosh, Atanh (float types; NaN outside the domain)."""

import numpy as np

from systolic.reference.ops.op_unary import _Unary


class Tan(_Unary):
    """Tan-7, -22."""

    op_type = "Tan"
    since_versions = (7, 22)

    def compute(self, x: np.ndarray) -> np.ndarray:
        return np.asarray(np.tan(x))


class Asin(_Unary):
    """Asin-7, -22."""

    op_type = "Asin"
    since_versions = (7, 22)

    def compute(self, x: np.ndarray) -> np.ndarray:
        return np.asarray(np.arcsin(x))


class Acos(_Unary):
    """Acos-7, -22."""

    op_type = "Acos"
    since_versions = (7, 22)

    def compute(self, x: np.ndarray) -> np.ndarray:
        return np.asarray(np.arccos(x))


class Atan(_Unary):
    """Atan-7, -22."""

    op_type = "Atan"
    since_versions = (7, 22)

    def compute(self, x: np.ndarray) -> np.ndarray:
        return np.asarray(np.arctan(x))


class Sinh(_Unary):
    """Sinh-9, -22."""

    op_type = "Sinh"
    since_versions = (9, 22)

    def compute(self, x: np.ndarray) -> np.ndarray:
        return np.asarray(np.sinh(x))


class Cosh(_Unary):
    """Cosh-9, -22."""

    op_type = "Cosh"
    since_versions = (9, 22)

    def compute(self, x: np.ndarray) -> np.ndarray:
        return np.asarray(np.cosh(x))


class Asinh(_Unary):
    """Asinh-9, -22."""

    op_type = "Asinh"
    since_versions = (9, 22)

    def compute(self, x: np.ndarray) -> np.ndarray:
        return np.asarray(np.arcsinh(x))


class Acosh(_Unary):
    """Acosh-9, -22."""

    op_type = "Acosh"
    since_versions = (9, 22)

    def compute(self, x: np.ndarray) -> np.ndarray:
        return np.asarray(np.arccosh(x))


class Atanh(_Unary):
    """Atanh-9, -22 (±1 give ±inf)."""

    op_type = "Atanh"
    since_versions = (9, 22)

    def compute(self, x: np.ndarray) -> np.ndarray:
        with np.errstate(divide="ignore"):
            return np.asarray(np.arctanh(x))


OPS = (Acos, Acosh, Asin, Asinh, Atan, Atanh, Cosh, Sinh, Tan)
