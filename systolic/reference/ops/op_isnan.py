"""IsNaN: a bool tensor, true where the float input is NaN."""

import numpy as np

from systolic.reference.ops._float_predicate import FloatPredicate


class IsNaN(FloatPredicate):
    """IsNaN-9, -13, -20 (the later versions only widen the float types)."""

    op_type = "IsNaN"
    since_versions = (9, 13, 20)

    def holds(self, x: np.ndarray) -> np.ndarray:
        return np.asarray(np.isnan(x))


OPS = (IsNaN,)
