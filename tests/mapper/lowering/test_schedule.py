"""Ring: spans handed out in turn, remembered until overwritten, clear of spans in use."""

import numpy as np
import pytest

from systolic.config import ArrayConfig, Dataflow
from systolic.isa.instructions import Compute, ComputeOS, Instruction, Preload
from systolic.mapper.lowering.gemm import ElementWalk, GemmJob, RowBlock
from systolic.mapper.lowering.schedule import JobImage, Ring, Scheduler, forget_instructions


def test_spans_follow_each_other_and_wrap() -> None:
    ring = Ring(10)
    assert [ring.take(4, "a"), ring.take(4, "b"), ring.take(4, "c")] == [0, 4, 0]
    assert ring.find("a") is None  # overwritten by "c"
    assert ring.find("b") == 4
    assert ring.find("c") == 0


def test_a_span_avoids_rows_still_in_use() -> None:
    ring = Ring(12)
    ring.take(4, "a")
    ring.take(4, "b")
    assert ring.take(4, "c", avoid=[(8, 4)]) == 0
    assert ring.take(3, "d", avoid=[(0, 4), (4, 4)]) == 8
    assert ring.fits(6, avoid=[(0, 4), (6, 4)]) is None
    with pytest.raises(AssertionError, match="no span of 6 rows free"):
        ring.take(6, "e", avoid=[(0, 4), (6, 4)])


def test_remembered_spans_are_exactly_those_never_overwritten() -> None:
    rng = np.random.default_rng(4)
    ring = Ring(50)
    rows: list[object] = [None] * 50  # what each row holds, tracked naively
    sizes: dict[int, int] = {}
    for step in range(400):
        size = int(rng.integers(1, 12))
        avoid = [(int(s), int(rng.integers(1, 8))) for s in rng.integers(0, 45, rng.integers(0, 3))]
        start = ring.fits(size, avoid)
        if start is None:
            continue
        assert ring.take(size, step, avoid) == start
        assert not any(s < start + size and start < s + n for s, n in avoid)
        rows[start : start + size] = [step] * size
        sizes[step] = size
        for key in range(max(0, step - 30), step + 1):
            held = [r for r, owner in enumerate(rows) if owner == key]
            expected = held[0] if held and len(held) == sizes.get(key) else None
            assert ring.find(key) == expected


def _job(m: int, k: int, n: int) -> GemmJob:
    return GemmJob(
        label="fc", a_rows=(RowBlock(0, m, m, k, 0),), y_rows=(RowBlock(1 << 20, m, m, n, 0),),
        walk=ElementWalk(k, 1, 0, 0), weights=np.ones((k, n), np.int8),
        bias=np.zeros(n, np.int64), multiplier=np.full(n, 1 << 30, np.int64),
        shift=np.zeros(n, np.int64), zero_point=0, lo=-128, hi=127, flip_in=False,
        flip_out=False,
    )  # fmt: skip


@pytest.mark.parametrize(("dataflow", "shape"), [(Dataflow.WS, (300, 24, 12)),
                                               (Dataflow.OS, (2000, 8, 8))])
def test_equal_executes_of_a_layer_are_one_object(
    dataflow: Dataflow, shape: tuple[int, int, int]
) -> None:
    """The schedule builds each distinct PRELOAD/COMPUTE/COMPUTE.OS once (frozen values)."""
    config = ArrayConfig(rows=4, cols=4, dataflow=dataflow, spad_kib=4, acc_kib=2)
    scheduler = Scheduler(config)
    scheduler.emit(_job(*shape), JobImage(weights=1 << 16, params=1 << 18))
    executes = [i for i in scheduler.finish() if isinstance(i, (Preload, Compute, ComputeOS))]
    distinct = set(executes)
    assert len(distinct) < len(executes)
    assert len({id(instr) for instr in executes}) == len(distinct)


def test_schedulers_share_their_executes_until_forgotten() -> None:
    """Every scheduler of the process takes an equal EXECUTE from one table
    (`forget_instructions` empties it)."""
    config = ArrayConfig(rows=4, cols=4, spad_kib=4, acc_kib=2)

    def executes() -> list[Instruction]:
        scheduler = Scheduler(config)
        scheduler.emit(_job(300, 24, 12), JobImage(weights=1 << 16, params=1 << 18))
        return [i for i in scheduler.finish() if isinstance(i, (Preload, Compute))]

    forget_instructions()
    first, again = executes(), executes()
    assert first == again
    assert all(a is b for a, b in zip(first, again, strict=True))
    forget_instructions()
    fresh = executes()
    assert fresh == first
    assert not any(a is b for a, b in zip(first, fresh, strict=True))
