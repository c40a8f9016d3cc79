"""`systolic.compare.area_model`: the stored fit, its error on held-out configurations, and
predictions that grow with the configuration (no synthesis: the points are package data)."""

import dataclasses

import pytest

from systolic.compare.area_model import (
    BOTH_FACTORS,
    FIGURES,
    HELD_OUT_COMPONENT_ERROR,
    HELD_OUT_TOTAL_ERROR,
    area_mm2,
    estimate,
    fit,
    load_coefficients,
    load_points,
    relative_errors,
)
from systolic.config import ArrayConfig, Dataflow


def test_stored_coefficients_are_the_fit_of_the_stored_fit_points() -> None:
    points = load_points()
    refitted = fit([p for p in points if p.role == "fit"])
    stored = load_coefficients()
    for component, figures in refitted.items():
        for figure in FIGURES:
            assert stored[component][figure] == pytest.approx(figures[figure], rel=1e-6, abs=1e-6)


def test_held_out_configurations_are_predicted_within_the_stated_error() -> None:
    points = load_points()
    fitted = {p.config for p in points if p.role == "fit"}
    held = [p for p in points if p.role == "held_out"]
    assert len(held) >= 2 and not fitted & {p.config for p in held}
    assert max(p.config.pes for p in held) > max(c.pes for c in fitted)  # extrapolation too
    coefficients = fit([p for p in points if p.role == "fit"])
    for point in held:
        errors = relative_errors(coefficients, point)
        assert errors["total"] <= HELD_OUT_TOTAL_ERROR, (point.config, errors)
        component_errors = {k: v for k, v in errors.items() if k != "total"}
        assert max(component_errors.values()) <= HELD_OUT_COMPONENT_ERROR, (point.config, errors)


def test_predictions_grow_with_the_array_and_the_memories() -> None:
    base = ArrayConfig(spad_kib=256, acc_kib=64)
    arrays = [dataclasses.replace(base, rows=n, cols=n) for n in (2, 4, 8, 16, 32, 64)]
    areas = [area_mm2(config) for config in arrays]
    assert areas == sorted(areas) and len(set(areas)) == len(areas)
    assert area_mm2(dataclasses.replace(base, spad_kib=512)) > area_mm2(base)
    assert area_mm2(dataclasses.replace(base, acc_kib=128)) > area_mm2(base)
    big = estimate(dataclasses.replace(base, rows=32, cols=32))
    small = estimate(dataclasses.replace(base, rows=8, cols=8))
    assert big["pe_array"]["cells"] > 10 * small["pe_array"]["cells"]  # about 16x the PEs
    assert big["scratchpad"]["memory_bits"] == pytest.approx(256 * 8192, rel=1e-6)
    assert all(v >= 0 for figures in big.values() for v in figures.values())


def test_an_array_of_both_dataflows_costs_its_measured_factors() -> None:
    """BOTH: the PE array and EXECUTE control scaled by `BOTH_FACTORS` (synthesized 4x4
    ratios), the other components as the single-dataflow estimate."""
    ws = ArrayConfig(rows=16, cols=16)
    both = dataclasses.replace(ws, dataflow=Dataflow.BOTH)
    single, either = estimate(ws), estimate(both)
    for component, figures in single.items():
        for figure, value in figures.items():
            factor = BOTH_FACTORS.get(component, {}).get(figure, 1.0)
            assert either[component][figure] == pytest.approx(value * factor)
    assert either["pe_array"]["cells"] > single["pe_array"]["cells"]
    assert area_mm2(both) > area_mm2(ws) == area_mm2(dataclasses.replace(ws, dataflow=Dataflow.OS))
