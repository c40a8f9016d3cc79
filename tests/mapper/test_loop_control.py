"""controlled_trips: a Loop's count when its condition is decided by constants (tf2onnx's
while loops), None when a condition depends on the input or the count passes the limit."""

import onnx
import pytest

from systolic.ir import Graph
from systolic.mapper.importer import load_model_bytes
from systolic.mapper.loop_control import controlled_trips

from ..support.loop_scan_models import counter_loop


def _graph(model: onnx.ModelProto) -> Graph:
    return load_model_bytes(model.SerializeToString()).graph


def _constants(graph: Graph) -> dict:
    return {t.name: t.data for t in graph.initializers}


@pytest.mark.parametrize(("n", "trip", "expected"), [(1, None, 1), (4, None, 4), (4, 2, 2)])
def test_the_counter_decides(n: int, trip: int | None, expected: int) -> None:
    graph = _graph(counter_loop(n, huge_trip=False))
    assert controlled_trips(graph.nodes[0], _constants(graph), graph.type_of, trip,
                            limit=10) == expected


def test_past_the_limit_is_unknown() -> None:
    graph = _graph(counter_loop(11, huge_trip=False))
    assert controlled_trips(graph.nodes[0], _constants(graph), graph.type_of, None,
                            limit=10) is None


def test_a_counter_from_the_input_is_unknown() -> None:
    graph = _graph(counter_loop(4, huge_trip=False))
    constants = _constants(graph)
    del constants["k0"]  # the counter's start no longer known: its type only
    assert controlled_trips(graph.nodes[0], constants, graph.type_of, None, limit=10) is None
