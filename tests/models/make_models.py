"""Regenerate the small real networks the conformance tests run (developers only).

PyTorch is NOT a dependency of systolic: the files this script writes are committed, and the
tests only read them. To regenerate them, use a separate virtual environment so the project's
environment stays free of torch:

    python3 -m venv /work/torchenv
    /work/torchenv/bin/pip install torch==2.13.0 onnx==1.23.2 onnxruntime==1.31.1 onnxscript numpy
    /work/torchenv/bin/python tests/models/make_models.py            # writes into tests/models/
    /work/torchenv/bin/python tests/models/make_models.py --check    # regenerate, compare bytes

(On the project machines the CPU wheel of torch 2.13.0 is in /opt/wheels: install it by path
first so pip does not pull a CUDA build.)

For each network NAME in mlp, lenet, resnet_tiny, dwsep and attn it writes (`--only NAME,...`
regenerates just those):

- `NAME_float.onnx`: the float32 network, exported with the TorchScript exporter
  (`dynamo=False`) at opset 13, in eval mode with `TrainingMode.PRESERVE` and no constant
  folding, so BatchNormalization stays a node of its own.
- `NAME_qdq.onnx`: `onnxruntime.quantization.quantize_static` in QDQ format with the default
  operator set (QuantizeLinear/DequantizeLinear pairs on every activation, Add and
  GlobalAveragePool included): weights int8 symmetric per output channel, activations uint8
  asymmetric (MinMax calibration on 16 seeded random inputs). BatchNormalization is folded into the convolution before quantizing (as
  `quant_pre_process` does), so the quantized forms contain no BatchNormalization.
- `attn` (a self-attention block: Q·K^T and scores·V multiply two computed tensors, plus a
  batched constant-weight product) is quantized with symmetric activations (extra option
  ActivationSymmetric: uint8 with zero point 128) and per-tensor weights (onnxruntime's
  QLinearMatMul refuses a batched weight quantized per column), and written in float and QDQ
  forms only.
- `NAME_qop.onnx`: the same in QOperator format with onnxruntime's default operator set
  (every operator its quantizer supports), so the files hold what onnxruntime really emits:
  QLinearConv, com.microsoft QGemm for the Linear layers (kept as Gemm, as the exporter
  writes them), com.microsoft QLinearAdd for residual connections, com.microsoft
  QLinearGlobalAveragePool; Relu/Clip are folded into the preceding output range, MaxPool and
  Flatten run on uint8. Only the graph input is quantized and only the output dequantized.
- `NAME_inputs.npz`: 4 seeded test inputs under keys `input_0` .. `input_3` (each one batch
  shaped like the graph input).
- `NAME_FORM_ort.npz`: onnxruntime's output on each of those inputs (`output_0` ..), so the
  tests can compare without onnxruntime installed.

Everything is deterministic: fixed seeds, fixed opset, no timestamps, sequential onnxruntime
sessions. `--check` regenerates into a temporary folder and reports any file whose bytes differ.
"""

import argparse
import filecmp
import io
import pathlib
import re
import sys
import tempfile
import zipfile
from collections import Counter
from collections.abc import Callable

import numpy as np
import onnx
import onnxruntime as ort
import torch
from onnx import helper, numpy_helper
from onnxruntime.quantization import (
    CalibrationDataReader,
    CalibrationMethod,
    QuantFormat,
    QuantType,
    quantize_static,
)
from torch import nn

OPSET = 13
SEED = 20240521
CALIBRATION_SAMPLES = 16
TEST_SAMPLES = 4
HERE = pathlib.Path(__file__).resolve().parent
EXAMPLES = HERE.parent.parent / "systolic" / "examples"
EXAMPLE_FILES = ("lenet_qdq.onnx", "lenet_float.onnx")


# --------------------------------------------------------------------------------------------
# The networks. Shapes are tiny on purpose: every file stays far below 200 KB.


class Mlp(nn.Module):
    """Linear-ReLU-Linear-ReLU-Linear on a batch of 4 vectors of 32 features."""

    input_shape = (4, 32)

    def __init__(self) -> None:
        super().__init__()
        self.fc1 = nn.Linear(32, 64)
        self.fc2 = nn.Linear(64, 64)
        self.fc3 = nn.Linear(64, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = torch.relu(self.fc1(x))
        x = torch.relu(self.fc2(x))
        return self.fc3(x)


class LeNet(nn.Module):
    """Conv-ReLU-MaxPool twice, Flatten, Linear-ReLU-Linear on a 1x1x16x16 image."""

    input_shape = (1, 1, 16, 16)

    def __init__(self) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(1, 6, 3, padding=1)
        self.conv2 = nn.Conv2d(6, 12, 3, padding=1)
        self.fc1 = nn.Linear(12 * 4 * 4, 32)
        self.fc2 = nn.Linear(32, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = nn.functional.max_pool2d(torch.relu(self.conv1(x)), 2)
        x = nn.functional.max_pool2d(torch.relu(self.conv2(x)), 2)
        x = torch.flatten(x, 1)
        x = torch.relu(self.fc1(x))
        return self.fc2(x)


class BasicBlock(nn.Module):
    """ResNet basic block: two 3x3 conv+BN, identity or strided 1x1 conv+BN shortcut."""

    def __init__(self, cin: int, cout: int, stride: int) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cout, 3, stride=stride, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(cout)
        self.conv2 = nn.Conv2d(cout, cout, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(cout)
        self.shortcut: nn.Module = nn.Identity()
        if stride != 1 or cin != cout:
            self.shortcut = nn.Sequential(
                nn.Conv2d(cin, cout, 1, stride=stride, bias=False), nn.BatchNorm2d(cout)
            )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = torch.relu(self.bn1(self.conv1(x)))
        y = self.bn2(self.conv2(y))
        return torch.relu(y + self.shortcut(x))


class ResNetTiny(nn.Module):
    """Stem conv+BN+ReLU, an identity block, a strided projection block, GAP, Linear."""

    input_shape = (1, 3, 16, 16)

    def __init__(self) -> None:
        super().__init__()
        self.stem = nn.Conv2d(3, 8, 3, padding=1, bias=False)
        self.bn = nn.BatchNorm2d(8)
        self.block1 = BasicBlock(8, 8, 1)
        self.block2 = BasicBlock(8, 16, 2)
        self.fc = nn.Linear(16, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = torch.relu(self.bn(self.stem(x)))
        x = self.block2(self.block1(x))
        x = nn.functional.adaptive_avg_pool2d(x, 1).flatten(1)
        return self.fc(x)


class DwSep(nn.Module):
    """Conv stem, two depthwise 3x3 + pointwise 1x1 blocks (the second strided), ReLU6."""

    input_shape = (1, 3, 16, 16)

    def __init__(self) -> None:
        super().__init__()
        self.stem = nn.Conv2d(3, 8, 3, padding=1)
        self.dw1 = nn.Conv2d(8, 8, 3, padding=1, groups=8)
        self.pw1 = nn.Conv2d(8, 16, 1)
        self.dw2 = nn.Conv2d(16, 16, 3, stride=2, padding=1, groups=16)
        self.pw2 = nn.Conv2d(16, 32, 1)
        self.fc = nn.Linear(32, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        relu6 = nn.functional.relu6
        x = relu6(self.stem(x))
        x = relu6(self.pw1(relu6(self.dw1(x))))
        x = relu6(self.pw2(relu6(self.dw2(x))))
        x = nn.functional.adaptive_avg_pool2d(x, 1).flatten(1)
        return self.fc(x)


class Attn(nn.Module):
    """One self-attention block on 8 tokens of 16 features: projections q/k/v (x·W + b, the
    weights stored [in, out] so the export has no Transpose of constants), 2 heads of 8,
    softmax(q·k^T / sqrt(8))·v (the scale folded into W_q, as attention implementations do,
    so no float Mul sits between the quantized products), heads merged, output projection;
    then a batched matrix
    product with a constant [2, 16, 6] weight on the result viewed as [2, 4, 16]."""

    input_shape = (1, 8, 16)

    def __init__(self) -> None:
        super().__init__()
        self.weights = nn.ParameterList(  # q (pre-scaled by 1/sqrt(8)), k, v, out
            [nn.Parameter(0.25 * torch.randn(16, 16) * (8**-0.5 if i == 0 else 1.0))
             for i in range(4)])
        self.biases = nn.ParameterList([nn.Parameter(0.1 * torch.randn(16)) for _ in range(4)])
        self.mix = nn.Parameter(0.3 * torch.randn(2, 16, 6))

    def project(self, x: torch.Tensor, index: int) -> torch.Tensor:
        return torch.matmul(x, self.weights[index]) + self.biases[index]

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        def heads(t: torch.Tensor) -> torch.Tensor:
            return t.reshape(1, 8, 2, 8).transpose(1, 2)  # [1, 2 heads, 8 tokens, 8]

        q, k, v = (heads(self.project(x, i)) for i in range(3))
        scores = torch.matmul(q, k.transpose(-1, -2))  # 1/sqrt(8) is folded into W_q
        mixed = torch.matmul(torch.softmax(scores, dim=-1), v)
        merged = self.project(mixed.transpose(1, 2).reshape(1, 8, 16), 3)
        return torch.matmul(merged.reshape(2, 4, 16), self.mix)


NETWORKS: dict[str, Callable[[], nn.Module]] = {
    "mlp": Mlp,
    "lenet": LeNet,
    "resnet_tiny": ResNetTiny,
    "dwsep": DwSep,
    "attn": Attn,
}
SYMMETRIC_ACTIVATIONS = frozenset({"attn"})
"""Networks quantized with symmetric activations (onnxruntime's ActivationSymmetric: uint8
with zero point 128): their attention products multiply two computed tensors, which the array
runs only with symmetric operands."""
QOPERATOR_NETWORKS = frozenset({"mlp", "lenet", "resnet_tiny", "dwsep"})
"""Networks also written in QOperator form."""


def build(name: str) -> nn.Module:
    """Return network `name` in eval mode with seeded weights and non-trivial BN statistics.

    PyTorch's default initialisation (Kaiming uniform) keeps activations in a sensible range;
    BatchNorm running statistics and affine parameters are drawn so BN is not an identity.
    """
    torch.manual_seed(SEED)
    net = NETWORKS[name]()
    generator = torch.Generator().manual_seed(SEED + 1)
    with torch.no_grad():
        for module in net.modules():
            if isinstance(module, nn.BatchNorm2d):
                n = module.num_features
                module.running_mean.copy_(0.2 * torch.randn(n, generator=generator))
                module.running_var.copy_(0.5 + torch.rand(n, generator=generator))
                module.weight.copy_(0.8 + 0.4 * torch.rand(n, generator=generator))
                module.bias.copy_(0.1 * torch.randn(n, generator=generator))
    return net.eval()


def sample_inputs(shape: tuple[int, ...], count: int, seed: int) -> list[np.ndarray]:
    """Return `count` seeded float32 inputs: images in [0, 1), vectors standard normal."""
    rng = np.random.default_rng(seed)
    if len(shape) == 4:
        return [rng.random(shape, dtype=np.float32) for _ in range(count)]
    return [rng.standard_normal(shape, dtype=np.float32) for _ in range(count)]


# --------------------------------------------------------------------------------------------
# Export and graph clean-up.


def export_float(net: nn.Module) -> onnx.ModelProto:
    """Export `net` at OPSET with the TorchScript exporter, keeping BatchNormalization nodes."""
    example = torch.zeros(net.input_shape)
    buffer = io.BytesIO()
    torch.onnx.export(
        net,
        (example,),
        buffer,
        dynamo=False,
        opset_version=OPSET,
        input_names=["input"],
        output_names=["output"],
        training=torch.onnx.TrainingMode.PRESERVE,
        do_constant_folding=False,
    )
    model = onnx.load_from_string(buffer.getvalue())
    model = inline_constant_nodes(model)
    model = rename_to_identifiers(model)
    model.producer_version = ""  # keep files stable across torch patch releases
    model.doc_string = ""
    model.graph.doc_string = ""
    onnx.checker.check_model(model, full_check=True)
    return onnx.shape_inference.infer_shapes(model, check_type=True, strict_mode=True)


def inline_constant_nodes(model: onnx.ModelProto) -> onnx.ModelProto:
    """Turn Constant nodes, and Casts of constants, into initializers.

    The exporter writes ReLU6's bounds as Constant -> Cast -> Clip; folding them gives every
    graph plain initializers for its constants.
    """
    graph = model.graph
    constants: dict[str, np.ndarray] = {}
    kept = []
    for node in graph.node:
        if node.op_type == "Constant" and [a.name for a in node.attribute] == ["value"]:
            constants[node.output[0]] = numpy_helper.to_array(node.attribute[0].t)
        elif node.op_type == "Cast" and node.input[0] in constants:
            to = helper.get_attribute_value(node.attribute[0])
            dtype = helper.tensor_dtype_to_np_dtype(to)
            constants[node.output[0]] = constants.pop(node.input[0]).astype(dtype)
        else:
            kept.append(node)
    used = {name for node in kept for name in node.input}
    for name, value in constants.items():
        if name in used:
            graph.initializer.append(numpy_helper.from_array(value, name))
    del graph.node[:]
    graph.node.extend(kept)
    return model


def rename_to_identifiers(model: onnx.ModelProto) -> onnx.ModelProto:
    """Rename values and nodes to C90 identifiers, as the ONNX IR asks.

    The exporter names values like "/conv1/Conv_output_0"; each run of characters other than
    letters, digits and "_" becomes one "_", leading ones are dropped ("conv1_Conv_output_0").
    """
    graph = model.graph

    def clean(name: str) -> str:
        if not name:
            return name
        fixed = re.sub(r"[^A-Za-z0-9_]+", "_", name).strip("_")
        return fixed if fixed and not fixed[0].isdigit() else "v_" + fixed

    values = {vi.name for vi in (*graph.input, *graph.output, *graph.value_info)}
    values |= {t.name for t in graph.initializer}
    values |= {name for node in graph.node for name in (*node.input, *node.output)}
    mapping = {name: clean(name) for name in values if name}
    if len(set(mapping.values())) != len(mapping):
        raise ValueError("renaming to identifiers would merge two values")
    for info in (*graph.input, *graph.output, *graph.value_info):
        info.name = mapping[info.name]
    for tensor in graph.initializer:
        tensor.name = mapping[tensor.name]
    for node in graph.node:
        node.name = clean(node.name)
        node.input[:] = [mapping.get(name, name) for name in node.input]
        node.output[:] = [mapping.get(name, name) for name in node.output]
    return model


def fold_batchnorm(model: onnx.ModelProto) -> onnx.ModelProto:
    """Fold every BatchNormalization that directly follows a Conv into that Conv's weights.

    y = gamma * (conv(x) + b - mean) / sqrt(var + eps) + beta, computed in float64 and stored
    as float32; the Conv gains a bias when it had none.
    """
    model = onnx.ModelProto.FromString(model.SerializeToString())
    graph = model.graph
    inits = {t.name: t for t in graph.initializer}
    producer = {out: node for node in graph.node for out in node.output}
    consumers = Counter(name for node in graph.node for name in node.input)
    removed: set[int] = set()
    for index, bn in enumerate(graph.node):
        if bn.op_type != "BatchNormalization":
            continue
        conv = producer.get(bn.input[0])
        if conv is None or conv.op_type != "Conv" or consumers[conv.output[0]] != 1:
            raise ValueError(f"BatchNormalization {bn.name} does not follow a Conv")
        eps = next((a.f for a in bn.attribute if a.name == "epsilon"), 1e-5)
        gamma, beta, mean, var = (
            numpy_helper.to_array(inits[n]).astype(np.float64) for n in bn.input[1:5]
        )
        weight = numpy_helper.to_array(inits[conv.input[1]]).astype(np.float64)
        out_channels = weight.shape[0]
        bias = (
            numpy_helper.to_array(inits[conv.input[2]]).astype(np.float64)
            if len(conv.input) > 2
            else np.zeros(out_channels)
        )
        scale = gamma / np.sqrt(var + eps)
        new_weight = weight * scale.reshape(-1, 1, 1, 1)
        new_bias = (bias - mean) * scale + beta
        weight_name = conv.input[1]
        bias_name = conv.name.strip("/").replace("/", "_") + "_folded_bias"
        inits[weight_name].CopyFrom(
            numpy_helper.from_array(new_weight.astype(np.float32), weight_name)
        )
        bias_tensor = numpy_helper.from_array(new_bias.astype(np.float32), bias_name)
        if len(conv.input) > 2:
            bias_tensor.name = conv.input[2]
            inits[conv.input[2]].CopyFrom(bias_tensor)
        else:
            graph.initializer.append(bias_tensor)
            conv.input.append(bias_name)
        conv.output[0] = bn.output[0]
        removed.add(index)
    kept = [node for i, node in enumerate(graph.node) if i not in removed]
    del graph.node[:]
    graph.node.extend(kept)
    drop_unused_initializers(graph)
    del graph.value_info[:]
    onnx.checker.check_model(model, full_check=True)
    return onnx.shape_inference.infer_shapes(model, check_type=True, strict_mode=True)


def drop_unused_initializers(graph: onnx.GraphProto) -> None:
    """Remove initializers no node reads."""
    used = {name for node in graph.node for name in node.input}
    kept = [t for t in graph.initializer if t.name in used]
    del graph.initializer[:]
    graph.initializer.extend(kept)


# --------------------------------------------------------------------------------------------
# Quantization and reference outputs.


class SeededReader(CalibrationDataReader):
    """Feeds CALIBRATION_SAMPLES seeded random inputs to the calibrator."""

    def __init__(self, shape: tuple[int, ...], seed: int) -> None:
        self._samples = iter(sample_inputs(shape, CALIBRATION_SAMPLES, seed))

    def get_next(self) -> dict[str, np.ndarray] | None:
        sample = next(self._samples, None)
        return None if sample is None else {"input": sample}


def quantize(
    model: onnx.ModelProto,
    shape: tuple[int, ...],
    fmt: QuantFormat,
    seed: int,
    workdir: pathlib.Path,
    symmetric: bool = False,
) -> onnx.ModelProto:
    """Quantize statically with onnxruntime's default operator set (op_types_to_quantize left
    unset): int8 symmetric per-channel weights, uint8 asymmetric activations (with
    `symmetric`: activations symmetric, zero point 128, and weights per tensor, since
    onnxruntime's QLinearMatMul refuses a batched weight quantized per column)."""
    source = workdir / "source.onnx"
    target = workdir / "quantized.onnx"
    onnx.save(model, source)
    quantize_static(
        str(source),
        str(target),
        SeededReader(shape, seed),
        quant_format=fmt,
        per_channel=not symmetric,
        activation_type=QuantType.QUInt8,
        weight_type=QuantType.QInt8,
        calibrate_method=CalibrationMethod.MinMax,
        extra_options={"WeightSymmetric": True, "ActivationSymmetric": symmetric},
    )
    quantized = onnx.load(target)
    quantized.producer_version = ""
    onnx.checker.check_model(quantized, full_check=True)
    return quantized


def run_ort(model: onnx.ModelProto, inputs: list[np.ndarray]) -> list[np.ndarray]:
    """Run onnxruntime (one thread, all graph optimizations off) on each input."""
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    options.inter_op_num_threads = 1
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    session = ort.InferenceSession(
        model.SerializeToString(), options, providers=["CPUExecutionProvider"]
    )
    return [session.run(None, {"input": x})[0] for x in inputs]


def float_reference(net: nn.Module, inputs: list[np.ndarray]) -> list[np.ndarray]:
    """Return torch's outputs, to check the export."""
    with torch.no_grad():
        return [net(torch.from_numpy(x)).numpy() for x in inputs]


def check_quantized_activity(name: str, model: onnx.ModelProto, inputs: list[np.ndarray]) -> None:
    """Fail when a QuantizeLinear output is constant: a dead layer after quantization."""
    probe = onnx.ModelProto.FromString(model.SerializeToString())
    q_outputs = [n.output[0] for n in probe.graph.node if n.op_type == "QuantizeLinear"]
    q_outputs += [
        n.output[0]
        for n in probe.graph.node
        if n.op_type.startswith("QLinear") or n.op_type == "QGemm"
    ]
    for out in q_outputs:
        probe.graph.output.append(onnx.ValueInfoProto(name=out))
    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    session = ort.InferenceSession(
        probe.SerializeToString(), options, providers=["CPUExecutionProvider"]
    )
    for x in inputs:
        values = session.run(q_outputs, {"input": x})
        for out, value in zip(q_outputs, values):
            if value.min() == value.max():
                raise RuntimeError(f"{name}: quantized tensor {out} is constant {value.min()}")


# --------------------------------------------------------------------------------------------


def save_npz(path: pathlib.Path, prefix: str, arrays: list[np.ndarray]) -> None:
    """Write `arrays` as PREFIX_0, PREFIX_1 ... into an .npz with fixed zip timestamps.

    `np.savez` stamps each member with the current time, which would make the bytes change on
    every run; this writes the same .npy members with a constant date.
    """
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_STORED) as archive:
        for index, array in enumerate(arrays):
            member = io.BytesIO()
            np.lib.format.write_array(member, np.ascontiguousarray(array), allow_pickle=False)
            info = zipfile.ZipInfo(f"{prefix}_{index}.npy", date_time=(1980, 1, 1, 0, 0, 0))
            archive.writestr(info, member.getvalue())


def op_counts(model: onnx.ModelProto) -> str:
    """Return 'Op xN, ...' in first-seen order."""
    counts = Counter(node.op_type for node in model.graph.node)
    return ", ".join(f"{op} x{n}" for op, n in counts.items())


def generate(outdir: pathlib.Path, only: frozenset[str] | None = None) -> list[str]:
    """Write every file (of the networks in `only`, default all) into `outdir`; return one
    summary line per .onnx file."""
    outdir.mkdir(parents=True, exist_ok=True)
    torch.use_deterministic_algorithms(True)
    torch.set_num_threads(1)
    summary = []
    for index, name in enumerate(NETWORKS):
        if only is not None and name not in only:
            continue
        net = build(name)
        shape = net.input_shape
        inputs = sample_inputs(shape, TEST_SAMPLES, SEED + 100 + index)
        save_npz(outdir / f"{name}_inputs.npz", "input", inputs)
        float_model = export_float(net)
        folded = fold_batchnorm(float_model)
        forms = {"float": float_model}
        with tempfile.TemporaryDirectory() as tmp:
            work = pathlib.Path(tmp)
            symmetric = name in SYMMETRIC_ACTIVATIONS
            forms["qdq"] = quantize(folded, shape, QuantFormat.QDQ, SEED + 200 + index, work,
                                    symmetric)
            if name in QOPERATOR_NETWORKS:
                forms["qop"] = quantize(folded, shape, QuantFormat.QOperator, SEED + 200 + index,
                                        work, symmetric)
        expected = float_reference(net, inputs)
        for form, model in forms.items():
            outputs = run_ort(model, inputs)
            if form == "float":
                for got, want in zip(outputs, expected):
                    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)
            else:
                check_quantized_activity(f"{name}_{form}", model, inputs)
                for got, want in zip(outputs, expected):
                    scale = np.abs(want).max()
                    error = np.abs(got - want).max() / scale
                    if error > 0.1:
                        raise RuntimeError(f"{name}_{form}: quantized output off by {error:.3f}")
            path = outdir / f"{name}_{form}.onnx"
            data = model.SerializeToString(deterministic=True)
            path.write_bytes(data)
            save_npz(outdir / f"{name}_{form}_ort.npz", "output", outputs)
            summary.append(f"{path.name}: opset {OPSET}, {len(data)} bytes; {op_counts(model)}")
    return summary


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--check",
        action="store_true",
        help="regenerate into a temporary folder and compare with the committed files",
    )
    parser.add_argument("--out", type=pathlib.Path, default=HERE, help="output folder")
    parser.add_argument("--only", help="comma-separated networks to (re)generate")
    args = parser.parse_args(argv)
    only = frozenset(args.only.split(",")) if args.only else None
    if args.check:
        with tempfile.TemporaryDirectory() as tmp:
            fresh = pathlib.Path(tmp)
            generate(fresh, only)
            names = sorted(p.name for p in fresh.iterdir())
            _, mismatch, missing = filecmp.cmpfiles(args.out, fresh, names, shallow=False)
            for bad in mismatch + missing:
                print(f"differs: {bad}")
            if mismatch or missing:
                return 1
            print(f"all {len(names)} files match")
            return 0
    for line in generate(args.out, only):
        print(line)
    EXAMPLES.mkdir(exist_ok=True)
    if args.out == HERE:
        for file in EXAMPLE_FILES:
            (EXAMPLES / file).write_bytes((HERE / file).read_bytes())
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
