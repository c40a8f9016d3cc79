"""Turn a layer's `GemmJob`s into its `LayerCode`: constants placed, instructions emitted.

A job whose B is computed (`ComputedWeights`) has no weight image: its weight LOADs read B
where it lies; only its params rows are constants. With an `Activation` (a QTable fused into
the layer), the table is one more constant, loaded and TABLEd before the first job, and every
STORE gets `lut` (and the table output's `flip_sign`).

Inside `planning_only()` (`compile_model.plan_layers`, `systolic inspect`), `lower_jobs` runs
the same checks (weight width, accumulator bound, params rows, table) but lays out no weights
and emits no instruction: the layer's decision without its code."""

import contextlib
import dataclasses
from collections.abc import Iterator, Sequence
from contextvars import ContextVar

from systolic.config import ArrayConfig
from systolic.isa.program import MemorySegment
from systolic.mapper.lowering.estimate import array_cycles, ideal_cycles
from systolic.mapper.lowering.gemm import ComputedWeights, GemmJob
from systolic.mapper.lowering.layer_code import ConstantAllocator, LayerCode, LayerStats
from systolic.mapper.lowering.params_rows import (
    check_accumulator,
    check_computed_accumulator,
    check_weight_width,
    params_image,
    weight_image,
)
from systolic.mapper.lowering.schedule import JobImage, Scheduler
from systolic.mapper.lowering.table import Activation, table_image

__all__ = ["lower_jobs", "planning_only"]

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
    scheduler = Scheduler(config)
    segments: list[MemorySegment] = []
    if table is not None:
        address = alloc.allocate(len(table), config.bus_bytes, f"{jobs[0].label}.table")
        segments.append(MemorySegment(address, table))
        scheduler.load_table(address)
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
            scheduler.emit(job, image)
            continue
        weights = weight_image(job.weights, config)
        image = JobImage(
            weights=alloc.allocate(len(weights), config.bus_bytes, f"{suffix}.weights"),
            params=alloc.allocate(len(params), config.bus_bytes, f"{suffix}.params"),
        )
        segments += [MemorySegment(image.weights, weights), MemorySegment(image.params, params)]
        scheduler.emit(job, image)
    instructions = scheduler.finish()
    cycles = array_cycles(instructions, config)
    stats = LayerStats(macs, ideal_cycles(macs, config), cycles.busy, cycles.occupied)
    return LayerCode(tuple(instructions), tuple(segments), stats)


def _check_job(job: GemmJob, config: ArrayConfig) -> bytes:
    """Raise unless `job` fits the array (weight width, accumulator bound, params rows);
    return its params rows."""
    if isinstance(job.weights, ComputedWeights):
        check_computed_accumulator(job.k, config, job.label)
    else:
        check_weight_width(job.weights, config, job.label)
        check_accumulator(job.weights, config, job.label)
    return params_image(job.bias, job.multiplier, job.shift, config)
