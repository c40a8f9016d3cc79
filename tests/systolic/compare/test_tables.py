"""The printed tables, the CSV and the JSON of a sweep agree with the results."""

import csv
import io
import json

import pytest

from systolic.compare.grid import config_grid
from systolic.compare.result import SCHEMA, CompareReport, ConfigResult
from systolic.compare.sweep import PreparedModel, sweep
from systolic.compare.tables import (
    CSV_COLUMNS,
    TOTAL_ROW,
    render_layers,
    render_summary,
    to_csv,
)
from systolic.config import ArrayConfig


@pytest.fixture(scope="module")
def results(lenet: PreparedModel) -> list[ConfigResult]:
    return sweep(lenet, config_grid(ArrayConfig(), arrays=["4x4", "8x8"], dataflows=["ws", "os"]))


def test_summary_has_a_row_per_configuration(results: list[ConfigResult]) -> None:
    lines = render_summary(results).splitlines()
    assert lines[0].split()[:3] == ["configuration", "total", "cycles"]
    assert len(lines) == 1 + len(results)
    for line, result in zip(lines[1:], results, strict=True):
        assert line.startswith(result.label)
        cells = line[len(result.label):].split()
        assert cells[0] == f"{result.total_cycles:,}"
        assert cells[1] == f"{result.stall_cycles:,}"
        assert cells[4] == f"{result.ratio_to_ideal:.3f}"
        array_macs = sum(layer.macs for layer in result.layers if layer.unit == "array")
        all_macs = sum(layer.macs for layer in result.layers)
        assert cells[6] == f"{100 * array_macs / all_macs:.1f}%"


def test_layers_side_by_side(results: list[ConfigResult]) -> None:
    lines = render_layers(results).splitlines()
    for result in results:
        assert f"{result.label}: cycles" in lines[0]
    conv = next(line.split() for line in lines if line.startswith("conv2_Conv "))
    cells = conv[3:]  # cycles, stalls, util per configuration
    assert len(cells) == 3 * len(results)
    for i, result in enumerate(results):
        layer = next(layer for layer in result.layers if layer.name == "conv2_Conv")
        assert cells[3 * i : 3 * i + 3] == [
            f"{layer.cycles:,}", f"{layer.stall_cycles:,}",
            f"{100 * layer.utilization(result.config.pes):.1f}%",
        ]  # fmt: skip
    host = next(line.split() for line in lines if line.startswith("input_QuantizeLinear "))
    assert host[3:6] == ["host", "-", "-"]
    assert lines[-1].split()[0] == "total"


def test_csv_rows_match_the_results(results: list[ConfigResult]) -> None:
    rows = list(csv.DictReader(io.StringIO(to_csv(results))))
    assert len(rows) == sum(len(r.layers) + 1 for r in results)
    assert list(rows[0]) == list(CSV_COLUMNS)
    position = 0
    for result in results:
        config = result.config
        for layer in result.layers:
            row = rows[position]
            position += 1
            assert row["configuration"] == result.label
            assert (int(row["rows"]), int(row["cols"]), row["dataflow"], int(row["bus_bytes"])) \
                == (config.rows, config.cols, config.dataflow.value, config.bus_bytes)
            assert (row["layer"], row["op"], row["unit"]) == (layer.name, layer.op, layer.unit)
            assert int(row["cycles"]) == layer.cycles
            assert int(row["stall_cycles"]) == layer.stall_cycles
            assert int(row["macs"]) == layer.macs
            assert float(row["utilization"]) == pytest.approx(
                layer.utilization(config.pes), abs=1e-6
            )
        total = rows[position]
        position += 1
        assert (total["layer"], total["unit"]) == (TOTAL_ROW, "all")
        assert int(total["cycles"]) == result.total_cycles
        assert int(total["stall_cycles"]) == result.stall_cycles
        assert int(total["ideal_cycles"]) == result.ideal_cycles


def test_json_round_trip(results: list[ConfigResult]) -> None:
    report = CompareReport("model", "bundled:lenet_qdq", "model", "random seed 0", results)
    document = json.loads(json.dumps(report.to_json()))
    assert document["schema"] == SCHEMA
    assert (document["source"], document["model"], document["backend"]) == (
        "model", "bundled:lenet_qdq", "model"
    )  # fmt: skip
    assert len(document["configurations"]) == len(results)
    for entry, result in zip(document["configurations"], results, strict=True):
        assert entry["label"] == result.label
        assert entry["config"] == result.config.to_dict()
        assert entry["total_cycles"] == result.total_cycles == sum(
            layer["cycles"] for layer in entry["layers"]
        )
        assert entry["stall_cycles"] == sum(layer["stall_cycles"] for layer in entry["layers"])
        array = [layer for layer in entry["layers"] if layer["unit"] == "array"]
        assert entry["array_cycles"] == sum(layer["cycles"] for layer in array)
        assert entry["ideal_cycles"] == sum(layer["ideal_cycles"] for layer in array)
        assert entry["macs"] == sum(layer["macs"] for layer in array)
        assert entry["utilization"] == pytest.approx(
            entry["macs"] / (entry["array_cycles"] * result.config.pes), abs=1e-6
        )
        assert entry["ratio_to_ideal"] == pytest.approx(
            entry["array_cycles"] / entry["ideal_cycles"], abs=1e-6
        )
        assert [layer["name"] for layer in entry["layers"]] == [
            layer.name for layer in result.layers
        ]


def test_the_layer_table_fits_the_width_it_is_given(lenet) -> None:
    from systolic.compare.grid import config_grid
    from systolic.compare.sweep import sweep
    from systolic.config import ArrayConfig

    configs = config_grid(ArrayConfig(), arrays=["4x4", "8x8", "16x16"], dataflows=["ws", "os"])
    results = sweep(lenet, configs)
    wide = render_layers(results)
    assert max(map(len, wide.splitlines())) > 120
    for width in (60, 80, 120):
        fitted = render_layers(results, width)
        assert max(map(len, fitted.splitlines())) <= width
        for result in results:
            assert f"{result.total_cycles:,}" in fitted
