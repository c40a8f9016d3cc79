"""The run's account of where work ran: from the per-layer rows, in the JSON and the text."""

import json
from pathlib import Path

import numpy as np
import onnx
import pytest

from systolic.commands.cli import main
from systolic.mapper.passes.report import DYNAMIC_SCALING
from systolic.simulation.coverage import coverage, layer_kind
from systolic.simulation.report import LayerResult

from .test_host_operators import conv_conv_transpose


def _rows() -> list[LayerResult]:
    return [
        LayerResult("conv", "QConv", "array", macs=3000, cycles=100),
        LayerResult("add", "QAdd", "vector", macs=0, cycles=20, elements=64),
        LayerResult("flat", "Flatten", "vector", macs=0, cycles=0, note="layout"),
        LayerResult("up", "ConvTranspose", "host", macs=1000, cycles=0, elements=2048,
                    host_bytes=2_500_000),
        LayerResult("q", "QuantizeLinear", "host", macs=0, cycles=0, elements=2048,
                    host_bytes=10_240),
    ]


def test_coverage_sums_the_rows() -> None:
    account = coverage(_rows())
    assert (account.array_macs, account.host_macs) == (3000, 1000)
    assert (account.vector_elements, account.host_elements) == (64, 4096)
    assert (account.host_layers, account.layers) == (2, 5)
    assert account.host_bytes == 2_510_240
    assert account.array_mac_share == 0.75


def test_coverage_line() -> None:
    assert coverage(_rows()).text() == (
        "coverage: 75.0% of MACs on the array; 1 of 1 element-wise layers on the "
        "accelerator; elementwise: 64 elements on the vector unit, "
        "4.1 k on the host; 2 of 5 layers on the host (4.1 k elements, "
        "2.5 MB to/from the host); totals are accelerator cycles only"
    )


def test_layer_kinds_separate_elementwise_work_from_layout_and_conversions() -> None:
    rows = [
        *_rows(),
        LayerResult("ln", "Sqrt", "host", macs=0, cycles=0, elements=16),
        LayerResult("split", "Split", "host", macs=0, cycles=0, elements=64),
        LayerResult("mm", "MatMul", "host", macs=512, cycles=0),
        LayerResult("table", "QTable", "vector", macs=0, cycles=8, elements=64),
        LayerResult("scale", "Mul", "host", macs=0, cycles=0, elements=64,
                    note=f"{DYNAMIC_SCALING}: scales MatMulInteger's int32 result"),
    ]
    assert [layer_kind(row) for row in rows] == [
        "array", "elementwise", "layout", "array", "conversion", "elementwise", "layout",
        "array", "elementwise", "conversion"]
    account = coverage(rows)
    assert (account.accelerator_elementwise_layers, account.host_elementwise_layers) == (2, 1)
    assert account.elementwise_layer_share == pytest.approx(2 / 3)
    assert account.to_json()["elementwise_layer_fraction"] == pytest.approx(2 / 3, abs=1e-6)
    assert "; 2 of 3 element-wise layers on the accelerator; " in account.text()


@pytest.mark.parametrize("op", ["Trilu", "TopK", "Hardmax", "OneHot", "EyeLike", "Compress",
                                "ReverseSequence", "ScatterElements", "CenterCropPad"])
def test_selection_ops_are_layout_not_elementwise_work(op: str) -> None:
    assert layer_kind(LayerResult("x", op, "host", macs=0, cycles=0, elements=64)) == "layout"


def test_a_model_without_macs_is_all_on_the_array() -> None:
    assert coverage([LayerResult("relu", "Relu", "host", 0, 0)]).array_mac_share == 1.0


def test_simulate_reports_the_host_share(tmp_path: Path,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    model, _ = conv_conv_transpose(np.random.default_rng(5), opset=9)  # a host ConvTranspose
    onnx.save(model, tmp_path / "m.onnx")
    assert main(["simulate", str(tmp_path / "m.onnx"), "--backend", "model", "--array", "4x4",
                 "--json", str(tmp_path / "r.json")]) == 0
    out = capsys.readouterr().out
    report = json.loads((tmp_path / "r.json").read_text())
    layers, account = report["layers"], report["coverage"]
    host = [layer for layer in layers if layer["unit"] == "host"]
    assert account["array_macs"] == sum(x["macs"] for x in layers if x["unit"] == "array") > 0
    assert account["host_macs"] == sum(x["macs"] for x in host) > 0  # the ConvTranspose
    assert account["host_layers"] == len(host) and account["layers"] == len(layers)
    # every host layer here reads and writes placed tensors of 1-byte or 4-byte elements
    assert account["host_bytes"] >= account["host_elements"] > 0
    share = account["array_macs"] / (account["array_macs"] + account["host_macs"])
    assert account["array_mac_fraction"] == pytest.approx(share, abs=1e-6)
    assert f"coverage: {100 * share:.1f}% of MACs on the array; " in out
    kinds = [layer_kind(LayerResult(x["name"], x["op"], x["unit"], x["macs"], x["cycles"],
                                    note=x["note"])) for x in layers]
    on_host = sum(kind == "elementwise" and x["unit"] == "host"
                  for kind, x in zip(kinds, layers, strict=True))
    assert account["host_elementwise_layers"] == on_host
    assert account["accelerator_elementwise_layers"] == kinds.count("elementwise") - on_host
    assert f"on the host; {len(host)} of {len(layers)} layers on the host" in out
    assert "cycles (accelerator only)" in out


def test_the_host_cost_model_adds_the_host_layers_cycles(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    model, _ = conv_conv_transpose(np.random.default_rng(5), opset=9)  # a host ConvTranspose
    onnx.save(model, tmp_path / "m.onnx")
    assert main(["simulate", str(tmp_path / "m.onnx"), "--backend", "model", "--array", "4x4",
                 "--host-ops-per-cycle", "3", "--clock-mhz", "100",
                 "--json", str(tmp_path / "r.json")]) == 0
    out = capsys.readouterr().out
    report = json.loads((tmp_path / "r.json").read_text())
    host = [layer for layer in report["layers"] if layer["unit"] == "host"]
    assert host and all(layer["host_cycles"] >= 0 for layer in report["layers"])
    assert all(layer["host_cycles"] == 0 for layer in report["layers"] if layer["unit"] != "host")
    coverage_ = report["coverage"]
    expected_host = sum(layer["host_cycles"] for layer in host)
    assert expected_host >= -(-(coverage_["host_macs"] + coverage_["host_elements"]) // 3) > 0
    totals = report["totals"]
    assert (totals["host_ops_per_cycle"], totals["host_cycles"]) == (3.0, expected_host)
    assert totals["cycles_with_host"] == totals["cycles"] + expected_host
    assert report["energy"]["latency_ms"] == pytest.approx(totals["cycles_with_host"] / 100_000)
    assert (f"total: {totals['cycles_with_host']:,} cycles ({totals['cycles']:,} on the "
            f"accelerator + {expected_host:,} estimated on the host at 3 operations per "
            "cycle)") in " ".join(out.split())
    assert "totals include the host's estimated cycles" in " ".join(out.split())
    assert "(accelerator only)" not in out


@pytest.mark.parametrize("value", ["0", "-2", "nan", "inf"])
def test_a_bad_host_cost_is_one_line(value: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["simulate", "--backend", "model", "--host-ops-per-cycle", value]) == 2
    err = capsys.readouterr().err
    assert err.startswith("systolic: error: --host-ops-per-cycle must be a number above 0")
    assert err.count("\n") == 1


def test_host_layer_cycles_round_up() -> None:
    from systolic.simulation.host_cost import host_layer_cycles

    assert host_layer_cycles(10, 5, 4) == 4 and host_layer_cycles(0, 0, 4) == 0
    assert host_layer_cycles(1000, 0, 0.5) == 2000
