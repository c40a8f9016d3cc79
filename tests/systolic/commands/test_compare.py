"""`systolic compare`: the bundled example end to end with every output file, --topology,
and errors (one line, exit 2, nothing written)."""

import csv
import json
import sys
from pathlib import Path

import pytest

from systolic.commands.cli import main
from systolic.compare.topology import parse_topology

SMALL_TOPOLOGY = """Layer name, IFMAP Height, IFMAP Width, Filter Height, Filter Width, Channels, Num Filter, Strides,
Conv1,14,14,5,5,3,8,2,
CB2a_2,8,8,3,3,8,8,1,
FC,1,1,1,1,32,10,1,
"""


def test_bundled_example_writes_every_output(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pytest.importorskip("matplotlib")
    files = {name: tmp_path / name for name in ("r.csv", "r.json", "r.png", "topo.csv")}
    status = main(["compare", "--array", "4x4,8x8", "--bus-bytes", "16",
                   "--csv", str(files["r.csv"]), "--json", str(files["r.json"]),
                   "--plot", str(files["r.png"]),
                   "--scalesim-topology", str(files["topo.csv"])])  # fmt: skip
    assert status == 0
    out = capsys.readouterr().out
    assert out.startswith("bundled:lenet_qdq: 4 configurations, backend model\n")
    for label in ("4x4 ws", "4x4 os", "8x8 ws", "8x8 os"):
        assert f"\n{label} " in out and f"{label}: cycles" in out
    report = json.loads(files["r.json"].read_text())
    assert report["schema"] == "systolic.compare/1" and report["source"] == "model"
    assert [c["label"] for c in report["configurations"]] == ["4x4 ws", "4x4 os", "8x8 ws",
                                                              "8x8 os"]  # fmt: skip
    rows = list(csv.DictReader(files["r.csv"].read_text().splitlines()))
    totals = {r["configuration"]: int(r["cycles"]) for r in rows if r["layer"] == "(total)"}
    assert totals == {c["label"]: c["total_cycles"] for c in report["configurations"]}
    for config in report["configurations"]:
        for layer in config["layers"]:
            row = next(r for r in rows
                       if r["configuration"] == config["label"] and r["layer"] == layer["name"])
            assert int(row["cycles"]) == layer["cycles"]
            assert int(row["stall_cycles"]) == layer["stall_cycles"]
    assert files["r.png"].read_bytes().startswith(b"\x89PNG\r\n\x1a\n")
    layers = parse_topology(files["topo.csv"].read_text())
    assert [layer.name for layer in layers] == ["conv1_Conv", "conv2_Conv", "fc1_Gemm",
                                                "fc2_Gemm"]  # fmt: skip
    assert sum(layer.macs for layer in layers) == report["configurations"][0]["macs"]
    for path in files.values():
        assert f"wrote {path}" in out


def test_json_to_stdout(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["compare", "--array", "4x4", "--dataflow", "os", "--json", "-"]) == 0
    captured = capsys.readouterr()
    report = json.loads(captured.out)
    assert [c["label"] for c in report["configurations"]] == ["4x4 os"]
    assert captured.err == ""


def test_topology_input(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    topology = tmp_path / "in.csv"
    topology.write_text(SMALL_TOPOLOGY)
    target = tmp_path / "r.json"
    assert main(["compare", "--topology", str(topology), "--array", "4x4,8x8",
                 "--dataflow", "ws", "--json", str(target), "--quiet"]) == 0  # fmt: skip
    assert capsys.readouterr().out == ""
    report = json.loads(target.read_text())
    assert report["source"] == "topology" and report["model"] == str(topology)
    assert report["input_source"] == "random weights seed 0"
    small, large = report["configurations"]
    assert [layer["name"] for layer in small["layers"]] == ["Conv1", "CB2a_2", "FC"]
    assert all(layer["cycles"] > 0 for layer in small["layers"])
    assert large["total_cycles"] < small["total_cycles"]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--array", "4y4"], "array size '4y4' is not of the form RxC"),
        (["--dataflow", "ws,xs"], "unknown dataflow 'xs'"),
        (["--bus-bytes", "3"], "bus_bytes must be a power of two"),
        (["--spad-kib", "a"], "--spad-kib: 'a' is not a whole number"),
        (["--backend", "spice"], "unknown simulation backend 'spice'"),
        (["--plot", "{tmp}/p.bmp"], "must name a .png, .svg or .pdf file"),
        (["--csv", "{tmp}/same", "--json", "{tmp}/same"], "must name different files"),
        (["--topology", "{tmp}/t.csv", "MODEL"], "give a MODEL or --topology, not both"),
        (["--topology", "{tmp}/t.csv", "--scalesim-topology", "{tmp}/o.csv"], "use one of them"),
        (["--topology", "{tmp}/bad.csv"], "not a SCALE-Sim header"),
        (["--topology", "{tmp}/missing.csv"], "No such file"),
        (["{tmp}/missing.onnx"], "missing.onnx"),
        (["--json", "{tmp}"], "is a folder: name a file to write"),
        (["--plot", "{tmp}/t.csv/p.png"], "is a file, not a folder"),
        (["--topology", "{tmp}/t.csv", "--csv", "{tmp}/t.csv"], "would overwrite the model"),
    ],
)
def test_errors_are_one_line_and_write_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], args: list[str], message: str
) -> None:
    (tmp_path / "t.csv").write_text(SMALL_TOPOLOGY)
    (tmp_path / "bad.csv").write_text("name,a,b\nx,1,2\n")
    before = set(tmp_path.iterdir())
    argv = [a.replace("{tmp}", str(tmp_path)) for a in args]
    if "MODEL" in argv:
        argv[argv.index("MODEL")] = str(Path(__file__))
    out_csv = tmp_path / "out.csv"
    if "--csv" not in argv:
        argv += ["--csv", str(out_csv)]
    assert main(["compare", *argv]) == 2
    err = capsys.readouterr().err
    assert err.startswith("systolic: error: ") and err.count("\n") == 1
    assert message in err
    assert set(tmp_path.iterdir()) == before


def test_missing_matplotlib_fails_before_any_work(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    status = main(["compare", "--plot", str(tmp_path / "p.png"),
                   "--json", str(tmp_path / "r.json")])  # fmt: skip
    assert status == 2
    assert "pip install 'systolic[plot]'" in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("option", ["--csv", "--json", "--scalesim-topology"])
def test_never_overwrites_the_model_or_input(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], option: str
) -> None:
    models = Path(__file__).resolve().parents[2] / "models"
    model = tmp_path / "m.onnx"
    model.write_bytes((models / "mlp_float.onnx").read_bytes())
    inputs = tmp_path / "x.npz"
    inputs.write_bytes((models / "mlp_inputs.npz").read_bytes())
    before = {path: path.read_bytes() for path in (model, inputs)}
    for target in (model, inputs):
        assert main(["compare", str(model), "--input", str(inputs), option, str(target)]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and "would overwrite the model, --topology or --input" in err
    assert {path: path.read_bytes() for path in before} == before
    assert set(tmp_path.iterdir()) == set(before)


def test_the_model_backends_engine_is_printed_and_reported(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("SYSTOLIC_NATIVE", "0")
    target = tmp_path / "r.json"
    assert main(["compare", "--array", "4x4", "--dataflow", "ws", "--json", str(target)]) == 0
    second = capsys.readouterr().out.splitlines()[1]
    assert second.startswith("engine: Python specification (") and "SYSTOLIC_NATIVE=0" in second
    assert json.loads(target.read_text())["engine"] == "python"


def test_energy_per_configuration_and_a_users_table(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("SYSTOLIC_CACHE_DIR", str(tmp_path / "cache"))
    grid = ["--array", "4x4", "--dataflow", "ws", "--jobs", "1"]
    energies = []
    for extra in ([], ["--energy-table", str(tmp_path / "t.toml")]):
        (tmp_path / "t.toml").write_text("[dram]\nread_bit = 0\nwrite_bit = 0\n")
        out = tmp_path / "r.json"
        assert main(["compare", *grid, *extra, "--json", str(out), "--quiet"]) == 0
        document = json.loads(out.read_text())
        entry = document["configurations"][0]
        layers = sum(layer["energy_pj"] or 0 for layer in entry["layers"])
        assert entry["energy_pj"] == pytest.approx(layers, abs=0.01)
        assert document["workload"]["configurations"][0]["energy_pj"] == entry["energy_pj"]
        energies.append(entry["energy_pj"])
    assert 0 < energies[1] < energies[0]  # no DRAM energy; not the cached default's figure
    assert main(["compare", *grid]) == 0
    assert "energy uJ" in capsys.readouterr().out
    (tmp_path / "t.toml").write_text("[dram]\nread_bit = -1\n")
    assert main(["compare", *grid, "--energy-table", str(tmp_path / "t.toml")]) == 2
    assert "dram.read_bit must be a non-negative number" in capsys.readouterr().err


def test_both_dataflows_are_a_point_of_the_grid(capsys: pytest.CaptureFixture[str]) -> None:
    """`--dataflow ws,os,both` on the bundled LeNet: the array of both dataflows takes no more
    cycles than the faster single one (each layer's dataflow chosen by the cycle model)."""
    assert main(["compare", "--array", "4x4", "--dataflow", "ws,os,both", "--json", "-"]) == 0
    report = json.loads(capsys.readouterr().out)
    totals = {c["label"]: c["total_cycles"] for c in report["configurations"]}
    assert list(totals) == ["ws", "os", "both"]  # (the labels name what varies)
    assert totals["both"] <= min(totals["ws"], totals["os"])
