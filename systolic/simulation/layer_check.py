"""Compare a compiled model with the reference executor layer by layer, bit for bit.

`reference_values(compiled, inputs)` runs the model's integer graph with the reference
operators and keeps every value. `LayerComparison(compiled, reference)` is the one
layer-by-layer comparison: given to the runner as `after_run`, it compares, as each
accelerator run finishes, the outputs of every accelerator layer of that run
(`bitexact.compare_layer`; buffers are never reused, so they still hold the layer's values)
and keeps the first mismatch; `finish(memory, outputs)` then compares the layers no run held
and the final outputs (`bitexact.compare_final_outputs`) and returns the first mismatch, None
when the model is bit-exact. Host layers run the reference operators themselves.

`check_layers(compiled, inputs)` runs a model that way (default: on the golden machine) and
returns the first mismatch: the golden check of the tests.
"""

from collections.abc import Mapping

import numpy as np

from systolic.errors import ModelError
from systolic.ir import Node
from systolic.isa.program import LayerUnit
from systolic.mapper.lowering.compiled import CompiledModel
from systolic.reference.executor import run_graph
from systolic.simulation.bitexact import compare_final_outputs, compare_layer
from systolic.simulation.report import Mismatch
from systolic.simulation.runner import GOLDEN, AcceleratorRun, run_compiled, segment_runner

__all__ = ["LayerComparison", "check_layers", "reference_values"]


def reference_values(
    compiled: CompiledModel, inputs: Mapping[str, np.ndarray]
) -> dict[str, np.ndarray]:
    """Return every value of the integer graph (inputs included) as the reference executor
    computes it."""
    if compiled.graph is None:
        raise ModelError("the bit-exactness check needs the integer graph of the model: compile "
                         "the model in this process")
    names = {info.name for info in compiled.graph.inputs}
    inputs = {name: value for name, value in inputs.items() if name in names}  # none fixed
    values: dict[str, np.ndarray] = dict(inputs)

    def keep(node: Node, args: list[np.ndarray | None], results: list[np.ndarray]) -> None:
        for name, value in zip(node.outputs, results, strict=False):
            if name:
                values[name] = np.asarray(value)

    run_graph(compiled.graph, inputs, opsets=compiled.opsets, on_node=keep)
    return values


class LayerComparison:
    """See the module docstring; `mismatch` is the first difference found so far."""

    def __init__(self, compiled: CompiledModel, reference: Mapping[str, np.ndarray]) -> None:
        self.compiled = compiled
        self.reference = reference
        self.mismatch: Mismatch | None = None
        self._checked = 0  # the layers before this one are compared

    def _compare_until(self, end: int | None, memory: np.ndarray) -> None:
        """Compare the next layers that start before instruction `end` (None: all)."""
        layers = self.compiled.layers
        while self.mismatch is None and self._checked < len(layers):
            layer = layers[self._checked]
            if end is not None and layer.first >= end:
                return
            if layer.unit is not LayerUnit.HOST:
                self.mismatch = compare_layer(self.compiled, layer, memory, self.reference)
            self._checked += 1

    def after_run(self, run: AcceleratorRun, memory: np.ndarray) -> None:
        """Compare the layers of the accelerator run that just finished."""
        self._compare_until(run.end, memory)

    def finish(self, memory: np.ndarray, outputs: Mapping[str, np.ndarray]) -> Mismatch | None:
        """Compare what is left and the final outputs; return the first mismatch."""
        self._compare_until(None, memory)
        if self.mismatch is None:
            self.mismatch = compare_final_outputs(self.compiled, outputs, self.reference)
        return self.mismatch


def check_layers(
    compiled: CompiledModel, inputs: Mapping[str, np.ndarray], *, backend: str = GOLDEN
) -> Mismatch | None:
    """Run `compiled` on `inputs` on `backend` and return its first layer (or final output)
    that differs from the reference executor, None when every one is bit-exact."""
    comparison = LayerComparison(compiled, reference_values(compiled, inputs))
    run = run_compiled(compiled, inputs, segment_runner(backend), after_run=comparison.after_run)
    return comparison.finish(run.memory, run.outputs(compiled))
