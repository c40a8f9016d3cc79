"""embedding_scale: Mul(Gather(constant table, ids), constant scalar) becomes a Gather of the
scaled table, bit for bit, and the Mul no longer reaches the host."""

import numpy as np

from systolic.mapper.passes.embedding_scale import embedding_scale
from systolic.mapper.passes.pipeline import finalize, run_passes
from systolic.mapper.passes.report import FUSED, PassReport
from systolic.reference.executor import run_model

from .table_models import make, node, op_types

VOCAB, HIDDEN, SEQ = 11, 6, 5
EIGHT = np.float32(8.0)


def _report(model):  # type: ignore[no-untyped-def]
    return PassReport((n.label, n.op_id) for n in model.graph.nodes)


def _embedding(scale=EIGHT, swapped=False, extra_reader=False):  # type: ignore[no-untyped-def]
    """ids [1, S] -> Gather(table [V, H]) -> Mul(scale) -> MatMul(w) (and, with
    `extra_reader`, the looked-up rows also added to the product)."""
    rng = np.random.default_rng(0)
    operands = ["s", "rows"] if swapped else ["rows", "s"]
    nodes = [node("Gather", ["table", "ids"], ["rows"], name="lookup"),
             node("Mul", operands, ["scaled"], name="embed_scale"),
             node("MatMul", ["scaled", "w"], ["y0"])]
    nodes.append(node("Add", ["y0", "rows"], ["y"]) if extra_reader
                 else node("Identity", ["y0"], ["y"]))
    constants = {"table": rng.normal(0, 0.7, (VOCAB, HIDDEN)).astype(np.float32),
                 "s": scale, "w": rng.normal(0, 0.5, (HIDDEN, HIDDEN)).astype(np.float32)}
    return make(nodes, [("ids", np.int64, (1, SEQ))], [("y", np.float32, (1, SEQ, HIDDEN))],
                constants, opset=17)


def _ids():  # type: ignore[no-untyped-def]
    return {"ids": np.random.default_rng(1).integers(0, VOCAB, (1, SEQ)).astype(np.int64)}


def test_scalar_mul_is_folded_into_the_table_bit_exactly():
    for scale in (np.float32(8.0), np.float32(np.sqrt(np.float32(6.0))),
                  np.array([[[0.37]]], np.float32)):
        for swapped in (False, True):
            _, model = _embedding(scale, swapped)
            model = finalize(model)
            report = _report(model)
            folded = embedding_scale(model, report)
            assert "Mul" not in op_types(folded) and op_types(folded).count("Gather") == 1
            assert report.fate("embed_scale").action == FUSED
            want, got = run_model(model, _ids())["y"], run_model(finalize(folded), _ids())["y"]
            assert np.array_equal(want, got)


def test_other_readers_or_vector_scales_are_left_alone():
    _, shared = _embedding(extra_reader=True)
    shared = finalize(shared)
    assert embedding_scale(shared, _report(shared)) is shared
    _, vector = _embedding(np.full(HIDDEN, 2.0, np.float32))
    vector = finalize(vector)
    assert embedding_scale(vector, _report(vector)) is vector


def test_pipeline_leaves_no_scale_mul_on_the_host():
    _, model = _embedding()
    _, report = run_passes(model, calibration=[_ids()])
    assert report.fate("embed_scale").action == FUSED
