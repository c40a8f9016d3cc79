"""fold_if: an If whose cond folds to a constant becomes its chosen branch's nodes in the main
graph (the If gone, results unchanged); a data-dependent If stays, noted for the host."""

import numpy as np
import onnx
import pytest
from onnx import numpy_helper

from systolic.ir import Model
from systolic.mapper.importer import load_model_bytes
from systolic.mapper.passes.fold_constants import fold_constants
from systolic.mapper.passes.fold_if import HOST_REASON, fold_if
from systolic.mapper.passes.name_nodes import name_nodes
from systolic.mapper.passes.pipeline import finalize, run_passes
from systolic.mapper.passes.remove_identities import remove_identities
from systolic.mapper.passes.report import FOLDED, PassReport
from systolic.reference.executor import run_model

from ...support.if_models import if_of_rate, if_of_shape, if_of_values, nested_if


def _load(model: onnx.ModelProto) -> Model:
    return name_nodes(load_model_bytes(model.SerializeToString()))


def _folded(model: Model) -> tuple[Model, PassReport]:
    report = PassReport((node.name, node.op_id) for node in model.graph.nodes)
    model = fold_constants(model, report)
    while (inlined := fold_if(model, report)) is not model:
        model = fold_constants(remove_identities(finalize(inlined), report), report)
    return model, report


@pytest.mark.parametrize(("size", "ops"), [(192, ["Conv", "Relu"]), (5, ["Conv", "Neg"])])
def test_the_chosen_branch_replaces_the_if(size: int, ops: list[str]) -> None:
    original = _load(if_of_shape(size))
    folded, report = _folded(original)
    assert [n.op_type for n in folded.graph.nodes] == ops
    assert all(n.name.startswith("choose/") for n in folded.graph.nodes)
    assert folded.graph.nodes[-1].outputs == ("y",)  # the Identity to y was dropped
    fate = report.fate("choose")
    assert fate is not None and fate.action == FOLDED
    assert ("then" if size == 192 else "else") + "_branch's 2 node(s)" in fate.reason
    x = np.random.default_rng(0).standard_normal((1, 3, 8, 8)).astype(np.float32)
    np.testing.assert_array_equal(run_model(folded, {"x": x})["y"],
                                  run_model(original, {"x": x})["y"])


def test_nested_ifs_of_constant_conds_fold_to_the_inner_branch() -> None:
    proto = nested_if()
    proto.graph.initializer.extend([numpy_helper.from_array(np.array(True), "a"),
                                    numpy_helper.from_array(np.array(False), "b")])
    original = _load(proto)
    folded, _ = _folded(original)
    assert [n.op_type for n in folded.graph.nodes] == ["Mul"]  # x * 2 (the Constant folded)
    x = np.random.default_rng(1).standard_normal((2, 3)).astype(np.float32)
    np.testing.assert_array_equal(run_model(folded, {"x": x})["y"], x * 2)


def test_a_data_dependent_if_stays_for_the_host() -> None:
    original = _load(if_of_values())
    report = PassReport((node.name, node.op_id) for node in original.graph.nodes)
    assert fold_if(original, report) is original
    assert report.note_of("choose") == HOST_REASON


def test_an_if_of_a_rate_input_names_it_in_its_host_reason() -> None:
    original = _load(if_of_rate())
    report = PassReport((node.name, node.op_id) for node in original.graph.nodes)
    assert fold_if(original, report) is original
    assert report.note_of("choose") == (
        f"{HOST_REASON}; it depends on the value of input 'sr': `systolic simulate --input` "
        "fixes that value and maps the chosen branch")


def test_the_pipeline_maps_the_inlined_conv() -> None:
    integer, _ = run_passes(_load(if_of_shape()))
    assert "If" not in {n.op_type for n in integer.graph.nodes}
    assert any(n.op_type == "QConv" and n.name.startswith("choose/")
               for n in integer.graph.nodes)


def test_branch_outputs_without_types_load_and_fold() -> None:
    """The IR lets nested subgraphs leave their outputs' types out (silero-vad's exports do)."""
    proto = if_of_shape(192)
    for attribute in proto.graph.node[-1].attribute:
        attribute.g.output[0].ClearField("type")
    original = _load(proto)
    folded, _ = _folded(original)
    assert [n.op_type for n in folded.graph.nodes] == ["Conv", "Relu"]
    x = np.random.default_rng(1).standard_normal((1, 3, 8, 8)).astype(np.float32)
    np.testing.assert_array_equal(run_model(folded, {"x": x})["y"],
                                  run_model(original, {"x": x})["y"])
