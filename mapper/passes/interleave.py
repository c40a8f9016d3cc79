"""Interleave tensors along their spatial axes with Reshape and Concat only (layout ops the
lowering runs on the accelerator for 8-bit tensors: aliases of channel-last maps and COPYs).

`interleave(out, grid, strides)` takes one value per phase (q_1, ..., q_r), 0 <= q_i < s_i,
each of shape [N, C, J_1, ..., J_r], and returns Y of shape [N, C, s_1·J_1, ..., s_r·J_r]
with Y[n, c, s_1·j_1 + q_1, ...] = grid[q][n, c, j_1, ...]. Axis by axis from the last one: a
Reshape to [N, C, outer, inner] (outer the sizes up to and including the axis, inner those
after it: an alias of a channel-last map) and a Concat along axis 3 of the s_i phases, in
order. A Concat whose parts are all constants is computed now (a fill block, say).

The zero insertion of a transposed convolution is the interleave of x at one phase with
constant fill blocks at every other one; a polyphase transposed convolution is the interleave
of its phase convolutions' outputs.
"""

import dataclasses
import math

import numpy as np

from systolic.ir import AttrValue, Node, Tensor
from systolic.mapper.passes.graph_tools import Namer, make_node, tensor

__all__ = ["Builder", "crop", "interleave"]

Shape = tuple[int, ...]


@dataclasses.dataclass
class Builder:
    """Collects the nodes and constants a rewrite adds, named after `label`."""

    namer: Namer
    label: str
    nodes: list[Node] = dataclasses.field(default_factory=list)
    constants: list[Tensor] = dataclasses.field(default_factory=list)
    values: dict[str, np.ndarray] = dataclasses.field(default_factory=dict)

    def constant(self, base: str, value: np.ndarray) -> str:
        name = self.namer(f"{self.label}_{base}")
        self.constants.append(tensor(name, value))
        self.values[name] = value
        return name

    def node(self, op_type: str, inputs: list[str], base: str, *, output: str = "",
             name: str = "", **attrs: AttrValue) -> str:  # fmt: skip
        """Add a node; return its output (`output`, else a fresh name from `base`)."""
        out = output or self.namer(f"{self.label}_{base}")
        self.nodes.append(make_node(op_type, inputs, [out], name=name or self.namer(out),
                                    attrs=attrs))
        return out

    def reshape(self, value: str, shape: Shape, target: Shape, *, output: str = "") -> str:
        """Return `value` (of `shape`) reshaped to `target` (constants are reshaped now)."""
        if shape == target and not output:
            return value
        if value in self.values and not output:
            return self.constant("block", self.values[value].reshape(target))
        return self.node("Reshape", [value, self.constant("shape", _i64(target))], "rows",
                         output=output)


def interleave(out: Builder, grid: dict[tuple[int, ...], str], dims: Shape,
               strides: Shape, *, output: str = "") -> str:  # fmt: skip
    """Return the interleave of `grid`'s values, each of shape `dims` = [N, C, *J] (see the
    module docstring); `output` names the result."""
    n, c, *spatial = dims
    values = {phase: (name, tuple(dims)) for phase, name in grid.items()}
    for axis in reversed(range(len(spatial))):
        s = strides[axis]
        if s == 1:
            continue
        rows = (n, c, math.prod(spatial[:axis + 1]), math.prod(spatial[axis + 1:]))
        merged: dict[tuple[int, ...], tuple[str, Shape]] = {}
        for rest in sorted({p[:axis] + p[axis + 1:] for p in values}):
            phases = [rest[:axis] + (q,) + rest[axis:] for q in range(s)]
            parts = [out.reshape(*values[p], rows) for p in phases]
            merged[rest[:axis] + (0,) + rest[axis:]] = (_concat(out, parts), rows[:3]
                                                        + (s * rows[3],))
        values = merged
        spatial[axis] *= s
    (name, shape), = values.values()
    return out.reshape(name, shape, (n, c, *spatial), output=output)


def crop(out: Builder, value: str, spatial: Shape, crops: Shape) -> str:
    """Return `value` [N, C, *spatial] with crops[i] cells cut at the start and
    crops[rank + i] at the end of spatial axis i (a Slice, on the host; none when all are 0)."""
    rank = len(spatial)
    if not any(crops):
        return value
    ends = tuple(spatial[i] - crops[rank + i] for i in range(rank))
    return out.node("Slice", [value, out.constant("starts", _i64(crops[:rank])),
                              out.constant("ends", _i64(ends)),
                              out.constant("axes", _i64(tuple(range(2, 2 + rank))))], "cropped")


def _concat(out: Builder, parts: list[str]) -> str:
    if all(p in out.values for p in parts):
        return out.constant("block", np.concatenate([out.values[p] for p in parts], axis=3))
    return out.node("Concat", parts, "spread", axis=3)


def _i64(values: Shape) -> np.ndarray:
    return np.array(values, dtype=np.int64)
