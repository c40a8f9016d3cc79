"""Workloads (`systolic.compare.workload`): the --model and TOML forms, and a configuration's
weighted cycles and time over its models."""

import dataclasses
from pathlib import Path

import pytest

from systolic.compare.area_model import area_mm2
from systolic.compare.grid import config_grid
from systolic.compare.sweep import PreparedModel, sweep
from systolic.compare.workload import (
    WorkloadModel,
    combine,
    cycles_to_ms,
    parse_model_option,
    read_workload,
)
from systolic.config import ArrayConfig
from systolic.errors import ConfigError


def test_model_option_weight_is_optional() -> None:
    assert parse_model_option("resnet50.onnx:4") == WorkloadModel("resnet50.onnx", 4.0)
    assert parse_model_option("bert.onnx:0.5") == WorkloadModel("bert.onnx", 0.5)
    assert parse_model_option("bert.onnx") == WorkloadModel("bert.onnx", 1.0)
    assert parse_model_option("c:/models/x.onnx") == WorkloadModel("c:/models/x.onnx", 1.0)
    with pytest.raises(ConfigError, match=r"^model 'a.onnx': the weight must be a number "
                                          r"above 0, not 0.0$"):  # fmt: skip
        parse_model_option("a.onnx:0")


def test_workload_file_paths_are_relative_to_it(tmp_path: Path) -> None:
    folder = tmp_path / "w"
    folder.mkdir()
    toml = folder / "mix.toml"
    toml.write_text('[[model]]\npath = "a.onnx"\nweight = 3\n\n[[model]]\npath = "/x/b.onnx"\n')
    assert read_workload(toml) == [WorkloadModel(str(folder / "a.onnx"), 3.0),
                                   WorkloadModel("/x/b.onnx", 1.0)]  # fmt: skip


@pytest.mark.parametrize(
    ("text", "message"),
    [("title = 'x'\n", "lists no models"),
     ('[[model]]\nweight = 2\n', "model 1 needs path"),
     ('[[model]]\npath = "a"\nweight = true\n', "model 1 needs path"),
     ('[[model]]\npath = "a"\nfile = "b"\n', "model 1 needs path"),
     ("[[model]\n", "Expected")],
)  # fmt: skip
def test_a_bad_workload_file_is_one_error(tmp_path: Path, text: str, message: str) -> None:
    toml = tmp_path / "bad.toml"
    toml.write_text(text)
    with pytest.raises(ConfigError, match=rf"^--workload '{toml}'.*{message}"):
        read_workload(toml)


def test_weighted_cycles_and_time(lenet: PreparedModel) -> None:
    configs = config_grid(ArrayConfig(), arrays=["4x4", "8x8"], dataflows=["ws"])
    results = sweep(lenet, configs)
    models = [WorkloadModel("a", 1.0), WorkloadModel("b", 2.5)]
    workload = combine(models, [results, results], clock_mhz=250)
    for entry, result in zip(workload, results, strict=True):
        assert entry.config == result.config and entry.label == result.label
        assert entry.weighted_cycles == 3.5 * result.total_cycles
        assert entry.time_ms == entry.weighted_cycles / 250_000
        assert entry.to_json()["cycles"] == [result.total_cycles] * 2
        assert entry.sram_kib == result.config.spad_kib + result.config.acc_kib
        assert result.energy_pj is not None and result.energy_pj > 0
        assert entry.energy_pj == pytest.approx(3.5 * result.energy_pj)
        assert entry.costs() == (entry.time_ms, result.config.pes, entry.sram_kib, entry.energy_pj,
                                 area_mm2(result.config))
        assert entry.to_json()["area_mm2"] == round(area_mm2(result.config), 6) > 0
        assert entry.to_json()["energy_pj"] == round(3.5 * result.energy_pj, 3)
    assert cycles_to_ms(2_000_000, 1000) == 2.0


def test_a_failed_model_fails_its_configuration(lenet: PreparedModel) -> None:
    configs = config_grid(ArrayConfig(), arrays=["4x4"], dataflows=["ws", "os"])
    good = sweep(lenet, configs)
    bad = [good[0], dataclasses.replace(good[1], layers=(), total_cycles=0, error="too big")]
    entries = combine([WorkloadModel("a"), WorkloadModel("b")], [good, bad], clock_mhz=100)
    assert [e.error for e in entries] == ["", "b: too big"]
    assert entries[1].to_json()["time_ms"] is None
    assert entries[1].to_json()["cycles"] == [good[1].total_cycles, None]
