"""unroll_scan: a Scan-9+ of static length becomes its body's copies in the main graph (the
Scan gone, results unchanged for every input/output axis and direction and every opset form of
Slice/Squeeze/Unsqueeze); a Scan whose scan inputs have unknown shapes or that is too long
stays, noted for the host."""

import numpy as np
import onnx
import pytest

from systolic.ir import Model
from systolic.mapper.importer import load_model_bytes
from systolic.mapper.passes.name_nodes import name_nodes
from systolic.mapper.passes.pipeline import finalize
from systolic.mapper.passes.report import FOLDED, PassReport
from systolic.mapper.passes.unroll_loop import MAX_TRIPS
from systolic.mapper.passes.unroll_scan import unroll_scan
from systolic.reference.executor import run_model

from ...support.loop_scan_models import scan_sum


def _load(model: onnx.ModelProto) -> Model:
    return name_nodes(load_model_bytes(model.SerializeToString()))


def _unrolled(model: Model) -> tuple[Model, PassReport]:
    report = PassReport((node.name, node.op_id) for node in model.graph.nodes)
    result = unroll_scan(model, report)
    return (result if result is model else finalize(result)), report


def _same_results(original: Model, unrolled: Model, x_shape: tuple[int, int]) -> None:
    rng = np.random.default_rng(sum(x_shape))
    feeds = {"s0": rng.standard_normal(4).astype(np.float32),
             "x": rng.standard_normal(x_shape).astype(np.float32)}
    before, after = run_model(original, feeds), run_model(unrolled, feeds)
    for name, value in before.items():
        np.testing.assert_array_equal(after[name], value)


@pytest.mark.parametrize("input_axis", [0, 1, -1])
@pytest.mark.parametrize("reverse_in", [False, True])
@pytest.mark.parametrize(("output_axis", "reverse_out"), [(0, False), (1, True)])
def test_a_scan_becomes_its_body_copies(input_axis: int, reverse_in: bool, output_axis: int,
                                        reverse_out: bool) -> None:
    original = _load(scan_sum(input_axis=input_axis, reverse_in=reverse_in,
                              output_axis=output_axis, reverse_out=reverse_out, matmul=True))
    unrolled, report = _unrolled(original)
    ops = [node.op_type for node in unrolled.graph.nodes]
    assert "Scan" not in ops and ops.count("MatMul") == 5
    assert report.fate("sf").action == FOLDED  # type: ignore[union-attr]
    _same_results(original, unrolled, (5, 4) if input_axis == 0 else (4, 5))


@pytest.mark.parametrize("opset", [9, 11, 13])
def test_every_opset_form_of_the_slicing(opset: int) -> None:
    original = _load(scan_sum(opset=opset, matmul=True))
    unrolled, _ = _unrolled(original)
    assert "Scan" not in [node.op_type for node in unrolled.graph.nodes]
    _same_results(original, unrolled, (5, 4))


def test_too_long_a_scan_stays() -> None:
    original = _load(scan_sum(rows=MAX_TRIPS + 1))
    unrolled, report = _unrolled(original)
    assert unrolled is original
    assert f"not one size in [1, {MAX_TRIPS}]" in (report.note_of("sf") or "")
