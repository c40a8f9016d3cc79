"""Turn a layer's `GemmJob`s into its `LayerCode`: constants placed, instructions emitted.

A job whose B is computed (`ComputedWeights`) has no weight image: its weight LOADs read B
where it lies; only its params rows are constants. With an `Activation` (a QTable fused into
the layer), the table is one more constant, loaded and TABLEd before the first job, and every
STORE gets `lut` (and the table output's `flip_sign`).

Every constant is placed first, then the instructions are emitted; a one-job layer of a shape
and plan scheduled before (same configuration but for the bus width, which only the plans
read) takes that code moved to its addresses (`layer_templates`), which is what scheduling it
again would give.

Inside `planning_only()` (`compile_model.plan_layers`, `systolic inspect`), `lower_jobs` runs
the same checks (weight width, accumulator bound, params rows, table) but lays out no weights
and emits no instruction: the layer's decision without its code."""

import contextlib
import dataclasses
from collections.abc import Iterator, Sequence
from contextvars import ContextVar

from systolic.config import ArrayConfig
from systolic.isa.instructions import Instruction
from systolic.isa.program import MemorySegment
from systolic.mapper.lowering.collector import collector_paused
from systolic.mapper.lowering.estimate import ArrayCycles, array_cycles, ideal_cycles
from systolic.mapper.lowering.gemm import ComputedWeights, GemmJob
from systolic.mapper.lowering.layer_code import ConstantAllocator, LayerCode, LayerStats
from systolic.mapper.lowering.layer_templates import (
    LayerBases,
    Plan,
    clear_templates,
    layer_plan,
    schedule_key,
    scheduled,
    template_key,
)
from systolic.mapper.lowering.params_rows import (
    check_accumulator,
    check_computed_accumulator,
    check_weight_width,
    params_image,
    weight_image,
)
from systolic.mapper.lowering.schedule import JobImage, Scheduler, forget_instructions
from systolic.mapper.lowering.table import Activation, table_image

__all__ = ["forget_schedules", "lower_jobs", "planning_only"]

_PLANNING: ContextVar[bool] = ContextVar("planning", default=False)


@contextlib.contextmanager
def planning_only() -> Iterator[None]:
    """Within the block, `lower_jobs` checks every job but returns a `LayerCode` without
    instructions or segments (stats: the MACs and ideal cycles; busy and occupied 0)."""
    token = _PLANNING.set(True)
    try:
        yield
    finally:
        _PLANNING.reset(token)


def forget_schedules() -> None:
    """Forget the layer templates and the shared EXECUTE instructions, so that the next
    compile schedules everything from scratch (benchmarks of one compile)."""
    clear_templates()
    forget_instructions()


def lower_jobs(
    jobs: Sequence[GemmJob],
    macs: int,
    config: ArrayConfig,
    alloc: ConstantAllocator,
    activation: Activation | None = None,
) -> LayerCode:
    """Check each job's weights, place its constants through `alloc`, emit its instructions
    (their STOREs through `activation`'s table, when given). Inside `planning_only()`, only
    the checks run."""
    table = table_image(activation.table, config) if activation is not None else None
    checked = [(job, _check_job(job, config)) for job in jobs]
    if _PLANNING.get():
        return LayerCode((), (), LayerStats(macs, ideal_cycles(macs, config), 0, 0))
    segments: list[MemorySegment] = []
    table_address = 0
    if table is not None:
        table_address = alloc.allocate(len(table), config.bus_bytes, f"{jobs[0].label}.table")
        segments.append(MemorySegment(table_address, table))
    placed: list[tuple[GemmJob, JobImage]] = []
    for index, (job, params) in enumerate(checked):
        if activation is not None:
            job = dataclasses.replace(job, lut=True, flip_out=activation.flip_out)
        suffix = f"{job.label}#{index}" if len(jobs) > 1 else job.label
        if isinstance(job.weights, ComputedWeights):
            image = JobImage(
                weights=job.weights.address,
                params=alloc.allocate(len(params), config.bus_bytes, f"{suffix}.params"),
            )
            segments.append(MemorySegment(image.params, params))
        else:
            weights = weight_image(job.weights, config)
            image = JobImage(
                weights=alloc.allocate(len(weights), config.bus_bytes, f"{suffix}.weights"),
                params=alloc.allocate(len(params), config.bus_bytes, f"{suffix}.params"),
            )
            segments += [MemorySegment(image.weights, weights), MemorySegment(image.params, params)]
        placed.append((job, image))
    with collector_paused():
        instructions, cycles = _instructions(placed, config,
                                             None if table is None else table_address)
    stats = LayerStats(macs, ideal_cycles(macs, config), cycles.busy, cycles.occupied)
    return LayerCode(tuple(instructions), tuple(segments), stats)


def _instructions(
    placed: Sequence[tuple[GemmJob, JobImage]], config: ArrayConfig, table: int | None
) -> tuple[list[Instruction], ArrayCycles]:
    """Return the instructions of the placed jobs (after the table's LOAD and TABLE when
    `table` is its address) and their array cycles; a one-job layer's come from the
    template of its shape and plan when one was scheduled before (`layer_templates`)."""
    plan: Plan | None = None

    def schedule() -> tuple[list[Instruction], Instruction | None, ArrayCycles]:
        scheduler = Scheduler(config)
        table_load = scheduler.load_table(table) if table is not None else None
        for job, image in placed:
            scheduler.emit(job, image, plan)
        instructions = scheduler.finish()
        return instructions, table_load, array_cycles(instructions, config)

    key = template_key(placed[0][0], config, table is not None) if len(placed) == 1 else None
    if key is None:
        instructions, _, cycles = schedule()
        return instructions, cycles
    job, image = placed[0]
    plan = layer_plan(key, job, config)
    bases = LayerBases(job.a_rows[0].base, job.y_rows[0].base, image.weights, image.params,
                       table or 0)  # fmt: skip
    return scheduled(schedule_key(key, plan), bases, schedule)


def _check_job(job: GemmJob, config: ArrayConfig) -> bytes:
    """Raise unless `job` fits the array (weight width, accumulator bound, params rows);
    return its params rows."""
    if isinstance(job.weights, ComputedWeights):
        check_computed_accumulator(job.k, config, job.label)
    else:
        check_weight_width(job.weights, config, job.label)
        check_accumulator(job.weights, config, job.label)
    return params_image(job.bias, job.multiplier, job.shift, config)
