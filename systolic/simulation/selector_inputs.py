"""Inputs that only choose a branch: fixed to their values for one simulation.

Some exported models take a small integer input that selects what the model computes: the
sample rate of silero-vad (`sr`, 8000 or 16000) decides an `If` whose branches hold the whole
network. With that input unknown at compile time the `If` stays one host layer, and every
convolution inside it runs on the host. A simulation runs one set of input values, so such an
input is known there: `fix_selector_inputs` turns it into a constant of the graph the passes
map, `fold_if` then inlines the chosen branch, and its layers go to the accelerator.

A selector input is a graph input of integer or bool type with at most one element from which
the condition of an `If` of the main graph is computed (through any nodes). The program made
this way is valid for that value only: the report names every input fixed (`describe`). The
model as written (the reference run, onnxruntime) still reads the input like any other.
"""

import dataclasses
from collections.abc import Iterable, Mapping

import numpy as np

from systolic.ir import Graph, Model, Tensor
from systolic.mapper.passes.fold_if import selector_inputs_of
from systolic.simulation.inputs import model_inputs

__all__ = ["describe", "fix_selector_inputs", "selector_inputs"]


def selector_inputs(model: Model) -> tuple[str, ...]:
    """Return the names of `model`'s selector inputs (module docstring), in input order."""
    graph = model.graph
    given = {info.name for info in model_inputs(model)}
    found = {name for node in graph.nodes
             if node.op_type == "If" and node.domain in ("", "ai.onnx") and node.inputs
             for name in selector_inputs_of(graph, node.inputs[0])}
    return tuple(info.name for info in graph.inputs if info.name in found & given)


def fix_selector_inputs(
    model: Model, inputs: Mapping[str, np.ndarray]
) -> tuple[Model, tuple[str, ...]]:
    """Return `model` with each selector input that `inputs` gives replaced by a constant of
    its value, and the names so fixed; `model` itself and () when there is none."""
    names = tuple(name for name in selector_inputs(model) if name in inputs)
    if not names:
        return model, ()
    by_name = {info.name: info for info in model.graph.inputs}
    constants = tuple(
        Tensor(name, by_name[name].type.dtype,
               np.asarray(inputs[name], dtype=by_name[name].type.dtype.numpy))
        for name in names
    )
    graph = model.graph
    fixed = Graph(
        name=graph.name,
        inputs=tuple(info for info in graph.inputs if info.name not in names),
        outputs=graph.outputs,
        nodes=graph.nodes,
        initializers=(*graph.initializers, *constants),
        value_info=graph.value_info,
        doc=graph.doc,
    )
    return dataclasses.replace(model, graph=fixed), names


def describe(names: Iterable[str], inputs: Mapping[str, np.ndarray]) -> str:
    """Return "'sr' = 16000 fixed (it selects an If's branch)" for the report, "" for none."""
    parts = [f"{name!r} = {np.asarray(inputs[name]).reshape(-1).tolist()[0]}"
             if np.asarray(inputs[name]).size else f"{name!r} (empty)" for name in names]
    if not parts:
        return ""
    return f"{', '.join(parts)} fixed for this run (it selects an If's branch)"
