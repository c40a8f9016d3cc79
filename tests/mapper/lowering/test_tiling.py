"""Output-stationary plan costing (mapper/lowering/tiling.py): the LOAD/array pipeline and the
pruned choice among candidate plans give what the step-by-step definitions give."""

import random

import pytest

from systolic.mapper.lowering.tiling import OsPlan, _cheapest, _exact, _pipeline, _steps

Runs = list[tuple[int, int, float, float]]


def _reference_pipeline(steps: list[tuple[int, float, float]], w_ahead: int, a_ahead: int
                        ) -> list[float]:  # fmt: skip
    """`_pipeline`'s docstring step by step: all LOADs sorted by (the step they sit in, their
    step, weights before A), each starting once the LOAD unit is free and the array has
    finished the step before the one it sits in."""
    loads = sorted(
        [(max(i - w_ahead, 0), i, 0, w) for i, (_, _, w) in enumerate(steps) if w]
        + [(max(i - a_ahead, 0), i, 1, a) for i, (_, a, _) in enumerate(steps)]
    )
    done = [0.0] * len(steps)
    ends: list[float] = []
    free, cursor = 0.0, 0
    for i, (array, _, _) in enumerate(steps):
        while cursor < len(loads) and loads[cursor][0] <= i:
            place, step, _, cycles = loads[cursor]
            free = max(free, ends[place - 1] if place else 0.0) + cycles
            done[step] = free
            cursor += 1
        ends.append(max(ends[-1] if ends else 0.0, done[i]) + array)
    return ends


def _random_runs(rng: random.Random, exact: bool) -> Runs:
    figures = [2.0, 3.25, 18.5, 40.0, 120.75] if exact else [2.0, 3.1, 17.3, 0.7]
    return [
        (rng.choice([1, 2, 3, 7, 20]), rng.choice([16, 20, 33, 100]), rng.choice(figures),
         rng.choice([0, 0, 5.5, 64.0, 300.25]))
        for _ in range(rng.randint(1, 6))
    ]  # fmt: skip


def test_steps_expand_runs() -> None:
    assert _steps([(3, 16, 2.0, 9.0), (1, 20, 4.0, 0)]) == [
        (16, 2.0, 9.0), (16, 2.0, 0), (16, 2.0, 0), (20, 4.0, 0)]


@pytest.mark.parametrize("seed", range(4))
def test_pipeline_matches_the_step_by_step_definition(seed: int) -> None:
    rng = random.Random(seed)
    for _ in range(500):
        steps = _steps(_random_runs(rng, exact=rng.random() < 0.5))
        w_ahead, a_ahead = rng.randint(0, 4), rng.randint(0, 3)
        assert _pipeline(steps, w_ahead, a_ahead) == _reference_pipeline(steps, w_ahead, a_ahead)


def test_exact_needs_dyadic_figures_and_a_bounded_total() -> None:
    assert _exact([(4, 16, 2.25, 96.5), (2, 16, 3.0, 0)])
    assert not _exact([(4, 16, 0.1, 0)])  # 0.1 is no multiple of a power of two
    assert not _exact([(1, 16, -2.0, 0)])
    assert not _exact([(2**30, 2**10, 2.0, 0)])  # sums beyond 2**36 could round


def _every_candidate(candidates: list[tuple[Runs, int, OsPlan]], store: float) -> OsPlan:
    """The choice without pruning: every candidate simulated in order, the first of the
    least (max(time, store), LOAD cycles) kept."""
    best = None
    for runs, w_ahead, plan in candidates:
        steps = _steps(runs)
        key = (max(_pipeline(steps, w_ahead, 2)[-1], store), sum(a + w for _, a, w in steps))
        if best is None or key < best[0]:
            best = (key, plan)
    assert best is not None
    return best[1]


@pytest.mark.parametrize("exact", [True, False])
def test_cheapest_picks_what_simulating_every_candidate_picks(exact: bool) -> None:
    rng = random.Random(7)
    for _ in range(300):
        pool = [_random_runs(rng, exact) for _ in range(rng.randint(1, 4))]
        candidates = [(rng.choice(pool), rng.randint(0, 4), OsPlan(i + 1, 16, 16))
                      for i in range(rng.randint(1, 8))]  # equal runs: ties by order
        store = rng.choice([0.0, 500.0, 5000.0])
        assert _cheapest(candidates, store) == _every_candidate(candidates, store)
