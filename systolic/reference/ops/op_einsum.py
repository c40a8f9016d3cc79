"""Einsum: a sum of products over labelled axes, as numpy.einsum computes it."""

import dataclasses
from collections.abc import Sequence

import numpy as np

from systolic.ir import Attrs
from systolic.reference.ops._shared import (
    NUMERIC_TYPES,
    broadcast_shape,
    check_type,
    fold,
    str_attr,
)
from systolic.reference.ops.base import Op, TensorInfo

_ELLIPSIS = "..."


@dataclasses.dataclass(frozen=True)
class _Equation:
    """A parsed equation: one term per input and the output term; a term is a string of
    letters where "." stands for the ellipsis ("..." shortened to one character)."""

    inputs: tuple[str, ...]
    output: str


def _term(op: Op, text: str) -> str:
    if text.count(_ELLIPSIS) > 1 or text.replace(_ELLIPSIS, "").count("."):
        raise op.error(f"equation term {text!r} has a misplaced '.' (only one '...' is allowed)")
    short = text.replace(_ELLIPSIS, ".")
    if not all(c.isalpha() or c == "." for c in short):
        raise op.error(f"equation term {text!r} must be letters and at most one '...'")
    return short


def parse_equation(op: Op, equation: str) -> _Equation:
    """Return `equation` parsed (spaces ignored); without "->" the output is the ellipsis
    followed by the letters used exactly once, alphabetically (numpy's implicit mode)."""
    text = equation.replace(" ", "")
    left, arrow, right = text.partition("->")
    inputs = tuple(_term(op, t) for t in left.split(","))
    if arrow:
        output = _term(op, right)
        if len(set(output)) != len(output):
            raise op.error(f"the output term {right!r} repeats a label")
        unknown = set(output) - set("".join(inputs))
        if unknown:
            raise op.error(f"output labels {''.join(sorted(unknown))!r} appear in no input")
    else:
        letters = "".join(inputs).replace(".", "")
        once = sorted(c for c in set(letters) if letters.count(c) == 1)
        output = ("." if any("." in t for t in inputs) else "") + "".join(once)
    return _Equation(inputs, output)


def output_shape(op: Op, eq: _Equation, shapes: Sequence[tuple[int, ...]]) -> tuple[int, ...]:
    """Return the output shape of `eq` applied to inputs of `shapes`, or raise ModelError
    when a term's rank or a label's sizes do not fit."""
    if len(eq.inputs) != len(shapes):
        raise op.error(f"the equation has {len(eq.inputs)} input term(s) for {len(shapes)} "
                       "input(s)")
    sizes: dict[str, int] = {}
    ellipses: list[tuple[int, ...]] = []
    for term, shape in zip(eq.inputs, shapes, strict=True):
        labels = len(term.replace(".", ""))
        if len(shape) < labels or "." not in term and len(shape) != labels:
            raise op.error(f"term {term.replace('.', _ELLIPSIS)!r} does not fit an input of "
                           f"shape {list(shape)}")
        dot = term.find(".")
        ell_rank = len(shape) - labels
        dims = list(shape)
        if dot >= 0:
            ellipses.append(tuple(dims[dot:dot + ell_rank]))
            dims[dot:dot + ell_rank] = [-1]
        for label, size in zip(term, dims, strict=True):
            if label != "." and sizes.setdefault(label, size) != size:
                raise op.error(f"label {label!r} has sizes {sizes[label]} and {size}")
    ellipsis = broadcast_shape(op, *ellipses) if ellipses else ()
    out: list[int] = []
    for label in eq.output:
        out.extend(ellipsis if label == "." else (sizes[label],))
    return tuple(out)


class Einsum(Op):
    """Einsum-12: any equation numpy.einsum accepts (explicit "->" or implicit output,
    "..." broadcasting). All inputs share one element type; integers accumulate in that
    type and wrap; floats accumulate as numpy.einsum does in the input type."""

    op_type = "Einsum"
    since_versions = (12,)

    def __init__(self, attrs: Attrs, version: int, node_label: str) -> None:
        super().__init__(attrs, version, node_label)
        self.required_attr("equation")
        self.text = str_attr(self, "equation", "").replace(" ", "")
        self.equation = parse_equation(self, self.text)

    def infer(self, inputs: Sequence[TensorInfo | None]) -> list[TensorInfo]:
        present = [x for x in inputs if x is not None]
        if not present:
            raise self.error("Einsum needs at least one input")
        for i, x in enumerate(present):
            check_type(self, x, NUMERIC_TYPES, f"input {i}")
            if x.dtype != present[0].dtype:
                raise self.error(f"inputs must share one element type, got "
                                 f"{present[0].dtype.short} and {x.dtype.short}")
        shape = output_shape(self, self.equation, [x.shape for x in present])
        return fold(self, inputs, [TensorInfo(present[0].dtype, shape)])

    def run(self, inputs: Sequence[np.ndarray | None]) -> list[np.ndarray]:
        arrays = [x for x in inputs if x is not None]
        output_shape(self, self.equation, [x.shape for x in arrays])
        out = np.einsum(self.text, *arrays)
        return [np.asarray(out, dtype=arrays[0].dtype)]


OPS = (Einsum,)
