"""A layer's instructions scheduled once per layer shape and moved to each layer's addresses.

The schedule of a one-job layer (`schedule.Scheduler`, fresh rings per layer) depends on the
job's shape and output-stage fields and on the configuration, not on where its operands lie:
every address in its code is the base of one operand plus an offset the shape fixes. A LOAD
into spad_in reads A (or the activation table), one into spad_wt the weight image, one into
the params memory the params rows; a STORE writes Y. So the code of a layer whose shape was
scheduled before (ResNet-50 repeats most of its bottleneck blocks) is that code with each
LOAD's and STORE's `ext` moved by its operand's change of base; the other instructions are
the same values.

The bus width is read by the plans only (`tiling`: their cost model, and A's bases modulo the
bus width, `tiling._alignments`); the scheduler then reads the plan and the rest of the
configuration. So a layer's plan is made once per `template_key` (the configuration, A's bus
offsets and the shape: what the plans read; `layer_plan`), and its code is scheduled once per
`schedule_key` (that key without the bus width and the offsets, with the plan): the points of
a sweep that differ only in their bus width share the code of every layer whose plan the bus
does not change.

The templates live in a bounded least-recently-used table for the process: the same shape at
the same configuration, in this compile or a later one, is scheduled once.
"""

import collections
import dataclasses
from collections.abc import Callable, Hashable, Sequence

from systolic.config import ArrayConfig, Dataflow
from systolic.isa.instructions import Instruction, Load, LoadTarget, Store
from systolic.mapper.lowering.estimate import ArrayCycles
from systolic.mapper.lowering.gemm import ComputedWeights, GemmJob, RowBlock
from systolic.mapper.lowering.tiling import OsPlan, WsPlan, plan_os, plan_ws

__all__ = [
    "LayerBases", "Plan", "TemplateKey", "clear_templates", "layer_plan", "schedule_key", "scheduled",
    "template_key", "with_ext",
]  # fmt: skip

_LIMIT = 1 << 20
"""The most instructions the table holds (templates are dropped oldest-used first): a whole
ResNet-50 point of a sweep down to 16x16 arrays (16x16 WS 0.34 M instructions, 16x16 OS
0.52 M; 8x8 OS has 2.4 M), so that the next point, of another bus width, finds them; at
~400 bytes per LOAD that is at most ~0.4 GB kept alive between compiles."""


@dataclasses.dataclass(frozen=True)
class LayerBases:
    """Where a one-job layer's operands lie: A's first row block, Y's, the weight image, the
    params rows and the activation table (0 without one)."""

    a: int
    y: int
    weights: int
    params: int
    table: int


@dataclasses.dataclass
class _Template:
    instructions: tuple[Instruction, ...]
    table_load: Instruction | None
    bases: LayerBases
    cycles: ArrayCycles
    moved: tuple[tuple[int, str], ...] | None = None
    """(index, LayerBases field) of each LOAD and STORE, found when the template is first
    used again (most shapes never are)."""


_templates: collections.OrderedDict[Hashable, _Template] = collections.OrderedDict()
_held = [0]  # instructions in `_templates`


def clear_templates() -> None:
    """Forget every template and plan (benchmarks time a compile from scratch)."""
    _templates.clear()
    _plans.clear()
    _held[0] = 0


def _blocks(blocks: tuple[RowBlock, ...]) -> tuple[object, ...]:
    """The row blocks relative to the first one's base."""
    base = blocks[0].base
    return tuple((b.base - base, b.count, b.n0, b.stride0, b.stride1) for b in blocks)


@dataclasses.dataclass(frozen=True)
class TemplateKey:
    """What a one-job layer's plan and code depend on besides its operands' bases: the
    configuration, A's and Y's first bases modulo the bus width, and the shape (the row
    blocks relative to their first base, the walk, the weights' shape, the output-stage
    fields, whether an activation table is loaded)."""

    config: ArrayConfig
    offsets: tuple[int, int]
    shape: tuple[object, ...]


Plan = WsPlan | OsPlan
_plans: dict[TemplateKey, Plan] = {}
"""The plans of `layer_plan` by `template_key` (emptied when it reaches `_PLAN_LIMIT`)."""
_PLAN_LIMIT = 1 << 14


def template_key(job: GemmJob, config: ArrayConfig, table: bool) -> TemplateKey | None:
    """Return what a one-job layer's plan and code depend on besides its operands' bases, or
    None when the job reads computed weights (their loads follow B's own layout)."""
    if isinstance(job.weights, ComputedWeights):
        return None
    bus = config.bus_bytes
    shape = (
        table, _blocks(job.a_rows), _blocks(job.y_rows), job.walk, job.weights.shape,
        job.zero_point, job.lo, job.hi, job.flip_in, job.flip_out, job.lut, job.raw,
    )  # fmt: skip
    return TemplateKey(config, (job.a_rows[0].base % bus, job.y_rows[0].base % bus), shape)


def layer_plan(key: TemplateKey, job: GemmJob, config: ArrayConfig) -> Plan:
    """Return the plan of a one-job layer (`tiling.plan_ws` / `plan_os`) whose `template_key`
    is `key`, made once per key (the plans read nothing the key does not hold)."""
    plan = _plans.get(key)
    if plan is None:
        if len(_plans) >= _PLAN_LIMIT:
            _plans.clear()
        plan = _plans[key] = (plan_ws if config.dataflow is Dataflow.WS else plan_os)(job, config)
    return plan


def schedule_key(key: TemplateKey, plan: Plan) -> Hashable:
    """Return what the code of a one-job layer of `template_key` `key` depends on once its
    plan is `plan`: the key without the bus width and A's and Y's bus offsets (which the
    scheduler never reads), with the plan."""
    config = key.config
    fields = tuple(getattr(config, field.name) for field in dataclasses.fields(config)
                   if field.name != "bus_bytes")  # fmt: skip
    return (fields, plan, key.shape)


def _operand(instr: Instruction, table_load: Instruction | None) -> str | None:
    """Return the `LayerBases` field an instruction's `ext` is relative to (None: no ext)."""
    if type(instr) is Store:
        return "y"
    if type(instr) is not Load:
        return None
    if instr.mem is LoadTarget.PARAMS:
        return "params"
    if instr.mem is LoadTarget.SPAD_WT:
        return "weights"
    return "table" if instr is table_load else "a"


def _ext_range(cls: type[Instruction]) -> tuple[int, int]:
    field = next(field for field in cls.FIELDS if field.name == "ext")
    return field.minimum, field.maximum


_EXT_RANGE: dict[type[Instruction], tuple[int, int]] = {
    cls: _ext_range(cls) for cls in (Load, Store)
}


def with_ext(instr: Instruction, ext: int) -> Instruction:
    """Return `instr` (a LOAD or STORE) with `ext` replaced, not yet checked against any
    configuration. No rule of LOAD or STORE reads `ext` (their derived fields neither), so
    the copy of the fields passes every construction check the original passed once `ext`
    lies in its field's range; outside it the constructor raises its usual error."""
    low, high = _EXT_RANGE[type(instr)]
    if not low <= ext <= high:
        return dataclasses.replace(instr, ext=ext)  # type: ignore[type-var]
    moved = object.__new__(type(instr))
    state = moved.__dict__
    state.update(instr.__dict__)
    state["ext"] = ext
    state["_checked_for"] = None
    return moved


def _moved(template: _Template, bases: LayerBases) -> list[Instruction]:
    """Return the template's instructions with each `ext` moved to `bases`."""
    if template.moved is None:
        template.moved = tuple(
            (index, name)
            for index, instr in enumerate(template.instructions)
            if (name := _operand(instr, template.table_load)) is not None
        )
    out = list(template.instructions)
    delta = {
        name: getattr(bases, name) - getattr(template.bases, name)
        for name in ("a", "y", "weights", "params", "table")
    }
    for index, name in template.moved:
        if delta[name]:
            instr = out[index]
            out[index] = with_ext(instr, instr.ext + delta[name])  # type: ignore[attr-defined]
    return out


def scheduled(
    key: Hashable | None,
    bases: LayerBases,
    schedule: Callable[[], tuple[Sequence[Instruction], Instruction | None, ArrayCycles]],
) -> tuple[list[Instruction], ArrayCycles]:
    """Return the layer's instructions and array cycles: `schedule()` (its instructions, the
    table's LOAD or None, its cycles) when `key` is None or new, else the template of `key`
    moved to `bases`."""
    template = _templates.get(key) if key is not None else None
    if template is not None:
        _templates.move_to_end(key)
        return _moved(template, bases), template.cycles
    instructions, table_load, cycles = schedule()
    if key is not None and len(instructions) <= _LIMIT:
        _templates[key] = _Template(tuple(instructions), table_load, bases, cycles)
        _held[0] += len(instructions)
        while _held[0] > _LIMIT:
            _held[0] -= len(_templates.popitem(last=False)[1].instructions)
    return list(instructions), cycles
