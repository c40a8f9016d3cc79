"""Test helper: run one node through the numpy reference and through onnx's
`ReferenceEvaluator` (the oracle), and compare outputs and inferred shapes."""

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import onnx
from onnx import helper
from onnx.reference import ReferenceEvaluator

from systolic.ir import Attrs, DataType, Node, Tensor
from systolic.reference import executor
from systolic.reference.ops.base import Op, TensorInfo

__all__ = ["check_op", "make_op", "rng", "run_ours"]

RTOL = 1e-5
ATOL = 1e-6
"""Default float tolerance: float32 results may differ by summation order."""


def rng(seed: int = 0) -> np.random.Generator:
    """Return a seeded random generator."""
    return np.random.default_rng(seed)


def _ir_attrs(attrs: Mapping[str, Any]) -> Attrs:
    converted: dict[str, Any] = {}
    for name, value in attrs.items():
        if isinstance(value, np.ndarray):
            converted[name] = Tensor("", DataType.from_numpy(value.dtype), value)
        elif isinstance(value, list):
            converted[name] = tuple(value)
        else:
            converted[name] = value
    return Attrs(converted)


def make_op(
    op_type: str, attrs: Mapping[str, Any], opset: int, domain: str = "", n_outputs: int = 1
) -> Op:
    """Instantiate our class for `op_type` as the executor would for a node with `n_outputs`
    outputs in a model importing `opset`."""
    node = Node(op_type, (), tuple(f"out{i}" for i in range(n_outputs)), domain=domain,
                name="node", attrs=_ir_attrs(attrs))
    return executor.make_op(node, {domain: opset})


def run_ours(
    op_type: str,
    inputs: Sequence[np.ndarray | None],
    attrs: Mapping[str, Any],
    opset: int,
    *,
    known: Sequence[int] | None = None,
    domain: str = "",
    n_outputs: int = 1,
) -> tuple[list[np.ndarray], list[TensorInfo]]:
    """Return our outputs and our inferred output infos. Inputs listed in `known` (default:
    every integer input) have their values given to `infer`, as constants would."""
    op = make_op(op_type, attrs, opset, domain, n_outputs)
    if known is None:
        known = [i for i, x in enumerate(inputs) if x is not None and x.dtype.kind in "iub"]
    infos = [
        None if x is None else TensorInfo(
            DataType.from_numpy(x.dtype), tuple(x.shape), x if i in known else None
        )
        for i, x in enumerate(inputs)
    ]
    inferred = op.infer(infos)
    outputs = op.run(inputs)
    return outputs, inferred


def _oracle(
    op_type: str,
    inputs: Sequence[np.ndarray | None],
    attrs: Mapping[str, Any],
    opset: int,
    n_outputs: int,
    domain: str,
) -> list[np.ndarray]:
    names = [f"in{i}" if x is not None else "" for i, x in enumerate(inputs)]
    outs = [f"out{i}" for i in range(n_outputs)]
    onnx_attrs = {
        k: (onnx.numpy_helper.from_array(v) if isinstance(v, np.ndarray) else v)
        for k, v in attrs.items()
    }
    node = helper.make_node(op_type, names, outs, domain=domain or None, **onnx_attrs)
    graph = helper.make_graph(
        [node],
        "oracle",
        [
            helper.make_tensor_value_info(n, helper.np_dtype_to_tensor_dtype(x.dtype), x.shape)
            for n, x in zip(names, inputs, strict=True)
            if x is not None
        ],
        [helper.make_tensor_value_info(o, onnx.TensorProto.UNDEFINED, None) for o in outs],
    )
    opsets = [helper.make_opsetid("", opset)]
    if domain:
        opsets.append(helper.make_opsetid(domain, 1))
    model = helper.make_model(graph, opset_imports=opsets, ir_version=8)
    feeds = {n: x for n, x in zip(names, inputs, strict=True) if x is not None}
    return list(ReferenceEvaluator(model).run(None, feeds))


def check_op(
    op_type: str,
    inputs: Sequence[np.ndarray | None],
    attrs: Mapping[str, Any] | None = None,
    *,
    opset: int,
    n_outputs: int = 1,
    rtol: float = RTOL,
    atol: float = ATOL,
    known: Sequence[int] | None = None,
    expected: Sequence[np.ndarray] | None = None,
    domain: str = "",
) -> list[np.ndarray]:
    """Compare our outputs with the oracle's (or with `expected`) in type, shape and value,
    and check that inferred types and shapes match what the run produced. Returns ours."""
    attrs = dict(attrs or {})
    ours, inferred = run_ours(op_type, inputs, attrs, opset, known=known, domain=domain,
                              n_outputs=n_outputs)
    if expected is None:
        expected = _oracle(op_type, inputs, attrs, opset, n_outputs, domain)
    assert len(ours) >= n_outputs
    for i in range(n_outputs):
        got, want = ours[i], np.asarray(expected[i])
        assert got.dtype == want.dtype, f"output {i}: dtype {got.dtype} != {want.dtype}"
        assert got.shape == want.shape, f"output {i}: shape {got.shape} != {want.shape}"
        if got.dtype.kind == "f":
            np.testing.assert_allclose(got, want, rtol=rtol, atol=atol)
        else:
            np.testing.assert_array_equal(got, want)
        info = inferred[i]
        assert info.shape == got.shape, f"output {i}: inferred {info.shape}, ran {got.shape}"
        assert info.dtype == DataType.from_numpy(got.dtype), f"output {i}: inferred dtype"
        if info.value is not None:
            np.testing.assert_array_equal(info.value, got)
    return ours
