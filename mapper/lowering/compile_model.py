"""Compile an integer graph (the mapper passes' output) for one accelerator configuration.

`compile_model(model, config)` places every value once in external memory (`MemoryPlan`:
inputs, outputs, intermediate activations, constants) and turns each node into a layer:

- **array**: systolic.QConv / systolic.QMatMul / systolic.QMatMulInt, lowered by
  `lower_qconv` / `lower_qmatmul` / `lower_qmatmulint` (`systolic.mapper.lowering.conv` /
  `.matmul` / `.integer_matmul`: int32 results by STORE.raw) through a `LayerContext`;
- **vector**: systolic.QMaxPool / QAveragePool (`lower_pool`), QAdd (`lower_add`), QMul
  (`lower_qmul`: ADD with `mul`) and QTable (`lower_qtable`: TABLE, then LOAD + COPY with
  `lut`), QSoftmax (`lower_qsoftmax`: TABLE wide with the exp table, then LOAD +
  SOFTMAX per block of rows) and QLayerNorm (`lower_qlayernorm`: LOAD + LAYERNORM per
  block of rows). A QTable whose input is made by a QConv / QMatMul for it
  alone (not a graph output) is fused instead: that layer's STOREs go through the table and write the QTable's output
  (the QConv's own output is never placed), and the QTable's layer has no instructions;
- **layout**: Flatten, Reshape, Squeeze, Unsqueeze, Transpose, Identity, Concat
  (`decide_layout`: re-interpretation, permuted weights, a strided view read in place by
  batched/attention QMatMuls, or LOAD + COPY);
- **host**: everything else, and any accelerator layer whose lowering is not possible (the
  layer records why): the node runs with the reference operator between accelerator runs.

The result is one instruction stream ending in HALT with each layer's instruction range, the
memory image and placements, and the host steps (`CompiledModel`).
"""

import dataclasses
import functools
import math
from collections.abc import Callable, Mapping

import numpy as np

from systolic.config import ArrayConfig, Dataflow
from systolic.errors import ConfigError, ModelError, ResourceError, UnsupportedError
from systolic.ir import SYSTOLIC_DOMAIN, Graph, Model, Node, Tensor
from systolic.isa.instructions import Halt, Instruction
from systolic.isa.program import (
    HostStep,
    LayerUnit,
    Program,
    ProgramLayer,
    TensorPlacement,
    TensorRole,
)
from systolic.mapper.binding import bind_graph
from systolic.mapper.lowering.add import lower_add
from systolic.mapper.lowering.collector import collector_paused
from systolic.mapper.lowering.compiled import CompiledModel, MemoryView
from systolic.mapper.lowering.context import LayerContext
from systolic.mapper.lowering.conv import lower_qconv
from systolic.mapper.lowering.dataflow_choice import DataflowChooser, LayerCycles
from systolic.mapper.lowering.integer_matmul import lower_qmatmulint
from systolic.mapper.lowering.jobs import planning_only
from systolic.mapper.lowering.layer_code import LayerCode
from systolic.mapper.lowering.layernorm import lower_qlayernorm
from systolic.mapper.lowering.layout import LAYOUT_OPS, decide_layout
from systolic.mapper.lowering.layout_resize import enlarging_resample
from systolic.mapper.lowering.layout_sets import layout_sets
from systolic.mapper.lowering.layout_split import compile_split
from systolic.mapper.lowering.matmul import lower_qmatmul
from systolic.mapper.lowering.memory_plan import EIGHT_BIT, MemoryPlan, element_type
from systolic.mapper.lowering.multiply import lower_qmul
from systolic.mapper.lowering.node_attrs import int_attr, ints_attr
from systolic.mapper.lowering.pool import lower_pool
from systolic.mapper.lowering.softmax import lower_qsoftmax
from systolic.mapper.lowering.table import Activation, activation_of, lower_qtable
from systolic.mapper.lowering.units import absent_unit_reason, may_fuse_tables
from systolic.mapper.lowering.vector_overlap import INTERLEAVED, Overlap, merge, plan_overlap
from systolic.mapper.lowering.vector_tiles import SpadWindow
from systolic.mapper.macs import node_macs
from systolic.mapper.shape_inference import infer_shapes

__all__ = ["FUSED_TABLE", "compile_model", "layer_unit", "plan_layers"]

FUSED_TABLE = "fused into the STOREs of"
"""How the reason of a QTable layer fused into an array layer's STOREs begins."""


_ARRAY: dict[str, Callable[..., LayerCode]] = {
    "QConv": lower_qconv,
    "QConvInt": lower_qconv,
    "QMatMul": lower_qmatmul,
    "QMatMulInt": lower_qmatmulint,
}
_VECTOR: dict[str, Callable[[Node, LayerContext], list[Instruction]]] = {
    "QMaxPool": lower_pool,
    "QAveragePool": lower_pool,
    "QAdd": lower_add,
    "QMul": lower_qmul,
    "QTable": lower_qtable,
    "QSoftmax": lower_qsoftmax,
    "QLayerNorm": lower_qlayernorm,
}

_INTERLEAVABLE: dict[str, Callable[[Node, LayerContext, SpadWindow, int | None],
                                   list[Instruction]]] = {
    "QMaxPool": lower_pool,
    "QAveragePool": lower_pool,
    "QAdd": lower_add,
}
"""The vector lowerings `vector_overlap` interleaves: (node, ctx, window, band rows)."""


def layer_unit(node: Node) -> LayerUnit:
    """Return the unit a node is meant for (before any fallback to the host)."""
    if node.domain == SYSTOLIC_DOMAIN and node.op_type in _ARRAY:
        return LayerUnit.ARRAY
    if node.domain == SYSTOLIC_DOMAIN and node.op_type in _VECTOR:
        return LayerUnit.VECTOR
    if node.domain == "" and node.op_type in LAYOUT_OPS:
        return LayerUnit.LAYOUT
    return LayerUnit.HOST


class _PlanAllocator:
    """The `ConstantAllocator` the array lowerings take, backed by the memory plan."""

    def __init__(self, plan: MemoryPlan) -> None:
        self.plan = plan

    def allocate(self, size: int, align: int, name: str) -> int:
        """Return the address of `size` fresh bytes aligned to `align`."""
        return self.plan.allocate(size, align)


def _typed(graph: Graph, opsets: Mapping[str, int]) -> Graph:
    names = [out for node in graph.nodes for out in node.outputs if out]
    if all((t := graph.type_of(n)) is not None and t.is_static for n in names):
        return graph
    bound, ops = bind_graph(graph, opsets)
    return infer_shapes(bound, ops, max_tensor_bytes=1 << 40)


def _halos(graph: Graph) -> dict[str, tuple[int, int]]:
    """Map each value a padded QConv reads to (halo width, fill value)."""
    halos: dict[str, tuple[int, int]] = {}
    for node in graph.nodes:
        if node.domain != SYSTOLIC_DOMAIN or node.op_type not in _CONV_OPS:
            continue
        pad = max(ints_attr(node, "pads", (0,)))
        if pad == 0:
            continue
        fill = int_attr(node, "x_zero_point", 0)
        name = node.inputs[0]
        width, known_fill = halos.get(name, (0, fill))
        if known_fill != fill:
            raise UnsupportedError(
                f"value {name!r} is read by padded convolutions with different zero points "
                f"({known_fill} and {fill}); quantize them alike"
            )
        halos[name] = (max(width, pad), fill)
    return halos


_CONV_OPS = frozenset({"QConv", "QConvInt"})


def _constant_value(graph: Graph) -> Callable[[str], np.ndarray | None]:
    """The initializers' values by name (a host Loop's trip count, for its MACs)."""
    return lambda name: None if (t := graph.initializer(name)) is None else t.data


def _macs(node: Node, ctx: LayerContext) -> int:
    if node.domain != SYSTOLIC_DOMAIN or node.op_type not in _ARRAY:
        return node_macs(node, ctx.graph.type_of, _constant_value(ctx.graph))
    out = math.prod(ctx.shape(node.outputs[0]))
    if node.op_type in _CONV_OPS:
        return out * math.prod(ctx.shape(node.inputs[1])[1:])
    return out * ctx.shape(node.inputs[0])[-1]


class _Compiler:
    def __init__(self, graph: Graph, config: ArrayConfig, opsets: Mapping[str, int]) -> None:
        self.graph = graph
        self.config = config
        self.opsets = dict(opsets)
        sets = layout_sets(graph)
        wide = frozenset(node.outputs[0] for node in graph.nodes
                         if node.domain == SYSTOLIC_DOMAIN and node.op_type == "QConvInt")
        self.plan = MemoryPlan(config, spatial=sets.spatial, matrix=sets.matrix,
                               wide=wide)  # fmt: skip
        self.halos = _halos(graph)
        self.consumers = graph.consumers()
        self.outputs = {info.name for info in graph.outputs}
        self.inputs = {info.name for info in graph.inputs}
        self.instructions: list[Instruction] = []
        self.host_reasons: dict[str, str] = {}  # node name -> the passes' reason
        self.layers: list[ProgramLayer] = []
        self.host_steps: list[HostStep] = []
        self.overrides: dict[int, dict[str, np.ndarray]] = {}
        self.views: dict[str, MemoryView] = {}
        self.slices = self._concat_slices()
        self.fused: dict[str, str] = {}  # QTable label -> the array layer whose STOREs apply it
        self.chooser = DataflowChooser(config)  # (BOTH: each array layer's dataflow)
        self.overlap: Overlap | None = None  # the vector layer the last array layer awaits
        self.deferred: dict[str, Callable[[int | None], list[Instruction]]] = {}  # (BOTH)

    def _concat_slices(self) -> dict[str, tuple[str, int, int]]:
        """Map each value written straight into its slice of a Concat's output to (output,
        offset along the axis, axis): values only that Concat reads, made by an accelerator or
        host node (a layout node may alias: only an upsampling copies), laid out like the output."""
        producers = self.graph.producers()
        slices: dict[str, tuple[str, int, int]] = {}
        for node in self.graph.nodes:
            if node.domain != "" or node.op_type != "Concat" or len(node.outputs) != 1:
                continue
            out = node.outputs[0]
            out_type = self.graph.type_of(out)
            if out_type is None or not out_type.is_static or out_type.shape is None:
                continue
            if out_type.dtype not in EIGHT_BIT or len(set(node.inputs)) != len(node.inputs):
                continue  # only 8-bit Concats run on the accelerator
            shape = tuple(int(d) for d in out_type.shape)  # type: ignore[arg-type]
            axis = int_attr(node, "axis", 0) % len(shape)
            eligible = []
            offset = 0
            for name in node.inputs:
                producer = producers.get(name)
                in_type = self.graph.type_of(name)
                if in_type is None or in_type.shape is None or not in_type.is_static:
                    break
                ok = (
                    producer is not None
                    and (layer_unit(producer) is not LayerUnit.LAYOUT
                         or enlarging_resample(producer, self.graph))
                    and len([o for o in producer.outputs if o]) == 1
                    and [u.label for u in self.consumers.get(name, [])] == [node.label]
                    and name not in self.outputs
                    and name not in self.halos
                    and 0 not in in_type.shape
                    and in_type.dtype == out_type.dtype
                    and self.plan.channel_last(name, in_type.dtype, in_type.shape)  # type: ignore[arg-type]
                    == self.plan.channel_last(out, out_type.dtype, shape)
                )
                if ok:
                    eligible.append((name, offset))
                offset += int(in_type.shape[axis])  # type: ignore[arg-type]
            else:
                for name, start in eligible:
                    slices[name] = (out, start, axis)
        return slices

    def place_slice(self, name: str) -> TensorPlacement:
        """Place `name` as its slice of the Concat output it is written into."""
        out, offset, axis = self.slices[name]
        target = self.place(out)
        assert target is not None
        shape = self.graph.type_of(name).shape  # type: ignore[union-attr]
        placement = TensorPlacement(
            name,
            TensorRole.ACTIVATION,
            target.address + offset * target.strides[axis],
            tuple(int(d) for d in shape),  # type: ignore[arg-type, union-attr]
            target.dtype,
            target.strides,
        )
        return self.plan.alias(placement)

    def ctx(self, node_index: int | None = None) -> LayerContext:
        overrides = self.overrides.get(node_index, {}) if node_index is not None else {}
        return LayerContext(self.config, self.graph, self.plan, overrides)

    def role(self, name: str) -> TensorRole:
        if name in self.outputs and name in self.inputs:
            return TensorRole.INPUT_OUTPUT
        if name in self.outputs:
            return TensorRole.OUTPUT
        if name in self.inputs:
            return TensorRole.INPUT
        return TensorRole.ACTIVATION

    def place(self, name: str) -> TensorPlacement | None:
        """Place value `name` by the layout rules (None when its type cannot be placed or it is
        an empty intermediate value: it then lives on the host only)."""
        if name in self.plan.placements:
            return self.plan.placements[name]
        if name in self.slices:
            return self.place_slice(name)
        tensor_type = self.graph.type_of(name)
        if tensor_type is None or not tensor_type.is_static or tensor_type.shape is None:
            raise ModelError(f"value {name!r} has no static shape; give the inputs fixed shapes")
        if element_type(tensor_type.dtype) is None:
            if name in self.outputs or name in self.inputs:
                raise UnsupportedError(
                    f"graph input or output {name!r} has type {tensor_type.dtype.name}, which "
                    "the program format cannot place"
                )
            return None
        if any(d == 0 for d in tensor_type.shape):
            if name in self.outputs or name in self.inputs:
                what = "input" if name in self.inputs else "output"
                raise UnsupportedError(
                    f"graph {what} {name!r} is empty (shape {list(tensor_type.shape)} has a "
                    "size-0 dimension), which a program cannot hold; give the model inputs with "
                    "non-zero sizes (--input arrays, or a model exported with non-empty shapes)"
                )
            return None  # an empty intermediate value lives on the host
        initializer = self.graph.initializer(name)
        if initializer is not None and name not in self.inputs:
            return self.plan.place_constant(name, initializer.dtype, initializer.data)
        shape = tuple(int(d) for d in tensor_type.shape)  # type: ignore[arg-type]
        halo, fill = self.halos.get(name, (0, 0))
        if halo and (tensor_type.dtype not in EIGHT_BIT or len(shape) not in (3, 4)):
            raise UnsupportedError(f"padded convolution input {name!r} must be a u8/i8 map")
        return self.plan.place(name, tensor_type.dtype, shape, self.role(name), halo=halo,
                               fill=fill)  # fmt: skip

    def compile_nodes(self, progress: Callable[[int, int], None] | None = None) -> None:
        """Place the graph inputs, then compile every node in order; `progress(done, total)`
        follows each node."""
        for info in self.graph.inputs:
            if self.graph.initializer(info.name) is None:
                self.place(info.name)
        nodes = self.graph.nodes
        for index, node in enumerate(nodes):
            self.compile_node(index, node)
            if progress is not None:
                progress(index + 1, len(nodes))

    def run(self, progress: Callable[[int, int], None] | None = None) -> CompiledModel:
        """Compile every node in order (`compile_nodes`) into the program."""
        self.compile_nodes(progress)
        for name in [n for n, lower in self.deferred.items()
                     if self.chooser.refine(n, functools.partial(self.merged, lower))]:
            del self.deferred[name]  # (interleaved into each candidate before the choice)
        self.instructions, self.layers = self.chooser.settle(self.layers, self.instructions,
                                                             self.plan.segments)
        if self.deferred:
            self.interleave_deferred()
        tensors = tuple(p for name, p in self.plan.placements.items() if name not in self.views)
        program = Program(
            config=self.config,
            instructions=(*self.instructions, Halt()),
            segments=tuple(self.plan.segments),
            tensors=tensors,
            layers=tuple(self.layers),
            host_steps=tuple(self.host_steps),
        )
        return CompiledModel(program, graph=self.graph, opsets=self.opsets,
                             views=dict(self.views))  # fmt: skip

    def add_layer(
        self, node: Node, unit: LayerUnit, code: list[Instruction], reason: str, macs: int
    ) -> None:
        self.layers.append(
            ProgramLayer(
                name=node.label,
                op=node.op_type,
                unit=unit,
                first=len(self.instructions),
                count=len(code),
                macs=macs,
                inputs=tuple(n for n in node.inputs if n),
                outputs=tuple(n for n in node.outputs if n),
                reason=reason,
            )
        )
        self.instructions += code

    def compile_node(self, index: int, node: Node) -> None:
        overlap, self.overlap = self.overlap, None
        if overlap is not None and overlap.vector is node and self.compile_interleaved(
                index, node, overlap):
            return
        unit = layer_unit(node)
        ctx = self.ctx(index)
        macs = _macs(node, ctx)
        if unit is LayerUnit.LAYOUT:
            reason = self.compile_layout(index, node)
            if reason is not None:
                self.host(index, node, reason, macs)
            return
        if unit is LayerUnit.HOST:
            self.host(index, node, self.host_reasons.get(node.name, "not an accelerator operator"), macs)
            return
        absent = absent_unit_reason(node, self.config)
        if absent is not None:
            self.host(index, node, absent, macs)
            return
        if node.label in self.fused:
            reason = f"{FUSED_TABLE} {self.fused[node.label]!r} (STORE with lut)"
            self.add_layer(node, unit, [], reason, macs)
            return
        data_inputs = [n for n in node.inputs if n]
        if node.op_type in ("QTable", "QSoftmax"):  # the table is placed by the lowering
            data_inputs = data_inputs[:1]
        if unit is LayerUnit.ARRAY:  # the activation input, and a QMatMul's computed B
            data_inputs = [n for i, n in enumerate(data_inputs)
                           if i == 0 or (i == 1 and node.op_type == "QMatMul"
                                         and self.graph.initializer(n) is None)]  # fmt: skip
        for name in data_inputs:
            if self.place(name) is None:
                self.host(index, node, f"input {name!r} lives on the host", macs)
                return
        table = self.fusable_table(node) if unit is LayerUnit.ARRAY else None
        for name in node.outputs if table is None else table.outputs:
            if name and self.place(name) is None:
                self.host(index, node, f"output {name!r} cannot be placed", macs)
                return
        try:
            if unit is LayerUnit.ARRAY:
                following = self.graph.nodes[index + 1] if index + 1 < len(self.graph.nodes) else None
                overlap = None if table else plan_overlap(node, following, self.graph, self.config)
                code, macs = self.lower_array(node, ctx, table, overlap)
                self.overlap = overlap
            else:
                code = _VECTOR[node.op_type](node, ctx)
        except (UnsupportedError, ResourceError) as err:
            self.host(index, node, str(err), macs)
            return
        if table is not None:
            self.fused[table.label] = node.label
        self.add_layer(node, unit, code, f"{node.op_type} on the {unit.value} unit", macs)

    def compile_interleaved(self, index: int, node: Node, overlap: Overlap) -> bool:
        """Lower vector node `node` in `overlap`'s window and interleave it with the array
        layer before it (`vector_overlap`); return False (nothing done) when it cannot be."""
        producer = self.layers[-1]
        if any(self.place(n) is None for n in (*node.inputs[:2], node.outputs[0]) if n):
            return False

        @functools.cache  # (with `--dataflow both`, merged into each candidate alike)
        def lower(band: int | None) -> list[Instruction]:
            return _INTERLEAVABLE[node.op_type](node, self.ctx(index), overlap.window, band)

        try:
            if self.config.dataflow is Dataflow.BOTH:  # (into each candidate: `run`)
                lower(1)
                self.deferred[producer.name] = lower
                merged = None
            else:
                merged = merge(self.instructions[producer.first:], lower, self.config)
                if merged is None or self.apart_is_faster(index, node, merged):
                    return False
        except (UnsupportedError, ResourceError):
            return False
        if merged is not None:
            self.instructions[producer.first:] = merged
            self.layers[-1] = dataclasses.replace(producer, count=len(merged))
        reason = f"{INTERLEAVED} {producer.name!r} ({node.op_type} on the vector unit)"
        self.add_layer(node, LayerUnit.VECTOR, [], reason, _macs(node, self.ctx(index)))
        return True

    def apart_is_faster(self, index: int, node: Node, merged: list[Instruction]) -> bool:
        """Return True when the cycle model (`compile_model`'s `layer_cycles`) finds the last
        layer's code followed by vector node `node` lowered on its own faster than `merged`
        (the two interleaved). Checked only for a QAdd whose vector work (an ADD takes 2
        cycles per row of `dim` lanes) is at least the producer's ideal array cycles: the
        STORE unit, carrying both, then bounds the pair and the blocks in the stream can
        hold up the producer's in-order LOADs (light ResNet-50 at 64x64 WS); False without
        the cycle model."""
        layer_cycles = self.chooser.layer_cycles
        if layer_cycles is None or node.op_type != "QAdd":
            return False
        producer, ctx = self.layers[-1], self.ctx(index)
        vector_cycles = 2 * math.prod(ctx.shape(node.outputs[0])) // self.config.dim
        if vector_cycles < -(-producer.macs // self.config.pes):
            return False
        apart = [*self.instructions[producer.first:], *_VECTOR[node.op_type](node, ctx)]
        return layer_cycles(apart, self.config) < layer_cycles(merged, self.config)

    def merged(self, lower: Callable[[int | None], list[Instruction]],
               code: list[Instruction]) -> list[Instruction]:
        """Return producer `code` with the vector layer `lower` lowers interleaved (`merge`),
        or its blocks after the producer when the producer's writes cannot be mapped."""
        return merge(code, lower, self.config) or [*code, *lower(None)]

    def interleave_deferred(self) -> None:
        """With `--dataflow both`: interleave the vector layers `compile_interleaved` deferred
        with their producers' code, for producers the chooser had no choice for (the others
        are interleaved into each candidate before the choice, `run`), and renumber the
        layers."""
        out: list[Instruction] = []
        layers = []
        for layer in self.layers:
            code = self.instructions[layer.first:layer.end]
            lower = self.deferred.get(layer.name)
            if lower is not None:
                code = self.merged(lower, code)
            layers.append(dataclasses.replace(layer, first=len(out), count=len(code)))
            out += code
        self.instructions, self.layers = out, layers

    def fusable_table(self, node: Node) -> Node | None:
        """Return the QTable to fuse into array layer `node`'s STOREs, or None: the QTable
        (of a constant table) must be the only reader of `node`'s output, which is no graph
        output and no slice of a Concat, and its output must have the same layout."""
        out = node.outputs[0]
        users = self.consumers.get(out, [])
        if not may_fuse_tables(self.config):
            return None
        if len(users) != 1 or out in self.outputs or out in self.slices or out in self.halos:
            return None
        table = users[0]
        if (table.domain != SYSTOLIC_DOMAIN or table.op_type != "QTable"
                or table.inputs[0] != out or out in table.inputs[1:]
                or self.graph.initializer(table.inputs[1]) is None):  # fmt: skip
            return None
        out_type, y_type = self.graph.type_of(out), self.graph.type_of(table.outputs[0])
        if out_type is None or y_type is None or out_type.shape != y_type.shape:
            return None
        if out_type.dtype not in EIGHT_BIT or y_type.dtype not in EIGHT_BIT:
            return None
        shape = tuple(int(d) for d in out_type.shape)  # type: ignore[arg-type, union-attr]
        same_layout = (self.plan.channel_last(out, out_type.dtype, shape)
                       == self.plan.channel_last(table.outputs[0], y_type.dtype, shape))  # fmt: skip
        return table if same_layout else None

    def lower_array(
        self, node: Node, ctx: LayerContext, table: Node | None = None,
        overlap: Overlap | None = None,
    ) -> tuple[list[Instruction], int]:
        """Call `lower_qconv` / `lower_qmatmul`; return the instructions and useful MACs.
        With `table` (a QTable fused into the layer), the STOREs write the QTable's output
        through its table; with `overlap`, the layer is lowered for `overlap.producer` (a
        smaller scratchpad, leaving the next vector layer its window)."""
        lowering = _ARRAY[node.op_type]
        constants = {
            name: ctx.constant(name)
            for name in node.inputs[1:]
            if name and (name in ctx.overrides or self.graph.initializer(name) is not None)
        }
        x = ctx.placement(node.inputs[0])
        activation: Activation | None = None
        if table is None:
            y = ctx.placement(node.outputs[0])
        else:  # the QTable's output, as the layer's own output type
            activation = activation_of(table, ctx)
            y = dataclasses.replace(ctx.placement(table.outputs[0]), name=node.outputs[0],
                                    dtype=ctx.dtype(node.outputs[0]))  # fmt: skip
        alloc = _PlanAllocator(self.plan)

        def lower(config: ArrayConfig) -> LayerCode:  # (BOTH: per dataflow, dataflow_choice)
            if overlap is not None:  # (the dataflow of this lowering, the smaller scratchpad)
                config = dataclasses.replace(config, spad_kib=overlap.producer.spad_kib)
            if node.op_type in _CONV_OPS:
                halo = self.halos.get(node.inputs[0], (0, 0))[0]
                x_halo = (halo,) * (2 * (len(x.shape) - 2)) if halo else ()
                return lowering(node, x, y, x_halo, config, alloc, constants=constants,
                                activation=activation)  # fmt: skip
            b_name = node.inputs[1]
            b = None if b_name in constants else ctx.placement(b_name)
            return lowering(node, x, y, config, alloc, constants=constants, b=b,
                            activation=activation)  # fmt: skip

        code = self.chooser.lower(node.label, lower, self.plan)
        self.plan.segments.extend(code.segments)
        return list(code.instructions), int(code.stats.macs)

    def compile_layout(self, index: int, node: Node) -> str | None:
        """Lower layout node `node`; return None when done, else why it needs the host."""
        if node.op_type == "Split":
            return compile_split(self, index, node)
        out = node.outputs[0]
        if len(node.outputs) != 1 or not node.inputs or not node.inputs[0]:
            return "the layout operator has no single data input and output"
        for name in node.inputs[:1] if node.op_type != "Concat" else node.inputs:
            if name and self.place(name) is None:
                return f"input {name!r} lives on the host"
        if any(name in self.views for name in node.inputs if name):
            return "an input is held in memory order for a QMatMul"
        users = self.consumers.get(out, [])
        matmul_only = bool(users) and all(
            u.domain == SYSTOLIC_DOMAIN
            and u.op_type == "QMatMul"
            and u.inputs[0] == out
            and u.inputs[1] not in (out,)
            and self.graph.initializer(u.inputs[1]) is not None
            for u in users
        )
        strided_view = bool(users) and all(
            u.domain == SYSTOLIC_DOMAIN
            and u.op_type == "QMatMul"
            and out in u.inputs[:2]
            and out not in u.inputs[2:]
            and not self._constant_matrix(u.inputs[1])
            for u in users
        )
        may_alias = out not in self.outputs and out not in self.halos
        decision = decide_layout(node, self.ctx(index), self.opsets, may_alias=may_alias,
                                 matmul_only=matmul_only, strided_view=strided_view,
                                 out_placement=lambda: self._must_place(out))  # fmt: skip
        if decision.kind == "host":
            return decision.reason
        assert decision.placement is not None
        if decision.kind == "alias":
            self.plan.alias(decision.placement)
            reason = f"re-interprets the bytes of {node.inputs[0]!r}"
        elif decision.kind == "strided":
            self.plan.alias(decision.placement)
            reason = f"a strided view of {node.inputs[0]!r} read by the QMatMuls in place"
        elif decision.kind == "permuted":
            self.plan.alias(decision.placement)
            assert decision.permutation is not None
            self.views[out] = MemoryView(decision.placement, decision.permutation)
            for position, user in enumerate(self.graph.nodes):
                if user in users:
                    weights = self.graph.initializer(user.inputs[1])
                    assert weights is not None
                    overrides = self.overrides.setdefault(position, {})
                    overrides[user.inputs[1]] = weights.data[decision.permutation]
            reason = f"reads {node.inputs[0]!r} in memory order; the QMatMul weights are permuted"
        else:
            reason = "LOAD + COPY"
        code = decision.instructions(self.ctx(index))
        if node.op_type == "Concat":
            moved = len(decision.sources)
            reason = f"{len(node.inputs) - moved} inputs written in place, {moved} copied"
        self.add_layer(node, LayerUnit.LAYOUT, code, reason, 0)
        return None

    def _constant_matrix(self, name: str) -> bool:
        """True when `name` is a 2-D initializer (a QMatMul's classic constant B)."""
        initializer = self.graph.initializer(name)
        return initializer is not None and initializer.data.ndim == 2

    def _must_place(self, name: str) -> TensorPlacement:
        placement = self.place(name)
        if placement is None:
            raise UnsupportedError(f"value {name!r} cannot be placed")
        return placement

    def host(self, index: int, node: Node, reason: str, macs: int) -> None:
        """Make `node` (number `index` of the graph) a host layer. A QMatMul reading a Flatten
        in memory order (whose array lowering failed) reads it as "NAME:memory_order" with its
        permuted B, so it computes the same product."""
        overrides = self.overrides.get(index, {})
        inputs = list(node.inputs)
        for position, name in enumerate(inputs):
            if name in self.views:
                renamed = f"{name}:memory_order"
                if renamed not in self.plan.placements:
                    self.plan.alias(dataclasses.replace(self.views[name].placement, name=renamed))
                inputs[position] = renamed
        node = dataclasses.replace(node, inputs=tuple(inputs))
        constants = []
        for name in node.inputs:
            if not name:
                continue
            initializer = self.graph.initializer(name)
            if initializer is not None and name not in self.inputs:
                if name in overrides:
                    initializer = Tensor(name, initializer.dtype, overrides[name])
                constants.append(initializer)
        for name in node.outputs:
            if name:
                self.place(name)
        self.host_steps.append(HostStep(len(self.layers), node, tuple(constants)))
        self.add_layer(node, LayerUnit.HOST, [], reason, macs)


def compile_model(
    model: Model | Graph,
    config: ArrayConfig,
    *,
    opsets: Mapping[str, int] | None = None,
    progress: Callable[[int, int], None] | None = None,
    layer_cycles: LayerCycles | None = None,
) -> CompiledModel:
    """Compile an integer graph (or a model holding one) for `config`; see the module docstring.

    `progress(done, total)`, when given, is called after each of the graph's `total` nodes
    (for a progress bar: large models take tens of seconds). `layer_cycles` times a program
    (`systolic.sim.timing.layer_cycles.layer_cycles`): `Dataflow.BOTH` needs it to choose each
    array layer's dataflow (`dataflow_choice.DataflowChooser`).

    Raises UnsupportedError for a configuration the lowering cannot target (operands must be
    8-bit) or a value it cannot place, ModelError for values without static shapes,
    ResourceError when the model does not fit the 32-bit external address space.

    The cyclic garbage collector is paused during the compile (`collector.collector_paused`)
    and resumes when it returns or raises.
    """
    if config.dataflow is Dataflow.BOTH and layer_cycles is None:
        raise ConfigError(
            "dataflow both chooses each layer's dataflow with the cycle model: compile with "
            "layer_cycles=systolic.sim.timing.layer_cycles.layer_cycles")
    compiler = _compiler(model, config, opsets)
    compiler.chooser = DataflowChooser(config, layer_cycles)
    with collector_paused():  # (its objects outlive the compile: `collector`)
        return compiler.run(progress)


def plan_layers(
    model: Model | Graph, config: ArrayConfig, *, opsets: Mapping[str, int] | None = None
) -> tuple[ProgramLayer, ...]:
    """Return the layers `compile_model(model, config)` makes (name, op, unit, MACs, reason),
    each without instructions (`first` 0, `count` 0): every node goes through the same
    placement and lowering, whose checks decide its unit, inside `jobs.planning_only()`, so
    no weight is laid out and no instruction scheduled. Raises as `compile_model` does."""
    compiler = _compiler(model, config, opsets)
    with planning_only():
        compiler.compile_nodes()
    return tuple(dataclasses.replace(layer, first=0, count=0) for layer in compiler.layers)


def _compiler(
    model: Model | Graph, config: ArrayConfig, opsets: Mapping[str, int] | None
) -> _Compiler:
    """Return the compiler of `model` for `config` (raises as `compile_model` documents)."""
    if config.input_width != 8 or config.weight_width != 8:
        raise UnsupportedError(
            f"the compiler targets 8-bit operands; this configuration has input_width "
            f"{config.input_width} and weight_width {config.weight_width}: use 8 and 8"
        )
    if isinstance(model, Model):
        graph, known, reasons = model.graph, dict(model.opsets), dict(model.host_reasons)
    else:
        graph, known, reasons = model, {}, {}
    known.setdefault(SYSTOLIC_DOMAIN, 1)
    known.update(opsets or {})
    compiler = _Compiler(_typed(graph, known), config, known)
    compiler.host_reasons = reasons
    return compiler
