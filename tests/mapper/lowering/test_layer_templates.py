"""`layer_templates`: a layer whose shape was scheduled before gets that code moved to its own
addresses, equal to scheduling it from scratch."""

import dataclasses

import numpy as np
import pytest

from systolic.config import ArrayConfig, Dataflow
from systolic.errors import SystolicError
from systolic.isa.instructions import Load, LoadTarget, Store
from systolic.mapper.lowering.gemm import ElementWalk, GemmJob, RowBlock
from systolic.mapper.lowering.jobs import lower_jobs
from systolic.mapper.lowering.layer_code import BumpAllocator, LayerCode
from systolic.mapper.lowering.layer_templates import (
    clear_templates,
    layer_plan,
    schedule_key,
    template_key,
    with_ext,
)
from systolic.mapper.lowering.table import Activation

K, N, M = 40, 12, 30


def _job(a_base: int, y_base: int) -> GemmJob:
    """A 3x3-ish convolution's shape: A rows in two row patterns, Y in one."""
    rng = np.random.default_rng(5)
    return GemmJob(
        label="conv",
        a_rows=(RowBlock(a_base, 18, 6, 64, 512), RowBlock(a_base + 4096, 12, 4, 64, 512)),
        y_rows=(RowBlock(y_base, M, M, N, 0),),
        walk=ElementWalk(8, 5, 64, 1024),
        weights=rng.integers(-128, 128, (K, N)),
        bias=np.arange(N, dtype=np.int64),
        multiplier=np.full(N, 1 << 30, np.int64),
        shift=np.zeros(N, np.int64),
        zero_point=3,
        lo=-128,
        hi=127,
        flip_in=False,
        flip_out=False,
    )


def _lower(job: GemmJob, config: ArrayConfig, start: int, table: bool) -> LayerCode:
    activation = Activation(np.arange(-128, 128), False) if table else None
    return lower_jobs([job], M * K * N, config, BumpAllocator(start), activation)


@pytest.mark.parametrize("dataflow", [Dataflow.WS, Dataflow.OS])
@pytest.mark.parametrize("table", [False, True])
def test_a_repeated_shape_gets_the_code_of_scheduling_it_afresh(
    dataflow: Dataflow, table: bool
) -> None:
    config = ArrayConfig(rows=4, cols=4, dataflow=dataflow)
    clear_templates()
    _lower(_job(1 << 16, 1 << 17), config, 1 << 18, table)  # the template
    moved = _lower(_job(5 << 16, 7 << 17), config, 3 << 18, table)
    clear_templates()
    afresh = _lower(_job(5 << 16, 7 << 17), config, 3 << 18, table)
    assert moved.instructions == afresh.instructions
    assert moved.stats == afresh.stats
    assert moved.segments == afresh.segments
    assert all(instr._checked_for is None for instr in moved.instructions
               if isinstance(instr, (Load, Store)))  # fmt: skip


def test_the_key_holds_what_the_plans_read() -> None:
    config = ArrayConfig(rows=4, cols=4)
    key = template_key(_job(1 << 16, 1 << 17), config, False)
    assert key == template_key(_job(9 << 16, 3 << 17), config, False)
    assert key != template_key(_job((1 << 16) + 4, 1 << 17), config, False)  # A's bus offset
    assert key != template_key(_job(1 << 16, 1 << 17), config, True)
    other = dataclasses.replace(config, dataflow=Dataflow.OS)
    assert key != template_key(_job(1 << 16, 1 << 17), other, False)


@pytest.mark.parametrize("dataflow", [Dataflow.WS, Dataflow.OS])
def test_bus_widths_with_the_same_plan_share_the_schedule(dataflow: Dataflow) -> None:
    narrow = ArrayConfig(rows=4, cols=4, dataflow=dataflow, bus_bytes=16)
    wide = dataclasses.replace(narrow, bus_bytes=64)
    job = _job(1 << 16, 1 << 17)
    keys = [template_key(job, config, False) for config in (narrow, wide)]
    assert keys[0] != keys[1]
    plans = [layer_plan(key, job, config) for key, config in zip(keys, (narrow, wide))]
    assert plans[0] == plans[1]  # (this shape's plan does not depend on the bus)
    assert schedule_key(keys[0], plans[0]) == schedule_key(keys[1], plans[1])
    clear_templates()
    _lower(job, narrow, 1 << 18, False)  # the template, scheduled at 16 bytes
    moved = _lower(_job(5 << 16, 7 << 17), wide, 3 << 18, False)
    clear_templates()
    afresh = _lower(_job(5 << 16, 7 << 17), wide, 3 << 18, False)
    assert moved.instructions == afresh.instructions
    assert moved.stats == afresh.stats


def test_a_plan_is_part_of_the_schedule_key() -> None:
    config = ArrayConfig(rows=4, cols=4)
    key = template_key(_job(1 << 16, 1 << 17), config, False)
    assert key is not None
    plan = layer_plan(key, _job(1 << 16, 1 << 17), config)
    other = dataclasses.replace(plan, group=plan.group + 1)
    assert schedule_key(key, plan) != schedule_key(key, other)


def test_a_moved_copy_equals_the_constructed_instruction() -> None:
    load = Load(LoadTarget.SPAD_IN, 3, 8, 1000, n0=4, row_stride0=64, row_stride1=640,
                k0=5, length=12, run=8, n_mid=3, stride_mid=64, stride_outer=1024)  # fmt: skip
    store = Store(0, 8, 4, 1, 3, -128, 127, 2000, n0=8, row_stride0=16)
    for instr in (load, store):
        object.__setattr__(instr, "_checked_for", ArrayConfig())
        moved = with_ext(instr, 123_456)
        assert moved == dataclasses.replace(instr, ext=123_456)
        assert moved._checked_for is None and instr.ext != 123_456
        with pytest.raises(SystolicError, match="ext"):
            with_ext(instr, -1)
