"""`systolic compare` over a workload: --model PATH[:WEIGHT], --workload FILE.toml, the
weighted figures in the JSON, CSV and table, --jobs and --no-cache, and the option errors."""

import csv
import json
import shutil
from pathlib import Path

import pytest

from systolic.commands.cli import main
from systolic.examples import example_path

GRID = ["--array", "4x4,8x8", "--dataflow", "ws", "--clock-mhz", "500"]


@pytest.fixture(autouse=True)
def cache_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "cache"
    monkeypatch.setenv("SYSTOLIC_CACHE_DIR", str(folder))
    return folder


def _models(tmp_path: Path) -> tuple[str, str]:
    a, b = tmp_path / "a.onnx", tmp_path / "b.onnx"
    shutil.copy(example_path(), a)
    shutil.copy(example_path(), b)
    return str(a), str(b)


def _json(args: list[str], capsys: pytest.CaptureFixture[str]) -> dict:  # type: ignore[type-arg]
    assert main(["compare", *GRID, *args, "--json", "-"]) == 0
    return json.loads(capsys.readouterr().out)


def test_two_weighted_models(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    a, b = _models(tmp_path)
    single = _json([a, "--jobs", "1", "--no-cache"], capsys)
    report = _json(["--model", f"{a}:1", "--model", f"{b}:3", "--jobs", "2"], capsys)
    assert report["model"] == f"{a} + {b}" and report["clock_mhz"] == 500
    assert report["workload"]["models"] == [{"model": a, "weight": 1}, {"model": b, "weight": 3}]
    assert [(c["label"], c["model"]) for c in report["configurations"]] == [
        ("4x4", a), ("4x4", b), ("8x8", a), ("8x8", b)]  # fmt: skip
    for entry, alone in zip(report["workload"]["configurations"], single["configurations"],
                            strict=True):  # fmt: skip
        assert entry["cycles"] == [alone["total_cycles"]] * 2
        assert entry["weighted_cycles"] == 4 * alone["total_cycles"]
        assert entry["time_ms"] == pytest.approx(4 * alone["total_cycles"] / 500_000)
        assert alone["time_ms"] == pytest.approx(alone["total_cycles"] / 500_000)
        assert entry["pes"] == entry["config"]["rows"] * entry["config"]["cols"]
    assert [e["pareto"] for e in report["workload"]["configurations"]] == [True, True]


def test_csv_and_table_of_a_workload_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    a, b = _models(tmp_path)
    toml = tmp_path / "mix.toml"
    toml.write_text('[[model]]\npath = "a.onnx"\n[[model]]\npath = "b.onnx"\nweight = 2\n')
    out_csv = tmp_path / "r.csv"
    assert main(["compare", *GRID, "--workload", str(toml), "--csv", str(out_csv)]) == 0
    text = capsys.readouterr().out
    assert "time at 500 MHz; * Pareto-optimal in time, PEs, SRAM, energy and area" in text
    assert "area mm²" in text
    assert "weighted cycles" in text
    rows = list(csv.DictReader(out_csv.read_text().splitlines()))
    totals = [r for r in rows if r["layer"] == "(total)"]
    weighted = [r for r in rows if r["layer"] == "(workload)"]
    assert [r["model"] for r in totals] == [a, b, a, b]
    assert [r["weight"] for r in totals] == ["1", "2"] * 2
    for i, row in enumerate(weighted):
        cycles = int(totals[2 * i]["cycles"])
        assert int(row["cycles"]) == 3 * cycles
        assert float(row["time_ms"]) == pytest.approx(3 * cycles / 500_000)
        assert row["pareto"] == "true" and row["error"] == ""
        energy = float(totals[2 * i]["energy_pj"]) + 2 * float(totals[2 * i + 1]["energy_pj"])
        assert float(row["energy_pj"]) == pytest.approx(energy, abs=0.01)


def test_cache_is_filled_and_no_cache_bypasses_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], cache_dir: Path
) -> None:
    a, _ = _models(tmp_path)
    first = _json([a, "--jobs", "1", "--no-cache"], capsys)
    assert not cache_dir.exists()
    assert _json([a, "--jobs", "2"], capsys) == first
    assert len(list(cache_dir.rglob("*.json"))) == 2
    assert _json([a], capsys) == first


@pytest.mark.parametrize(
    ("args", "message"),
    [(["x.onnx", "--model", "y.onnx"], ("give one of MODEL, --model, --workload and --topology, "
                                       "not MODEL and --model")),
     (["--model", "x.onnx", "--model", "y.onnx", "--input", "i.npy"],
      "--input is for one model; this workload has several"),
     (["--jobs", "0"], "--jobs must be at least 1, not 0"),
     (["--clock-mhz", "0"], "--clock-mhz must be a number above 0, not 0"),
     (["--scheduler", "localhost"], ("--scheduler 'localhost' is not an address such as "
                                    "tcp://HOST:8786"))],
)  # fmt: skip
def test_option_errors(args: list[str], message: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["compare", *args]) == 2
    assert capsys.readouterr().err == f"systolic: error: {message}\n"


def test_progress_counts_points_and_outputs_spare_the_models(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    a, b = _models(tmp_path)
    assert main(["compare", *GRID, "--model", a, "--model", f"{b}:2", "--jobs", "1"]) == 0
    err = capsys.readouterr().err.splitlines()
    assert [line.split()[1] for line in err] == ["1/4", "2/4", "3/4", "4/4"]
    assert main(["compare", "--model", a, "--model", b, "--csv", b]) == 2
    message = f"--csv {b!r} would overwrite the model, --topology or --input file"
    assert capsys.readouterr().err == f"systolic: error: {message}: choose another path\n"
