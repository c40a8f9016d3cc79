"""Test helper: run one node through onnxruntime (the oracle for the quantized operators) and
compare with the numpy reference, bit-exact or with a stated share of off-by-one results.

onnxruntime is compared only where its result is exact on every CPU. Its uint8 x int8 kernels
saturate int16 pair sums on CPUs without VNNI (`systolic.simulation.onnxruntime_saturation`):
when this CPU's onnxruntime does (probed once per session) and the inputs have such a pair
sum, `check_ort` records the reason in `SKIPPED` instead of comparing (the conftest reports
the count). The integer products (`spec_oracle.SPEC_OPS`) are always compared with the ONNX
specification as well, so no input goes unchecked.
"""

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import onnx
import onnxruntime as ort
from onnx import helper

from systolic.ir import Attrs, DataType, Node
from systolic.simulation.onnxruntime_saturation import onnxruntime_saturates
from systolic.simulation.saturating_layers import node_overflows

from .oracle import run_ours
from .spec_oracle import check_spec

__all__ = ["SKIPPED", "check_ort", "run_ort", "saturation_reason"]

SKIPPED: list[str] = []
"""Why onnxruntime comparisons were left out in this session (one entry per comparison)."""


def saturation_reason(
    op_type: str,
    inputs: Sequence[np.ndarray | None],
    attrs: Mapping[str, Any] | None = None,
    *,
    domain: str = "",
) -> str | None:
    """Return why onnxruntime's result for this node is not exact on this CPU, or None: its
    uint8 x int8 kernel saturates here and some int16 pair sum of these inputs overflows."""
    if not onnxruntime_saturates():
        return None
    ir_attrs = Attrs({k: tuple(v) if isinstance(v, list) else v for k, v in (attrs or {}).items()})
    node = Node(op_type, (), ("y",), domain=domain, name=op_type, attrs=ir_attrs)
    if not node_overflows(node, [None if x is None else np.asarray(x) for x in inputs]):
        return None
    return (f"{op_type}: this CPU's onnxruntime saturates uint8 x int8 int16 pair sums (no VNNI) "
            "and these inputs have one beyond int16")  # fmt: skip


def _value_info(name: str, x: np.ndarray) -> onnx.ValueInfoProto:
    return helper.make_tensor_value_info(name, helper.np_dtype_to_tensor_dtype(x.dtype), x.shape)


def run_ort(
    op_type: str,
    inputs: Sequence[np.ndarray | None],
    attrs: Mapping[str, Any] | None = None,
    *,
    opset: int,
    domain: str = "",
    n_outputs: int = 1,
    constant: Sequence[int] = (),
) -> list[np.ndarray]:
    """Return onnxruntime's outputs (CPU provider) for a one-node model.

    Inputs listed in `constant` become initializers (as a quantizer emits weights, and as some
    contrib kernels require); the others are graph inputs.
    """
    inputs = [None if x is None else np.asarray(x) for x in inputs]
    names = [f"in{i}" if x is not None else "" for i, x in enumerate(inputs)]
    outs = [f"out{i}" for i in range(n_outputs)]
    node = helper.make_node(op_type, names, outs, domain=domain or None, **dict(attrs or {}))
    graph_inputs = [
        _value_info(n, x) for i, (n, x) in enumerate(zip(names, inputs, strict=True))
        if x is not None and i not in constant
    ]
    initializers = [
        onnx.numpy_helper.from_array(x, n) for i, (n, x) in enumerate(zip(names, inputs, strict=True))
        if x is not None and i in constant
    ]
    graph = helper.make_graph(
        [node], "oracle", graph_inputs,
        [onnx.ValueInfoProto(name=o) for o in outs],  # ORT infers the output types
        initializer=initializers,
    )
    opsets = [helper.make_opsetid("", opset)]
    if domain:
        opsets.append(helper.make_opsetid(domain, 1))
    model = helper.make_model(graph, opset_imports=opsets, ir_version=9)
    options = ort.SessionOptions()
    options.log_severity_level = 3
    session = ort.InferenceSession(
        model.SerializeToString(), options, providers=["CPUExecutionProvider"]
    )
    feeds = {
        n: x for i, (n, x) in enumerate(zip(names, inputs, strict=True))
        if x is not None and i not in constant
    }
    return [np.asarray(y) for y in session.run(None, feeds)]


def check_ort(
    op_type: str,
    inputs: Sequence[np.ndarray | None],
    attrs: Mapping[str, Any] | None = None,
    *,
    opset: int,
    domain: str = "",
    constant: Sequence[int] = (),
    max_off_by_one: float = 0.0,
    rtol: float = 0.0,
) -> np.ndarray:
    """Compare our single output with onnxruntime's and return ours.

    Integer outputs must be equal, except that a share of at most `max_off_by_one` of the
    elements may differ by exactly 1 (callers state why onnxruntime's arithmetic differs).
    Float outputs must agree within `rtol` (0: bit-exact). The integer products are also
    compared with the specification, and where onnxruntime saturates on this CPU
    (`saturation_reason`) only with it.
    """
    attrs = dict(attrs or {})
    inputs = [None if x is None else np.asarray(x) for x in inputs]
    # A contrib node binds to its own domain's version 1; `opset` is the default domain's.
    (ours, *_), inferred = run_ours(op_type, inputs, attrs, 1 if domain else opset, domain=domain)
    assert inferred[0].shape == ours.shape and inferred[0].dtype == DataType.from_numpy(ours.dtype)
    check_spec(op_type, inputs, attrs, ours, opset=opset, domain=domain)
    reason = saturation_reason(op_type, inputs, attrs, domain=domain)
    if reason is not None:
        SKIPPED.append(reason)
        return ours
    (want,) = run_ort(op_type, inputs, attrs, opset=opset, domain=domain, constant=constant)
    assert ours.dtype == want.dtype, f"dtype {ours.dtype} != {want.dtype}"
    assert ours.shape == want.shape, f"shape {ours.shape} != {want.shape}"
    if ours.dtype.kind == "f":
        np.testing.assert_allclose(ours, want, rtol=rtol, atol=0)
        return ours
    diff = np.abs(ours.astype(np.int64) - want.astype(np.int64))
    if max_off_by_one == 0.0:
        np.testing.assert_array_equal(ours, want)
    else:
        assert diff.max(initial=0) <= 1, f"max difference {diff.max()} > 1"
        share = float(np.count_nonzero(diff)) / max(diff.size, 1)
        assert share <= max_off_by_one, f"{share:.2%} of outputs off by one"
    return ours
