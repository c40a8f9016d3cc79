"""Split as a layout operator: each output decided like a single-output layout op.

The reference Split run on the input's address array gives every output's addresses
(`layout.output_addresses`: split sizes from the `split` input of opset 13+, the `split`
attribute before, `num_outputs` from opset 18, or equal parts). Each output is then, by
`layout.decide_view`: an alias of the input's bytes (a part of contiguous rows: a split along
the outermost non-trivial axis of its layout); a strided view of them when every reader copies
it from any strides anyway (a standalone QTable, which LOADs X with its strides, or a Concat:
the requantizations a float model's C2f blocks put after their Split); or a LOAD + COPY of the
strided view into its own placement (a channel split of a channel-last map read by a
convolution). One output that cannot be any sends the whole node to the host. The layer's instructions are the copies of its outputs, in output order.
"""

from collections.abc import Mapping
from collections.abc import Set as AbstractSet
from typing import Protocol

from systolic.errors import ResourceError, UnsupportedError
from systolic.ir import SYSTOLIC_DOMAIN, Node
from systolic.isa.instructions import Instruction
from systolic.isa.program import LayerUnit, TensorPlacement
from systolic.mapper.lowering.context import LayerContext
from systolic.mapper.lowering.layout import (
    LayoutDecision,
    decide_view,
    not_addressable,
    output_addresses,
)
from systolic.mapper.lowering.memory_plan import MemoryPlan

__all__ = ["SplitCompiler", "compile_split"]


class SplitCompiler(Protocol):
    """What `compile_split` uses of the model compiler."""

    @property
    def plan(self) -> MemoryPlan: ...

    @property
    def opsets(self) -> Mapping[str, int]: ...

    @property
    def outputs(self) -> AbstractSet[str]: ...

    @property
    def halos(self) -> Mapping[str, tuple[int, int]]: ...

    @property
    def views(self) -> Mapping[str, object]: ...

    @property
    def consumers(self) -> Mapping[str, list[Node]]: ...

    def place(self, name: str) -> TensorPlacement | None: ...

    def ctx(self, node_index: int | None = None) -> LayerContext: ...

    def add_layer(self, node: Node, unit: LayerUnit, code: list[Instruction], reason: str,
                  macs: int) -> None: ...  # fmt: skip


def compile_split(compiler: SplitCompiler, index: int, node: Node) -> str | None:
    """Lower Split `node` (number `index` of the graph) as a layout layer; return None when
    done, else why it needs the host."""
    source = node.inputs[0]
    if not source or compiler.place(source) is None:
        return f"input {source!r} lives on the host"
    if source in compiler.views:
        return "an input is held in memory order for a QMatMul"
    ctx = compiler.ctx(index)
    reason = not_addressable(node, ctx)
    if reason is not None:
        return reason
    decisions: list[LayoutDecision] = []
    for name, addresses in zip(node.outputs, output_addresses(node, ctx, compiler.opsets),
                               strict=True):  # fmt: skip
        if not name or addresses.size == 0:
            return "an output is omitted or empty"
        may_alias = name not in compiler.outputs and name not in compiler.halos
        in_place = _read_in_place(name, compiler.consumers.get(name, []))
        try:
            decision = decide_view(ctx, source, name, addresses, may_alias=may_alias,
                                   matmul_only=False, strided_view=in_place,
                                   out_placement=lambda n=name: _must_place(compiler, n))  # type: ignore[misc]  # fmt: skip
        except (UnsupportedError, ResourceError) as err:
            return str(err)
        if decision.kind == "host":
            return f"output {name!r}: {decision.reason}"
        decisions.append(decision)
    code: list[Instruction] = []
    for decision in decisions:
        assert decision.placement is not None
        if decision.kind in ("alias", "strided"):
            compiler.plan.alias(decision.placement)
        code += decision.instructions(ctx)
    kinds = [d.kind for d in decisions]
    reason = (f"{kinds.count('alias')} outputs re-interpret the bytes of {source!r}, "
              f"{kinds.count('strided')} are strided views of it read in place, "
              f"{kinds.count('copy')} copied")  # fmt: skip
    compiler.add_layer(node, LayerUnit.LAYOUT, code, reason, 0)
    return None


def _read_in_place(name: str, users: list[Node]) -> bool:
    """True when every reader of Split output `name` copies it from any strides itself: a
    standalone QTable (LOAD + COPY with lut) reading it as X, or a Concat."""
    return bool(users) and all(
        (u.domain == SYSTOLIC_DOMAIN and u.op_type == "QTable" and u.inputs[0] == name
         and name not in u.inputs[1:])
        or (u.domain == "" and u.op_type == "Concat")
        for u in users
    )  # fmt: skip


def _must_place(compiler: SplitCompiler, name: str) -> TensorPlacement:
    placement = compiler.place(name)
    if placement is None:
        raise UnsupportedError(f"value {name!r} cannot be placed")
    return placement
