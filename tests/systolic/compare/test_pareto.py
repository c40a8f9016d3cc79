"""The Pareto front (`systolic.compare.pareto`)."""

import itertools

from systolic.compare.grid import config_grid
from systolic.compare.pareto import dominates, mark_pareto, pareto_front
from systolic.compare.sweep import PreparedModel, sweep
from systolic.compare.workload import WorkloadModel, combine
from systolic.config import ArrayConfig


def test_front_of_small_sets() -> None:
    points = [(1.0, 2.0), (2.0, 1.0), (2.0, 2.0), (1.0, 2.0), None, (3.0, 0.5)]
    assert pareto_front(points) == [True, True, False, True, False, True]
    assert pareto_front([]) == []
    assert pareto_front([None]) == [False]
    assert dominates((1, 1), (1, 2)) and not dominates((1, 2), (1, 2))


def test_marked_configurations_are_the_undominated_ones(lenet: PreparedModel) -> None:
    configs = config_grid(ArrayConfig(), arrays=["4x4", "8x8", "16x16"], dataflows=["ws", "os"],
                          spad_kib=[256, 512], bus_bytes=[8, 16])  # fmt: skip
    workload = mark_pareto(combine([WorkloadModel("lenet")], [sweep(lenet, configs)], 500))
    front = [e for e in workload if e.pareto]
    assert front and len(front) < len(workload)
    for a, b in itertools.permutations(front, 2):
        assert not dominates(a.costs(), b.costs())
    for entry in workload:
        if not entry.pareto:
            assert any(dominates(f.costs(), entry.costs()) for f in front)
    assert all(e.to_json()["pareto"] == e.pareto for e in workload)
    assert all(len(e.costs()) == 5 for e in workload)  # time, PEs, SRAM, energy and area


def test_energy_alone_can_make_a_configuration_optimal(lenet: PreparedModel) -> None:
    """Two configurations equal in time, PEs and SRAM: the lower energy dominates."""
    import dataclasses

    config = ArrayConfig(rows=4, cols=4)
    result = sweep(lenet, [config])[0]
    layers = result.layers
    cheaper = tuple(dataclasses.replace(layer, energy=tuple(0.5 * e for e in layer.energy))
                    for layer in layers)  # fmt: skip
    results = [result, dataclasses.replace(result, label="cheaper", layers=cheaper)]
    workload = mark_pareto(combine([WorkloadModel("m")], [results], 500))
    assert [e.pareto for e in workload] == [False, True]
