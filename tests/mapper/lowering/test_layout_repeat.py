"""Copies that repeat elements (`layout_repeat`): the split shape, the destination strides on
it, one LOAD and one COPY per repeat offset; a nearest upsampling and a channel Split on the
Amaranth simulator equal to the golden machine and the cycle model."""

import numpy as np
import pytest

from systolic.config import ArrayConfig
from systolic.ir import Attrs, DataType, Node, Tensor
from systolic.isa.instructions import Copy, Load
from systolic.isa.program import Program
from systolic.mapper.lowering import compile_model
from systolic.mapper.lowering.copy import copy_strided
from systolic.mapper.lowering.layout_repeat import copy_repeated, expand_strides, split_shape
from systolic.reference.executor import run_graph
from systolic.sim.result import RunResult
from systolic.sim.run.backends import run_program
from systolic.simulation.runner import run_compiled

from ...hdl.feature_programs import assert_rtl_matches
from ...support.random_programs import SyntheticProgram
from .graphs import OPSETS, graph, node, random_input

I8 = DataType.INT8


def test_split_shape_splits_the_enlarged_axes():
    assert split_shape((1, 3, 8, 15), (1, 3, 4, 5)) == (1, 3, 4, 2, 5, 3)
    assert split_shape((1, 3, 4, 5), (1, 3, 4, 5)) is None  # nothing enlarged
    assert split_shape((1, 3, 6, 5), (1, 3, 4, 5)) is None  # 6 / 4 is no integer
    assert split_shape((3, 8), (1, 3, 8)) is None  # ranks differ


def test_expand_strides_multiplies_the_outer_part():
    # channel-last [1, 3, 8, 15]: strides (360, 1, 45, 3)
    assert expand_strides((360, 1, 45, 3), (1, 3, 8, 15), (1, 3, 4, 2, 5, 3)) == (
        360, 1, 90, 45, 9, 3)  # fmt: skip


def test_copy_repeated_loads_once_per_block_and_copies_each_offset():
    config = ArrayConfig(rows=4, cols=4)
    # [C=3, H=4, fh=2, W=5, fw=3] channel-last source at 1000, destination at 5000
    shape, src = (3, 4, 2, 5, 3), (1, 15, 0, 3, 0)
    dst = (1, 90, 45, 9, 3)
    code = copy_repeated(config, shape, 1000, src, 5000, dst, element=1)
    base = copy_strided(config, (3, 4, 5), 1000, (1, 15, 3), 5000, (1, 90, 9), element=1)
    loads = [i for i in code if isinstance(i, Load)]
    assert loads == [i for i in base if isinstance(i, Load)]
    copies = [i for i in code if isinstance(i, Copy)]
    first = next(i for i in base if isinstance(i, Copy))
    assert [c.ext - first.ext for c in copies[:6]] == [0, 3, 6, 45, 48, 51]
    assert len(copies) == 6 * len(loads)


def test_copy_repeated_without_repeats_is_copy_strided():
    config = ArrayConfig(rows=4, cols=4)
    args = (config, (3, 4, 5), 1000, (1, 15, 3), 5000, (1, 20, 4))
    assert copy_repeated(*args, element=1) == copy_strided(*args, element=1)


def _rtl_checked(program: Program, memory: bytearray) -> RunResult:
    """Check one accelerator segment on the Amaranth simulator against the golden machine
    and the cycle model, then return the cycle model's run."""
    assert_rtl_matches(SyntheticProgram(program, bytearray(memory)))
    return run_program(program, memory, backend="model")


def _layout_graph(kind: str):  # type: ignore[no-untyped-def]
    """x [1, 3, 2, 3] -> QMaxPool -> nearest Resize x(2, 3), or Split of channels [1, 2]."""
    pool = node("QMaxPool", ["x"], "p", kernel_shape=(1, 1))
    if kind == "resize":
        scales = Tensor("scales", DataType.FLOAT, np.array([1, 1, 2, 3], np.float32))
        resize = Node("Resize", ("p", "", "scales"), ("y",), domain="", version=13,
                      name="resize", attrs=Attrs({"mode": "nearest", "nearest_mode": "floor",
                                                  "coordinate_transformation_mode": "asymmetric"}))
        return graph({"x": (I8, (1, 3, 2, 3))}, {"y": I8}, [pool, resize], [scales])
    sizes = Tensor("sizes", DataType.INT64, np.array([1, 2], np.int64))
    split = Node("Split", ("p", "sizes"), ("a", "b"), domain="", version=13, name="split",
                 attrs=Attrs({"axis": 1}))
    return graph({"x": (I8, (1, 3, 2, 3))}, {"a": I8, "b": I8}, [pool, split], [sizes])


@pytest.mark.parametrize("kind", [pytest.param("resize", marks=pytest.mark.slow), "split"])
def test_layout_copies_on_the_amaranth_simulator(kind: str) -> None:
    compiled = compile_model(_layout_graph(kind), ArrayConfig(rows=2, cols=2))
    inputs = {"x": random_input(I8, (1, 3, 2, 3), 21)}
    outputs = run_compiled(compiled, inputs, _rtl_checked).outputs(compiled)
    for name, value in run_graph(compiled.graph, inputs, opsets=OPSETS).items():
        np.testing.assert_array_equal(outputs[name], value)
