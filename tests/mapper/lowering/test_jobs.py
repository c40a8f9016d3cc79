"""`lower_jobs` and `planning_only`: inside the block a job is checked exactly as when its code
is emitted (the same errors, word for word) but gets no instructions and no constants."""

import numpy as np
import pytest

from systolic.config import ArrayConfig
from systolic.errors import ResourceError, UnsupportedError
from systolic.mapper.lowering.gemm import ElementWalk, GemmJob, RowBlock
from systolic.mapper.lowering.jobs import lower_jobs, planning_only
from systolic.mapper.lowering.layer_code import BumpAllocator, LayerCode

CONFIG = ArrayConfig(rows=4, cols=4)


def _job(weights: np.ndarray) -> GemmJob:
    k, n = weights.shape
    m = 6
    return GemmJob(
        label="fc",
        a_rows=(RowBlock(0, m, m, k, 0),),
        y_rows=(RowBlock(4096, m, m, n, 0),),
        walk=ElementWalk(k, 1, 0, 0),
        weights=weights.astype(np.int64),
        bias=np.arange(n, dtype=np.int64),
        multiplier=np.full(n, 1 << 30, np.int64),
        shift=np.zeros(n, np.int64),
        zero_point=0,
        lo=-128,
        hi=127,
        flip_in=False,
        flip_out=False,
    )


def _lower(job: GemmJob, config: ArrayConfig) -> LayerCode:
    return lower_jobs([job], job.rows * job.k * job.n, config, BumpAllocator(1 << 16))


def test_planning_emits_nothing_but_keeps_the_work() -> None:
    job = _job(np.arange(-20, 20).reshape(8, 5) % 7)
    code = _lower(job, CONFIG)
    with planning_only():
        planned = _lower(job, CONFIG)
    assert code.instructions and len(code.segments) == 2
    assert planned.instructions == () and planned.segments == ()
    assert planned.stats.macs == code.stats.macs == 6 * 8 * 5
    assert planned.stats.ideal_cycles == code.stats.ideal_cycles
    assert (planned.stats.busy_cycles, planned.stats.occupied_cycles) == (0, 0)


def test_planning_ends_with_the_block() -> None:
    job = _job(np.ones((4, 4)))
    with planning_only():
        assert _lower(job, CONFIG).instructions == ()
    assert _lower(job, CONFIG).instructions


@pytest.mark.parametrize(
    ("weights", "config", "error"),
    [
        (np.full((8, 4), 127), ArrayConfig(rows=4, cols=4, acc_width=16), ResourceError),
        (np.full((4, 4), 200), CONFIG, UnsupportedError),
    ],
    ids=["accumulator", "weight-width"],
)
def test_planning_refuses_what_compiling_refuses(
    weights: np.ndarray, config: ArrayConfig, error: type[Exception]
) -> None:
    job = _job(weights)
    with pytest.raises(error) as emitted:
        _lower(job, config)
    with planning_only(), pytest.raises(error) as planned:
        _lower(job, config)
    assert str(planned.value) == str(emitted.value)
    assert str(planned.value).startswith("layer 'fc': ")
