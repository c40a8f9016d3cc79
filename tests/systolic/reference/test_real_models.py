"""The project's own small networks (tests/models/, see its README) against onnxruntime and
the ONNX specification.

Each of mlp, lenet, resnet_tiny and dwsep comes as `_float`, `_qdq` and `_qop` ONNX files (attn,
the attention block, as `_float` and `_qdq`) with
four seeded inputs (`NAME_inputs.npz`). The oracle is onnxruntime run fresh on those inputs
(CPU provider, graph optimizations off so QDQ graphs run node by node as written, one thread)
when it is installed, else the outputs committed beside the models (`NAME_FORM_ort.npz`,
written by the same onnxruntime settings in make_models.py). onnxruntime is the oracle only
where its result is exact on this CPU: when its uint8 x int8 kernels saturate int16 pair sums
here (no VNNI) and some layer it runs with them (the `_qop` models' QLinearConv and QGemm;
QDQ runs in float with optimizations off) has such a pair sum on these inputs
(`systolic.simulation.saturating_layers`), the oracle is the ONNX specification instead: onnx's
ReferenceEvaluator running the same file (`spec_oracle`). Every quantized model is also
compared with the specification on every CPU.

Tolerances:
- float models: rtol=1e-4, atol=1e-6 (float32 results differ only by summation order; outputs
  are of order 0.1 to 1, so atol is a few float32 ulps of the largest output).
- quantized models whose output is an integer tensor: every element within 1 of the oracle and
  at least 99% of the elements (over all four inputs) exactly equal.
- quantized models whose output is float (all of ours: the last node is DequantizeLinear): the
  same rule in units of the scale of the last DequantizeLinear before the output:
  |ours - oracle| / scale <= 1 (+1e-3 for float rounding of any float node after it), and at
  least 99% of the elements within half a unit (the same integer).
The `_qop` models are onnxruntime's default QOperator output, with com.microsoft QGemm,
QLinearAdd and QLinearGlobalAveragePool beside QLinearConv.
"""

import pathlib

import numpy as np
import pytest

from systolic.ir import Model
from systolic.mapper.importer import load_model
from systolic.reference.executor import run_model
from systolic.simulation.onnxruntime_saturation import onnxruntime_saturates
from systolic.simulation.saturating_layers import saturating_layers

from .spec_oracle import spec_model_outputs

MODELS = pathlib.Path(__file__).resolve().parents[2] / "models"
EXAMPLES = pathlib.Path(__file__).resolve().parents[3] / "systolic" / "examples"
NETWORKS = ("mlp", "lenet", "resnet_tiny", "dwsep", "attn")
FORMS = ("float", "qdq", "qop")
FORMS_OF = {network: FORMS for network in NETWORKS} | {"attn": ("float", "qdq")}
"""attn (attention products) is written in float and QDQ forms only."""
QUANTIZED = [(n, f) for n in NETWORKS for f in FORMS_OF[n] if f != "float"]
ALL_FORMS = [(n, f) for n in NETWORKS for f in FORMS_OF[n]]

FLOAT_RTOL = 1e-4
FLOAT_ATOL = 1e-6
MAX_UNITS_OFF = 1.0
UNIT_SLACK = 1e-3
MIN_EXACT_SHARE = 0.99


def load_inputs(network: str) -> list[np.ndarray]:
    with np.load(MODELS / f"{network}_inputs.npz") as data:
        return [data[f"input_{i}"] for i in range(len(data.files))]


def committed_outputs(network: str, form: str) -> list[np.ndarray]:
    with np.load(MODELS / f"{network}_{form}_ort.npz") as data:
        return [data[f"output_{i}"] for i in range(len(data.files))]


def onnxruntime_outputs(path: pathlib.Path, inputs: list[np.ndarray]) -> list[np.ndarray] | None:
    """Return onnxruntime's output for each input, or None when onnxruntime is not installed."""
    try:
        import onnxruntime as ort
    except ImportError:
        return None
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    options.inter_op_num_threads = 1
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    session = ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
    return [session.run(None, {"input": x})[0] for x in inputs]


def spec_outputs(network: str, form: str, inputs: list[np.ndarray]) -> list[np.ndarray]:
    """The ONNX specification's outputs: the ReferenceEvaluator on the file."""
    path = MODELS / f"{network}_{form}.onnx"
    return [spec_model_outputs(path, {"input": x})[0] for x in inputs]


def onnxruntime_exact(network: str, form: str, inputs: list[np.ndarray]) -> bool:
    """False when this CPU's onnxruntime saturates uint8 x int8 pair sums and a layer it runs
    with those kernels (graph optimizations off) has one beyond int16 on some input."""
    if form == "float" or not onnxruntime_saturates():
        return True
    model = load_model(MODELS / f"{network}_{form}.onnx")
    return not any(saturating_layers(model, {"input": x}, fused=False) for x in inputs)


def oracle_outputs(network: str, form: str, inputs: list[np.ndarray]) -> list[np.ndarray]:
    if not onnxruntime_exact(network, form, inputs):
        return spec_outputs(network, form, inputs)
    fresh = onnxruntime_outputs(MODELS / f"{network}_{form}.onnx", inputs)
    return fresh if fresh is not None else committed_outputs(network, form)


def output_scale(model: Model, output: str) -> float:
    """Return the scale of the nearest DequantizeLinear upstream of `output`.

    Walks producers breadth-first from the output through non-constant inputs; the quantizer
    makes activations per-tensor, so the scale is a scalar.
    """
    graph = model.graph
    producers = graph.producers()
    frontier = [output]
    seen: set[str] = set()
    while frontier:
        name = frontier.pop(0)
        node = producers.get(name)
        if node is None or name in seen:
            continue
        seen.add(name)
        if node.op_type == "DequantizeLinear":
            scale = graph.initializer(node.inputs[1])
            assert scale is not None and scale.data.size == 1, "per-tensor output scale expected"
            return float(scale.data.reshape(()))
        frontier.extend(i for i in node.inputs if i and graph.initializer(i) is None)
    raise AssertionError(f"no DequantizeLinear upstream of {output}")


def assert_within_one_unit(got: np.ndarray, want: np.ndarray, unit: float) -> None:
    """All elements within one unit (+ slack for float outputs), >= 99% on the same integer."""
    assert got.shape == want.shape and got.dtype == want.dtype
    units = np.abs(got.astype(np.float64) - want.astype(np.float64)) / unit
    slack = 0.0 if np.issubdtype(got.dtype, np.integer) else UNIT_SLACK
    worst = float(units.max())
    exact = float(np.mean(units < 0.5))
    assert worst <= MAX_UNITS_OFF + slack, f"off by {worst:.3f} units of {unit:g}"
    assert exact >= MIN_EXACT_SHARE, f"only {exact:.1%} of elements equal the oracle"


def run_all(model: Model, inputs: list[np.ndarray]) -> list[np.ndarray]:
    (output,) = (o.name for o in model.graph.outputs)
    return [run_model(model, {"input": x})[output] for x in inputs]


@pytest.mark.parametrize("network", NETWORKS)
def test_float_model_matches_onnxruntime(network: str) -> None:
    inputs = load_inputs(network)
    got = run_all(load_model(MODELS / f"{network}_float.onnx"), inputs)
    for ours, oracle in zip(got, oracle_outputs(network, "float", inputs), strict=True):
        assert ours.shape == oracle.shape and ours.dtype == oracle.dtype
        np.testing.assert_allclose(ours, oracle, rtol=FLOAT_RTOL, atol=FLOAT_ATOL)


@pytest.mark.parametrize(("network", "form"), QUANTIZED)
def test_quantized_model_matches_onnxruntime(network: str, form: str) -> None:
    inputs = load_inputs(network)
    model = load_model(MODELS / f"{network}_{form}.onnx")
    got = np.stack(run_all(model, inputs))
    want = np.stack(oracle_outputs(network, form, inputs))
    if np.issubdtype(want.dtype, np.integer):
        unit = 1.0
    else:
        unit = output_scale(model, model.graph.outputs[0].name)
    assert_within_one_unit(got, want, unit)


@pytest.mark.parametrize(("network", "form"), QUANTIZED)
def test_quantized_model_matches_the_specification(network: str, form: str) -> None:
    """On every CPU: the ONNX specification's outputs (ReferenceEvaluator), same tolerance."""
    inputs = load_inputs(network)
    model = load_model(MODELS / f"{network}_{form}.onnx")
    got = np.stack(run_all(model, inputs))
    assert_within_one_unit(got, np.stack(spec_outputs(network, form, inputs)),
                           output_scale(model, model.graph.outputs[0].name))  # fmt: skip


@pytest.mark.parametrize(("network", "form"), ALL_FORMS)
def test_committed_outputs_match_onnxruntime(network: str, form: str) -> None:
    """The committed outputs (used without onnxruntime) are what onnxruntime gives today,
    within the tolerances above (another onnxruntime release may round a few values apart);
    where this CPU's onnxruntime is not exact on them, what the specification gives."""
    inputs = load_inputs(network)
    if onnxruntime_exact(network, form, inputs):
        fresh = onnxruntime_outputs(MODELS / f"{network}_{form}.onnx", inputs)
    else:
        fresh = spec_outputs(network, form, inputs)
    if fresh is None:
        pytest.skip("onnxruntime is not installed: nothing to compare the committed outputs with")
    committed = np.stack(committed_outputs(network, form))
    now = np.stack(fresh)
    if form == "float":
        np.testing.assert_allclose(committed, now, rtol=FLOAT_RTOL, atol=FLOAT_ATOL)
    else:
        unit = output_scale(load_model(MODELS / f"{network}_{form}.onnx"), "output")
        assert_within_one_unit(committed, now, unit)


@pytest.mark.parametrize("name", ["lenet_qdq.onnx", "lenet_float.onnx"])
def test_bundled_example_is_the_tested_model(name: str) -> None:
    assert (EXAMPLES / name).read_bytes() == (MODELS / name).read_bytes()


def test_every_generated_model_is_small() -> None:
    sizes = {p.name: p.stat().st_size for p in MODELS.glob("*.onnx")}
    assert len(sizes) == len(ALL_FORMS)
    assert max(sizes.values()) < 200_000, sizes
