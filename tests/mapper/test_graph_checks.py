"""Structural checks on hand-built IR graphs."""

import warnings

import pytest

from systolic.errors import ModelError
from systolic.ir import DataType, Graph, Node, TensorType, ValueInfo
from systolic.mapper.graph_checks import (
    C90NameWarning,
    NameWarning,
    check_graph,
    warn_bad_names,
)

F4 = TensorType(DataType.FLOAT, (4,))


def _graph(*nodes: Node, outputs: tuple[str, ...] = ("y",)) -> Graph:
    return Graph(
        name="g",
        inputs=(ValueInfo("x", F4),),
        outputs=tuple(ValueInfo(name, F4) for name in outputs),
        nodes=nodes,
    )


def _relu(name: str, src: str, dst: str) -> Node:
    return Node("Relu", (src,), (dst,), name=name)


def test_ordered_graph_is_returned_unchanged() -> None:
    graph = _graph(_relu("a", "x", "t"), _relu("b", "t", "y"))
    assert check_graph(graph) is graph


def test_out_of_order_graph_is_sorted_stably() -> None:
    graph = _graph(
        _relu("c", "t", "y"), _relu("a", "x", "t"), _relu("b", "x", "u"), outputs=("y", "u")
    )
    assert [n.name for n in check_graph(graph).nodes] == ["a", "c", "b"]


def test_cycle_names_only_the_nodes_on_it() -> None:
    graph = _graph(
        _relu("after", "q", "y"), _relu("p", "s", "q"), _relu("s", "q", "s"), _relu("a", "x", "t")
    )
    message = (
        r"^the graph has a cycle through nodes 's' -> 'p' -> 's': ONNX graphs must be acyclic$"
    )
    with pytest.raises(ModelError, match=message):
        check_graph(graph)


def test_self_loop_is_a_cycle() -> None:
    with pytest.raises(ModelError, match=r"^the graph has a cycle through nodes 'r' -> 'r'"):
        check_graph(_graph(Node("Add", ("x", "y"), ("y",), name="r")))


def test_value_assigned_twice_names_both_nodes() -> None:
    graph = _graph(_relu("a", "x", "y"), _relu("b", "x", "y"))
    with pytest.raises(
        ModelError,
        match=r"^value 'y' is assigned twice: by node 'a' \(Relu\) and by node 'b' \(Relu\)",
    ):
        check_graph(graph)


def test_node_overwriting_a_graph_input_is_refused() -> None:
    with pytest.raises(
        ModelError, match=r"^value 'x' is assigned twice: by a graph input and by node 'a'"
    ):
        check_graph(_graph(_relu("a", "x", "x"), _relu("b", "x", "y")))


def test_undefined_input_and_unproduced_output() -> None:
    with pytest.raises(ModelError, match=r"^node 'a' \(Relu\) reads 'ghost', which is not defined"):
        check_graph(_graph(_relu("a", "ghost", "y")))
    with pytest.raises(ModelError, match=r"^graph output 'orphan' is not produced"):
        check_graph(_graph(_relu("a", "x", "y"), outputs=("y", "orphan")))


def test_omitted_optional_input_is_allowed() -> None:
    node = Node("Clip", ("x", "", "hi"), ("y",), name="clip")
    graph = Graph(
        "g",
        (ValueInfo("x", F4), ValueInfo("hi", TensorType(DataType.FLOAT, ()))),
        (ValueInfo("y", F4),),
        (node,),
    )
    assert check_graph(graph) is graph


def test_names_warn_once_with_examples() -> None:
    graph = _graph(_relu("a-1", "x", "t.1"), _relu("b c", "t.1", "y"))
    with pytest.warns(
        NameWarning, match=r"^1 name\(s\) are not C90 identifiers as the ONNX IR asks: 'b c'$"
    ) as caught:
        warn_bad_names(graph)
    assert [type(w.message) for w in caught] == [NameWarning]  # names only C90 rejects: off
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        warnings.simplefilter("always", C90NameWarning)  # asked for
        warn_bad_names(graph)
    assert [str(w.message) for w in caught if w.category is C90NameWarning] == [
        "2 name(s) are not C90 identifiers as the ONNX IR asks: 'a-1', 't.1'"
    ]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        warn_bad_names(_graph(_relu("a", "x", "y")))
        warn_bad_names(_graph(_relu("/conv1/Conv", "x", "onnx::Conv_12")))
