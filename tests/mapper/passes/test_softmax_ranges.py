"""softmax_ranges: a Softmax input's calibration range starts no lower than the smallest row
maximum minus EXP_CUTOFF, so a mask's -10000 does not set its 8-bit scale; the rows are the
Softmax's (last axis from opset 13, the 2-D coercion before)."""

import numpy as np

from systolic.mapper.passes.pipeline import run_passes
from systolic.mapper.passes.softmax_ranges import EXP_CUTOFF, softmax_row_floors

from .table_models import make, node


def _masked_model():  # type: ignore[no-untyped-def]
    nodes = [node("Add", ["scores", "mask"], ["s"]), node("Softmax", ["s"], ["p"]),
             node("MatMul", ["p", "w"], ["y"])]  # fmt: skip
    w = np.random.default_rng(0).normal(0, 0.5, (6, 3)).astype(np.float32)
    return make(nodes, [("scores", np.float32, (2, 6)), ("mask", np.float32, (2, 6))],
                [("y", np.float32, (2, 3))], {"w": w})  # fmt: skip


def _feeds():  # type: ignore[no-untyped-def]
    rng = np.random.default_rng(1)
    feeds = []
    for _ in range(4):
        mask = np.zeros((2, 6), np.float32)
        mask[:, 4:] = -10000.0
        feeds.append({"scores": rng.normal(0, 2, (2, 6)).astype(np.float32), "mask": mask})
    return feeds


def test_the_floor_is_the_smallest_row_maximum_less_the_cutoff():  # type: ignore[no-untyped-def]
    _, model = _masked_model()
    feeds = _feeds()
    softmax = next(n for n in model.graph.nodes if n.op_type == "Softmax")
    floors = softmax_row_floors(model, feeds, [softmax])
    lowest = min(float((f["scores"] + f["mask"]).max(axis=1).min()) for f in feeds)
    assert floors == {"s": lowest - EXP_CUTOFF}


def test_a_masked_softmax_input_keeps_a_fine_scale():  # type: ignore[no-untyped-def]
    _, model = _masked_model()
    fused, _ = run_passes(model, calibration=_feeds())
    assert "QSoftmax" in [n.op_type for n in fused.graph.nodes]
    qsoftmax = next(n for n in fused.graph.nodes if n.op_type == "QSoftmax")
    table = next(t for t in fused.graph.initializers if t.name == qsoftmax.inputs[1]).data
    # E[1] = 2^15 exp(-s_x): a scale near 0.1 (the scores' span), not ~40 (the mask's)
    assert 0.01 < -np.log(table[1] / 2**15) < 0.2


def test_the_operands_of_the_sum_are_cut_below_the_floor():  # type: ignore[no-untyped-def]
    """Given the graph, the scores and the mask (each read by the Add only) get floors too:
    the sum's floor less the other operand's maximum (a lowest-float mask keeps a fine scale)."""
    from systolic.mapper.passes.softmax_ranges import RowFloors
    from systolic.reference.executor import run_model

    _, model = _masked_model()
    feeds = _feeds()
    softmax = next(n for n in model.graph.nodes if n.op_type == "Softmax")
    floors = RowFloors([softmax], model.graph)
    for feed in feeds:
        run_model(model, feed, on_node=floors)
    row = softmax_row_floors(model, feeds, [softmax])["s"]
    highest = max(float(f["scores"].max()) for f in feeds)
    assert floors.floors == {"s": row, "scores": row - 0.0, "mask": row - highest}
    assert RowFloors([softmax]).floors == {}  # without the graph: the sum's floor only


def test_a_constant_mask_read_by_two_sums_gets_the_lower_floor():  # type: ignore[no-untyped-def]
    """A constant mask added to two Softmaxes' scores (every layer of a decoder): its floor is
    the least of floor(sum) - max(scores) over both; a value no such Add reads has none."""
    from systolic.mapper.passes.softmax_ranges import RowFloors
    from systolic.reference.executor import run_model

    mask = np.zeros((2, 6), np.float32)
    mask[:, 4:] = np.finfo(np.float32).min
    nodes = [node("Add", ["a", "mask"], ["s1"]), node("Softmax", ["s1"], ["p1"]),
             node("Add", ["b", "mask"], ["s2"]), node("Softmax", ["s2"], ["p2"]),
             node("Add", ["p1", "p2"], ["y"])]
    _, model = make(nodes, [("a", np.float32, (2, 6)), ("b", np.float32, (2, 6))],
                    [("y", np.float32, (2, 6))], {"mask": mask})
    softmaxes = [n for n in model.graph.nodes if n.op_type == "Softmax"]
    floors = RowFloors(softmaxes, model.graph)
    rng = np.random.default_rng(2)
    feeds = [{"a": rng.normal(0, 2, (2, 6)).astype(np.float32),
              "b": rng.normal(0, 5, (2, 6)).astype(np.float32)} for _ in range(3)]
    for feed in feeds:
        run_model(model, feed, on_node=floors)
    rows = softmax_row_floors(model, feeds, softmaxes)
    cuts = [rows[s] - max(float(f[x].max()) for f in feeds) for s, x in (("s1", "a"), ("s2", "b"))]
    assert floors.constant_floors(["mask"]) == {"mask": min(cuts)}
    assert floors.constant_floors(["p1"]) == {}  # no Add making a Softmax input reads it


def _shared_mask_model():  # type: ignore[no-untyped-def]
    """Two Softmaxes over a + mask and b + mask, the mask computed from the input keep
    (1 - keep) * float's lowest: one mask every layer adds (Gemma's eager attention)."""
    low = np.float32(np.finfo(np.float32).min)
    nodes = [node("Sub", ["one", "keep"], ["dropped"]), node("Mul", ["dropped", "low"], ["mask"]),
             node("Add", ["a", "mask"], ["s1"]), node("Softmax", ["s1"], ["p1"]),
             node("Add", ["b", "mask"], ["s2"]), node("Softmax", ["s2"], ["p2"]),
             node("Add", ["p1", "p2"], ["y"])]
    inputs = [(name, np.float32, (2, 6)) for name in ("a", "b", "keep")]
    return make(nodes, inputs, [("y", np.float32, (2, 6))],
                {"one": np.float32(1.0), "low": low})


def _shared_mask_feeds():  # type: ignore[no-untyped-def]
    rng = np.random.default_rng(3)
    keep = np.ones((2, 6), np.float32)
    keep[:, 4:] = 0.0
    return [{"a": rng.normal(0, 2, (2, 6)).astype(np.float32),
             "b": rng.normal(0, 5, (2, 6)).astype(np.float32), "keep": keep}
            for _ in range(3)]


def test_a_computed_mask_read_by_two_sums_gets_the_lower_floor():  # type: ignore[no-untyped-def]
    """A computed mask that two Adds making Softmax inputs read (and nothing else) is cut
    at the least of floor(sum) - max(other operand) over both, as a constant one is."""
    from systolic.mapper.passes.softmax_ranges import RowFloors
    from systolic.reference.executor import run_model

    _, model = _shared_mask_model()
    feeds = _shared_mask_feeds()
    softmaxes = [n for n in model.graph.nodes if n.op_type == "Softmax"]
    floors = RowFloors(softmaxes, model.graph)
    for feed in feeds:
        run_model(model, feed, on_node=floors)
    rows = softmax_row_floors(model, feeds, softmaxes)
    cuts = [rows[s] - max(float(f[x].max()) for f in feeds) for s, x in (("s1", "a"), ("s2", "b"))]
    assert floors.floors["mask"] == min(cuts)
    assert "dropped" not in floors.floors  # read by the Mul, not by a sum


def test_a_shared_lowest_float_mask_is_added_on_the_accelerator():  # type: ignore[no-untyped-def]
    """With the shared mask cut, both sums are QAdds: its range no longer holds float's
    lowest (a requantization multiplier of ~1e37 sent them to the host)."""
    _, model = _shared_mask_model()
    fused, _ = run_passes(model, calibration=_shared_mask_feeds())
    types = [n.op_type for n in fused.graph.nodes]
    assert types.count("QSoftmax") == 2
    assert "Add" not in types and "Softmax" not in types
