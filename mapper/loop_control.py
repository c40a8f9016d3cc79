"""A Loop's iteration count when its condition is computed from values known before running
(TF/Keras while loops as tf2onnx writes them: a counter carried from 0, cond = counter < n).

The body is inferred once per iteration (`systolic.reference.ops.op_if.infer_graph`) with the
iteration number, the condition and the carried values whose contents are constants (the
others with their types only): when the body's condition output is a known value every time,
the loop's count is known. The count found must stay within `limit`.
"""

from collections.abc import Callable

import numpy as np

from systolic.errors import SystolicError
from systolic.ir import DataType, Graph, Node, TensorType
from systolic.reference.ops.base import TensorInfo
from systolic.reference.ops.op_if import infer_graph

__all__ = ["TypeOf", "controlled_trips"]

TypeOf = Callable[[str], TensorType | None]


def controlled_trips(node: Node, constants: dict[str, np.ndarray],
                     type_of: TypeOf, trip: int | None, limit: int) -> int | None:
    """Return how many times the Loop `node` runs (cond input a constant; `trip`: M's value
    or None for no M), or None when a condition is unknown before running or the count
    exceeds `limit`."""
    body = node.attrs["body"]
    assert isinstance(body, Graph)
    own = node.own_inputs
    scope = _outer(node, constants, type_of)
    if scope is None:
        return None
    carried = [_info(name, constants, type_of) for name in own[2:]]
    if any(info is None for info in carried):
        return None
    going = bool(constants[own[1]].reshape(()))
    count = 0
    while going and (trip is None or count < trip):
        if count >= limit:
            return None
        results = _infer_step(body, scope, count, [i for i in carried if i is not None])
        if results is None or results[0].value is None:
            return None
        going = bool(np.asarray(results[0].value).reshape(-1)[0])
        carried = list(results[1:1 + len(carried)])
        count += 1
    return count


def _infer_step(body: Graph, scope: dict[str, TensorInfo], step: int,
                carried: list[TensorInfo]) -> list[TensorInfo] | None:
    names = [info.name for info in body.inputs]
    known = {**scope, names[0]: _scalar(np.array(step, np.int64), body.inputs[0].type),
             names[1]: _scalar(np.array(True), body.inputs[1].type)}
    known.update(zip(names[2:], carried, strict=True))
    try:
        return infer_graph(body, known)
    except SystolicError:
        return None


def _scalar(value: np.ndarray, declared: TensorType | None) -> TensorInfo:
    rank = 0 if declared is None or declared.shape is None else len(declared.shape)
    shaped = value.reshape((1,) * rank)
    return TensorInfo(DataType.from_numpy(shaped.dtype), shaped.shape, shaped)


def _outer(node: Node, constants: dict[str, np.ndarray], type_of: TypeOf
           ) -> dict[str, TensorInfo] | None:
    """The captures as the body names them, or None when one has an unknown shape."""
    scope = {}
    for name, value in zip(node.captures, node.inputs[len(node.own_inputs):], strict=True):
        info = _info(value, constants, type_of)
        if info is None:
            return None
        scope[name] = info
    return scope


def _info(name: str, constants: dict[str, np.ndarray], type_of: TypeOf) -> TensorInfo | None:
    """The value's constant contents, else its static type, else None."""
    if name in constants:
        value = constants[name]
        return TensorInfo(DataType.from_numpy(value.dtype), tuple(value.shape), value)
    declared = type_of(name)
    if declared is None or not declared.is_static or declared.shape is None:
        return None
    return TensorInfo(declared.dtype, tuple(d for d in declared.shape if isinstance(d, int)))
