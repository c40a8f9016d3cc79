"""`systolic simulate`: the bundled example end to end, the JSON interface, --input/--output,
errors (exit 2, nothing written) and mismatch reporting through a test double backend."""

import json
import re
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from systolic.commands.cli import main
from systolic.config import ArrayConfig
from systolic.errors import SimulationError
from systolic.examples import example_path
from systolic.mapper.importer import load_model
from systolic.mapper.lowering import compile_model
from systolic.mapper.passes import pipeline
from systolic.mapper.passes.pipeline import run_passes
from systolic.sim.run import backends
from systolic.sim.run.model_backend import run_model
from systolic.simulation import prepare
from systolic.simulation.inputs import load_inputs
from systolic.simulation.onnxruntime_saturation import onnxruntime_saturates
from systolic.simulation.run import vcd_paths
from systolic.simulation.saturating_layers import saturating_layers

MODELS = Path(__file__).parents[2] / "models"
LENET_INPUT = np.load(MODELS / "lenet_inputs.npz")["input_1"]
LENET_ORT = np.load(MODELS / "lenet_qdq_ort.npz")["output_1"]  # onnxruntime on input_1


def _simulate(tmp_path: Path, *args: str) -> tuple[int, dict]:
    target = tmp_path / "report.json"
    status = main(["simulate", *args, "--json", str(target), "--quiet"])
    return status, json.loads(target.read_text())


def test_bundled_example_on_the_model_backend(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["simulate", "--backend", "model"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("bundled:lenet_qdq: 8x8 ws, backend model, input random seed 0\n")
    assert "reference: bit-exact" in out
    conv = next(line for line in out.splitlines() if line.startswith("conv1_Conv "))
    assert conv.split()[:3] == ["conv1_Conv", "QConv", "array"]
    assert "total: " in out


def test_json_schema(tmp_path: Path) -> None:
    status, report = _simulate(tmp_path, "--backend", "model", "--array", "4x8")
    assert status == 0
    assert report["schema"] == "systolic.simulate/1"
    assert report["model"] == "bundled:lenet_qdq" and report["backend"] == "model"
    assert report["config"] == ArrayConfig(rows=4, cols=8).to_dict()
    assert report["inputs"] == {"input": {"shape": [1, 1, 16, 16], "dtype": "float32"}}
    assert isinstance(report["total_cycles"], int) and report["total_cycles"] > 0
    layer_keys = {"name", "op", "unit", "macs", "cycles", "ideal_cycles", "stall_cycles",
                  "active_cycles", "utilization", "note", "energy_pj", "energy"}  # fmt: skip
    for layer in report["layers"]:
        assert set(layer) == layer_keys
        assert layer["unit"] in ("array", "vector", "host")
        for key in ("macs", "cycles", "ideal_cycles", "stall_cycles", "active_cycles"):
            assert isinstance(layer[key], int) and layer[key] >= 0
        assert isinstance(layer["utilization"], float) and 0 <= layer["utilization"] <= 1
        if layer["unit"] == "array":
            assert layer["ideal_cycles"] == -(-layer["macs"] // 32)
            window = max(layer["cycles"], layer["active_cycles"])
            assert layer["utilization"] == round(layer["macs"] / (32 * window), 6)
            assert layer["active_cycles"] >= layer["cycles"] - layer["stall_cycles"]
        if layer["unit"] == "host":
            assert layer["cycles"] == 0
    assert sum(layer["cycles"] for layer in report["layers"]) == report["total_cycles"]
    assert report["total_cycles"] == sum(run["total_cycles"] for run in report["runs"])
    units = [(layer["op"], layer["unit"]) for layer in report["layers"]]
    assert ("QConv", "array") in units and ("QMaxPool", "vector") in units
    assert ("QuantizeLinear", "host") in units
    checks = report["checks"]
    assert checks["reference_bit_exact"] is True and checks["mismatch"] is None
    assert checks["onnxruntime_ran"] is True
    if _saturates_here(example_path(), seed=0):  # node by node (QDQ in float) it is exact
        assert checks["onnxruntime_explanation"] == "saturation"
        assert checks["onnxruntime_unoptimized_equal_fraction"] == 1.0
    else:
        assert checks["onnxruntime_explanation"] == "none"
        assert checks["onnxruntime_max_abs_diff"] == 0.0
        assert checks["onnxruntime_equal_fraction"] == 1.0
        assert checks["onnxruntime_max_diff_steps"] == 0
    assert "quantization" not in checks  # a quantized model
    assert set(report["totals"]) == {"macs", "cycles", "array_cycles", "ideal_cycles",
                                     "utilization"}  # fmt: skip


def _saturates_here(path: Path, *, seed: int = 0, input_path: Path | None = None) -> bool:
    """Whether this CPU's onnxruntime saturates some uint8 x int8 pair sum of the model on the
    input `simulate` uses (`systolic.simulation.saturating_layers`)."""
    model = load_model(path)
    inputs = load_inputs(model, input_path, seed=seed)
    return onnxruntime_saturates() and bool(saturating_layers(model, inputs))


def test_onnxruntime_saturation_is_named(tmp_path: Path, capsys: pytest.CaptureFixture[str]):
    np.save(tmp_path / "x.npy", LENET_INPUT)
    model = MODELS / "lenet_qop.onnx"
    assert main(["simulate", str(model), "--backend", "model", "--input",
                 str(tmp_path / "x.npy")]) == 0  # fmt: skip
    lines = capsys.readouterr().out.splitlines()
    differs = [line for line in lines if line.startswith("onnxruntime: differs by ")]
    assert not any("round differently" in line for line in lines)
    if not _saturates_here(model, input_path=tmp_path / "x.npy"):
        assert differs == []
        return
    (line,) = differs
    assert re.fullmatch(
        r"onnxruntime: differs by [1-9][0-9]* steps; explained: this CPU's onnxruntime saturates "
        r"uint8 x int8 int16 pair sums \(no VNNI\) in layers conv1_Conv_quant, conv2_Conv_quant, "
        r"fc1_Gemm_quant \(equal once they cannot saturate\)", line)


def test_float_rounding_before_dynamic_quantization_is_named(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
):
    # the model's float part as written (dynamic_island off): compared as quantized steps
    monkeypatch.setattr(pipeline, "quantize_dynamic_island", lambda model, *_, **__: model)
    monkeypatch.setattr(prepare, "quantizes_dynamic_island", lambda model: False)
    # lstm2_dynamic: onnxruntime's LSTM gates round differently, the head's
    # DynamicQuantizeLinear takes other steps; its DynamicQuantizeLSTM saturates without VNNI
    model = MODELS / "realistic" / "lstm2_dynamic.onnx"
    np.save(tmp_path / "x.npy", np.load(MODELS / "realistic" / "lstm2_inputs.npz")["input_0"])
    assert main(["simulate", str(model), "--backend", "model", "--input",
                 str(tmp_path / "x.npy")]) == 0  # fmt: skip
    (line,) = [line for line in capsys.readouterr().out.splitlines()
               if line.startswith("onnxruntime: differs by ")]  # fmt: skip
    rounding = (r"its float ops round differently in the last bits and a dynamic quantization "
                r"downstream turns that into other steps \(replayed with its float values: "
                r"equal to float rounding\)")  # fmt: skip
    if _saturates_here(model, input_path=tmp_path / "x.npy"):
        expected = (r"onnxruntime: differs by [0-9.e-]+; explained: this CPU's onnxruntime "
                    r"saturates uint8 x int8 int16 pair sums \(no VNNI\) in layers "
                    r"lstm_LSTM_quant, lstm_LSTM_1_quant, head_MatMul_quant, and " + rounding)
    else:
        expected = r"onnxruntime: differs by [0-9.e-]+; explained: " + rounding
    assert re.fullmatch(expected, line), line


def test_float_model_reports_quantization_accuracy(tmp_path: Path) -> None:
    status, report = _simulate(tmp_path, str(example_path("lenet_float")), "--backend", "model")
    assert status == 0
    quant = report["checks"]["quantization"]
    assert set(quant) == {"max_abs_error", "cosine_similarity", "top1_agreement"}
    assert quant["cosine_similarity"] > 0.999 and quant["top1_agreement"] == 1.0
    assert report["checks"]["reference_bit_exact"] is True


def test_input_npy_and_output_npz_round_trip(tmp_path: Path) -> None:
    np.save(tmp_path / "x.npy", LENET_INPUT)
    out = tmp_path / "out.npz"
    status, report = _simulate(tmp_path, "--backend", "model", "--input",
                               str(tmp_path / "x.npy"), "--output", str(out))  # fmt: skip
    assert status == 0 and report["input_source"] == str(tmp_path / "x.npy")
    with np.load(out) as saved:
        assert saved.files == ["output"]
        declared = onnx.load(example_path()).graph.output[0].type.tensor_type.elem_type
        assert saved["output"].dtype == onnx.helper.tensor_dtype_to_np_dtype(declared)
        np.testing.assert_array_equal(saved["output"], LENET_ORT)


def test_input_npz_by_name(tmp_path: Path) -> None:
    np.savez(tmp_path / "x.npz", input=LENET_INPUT)
    out = tmp_path / "out.npz"
    args = ["simulate", "--backend", "model", "--input", str(tmp_path / "x.npz"), "--output",
            str(out), "--quiet", "--no-onnxruntime"]  # fmt: skip
    assert main(args) == 0
    with np.load(out) as saved:
        np.testing.assert_array_equal(saved["output"], LENET_ORT)


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--input", "{tmp}/bad.npy"], "input 'input' has shape [1, 16, 16]"),
        (["--input", "{tmp}/missing.npz"], "missing.npz"),
        (["--input", "{tmp}/wrong.npz"], "'image' is not an input of the model"),
        (["--vcd", "{tmp}/w.vcd"], "--vcd needs the rtl backend"),
        (["--output", "{tmp}/out.npy"], "must name a .npz file"),
        (["--array", "3x0"], ""),
        (["--dataflow", "xy"], ""),
        (["--backend", "nonesuch"], "unknown simulation backend 'nonesuch'"),
        (["{tmp}/absent.onnx"], "absent.onnx"),
        (["--vcd", "{tmp}"], "must name a .vcd file"),
        (["--backend", "rtl", "--vcd", "{tmp}/d.vcd"], "is a folder: name a file to write"),
    ],
)
def test_user_errors_exit_2_and_write_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], extra: list[str], message: str
) -> None:
    np.save(tmp_path / "bad.npy", LENET_INPUT[0])
    np.savez(tmp_path / "wrong.npz", image=LENET_INPUT)
    (tmp_path / "d.vcd").mkdir()
    before = set(tmp_path.iterdir())
    args = [a.replace("{tmp}", str(tmp_path)) for a in extra]
    backend = [] if "--backend" in extra else ["--backend", "model"]
    status = main(["simulate", *backend, *args, "--json", str(tmp_path / "r.json"),
                   "--output", str(tmp_path / "o.npz")] if "--output" not in extra else
                  ["simulate", *backend, *args, "--json", str(tmp_path / "r.json")])  # fmt: skip
    err = capsys.readouterr().err
    assert status == 2
    assert err.startswith("systolic: error: ") and err.count("\n") == 1
    assert message in err
    assert set(tmp_path.iterdir()) == before


def test_error_during_the_run_leaves_no_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def hanging(program, memory, *, watchdog, vcd):  # type: ignore[no-untyped-def]
        Path(vcd).write_text("partial waveform")
        raise SimulationError("the program did not finish within 10 cycles")

    monkeypatch.setitem(backends.BACKENDS, "rtl", hanging)
    status = main(["simulate", "--vcd", str(tmp_path / "w.vcd"), "--json",
                   str(tmp_path / "r.json"), "--output", str(tmp_path / "o.npz")])  # fmt: skip
    assert status == 2
    assert "did not finish within 10 cycles" in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == []


def _conv1_output_address(config: ArrayConfig, index: tuple[int, ...]) -> int:
    integer, _ = run_passes(load_model(example_path()))
    compiled = compile_model(integer, config)
    layer = next(layer for layer in compiled.layers if layer.name == "conv1_Conv")
    placement = compiled.program.tensor(layer.outputs[0])
    return placement.address + sum(i * s for i, s in zip(index, placement.strides, strict=True))


def test_mismatch_names_layer_tile_and_element(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    config = ArrayConfig(rows=4, cols=4)
    index = (0, 5, 3, 7)
    address = _conv1_output_address(config, index)

    def faulty(program, memory, *, watchdog, vcd):  # type: ignore[no-untyped-def]
        result = run_model(program, memory, watchdog=watchdog, vcd=vcd)
        result.memory[address] ^= 1  # one wrong bit in conv1's output
        return result

    monkeypatch.setitem(backends.BACKENDS, "faulty", faulty)
    target = tmp_path / "r.json"
    status = main(["simulate", "--backend", "faulty", "--array", "4x4", "--json", str(target)])
    assert status == 1
    captured = capsys.readouterr()
    assert "reference: MISMATCH" in captured.out
    err = captured.err
    assert err.startswith(
        "systolic: mismatch: layer 'conv1_Conv', tile: output channels 4..5 "
        "(column tile 1 of 2), GEMM row 55 (output pixel n,h,w = 0,3,7)"
    )
    assert "element [0,5,3,7]" in err
    mismatch = json.loads(target.read_text())["checks"]["mismatch"]
    assert json.loads(target.read_text())["checks"]["reference_bit_exact"] is False
    assert mismatch["layer"] == "conv1_Conv" and mismatch["element"] == list(index)
    assert mismatch["actual"] == mismatch["expected"] ^ 1


def _rtl_matches_model(tmp_path: Path, *model: str) -> None:
    status, rtl = _simulate(tmp_path, *model, "--array", "4x4", "--vcd", str(tmp_path / "w.vcd"))
    assert status == 0 and rtl["checks"]["reference_bit_exact"] is True
    assert rtl["backend"] == "rtl"
    status, cycle_model = _simulate(tmp_path, *model, "--array", "4x4", "--backend", "model")
    assert rtl["layers"] == cycle_model["layers"] and rtl["runs"] == cycle_model["runs"]
    for vcd in vcd_paths(tmp_path / "w.vcd", len(rtl["runs"])):
        assert "$enddefinitions" in vcd.read_text()


def _tiny_float_model(folder: Path) -> Path:
    rng = np.random.default_rng(5)
    weight = numpy_helper.from_array(rng.standard_normal((6, 8)).astype(np.float32), "w")
    bias = numpy_helper.from_array(rng.standard_normal(8).astype(np.float32), "b")
    graph = helper.make_graph(
        [helper.make_node("Gemm", ["x", "w", "b"], ["t"], name="gemm"),
         helper.make_node("Relu", ["t"], ["y"], name="relu")],
        "tiny",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [3, 6])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [3, 8])],
        initializer=[weight, bias],
    )  # fmt: skip
    path = folder / "tiny.onnx"
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], ir_version=8)
    path.write_bytes(model.SerializeToString())
    return path


def test_tiny_model_on_rtl_matches_the_cycle_model(tmp_path: Path) -> None:
    """The RTL (pysim) at 4x4: bit-exact, a waveform, and the same per-layer cycles and
    counters as the cycle model (a float Gemm+Relu, quantized by the passes)."""
    _rtl_matches_model(tmp_path, str(_tiny_float_model(tmp_path)))


@pytest.mark.slow
def test_bundled_example_on_rtl_matches_the_cycle_model(tmp_path: Path) -> None:
    _rtl_matches_model(tmp_path)  # about 8,400 cycles


def test_the_model_backends_engine_is_printed_and_reported(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("SYSTOLIC_NATIVE", "0")
    target = tmp_path / "r.json"
    assert main(["simulate", "--backend", "model", "--array", "4x4", "--no-onnxruntime",
                 "--json", str(target)]) == 0  # fmt: skip
    second = capsys.readouterr().out.splitlines()[1]
    assert second.startswith("engine: Python specification (") and "SYSTOLIC_NATIVE=0" in second
    assert json.loads(target.read_text())["engine"] == "python"


def test_energy_per_inference_and_the_clocked_figures(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["simulate", "--backend", "model", "--clock-mhz", "250"]) == 0
    out = capsys.readouterr().out
    assert "energy uJ" in out.splitlines()[3]
    assert "energy per inference: " in out and "by component: pe_array" in out
    assert "at 250 MHz: latency " in out and "TOPS/W" in out
    status, report = _simulate(tmp_path, "--backend", "model", "--clock-mhz", "250")
    assert status == 0
    energy = report["energy"]
    layers = sum(layer["energy_pj"] or 0 for layer in report["layers"])
    assert energy["total_pj"] == pytest.approx(sum(energy["components"].values()), abs=0.01)
    assert energy["total_pj"] == pytest.approx(layers, abs=0.01)
    assert energy["macs"] == report["totals"]["macs"]
    assert energy["latency_ms"] == pytest.approx(report["total_cycles"] / 250_000)
    assert energy["tops_per_watt"] == pytest.approx(2 * energy["macs"] / energy["total_pj"])
    assert energy["events"]["macs"] == energy["macs"]


def test_a_users_energy_table(tmp_path: Path) -> None:
    table = tmp_path / "mine.toml"
    table.write_text('[technology]\nname = "no DRAM"\n[dram]\nread_bit = 0\nwrite_bit = 0\n')
    status, report = _simulate(tmp_path, "--backend", "model", "--energy-table", str(table))
    assert status == 0 and report["energy"]["table"] == "no DRAM"
    assert report["energy"]["components"]["external"] == 0
    assert report["energy"]["clock_mhz"] is None and "latency_ms" not in report["energy"]


@pytest.mark.parametrize(("args", "message"), [
    (["--energy-table", "{bad}"], "energy table {bad}: unknown key 'dram.read_bits'"),
    (["--clock-mhz", "0"], "--clock-mhz must be a number above 0, not '0'"),
])  # fmt: skip
def test_bad_energy_options_are_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], args: list[str], message: str
) -> None:
    bad = tmp_path / "bad.toml"
    bad.write_text("[dram]\nread_bits = 8\n")
    args = [arg.replace("{bad}", str(bad)) for arg in args]
    message = message.replace("{bad}", str(bad))
    assert main(["simulate", "--backend", "model", *args]) == 2
    err = capsys.readouterr().err
    assert err == f"systolic: error: {message}\n"
