"""Layer tables and host steps in the program format: checks and message round trips."""

import numpy as np
import pytest

from systolic.config import ArrayConfig
from systolic.ir import Attrs, DataType, Node, Tensor
from systolic.isa.assembler import assemble
from systolic.isa.disassembler import disassemble
from systolic.isa.host_nodes import host_step_from_proto, host_step_to_proto
from systolic.isa.instructions import Halt, Load, LoadTarget
from systolic.isa.program import HostStep, LayerUnit, Program, ProgramError, ProgramLayer
from systolic.mapper.importer import load_model_bytes
from systolic.reference.executor import make_op

from ...support.if_models import nested_if

CONFIG = ArrayConfig(rows=4, cols=4, mem_latency=17)
LOAD = Load.dense(LoadTarget.SPAD_IN, row=0, count=2, ext=0, row_stride=4, length=4)


def _node() -> Node:
    attrs = {
        "axis": 1,
        "alpha": 0.25,
        "mode": "constant",
        "perm": (0, 2, 1),
        "scales": (0.5, 2.0),
        "names": ("a", "b"),
        "value": Tensor("v", DataType.INT64, np.array([3, 4])),
    }
    return Node("Softmax", ("x", "c"), ("y",), domain="", version=13, name="soft",
                attrs=Attrs(attrs))  # fmt: skip


def test_a_host_step_round_trips_through_its_message():
    constant = Tensor("c", DataType.FLOAT, np.arange(6, dtype=np.float32).reshape(2, 3))
    step = HostStep(1, _node(), (constant,))
    back = host_step_from_proto(host_step_to_proto(step))
    assert back == step


def test_a_program_with_layers_and_host_steps_round_trips():
    layers = (
        ProgramLayer("load", "QMaxPool", LayerUnit.VECTOR, 0, 1, 0, ("x",), ("p",), "why"),
        ProgramLayer("soft", "Softmax", LayerUnit.HOST, 1, 0, 0, ("p",), ("y",)),
    )
    program = Program(CONFIG, (LOAD, Halt()), layers=layers,
                      host_steps=(HostStep(1, _node()),))  # fmt: skip
    back = disassemble(assemble(program))
    assert back == program
    assert back.config.mem_latency == 17


@pytest.mark.parametrize(("layers", "steps", "message"), [
    ((ProgramLayer("a", "X", LayerUnit.VECTOR, 1, 0),), (),
     r"^layer 0 \('a'\) must start at instruction 0"),
    ((ProgramLayer("a", "X", LayerUnit.HOST, 0, 1),), (HostStep(0, _node()),),
     r"^host layer 'a' must have no instructions$"),
    ((ProgramLayer("a", "X", LayerUnit.VECTOR, 0, 0),), (),
     r"^the layers cover instructions 0..-1 but the program has 1 before its HALT$"),
    ((ProgramLayer("a", "X", LayerUnit.VECTOR, 0, 1),
      ProgramLayer("b", "Y", LayerUnit.HOST, 1, 0)), (),
     r"^every host layer needs exactly one host step"),
])  # fmt: skip
def test_inconsistent_layer_tables_are_refused(layers, steps, message):  # type: ignore[no-untyped-def]
    with pytest.raises(ProgramError, match=message):
        Program(CONFIG, (LOAD, Halt()), layers=layers, host_steps=steps)


def test_an_if_host_step_round_trips_with_its_branches_bound() -> None:
    node = load_model_bytes(nested_if().SerializeToString()).graph.nodes[0]
    step = HostStep(3, node)
    back = host_step_from_proto(host_step_to_proto(step))
    assert back == step
    inner = back.node.attrs["then_branch"].nodes[1]  # type: ignore[union-attr]
    assert inner.op_type == "If" and inner.version == 16
    assert all(n.version > 0 for n in inner.attrs["else_branch"].nodes)  # type: ignore[union-attr]
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    args = [np.array(True), x, np.array(False), x]  # a, x, b, K
    np.testing.assert_array_equal(make_op(back.node, {}).run(args)[0], x * 2)
