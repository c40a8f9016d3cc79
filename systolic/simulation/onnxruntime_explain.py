"""Compare the final outputs with onnxruntime's and explain a difference (quantized models).

`onnxruntime_checks` gives the figures of the report's `checks.onnxruntime_*` keys (README,
"simulate JSON") and, for a quantized model, an `OnnxruntimeExplanation`:

- `none`: the outputs equal onnxruntime's default (optimized) session;
- `saturation`: this CPU's onnxruntime saturates uint8 x int8 int16 pair sums
  (`onnxruntime_saturation`) in some layers, and with those layers made exact
  (`saturating_layers.desaturated_model`) its outputs equal ours;
- `fused_rounding`: not that, but with its graph optimizations off (node by node, as the ONNX
  operators define it) its outputs equal ours: its fused quantized kernels round differently;
- `float_rounding`: not those, but our outputs are our reference's, and onnxruntime's default
  session differs from it only by float rounding upstream of dynamic quantizations
  (`onnxruntime_float_rounding`: its float ops round differently in the last bits and a
  DynamicQuantizeLinear or DynamicQuantizeLSTM turns that into other steps);
- `saturation+float_rounding`: both at once: the same proof holds with the saturating layers
  made exact, and not without;
- `layernorm` (`saturation+layernorm`): our outputs are our reference's, and onnxruntime's
  differs only in the values the model's layer normalizations write, which LAYERNORM computes
  exactly where the model quantizes its steps (`onnxruntime_layernorm`; with the saturating
  layers made exact);
- `unexplained`: none of these.
"""

import os
from collections.abc import Mapping
from pathlib import Path

import numpy as np

from systolic.errors import SimulationError
from systolic.ir import Model
from systolic.reference.executor import run_model
from systolic.simulation.onnxruntime_check import compare_outputs, run_onnxruntime
from systolic.simulation.onnxruntime_float_rounding import float_rounding_explains
from systolic.simulation.onnxruntime_layernorm import layernorm_explains
from systolic.simulation.onnxruntime_saturation import onnxruntime_saturates
from systolic.simulation.report import OnnxruntimeExplanation
from systolic.simulation.saturating_layers import desaturated_model, saturating_layers

__all__ = ["explain_difference", "onnxruntime_checks"]


def onnxruntime_checks(
    model_path: str | os.PathLike[str],
    original: Model,
    integer: Model,
    inputs: Mapping[str, np.ndarray],
    outputs: Mapping[str, np.ndarray],
    theirs: Mapping[str, np.ndarray],
    *,
    quantized: bool,
) -> tuple[dict[str, float], OnnxruntimeExplanation | None]:
    """Return the comparison figures (keys without the `onnxruntime_` prefix) of `outputs`
    with onnxruntime's `theirs`, and for a quantized model the explanation."""
    comparison = compare_outputs(outputs, theirs)
    figures = {"max_abs_diff": comparison.max_abs_diff,
               "equal_fraction": comparison.equal_fraction}  # fmt: skip
    if not quantized:
        return figures, None
    scales = _output_steps(original, integer)
    _add_steps(figures, "max_diff_steps", outputs, theirs, scales)
    if comparison.equal_fraction == 1.0:
        return figures, OnnxruntimeExplanation("none")
    # tell its fused kernels and its saturation from a real difference
    plain = run_onnxruntime(model_path, inputs, optimized=False)
    node_by_node = compare_outputs(outputs, plain)
    figures["unoptimized_max_abs_diff"] = node_by_node.max_abs_diff
    figures["unoptimized_equal_fraction"] = node_by_node.equal_fraction
    _add_steps(figures, "unoptimized_max_diff_steps", outputs, plain, scales)
    explanation = explain_difference(model_path, original, inputs, outputs,
                                     plain_equal=node_by_node.equal_fraction == 1.0,
                                     computed=integer)  # fmt: skip
    return figures, explanation


def explain_difference(
    model_path: str | os.PathLike[str],
    original: Model,
    inputs: Mapping[str, np.ndarray],
    outputs: Mapping[str, np.ndarray],
    *,
    plain_equal: bool,
    computed: Model | None = None,
) -> OnnxruntimeExplanation:
    """Explain why `outputs` differ from onnxruntime's optimized session on `inputs` (module
    docstring); `plain_equal`: they equal its session with graph optimizations off;
    `computed`: the model whose reference outputs `outputs` should be (the simulation's
    integer model; `original` by default)."""
    computed = original if computed is None else computed
    layers = saturating_layers(original, inputs) if onnxruntime_saturates() else []
    names = tuple(dict.fromkeys(layer.name for layer in layers))
    path = Path(model_path)
    data = path.read_bytes()
    exact_data = desaturated_model(data, layers) if layers else None
    if exact_data is not None:
        try:
            exact = run_onnxruntime(exact_data, inputs, base_dir=path.parent)
        except SimulationError:
            exact = None  # onnxruntime refused the rewritten model: saturation is not proven
        if exact is not None and compare_outputs(outputs, exact).equal_fraction == 1.0:
            return OnnxruntimeExplanation("saturation", names)
    if plain_equal:
        return OnnxruntimeExplanation("fused_rounding", names)
    if _is_reference(computed, inputs, outputs):
        if float_rounding_explains(data, path.parent, computed, inputs, optimized=True):
            return OnnxruntimeExplanation("float_rounding", names)
        if exact_data is not None and float_rounding_explains(
            exact_data, path.parent, computed, inputs, optimized=True
        ):
            return OnnxruntimeExplanation("saturation+float_rounding", names)
        if layernorm_explains(data, path.parent, computed, inputs):
            return OnnxruntimeExplanation("layernorm", names)
        if exact_data is not None and layernorm_explains(exact_data, path.parent, computed,
                                                         inputs):
            return OnnxruntimeExplanation("saturation+layernorm", names)
    return OnnxruntimeExplanation("unexplained", names)


def _is_reference(
    model: Model, inputs: Mapping[str, np.ndarray], outputs: Mapping[str, np.ndarray]
) -> bool:
    """True when `outputs` are exactly our reference's on `inputs` (float rounding can explain
    only a difference the reference has too)."""
    reference = run_model(model, inputs)
    return all(name in reference and np.array_equal(value, reference[name], equal_nan=True)
               for name, value in outputs.items())  # fmt: skip


def _output_steps(original: Model, integer: Model) -> dict[str, float]:
    """Map each output that a DequantizeLinear with one scale makes to that scale."""
    scales: dict[str, float] = {}
    for node in integer.graph.nodes:
        if node.op_type != "DequantizeLinear" or not node.outputs:
            continue
        scale = integer.graph.initializer(node.inputs[1]) if len(node.inputs) > 1 else None
        if scale is not None and scale.data.size == 1:
            scales[node.outputs[0]] = float(scale.data.reshape(()))
    outputs = {info.name for info in original.graph.outputs}
    return {name: s for name, s in scales.items() if name in outputs and s > 0}


def _add_steps(
    figures: dict[str, float],
    key: str,
    ours: Mapping[str, np.ndarray],
    theirs: Mapping[str, np.ndarray],
    scales: Mapping[str, float],
) -> None:
    """Set `figures[key]` to the largest difference in quantization steps, when every output
    has one scale."""
    if not ours or any(name not in scales for name in ours):
        return
    worst = 0
    for name, value in ours.items():
        if name in theirs and value.size:
            diff = np.abs(value.astype(np.float64) - np.asarray(theirs[name], np.float64))
            worst = max(worst, int(np.rint(np.max(diff) / scales[name])))
    figures[key] = worst
