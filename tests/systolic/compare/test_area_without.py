"""The area model's savings for omitted units (systolic/compare/area_without.py): measured
fractions, the sum of single units' savings for an unmeasured set, the estimate scaled by
them; the stored measurements make every slim configuration smaller."""

import dataclasses
import json
from pathlib import Path

import pytest

from systolic.compare.area_model import area_mm2, estimate
from systolic.compare.area_without import apply_savings, savings
from systolic.config import ArrayConfig, OptionalUnit

ROW_UNIT, TABLES = OptionalUnit.ROW_UNIT, OptionalUnit.TABLES


def _figures(cells: int, flip_flops: int) -> dict[str, dict[str, int]]:
    return {"store": {"cells": cells, "flip_flops": flip_flops, "memory_bits": 0}}


@pytest.fixture
def measured(tmp_path: Path) -> Path:
    path = tmp_path / "area_without.json"
    path.write_text(json.dumps({"measurements": [
        {"without": [], "components": _figures(1000, 400)},
        {"without": ["row-unit"], "components": _figures(600, 300)},
        {"without": ["tables"], "components": _figures(900, 400)},
    ]}))
    return path


def test_savings_are_fractions_of_the_whole_design(measured: Path) -> None:
    assert savings(frozenset({ROW_UNIT}), measured)["store"] == pytest.approx(
        {"cells": 0.4, "flip_flops": 0.25, "memory_bits": 0.0})
    both = savings(frozenset({ROW_UNIT, TABLES}), measured)["store"]  # not measured: summed
    assert both == pytest.approx({"cells": 0.5, "flip_flops": 0.25, "memory_bits": 0.0})


def test_apply_savings_scales_the_estimate(measured: Path) -> None:
    whole = {"store": {"cells": 50.0, "flip_flops": 8.0, "memory_bits": 0.0}}
    config = ArrayConfig(rows=4, cols=4)
    assert apply_savings(whole, config, measured) is whole
    slim = apply_savings(whole, dataclasses.replace(config, without=frozenset({ROW_UNIT})),
                         measured)
    assert slim["store"] == pytest.approx({"cells": 30.0, "flip_flops": 6.0, "memory_bits": 0.0})


@pytest.mark.parametrize("size", [4, 8, 16, 32])
def test_stored_measurements_make_slim_configurations_smaller(size: int) -> None:
    full = ArrayConfig(rows=size, cols=size)
    areas = [area_mm2(dataclasses.replace(full, without=frozenset(units)))
             for units in ((), (ROW_UNIT,), (TABLES,), (ROW_UNIT, TABLES))]
    assert areas[0] > max(areas[1:3]) and min(areas[1:3]) > areas[3]
    assert estimate(full)["pe_array"] == estimate(
        dataclasses.replace(full, without=frozenset(OptionalUnit)))["pe_array"]
