"""interleave: phases of a grid woven along the spatial axes by Reshape and Concat only."""

import dataclasses
import itertools

import numpy as np
import pytest

from systolic.ir import DataType, TensorType, ValueInfo
from systolic.mapper.passes.graph_tools import Namer
from systolic.mapper.passes.interleave import Builder, crop, interleave
from systolic.mapper.passes.pipeline import finalize
from systolic.reference.executor import run_model

from .model_builder import build, node


def woven(dims, strides, constant_phases):
    """Return (model computing y = the interleave of the phases, phase values, input names,
    the Builder): each phase is a graph input, or a constant for `constant_phases`."""
    r = np.random.default_rng(0)
    phases = list(itertools.product(*(range(s) for s in strides)))
    values = {p: r.integers(0, 255, dims).astype(np.uint8) for p in phases}
    names = {p: "p" + "".join(map(str, p)) for p in phases}
    inputs = [(names[p], np.uint8, list(dims)) for p in phases if p not in constant_phases]
    base = build([node("Identity", [inputs[0][0]], ["keep"], name="keep")], inputs,
                 [("keep", np.uint8, list(dims))])
    out = Builder(Namer(base.graph), "w")
    grid = {p: out.constant(names[p], values[p]) if p in constant_phases else names[p]
            for p in phases}
    assert interleave(out, grid, dims, strides, output="y") == "y"
    shape = (*dims[:2], *(j * s for j, s in zip(dims[2:], strides, strict=True)))
    graph = dataclasses.replace(
        base.graph, nodes=base.graph.nodes + tuple(out.nodes),
        outputs=(ValueInfo("y", TensorType(DataType.UINT8, shape)),),
        initializers=base.graph.initializers + tuple(out.constants))
    model = finalize(dataclasses.replace(base, graph=graph))
    feeds = {names[p]: v for p, v in values.items() if p not in constant_phases}
    return model, values, feeds, out


def expected(values, dims, strides):
    n, c, *spatial = dims
    y = np.zeros((n, c, *(j * s for j, s in zip(spatial, strides, strict=True))), np.uint8)
    for phase, value in values.items():
        cells = tuple(slice(q, None, s) for q, s in zip(phase, strides, strict=True))
        y[(slice(None), slice(None), *cells)] = value
    return y


@pytest.mark.parametrize(("dims", "strides", "constant_phases"), [
    ((1, 3, 4, 5), (2, 2), ()),
    ((2, 2, 3, 4), (3, 2), ((0, 0), (0, 1), (1, 1))),   # a whole row of constants: folded
    ((1, 2, 5), (3,), ((2,),)),
    ((1, 2, 3, 3), (1, 2), ()),
])
def test_interleave_weaves_every_phase(dims, strides, constant_phases):
    model, values, feeds, out = woven(dims, strides, constant_phases)
    np.testing.assert_array_equal(run_model(model, feeds)["y"], expected(values, dims, strides))
    assert {n.op_type for n in out.nodes} <= {"Reshape", "Concat"}


def test_a_group_of_constants_is_concatenated_now():
    _, _, _, out = woven((2, 2, 3, 4), (3, 2), ((0, 0), (0, 1), (1, 1)))
    concats = [n for n in out.nodes if n.op_type == "Concat"]
    assert len(concats) == 3  # rows 1 and 2 along W, then H; row 0 was folded


def test_crop_is_a_slice_only_when_needed():
    model = build([node("Identity", ["x"], ["z"], name="i")], [("x", np.uint8, [1, 1, 4])],
                  [("z", np.uint8, [1, 1, 4])])
    out = Builder(Namer(model.graph), "c")
    assert crop(out, "x", (4,), (0, 0)) == "x" and not out.nodes
    crop(out, "x", (4,), (1, 2))
    assert [n.op_type for n in out.nodes] == ["Slice"]
