"""Regenerate the small real networks the conformance tests run (developers only).

PyTorch is NOT a dependency of systolic: the files this script writes are committed, and the
tests only read them. To regenerate them, use a separate virtual environment so the project's
environment stays free of torch:

    python3 -m venv /work/torchenv
    /work/torchenv/bin/pip install torch==2.13.0 onnx==1.23.2 onnxruntime==1.32.0 onnxscript numpy
    /work/torchenv/bin/python tests/models/make_models.py            # writes into tests/models/
    /work/torchenv/bin/python tests/models/make_models.py --check    # regenerate, compare bytes

(On the project machines the CPU wheel of torch 2.13.0 is in /opt/wheels: install it by path
first so pip does not pull a CUDA build.)

For each network NAME in mlp, lenet, resnet_tiny, dwsep, attn, and the issue-13 networks
yolo_block, mbv3_block, bert_tiny, lstm2, paddle_style, gru2bi, metaformer and llama_tiny, it
writes (`--only NAME,...` regenerates just those):

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
- `NAME_dynamic.onnx` (bert_tiny, lstm2, gru2bi, llama_tiny): onnxruntime's `quantize_dynamic` with its
  defaults: DynamicQuantizeLinear + MatMulInteger for MatMul with constant weights,
  com.microsoft DynamicQuantizeLSTM, the embedding table int8 with a DequantizeLinear.
- bert_tiny and lstm2 are exported with the exporter's constant folding (weights as
  initializers, as exports normally are); mbv3_block at opset 14 (HardSwish); paddle_style with
  dynamic batch and spatial dimensions rewritten as Paddle2ONNX writes them (-1 in the graph
  input, one dim_param "?" for every dynamic size of the outputs and intermediates).
- `NAME_inputs.npz`: 4 seeded test inputs under keys `INPUT_0` .. `INPUT_3` for each graph
  input INPUT (`input_0` .. for the one-input networks; bert_tiny has `input_ids_*` and
  `attention_mask_*`), each one batch shaped like the graph input.
- `NAME_FORM_ort.npz`: onnxruntime's output on each of those inputs (`output_0` ..), so the
  tests can compare without onnxruntime installed.

Everything is deterministic: fixed seeds, fixed opset, no timestamps, sequential onnxruntime
sessions. `--check` regenerates into a temporary folder and reports any file whose bytes differ.
"""

import argparse
import filecmp
import io
import math
import pathlib
import re
import sys
import tempfile
import zipfile
from collections import Counter
from collections.abc import Callable
from typing import ClassVar

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
    quantize_dynamic,
    quantize_static,
)
from torch import nn

OPSET = 13
SEED = 20240521
CALIBRATION_SAMPLES = 16
TEST_SAMPLES = 4
VOCABULARY = 1000
"""Token ids of bert_tiny are drawn from [1, VOCABULARY); 0 is the padding token."""
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


def conv_bn(cin: int, cout: int, kernel: int, stride: int = 1, groups: int = 1) -> nn.Sequential:
    """Conv (no bias, "same" padding) followed by BatchNorm, as the blocks below use them."""
    return nn.Sequential(
        nn.Conv2d(cin, cout, kernel, stride, kernel // 2, groups=groups, bias=False),
        nn.BatchNorm2d(cout),
    )


class ConvSiLU(nn.Module):
    """YOLOv8's Conv module: Conv + BN + SiLU (exported as Sigmoid and Mul at opset 13)."""

    def __init__(self, cin: int, cout: int, kernel: int, stride: int = 1) -> None:
        super().__init__()
        self.conv = conv_bn(cin, cout, kernel, stride)
        self.act = nn.SiLU()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.act(self.conv(x))


class C2f(nn.Module):
    """YOLOv8's C2f with one bottleneck: 1x1 conv, Split in two halves, a residual bottleneck
    (two 3x3 convs) on the second half, Concat of the halves and the bottleneck, 1x1 conv."""

    def __init__(self, cin: int, cout: int) -> None:
        super().__init__()
        self.half = cout // 2
        self.cv1 = ConvSiLU(cin, cout, 1)
        self.m1 = ConvSiLU(self.half, self.half, 3)
        self.m2 = ConvSiLU(self.half, self.half, 3)
        self.cv2 = ConvSiLU(3 * self.half, cout, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        a, b = self.cv1(x).split((self.half, self.half), dim=1)
        m = b + self.m2(self.m1(b))
        return self.cv2(torch.cat((a, b, m), dim=1))


class YoloBlock(nn.Module):
    """A YOLOv8-style backbone/neck slice on a 1x3x32x32 image: stride-2 stem, C2f at 16x16,
    stride-2 conv to 8x8, nearest Upsample x2 (Resize) and Concat with the C2f output, a 1x1
    conv, and a detect-head 1x1 conv (4 box + 4 class channels, no activation)."""

    input_shape = (1, 3, 32, 32)

    def __init__(self) -> None:
        super().__init__()
        self.stem = ConvSiLU(3, 16, 3, 2)
        self.c2f = C2f(16, 16)
        self.down = ConvSiLU(16, 32, 3, 2)
        self.up = nn.Upsample(scale_factor=2, mode="nearest")
        self.neck = ConvSiLU(48, 16, 1)
        self.head = nn.Conv2d(16, 8, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        p3 = self.c2f(self.stem(x))
        p4 = self.down(p3)
        y = self.neck(torch.cat((self.up(p4), p3), dim=1))
        return self.head(y)


class Mbv3Block(nn.Module):
    """A MobileNetV3-style network on a 1x3x16x16 image: stem 3x3 conv+BN+HardSwish, one
    inverted residual (1x1 expand 16->48 + BN + HardSwish, depthwise 3x3 + BN + HardSwish,
    squeeze-excitation: global average pool, 1x1 conv 48->12, ReLU, 1x1 conv 12->48,
    Hardsigmoid, Mul with the feature map; 1x1 project 48->16 + BN, residual Add), global
    average pool, Linear to 10 classes. Exported at opset 14, which has HardSwish."""

    input_shape = (1, 3, 16, 16)

    def __init__(self) -> None:
        super().__init__()
        self.stem = conv_bn(3, 16, 3)
        self.expand = conv_bn(16, 48, 1)
        self.depthwise = conv_bn(48, 48, 3, groups=48)
        self.se_reduce = nn.Conv2d(48, 12, 1)
        self.se_expand = nn.Conv2d(12, 48, 1)
        self.project = conv_bn(48, 16, 1)
        self.fc = nn.Linear(16, 10)
        self.hswish = nn.Hardswish()
        self.hsigmoid = nn.Hardsigmoid()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.hswish(self.stem(x))
        y = self.hswish(self.depthwise(self.hswish(self.expand(x))))
        scale = nn.functional.adaptive_avg_pool2d(y, 1)
        scale = self.hsigmoid(self.se_expand(torch.relu(self.se_reduce(scale))))
        x = x + self.project(y * scale)
        return self.fc(nn.functional.adaptive_avg_pool2d(x, 1).flatten(1))


class EncoderLayer(nn.Module):
    """A post-norm BERT layer: multi-head self-attention with an additive mask, residual +
    LayerNorm, feed-forward with GELU (erf form), residual + LayerNorm."""

    def __init__(self, hidden: int, heads: int, ffn: int) -> None:
        super().__init__()
        self.heads = heads
        self.qkv = nn.ModuleList(nn.Linear(hidden, hidden) for _ in range(3))
        self.out = nn.Linear(hidden, hidden)
        self.norm1 = nn.LayerNorm(hidden, eps=1e-12)
        self.up = nn.Linear(hidden, ffn)
        self.down = nn.Linear(ffn, hidden)
        self.norm2 = nn.LayerNorm(hidden, eps=1e-12)

    def forward(self, x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        batch, tokens, hidden = x.shape
        size = hidden // self.heads

        def split(t: torch.Tensor) -> torch.Tensor:
            return t.reshape(batch, tokens, self.heads, size).transpose(1, 2)

        q, k, v = (split(linear(x)) for linear in self.qkv)
        scores = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(size) + mask
        context = torch.matmul(torch.softmax(scores, dim=-1), v)
        context = context.transpose(1, 2).reshape(batch, tokens, hidden)
        x = self.norm1(x + self.out(context))
        return self.norm2(x + self.down(nn.functional.gelu(self.up(x))))


class BertTiny(nn.Module):
    """A BERT-style encoder: token ids (int64 [1, 16], vocabulary 1000) through a word
    embedding (Gather), plus a learned position embedding, LayerNorm; the attention mask
    (int64, 1 = token, 0 = padding) becomes the additive (1 - mask) * -10000 of BERT;
    2 encoder layers of hidden 64, 4 heads, feed-forward 128. Output: the last hidden state."""

    input_specs = (
        ("input_ids", (1, 16), "tokens"),
        ("attention_mask", (1, 16), "mask"),
    )
    def __init__(self) -> None:
        super().__init__()
        self.words = nn.Embedding(VOCABULARY, 64)
        self.positions = nn.Embedding(16, 64)
        self.register_buffer("position_ids", torch.arange(16).unsqueeze(0))
        self.norm = nn.LayerNorm(64, eps=1e-12)
        self.layers = nn.ModuleList(EncoderLayer(64, 4, 128) for _ in range(2))

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
        x = self.norm(self.words(input_ids) + self.positions(self.position_ids))
        mask = (1.0 - attention_mask[:, None, None, :].to(torch.float32)) * -10000.0
        for layer in self.layers:
            x = layer(x, mask)
        return x


class Lstm2(nn.Module):
    """A 2-layer LSTM (input 16, hidden 32, batch_first) over a [1, 8, 16] sequence, zero
    initial state, and a Linear head (32 -> 10) on every step: output [1, 8, 10]."""

    input_shape = (1, 8, 16)

    def __init__(self) -> None:
        super().__init__()
        self.lstm = nn.LSTM(16, 32, num_layers=2, batch_first=True)
        self.head = nn.Linear(32, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.lstm(x)[0])


class Gru2Bi(nn.Module):
    """A 2-layer bidirectional GRU (input 16, hidden 24, batch_first) over a [1, 8, 16]
    sequence, zero initial state, and a Linear head (48 -> 10) on every step: output
    [1, 8, 10] (issue 13 asks GRU as well as LSTM on the array)."""

    input_shape = (1, 8, 16)

    def __init__(self) -> None:
        super().__init__()
        self.gru = nn.GRU(16, 24, num_layers=2, batch_first=True, bidirectional=True)
        self.head = nn.Linear(48, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.gru(x)[0])


class PaddleStyle(nn.Module):
    """A small conv net as Paddle2ONNX would write it: Conv3x3(8)+BN+ReLU, Conv3x3(16)
    stride 2+BN+ReLU, Conv1x1(16)+ReLU, global average pool, Flatten, Linear to 10, with the
    batch and spatial dimensions dynamic (see `paddle_dimensions`)."""

    input_shape = (1, 3, 16, 16)
    dynamic_axes: ClassVar = {"input": {0: "N", 2: "H", 3: "W"}, "output": {0: "N"}}

    def __init__(self) -> None:
        super().__init__()
        self.conv1 = conv_bn(3, 8, 3)
        self.conv2 = conv_bn(8, 16, 3, 2)
        self.conv3 = nn.Conv2d(16, 16, 1)
        self.fc = nn.Linear(16, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = torch.relu(self.conv2(torch.relu(self.conv1(x))))
        x = torch.relu(self.conv3(x))
        return self.fc(torch.flatten(nn.functional.adaptive_avg_pool2d(x, 1), 1))


class MetaFormer(nn.Module):
    """A MetaFormer-style stage on a 1x3x16x16 image with the patterns of session 10's unseen
    models (PoolFormer and FastViT, BEiT and MobileBERT, GhostNet): a 4x4 stride-4 patch
    embedding (conv_bn, 32 channels, padding 2: 5x5 patches); a pooling token mixer
    x + s1 * (pool(y) - y), y a 1x1 conv+BN of x (the difference of two computed tensors, s1
    a per-channel layer scale [32, 1, 1]); a GhostNet-style squeeze-excitation of a channel
    Slice, y * sigmoid(conv(mean(y))) with y = x[:, :16], concatenated with the other half;
    then the 25 tokens [1, 25, 32]: MobileBERT's NoNorm (x * gamma + beta of [32] vectors), an
    MLP with GELU whose output a layer scale [32] multiplies (BEiT), a residual, and a Linear
    head to 10."""

    input_shape = (1, 3, 16, 16)

    def __init__(self) -> None:
        super().__init__()
        generator = torch.Generator().manual_seed(SEED + 7)
        self.embed = conv_bn(3, 32, 4, 4)
        self.mix = conv_bn(32, 32, 1)
        self.pool = nn.AvgPool2d(3, 1, 1, count_include_pad=False)
        self.scale1 = nn.Parameter(0.5 + torch.rand(32, 1, 1, generator=generator))
        self.reduce = nn.Conv2d(16, 16, 1)
        self.gamma = nn.Parameter(0.5 + torch.rand(32, generator=generator))
        self.beta = nn.Parameter(0.1 * torch.randn(32, generator=generator))
        self.fc1 = nn.Linear(32, 64)
        self.fc2 = nn.Linear(64, 32)
        self.scale2 = nn.Parameter(0.5 + torch.rand(32, generator=generator))
        self.head = nn.Linear(32, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.embed(x)
        y = self.mix(x)
        x = x + self.scale1 * (self.pool(y) - y)
        half = x[:, :16]
        gate = torch.sigmoid(self.reduce(half.mean((2, 3), keepdim=True)))
        x = torch.cat([half * gate, x[:, 16:]], 1)
        t = x.flatten(2).transpose(1, 2)
        t = t * self.gamma + self.beta
        t = t + self.scale2 * self.fc2(nn.functional.gelu(self.fc1(t)))
        return self.head(t)


class DecoderLayer(nn.Module):
    """A LLaMA-style pre-norm decoder layer: RMSNorm, grouped-query attention (`heads` query
    heads sharing `kv_heads` key/value heads, repeated by Expand and Reshape as transformers'
    repeat_kv), rotary position embedding (rotate_half: Slice, Neg, Concat) of the queries
    and keys, the additive causal and padding mask, residual; RMSNorm, SwiGLU feed-forward
    (SiLU(gate(x)) * up(x): a product of two computed tensors), residual."""

    def __init__(self, hidden: int, heads: int, kv_heads: int, ffn: int) -> None:
        super().__init__()
        self.heads, self.kv_heads, self.size = heads, kv_heads, hidden // heads
        self.norm1 = RmsNorm(hidden)
        self.q = nn.Linear(hidden, hidden, bias=False)
        self.kv = nn.ModuleList(nn.Linear(hidden, kv_heads * self.size, bias=False)
                                for _ in range(2))
        self.out = nn.Linear(hidden, hidden, bias=False)
        self.norm2 = RmsNorm(hidden)
        self.gate = nn.Linear(hidden, ffn, bias=False)
        self.up = nn.Linear(hidden, ffn, bias=False)
        self.down = nn.Linear(ffn, hidden, bias=False)

    def forward(self, x: torch.Tensor, mask: torch.Tensor, cos: torch.Tensor,
                sin: torch.Tensor) -> torch.Tensor:
        batch, tokens, hidden = x.shape
        h = self.norm1(x)
        q = self.q(h).reshape(batch, tokens, self.heads, self.size).transpose(1, 2)
        k, v = (linear(h).reshape(batch, tokens, self.kv_heads, self.size).transpose(1, 2)
                for linear in self.kv)
        q, k = q * cos + rotate_half(q) * sin, k * cos + rotate_half(k) * sin
        repeat = self.heads // self.kv_heads
        k, v = (t[:, :, None].expand(batch, self.kv_heads, repeat, tokens, self.size)
                .reshape(batch, self.heads, tokens, self.size) for t in (k, v))
        scores = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(self.size) + mask
        context = torch.matmul(torch.softmax(scores, dim=-1), v)
        x = x + self.out(context.transpose(1, 2).reshape(batch, tokens, hidden))
        h = self.norm2(x)
        return x + self.down(nn.functional.silu(self.gate(h)) * self.up(h))


class RmsNorm(nn.Module):
    """LLaMA's RMSNorm: x * rsqrt(mean(x^2) + eps) * weight (Pow, ReduceMean, Add, Sqrt, Div,
    Mul once exported); the weight drawn (seeded by `build`) so that no two norms share it."""

    def __init__(self, hidden: int) -> None:
        super().__init__()
        self.weight = nn.Parameter(0.8 + 0.4 * torch.rand(hidden))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.weight * (x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6))


def rotate_half(x: torch.Tensor) -> torch.Tensor:
    """[x1, x2] -> [-x2, x1] over the last axis (transformers' rotary embedding)."""
    half = x.shape[-1] // 2
    return torch.cat((-x[..., half:], x[..., :half]), dim=-1)


class LlamaTiny(nn.Module):
    """A LLaMA-style decoder LM (session 11's tiny LLaMA/Qwen2/Mistral exports): token ids
    (int64 [1, 16]) through an embedding (Gather), 2 decoder layers of hidden 24, 4 query
    heads and 2 key/value heads, feed-forward 48, the rotary tables computed from the
    positions (Cos, Sin of inverse frequencies times positions), the causal mask as
    transformers writes it (where(allowed, 0, float min); one unpadded sequence, no
    attention_mask input); a final RMSNorm and the next token's logits [1, 1, VOCABULARY] (the last
    position's, as generation reads them) through the embedding table transposed (tied
    embeddings)."""

    input_specs = (("input_ids", (1, 16), "tokens"),)

    def __init__(self) -> None:
        super().__init__()
        self.words = nn.Embedding(VOCABULARY, 24)
        self.layers = nn.ModuleList(DecoderLayer(24, 4, 2, 48) for _ in range(2))
        self.norm = RmsNorm(24)
        size = 24 // 4
        self.register_buffer("inv_freq", 1.0 / 10000 ** (torch.arange(0, size, 2) / size))

    def forward(self, input_ids: torch.Tensor) -> torch.Tensor:
        tokens = input_ids.shape[1]
        positions = torch.arange(tokens, dtype=torch.float32)
        freqs = positions[:, None] * self.inv_freq[None, :]
        angles = torch.cat((freqs, freqs), dim=-1)
        cos, sin = angles.cos()[None, None], angles.sin()[None, None]
        allowed = torch.ones(tokens, tokens, dtype=torch.bool).tril()[None, None]
        mask = torch.where(allowed, 0.0, torch.finfo(torch.float32).min)
        x = self.words(input_ids)
        for layer in self.layers:
            x = layer(x, mask, cos, sin)
        return torch.matmul(self.norm(x)[:, -1:], self.words.weight.t())


NETWORKS: dict[str, Callable[[], nn.Module]] = {
    "mlp": Mlp,
    "lenet": LeNet,
    "resnet_tiny": ResNetTiny,
    "dwsep": DwSep,
    "attn": Attn,
    "yolo_block": YoloBlock,
    "mbv3_block": Mbv3Block,
    "bert_tiny": BertTiny,
    "lstm2": Lstm2,
    "paddle_style": PaddleStyle,
    "gru2bi": Gru2Bi,
    "metaformer": MetaFormer,
    "llama_tiny": LlamaTiny,
}
SYMMETRIC_ACTIVATIONS = frozenset({"attn"})
"""Networks quantized with symmetric activations (onnxruntime's ActivationSymmetric: uint8
with zero point 128): their attention products multiply two computed tensors, which the array
runs only with symmetric operands."""
QOPERATOR_NETWORKS = frozenset(
    {"mlp", "lenet", "resnet_tiny", "dwsep", "yolo_block", "mbv3_block", "bert_tiny", "lstm2",
     "paddle_style", "gru2bi", "metaformer", "llama_tiny"})
"""Networks also written in QOperator form."""
DYNAMIC_NETWORKS = frozenset({"bert_tiny", "lstm2", "gru2bi", "llama_tiny"})
"""Networks also written in dynamically quantized form (`_dynamic`: onnxruntime's
quantize_dynamic, DynamicQuantizeLinear + MatMulInteger, DynamicQuantizeLSTM)."""
REALISTIC = "realistic"
"""The folder (below tests/models) of the issue-13 networks, shaped like what real exporters
emit; the tests that take every model of tests/models (`*.onnx`, not recursive) do not see
them, so the counts and size limits of those tests stay as they are."""
REALISTIC_NETWORKS = frozenset({"yolo_block", "mbv3_block", "bert_tiny", "lstm2", "paddle_style",
                                "gru2bi", "metaformer", "llama_tiny"})
"""The networks written into REALISTIC."""
CONSTANT_FOLDING = frozenset({"bert_tiny", "lstm2", "gru2bi", "metaformer", "llama_tiny"})
"""Networks exported with the exporter's constant folding, as exporters (and the Hugging Face
tools) run by default: without it, the Linear weights of bert_tiny are Transpose nodes on
[out, in] weights, the reshape shapes Unsqueeze and Concat of constants, and the LSTM weights
are reordered from PyTorch's gate order to ONNX's by Slice and Concat nodes, instead of
initializers (and quantize_dynamic leaves those MatMuls and LSTMs in float)."""
OPSETS = {"mbv3_block": 14, "llama_tiny": 14}
"""Networks exported at another opset than OPSET (14 has HardSwish and Trilu, which
transformers' decoder exports use)."""
QUANTIZED_TOLERANCE = {"mbv3_block": 0.2, "bert_tiny": 0.2, "lstm2": 0.2, "gru2bi": 0.2,
                       "llama_tiny": 0.2}
"""The largest error a quantized form may have, relative to the largest float output, where
it is not 0.1: static quantization of LayerNorm outputs, recurrent states and HardSwish
chains loses more."""


def build(name: str) -> nn.Module:
    """Return network `name` in eval mode with seeded weights and non-trivial BN statistics.

    PyTorch's default initialisation (Kaiming uniform) keeps activations in a sensible range;
    BatchNorm running statistics and affine parameters, and LayerNorm's affine parameters,
    are drawn so that the normalizations are not identities (and no two LayerNorms share
    parameters the exporter would merge).
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
            elif isinstance(module, nn.LayerNorm):
                n = module.normalized_shape[0]
                module.weight.copy_(0.8 + 0.4 * torch.rand(n, generator=generator))
                module.bias.copy_(0.1 * torch.randn(n, generator=generator))
    return net.eval()


Spec = tuple[str, tuple[int, ...], str]
"""A graph input: name, shape and kind ("image", "normal", "tokens" or "mask")."""


def input_specs(net: nn.Module) -> tuple[Spec, ...]:
    """Return the graph inputs of `net`: its `input_specs`, or one float input named "input"
    of its `input_shape` (an image when 4-D, else standard normal values)."""
    specs = getattr(net, "input_specs", None)
    if specs is not None:
        return tuple(specs)
    shape = tuple(net.input_shape)
    return (("input", shape, "image" if len(shape) == 4 else "normal"),)


def sample_inputs(specs: tuple[Spec, ...], count: int, seed: int) -> list[dict[str, np.ndarray]]:
    """Return `count` seeded feeds: float32 images in [0, 1), float32 standard normal vectors,
    int64 token ids in [1, VOCABULARY) and int64 attention masks (ones, the last 1 to 1/4 of
    the positions 0); token ids are 0 (padding) where a mask of the feed is 0."""
    rng = np.random.default_rng(seed)
    feeds = []
    for _ in range(count):
        feed = {name: _sample(rng, shape, kind) for name, shape, kind in specs}
        masks = [feed[name] for name, _, kind in specs if kind == "mask"]
        for name, _, kind in specs:
            if kind == "tokens" and masks:
                feed[name] = feed[name] * masks[0]
        feeds.append(feed)
    return feeds


def _sample(rng: np.random.Generator, shape: tuple[int, ...], kind: str) -> np.ndarray:
    if kind == "image":
        return rng.random(shape, dtype=np.float32)
    if kind == "normal":
        return rng.standard_normal(shape, dtype=np.float32)
    if kind == "tokens":
        return rng.integers(1, VOCABULARY, shape, dtype=np.int64)
    if kind == "mask":
        mask = np.ones(shape, dtype=np.int64)
        padding = int(rng.integers(1, shape[-1] // 4 + 1))
        mask[..., shape[-1] - padding:] = 0
        return mask
    raise ValueError(f"unknown input kind {kind!r}")


def torch_inputs(specs: tuple[Spec, ...], feed: dict[str, np.ndarray]) -> tuple[torch.Tensor, ...]:
    """Return the feed as torch tensors in the order of the graph inputs."""
    return tuple(torch.from_numpy(feed[name]) for name, _, _ in specs)


# --------------------------------------------------------------------------------------------
# Export and graph clean-up.


def export_float(net: nn.Module, opset: int = OPSET, folding: bool = False) -> onnx.ModelProto:
    """Export `net` at `opset` with the TorchScript exporter, keeping BatchNormalization nodes
    (the dimensions named in the network's `dynamic_axes`, if any, exported as dim_params)."""
    specs = input_specs(net)
    example = tuple(
        torch.ones(shape, dtype=torch.int64) if kind in ("tokens", "mask") else torch.zeros(shape)
        for _, shape, kind in specs
    )
    buffer = io.BytesIO()
    torch.onnx.export(
        net,
        example,
        buffer,
        dynamo=False,
        opset_version=opset,
        input_names=[name for name, _, _ in specs],
        output_names=["output"],
        training=torch.onnx.TrainingMode.PRESERVE,
        do_constant_folding=folding,
        dynamic_axes=getattr(net, "dynamic_axes", None),
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
    """Turn Constant nodes, and Casts and Concats of constants, into initializers.

    The exporter writes ReLU6's bounds as Constant -> Cast -> Clip and Upsample's scales as
    Concat of two Constants; folding them gives every graph plain initializers for its
    constants.
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
        elif node.op_type == "Concat" and all(name in constants for name in node.input):
            axis = helper.get_attribute_value(node.attribute[0])
            parts = [constants.pop(name) for name in node.input]
            constants[node.output[0]] = np.concatenate(parts, axis=axis)
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

    def __init__(self, specs: tuple[Spec, ...], seed: int) -> None:
        self._samples = iter(sample_inputs(specs, CALIBRATION_SAMPLES, seed))

    def get_next(self) -> dict[str, np.ndarray] | None:
        return next(self._samples, None)


def quantize(
    model: onnx.ModelProto,
    specs: tuple[Spec, ...],
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
        SeededReader(specs, seed),
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


def quantize_dynamically(model: onnx.ModelProto, workdir: pathlib.Path) -> onnx.ModelProto:
    """Quantize with onnxruntime's quantize_dynamic and its defaults: int8 per-tensor weights
    of MatMul, Gather and LSTM; activations quantized at run time (DynamicQuantizeLinear,
    uint8)."""
    source = workdir / "source.onnx"
    target = workdir / "dynamic.onnx"
    onnx.save(model, source)
    quantize_dynamic(str(source), str(target), weight_type=QuantType.QInt8)
    quantized = onnx.load(target)
    quantized.producer_version = ""
    onnx.checker.check_model(quantized, full_check=True)
    return quantized


def run_ort(model: onnx.ModelProto, inputs: list[dict[str, np.ndarray]]) -> list[np.ndarray]:
    """Run onnxruntime (one thread, all graph optimizations off) on each input."""
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    options.inter_op_num_threads = 1
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    session = ort.InferenceSession(
        model.SerializeToString(), options, providers=["CPUExecutionProvider"]
    )
    return [session.run(None, x)[0] for x in inputs]


def float_reference(net: nn.Module, inputs: list[dict[str, np.ndarray]]) -> list[np.ndarray]:
    """Return torch's outputs, to check the export."""
    specs = input_specs(net)
    with torch.no_grad():
        return [net(*torch_inputs(specs, x)).numpy() for x in inputs]


def check_quantized_activity(
    name: str, model: onnx.ModelProto, inputs: list[dict[str, np.ndarray]]
) -> None:
    """Fail when a QuantizeLinear output is constant: a dead layer after quantization."""
    probe = onnx.ModelProto.FromString(model.SerializeToString())
    constants = {t.name for t in probe.graph.initializer}
    q_outputs = [
        n.output[0]
        for n in probe.graph.node
        if n.op_type in ("QuantizeLinear", "DynamicQuantizeLinear") and n.input[0] not in constants
    ]
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
        values = session.run(q_outputs, x)
        for out, value in zip(q_outputs, values):
            if value.min() == value.max():
                raise RuntimeError(f"{name}: quantized tensor {out} is constant {value.min()}")


# --------------------------------------------------------------------------------------------


def save_npz(path: pathlib.Path, prefix: str, arrays: list[np.ndarray]) -> None:
    """Write `arrays` as PREFIX_0, PREFIX_1 ... into an .npz with fixed zip timestamps."""
    save_members(path, {f"{prefix}_{index}": array for index, array in enumerate(arrays)})


def save_inputs(path: pathlib.Path, specs: tuple[Spec, ...],
                feeds: list[dict[str, np.ndarray]]) -> None:
    """Write the feeds as NAME_0, NAME_1 ... for each graph input NAME ("input_0" .. for the
    one-input networks), input by input."""
    save_members(path, {f"{name}_{index}": feed[name]
                        for name, _, _ in specs for index, feed in enumerate(feeds)})


def save_members(path: pathlib.Path, arrays: dict[str, np.ndarray]) -> None:
    """Write `arrays` (member name -> array, in order) into an .npz with fixed timestamps.

    `np.savez` stamps each member with the current time, which would make the bytes change on
    every run; this writes the same .npy members with a constant date.
    """
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_STORED) as archive:
        for key, array in arrays.items():
            member = io.BytesIO()
            np.lib.format.write_array(member, np.ascontiguousarray(array), allow_pickle=False)
            info = zipfile.ZipInfo(f"{key}.npy", date_time=(1980, 1, 1, 0, 0, 0))
            archive.writestr(info, member.getvalue())


# --------------------------------------------------------------------------------------------
# Paddle2ONNX's way of writing dynamic dimensions.


def paddle_dimensions(model: onnx.ModelProto, specs: tuple[Spec, ...],
                      dynamic: dict[str, dict[int, str]]) -> onnx.ModelProto:
    """Rewrite the shapes of `model` as Paddle2ONNX writes them, with onnx helpers.

    Paddle programs hold -1 for every size not known before the run; Paddle2ONNX writes those
    as dim_value -1 in the graph inputs and as dim_param "?" in the outputs and in every
    intermediate value_info, so one name "?" stands for several different sizes (the batch,
    16 and 8 here). A dimension is dynamic when it changes with the input dimensions named in
    `dynamic` (checked by inferring the shapes at two input sizes).
    """
    first = _static_shapes(model, specs, dynamic, 1)
    second = _static_shapes(model, specs, dynamic, 2)
    result = onnx.ModelProto.FromString(model.SerializeToString())
    graph = result.graph
    for info in (*graph.input, *graph.output):
        for dim in info.type.tensor_type.shape.dim:
            if dim.HasField("dim_param"):
                is_input = any(info is x for x in graph.input)
                dim.Clear()
                if is_input:
                    dim.dim_value = -1
                else:
                    dim.dim_param = "?"
    known = {info.name for info in (*graph.input, *graph.output)}
    known |= {t.name for t in graph.initializer}
    del graph.value_info[:]
    for name, (elem_type, dims) in first.items():
        if name in known or dims is None or second[name][1] is None:
            continue
        shape = ["?" if a != b else a for a, b in zip(dims, second[name][1])]
        graph.value_info.append(helper.make_tensor_value_info(name, elem_type, shape))
    onnx.checker.check_model(result)
    return result


def _static_shapes(model: onnx.ModelProto, specs: tuple[Spec, ...],
                   dynamic: dict[str, dict[int, str]], factor: int
                   ) -> dict[str, tuple[int, list[int] | None]]:
    """Return name -> (element type, dims or None when unknown) of every value, inferred with
    the graph inputs fixed to their sample shapes with the dynamic dimensions multiplied by
    `factor`."""
    probe = onnx.ModelProto.FromString(model.SerializeToString())
    shapes = {name: shape for name, shape, _ in specs}
    for info in probe.graph.input:
        if info.name not in shapes:
            continue
        for axis, dim in enumerate(info.type.tensor_type.shape.dim):
            size = shapes[info.name][axis]
            dim.Clear()
            dim.dim_value = size * factor if axis in dynamic.get(info.name, {}) else size
    del probe.graph.value_info[:]
    del probe.graph.output[:]  # so that inference writes the outputs' shapes in value_info
    probe = onnx.shape_inference.infer_shapes(probe, strict_mode=True)
    found: dict[str, tuple[int, list[int] | None]] = {}
    for info in probe.graph.value_info:
        tensor = info.type.tensor_type
        dims = [d.dim_value for d in tensor.shape.dim] if tensor.HasField("shape") else None
        if dims is not None and not all(d.HasField("dim_value") for d in tensor.shape.dim):
            dims = None
        found[info.name] = (tensor.elem_type, dims)
    return found


def op_counts(model: onnx.ModelProto) -> str:
    """Return 'Op xN, ...' in first-seen order."""
    counts = Counter(node.op_type for node in model.graph.node)
    return ", ".join(f"{op} x{n}" for op, n in counts.items())


def make_forms(name: str, net: nn.Module, seed: int) -> dict[str, onnx.ModelProto]:
    """Return the forms of network `name` (float, qdq, and qop, dynamic where they apply);
    `seed` seeds the calibration inputs."""
    specs = input_specs(net)
    float_model = export_float(net, OPSETS.get(name, OPSET), name in CONSTANT_FOLDING)
    folded = fold_batchnorm(float_model)
    forms = {"float": float_model}
    with tempfile.TemporaryDirectory() as tmp:
        work = pathlib.Path(tmp)
        symmetric = name in SYMMETRIC_ACTIVATIONS
        forms["qdq"] = quantize(folded, specs, QuantFormat.QDQ, seed, work, symmetric)
        if name in QOPERATOR_NETWORKS:
            forms["qop"] = quantize(folded, specs, QuantFormat.QOperator, seed, work, symmetric)
        if name in DYNAMIC_NETWORKS:
            forms["dynamic"] = quantize_dynamically(float_model, work)
    dynamic_axes = getattr(net, "dynamic_axes", None)
    if dynamic_axes is not None:
        inputs = {info.name for info in float_model.graph.input}
        axes = {key: value for key, value in dynamic_axes.items() if key in inputs}
        forms = {form: paddle_dimensions(model, specs, axes) for form, model in forms.items()}
    return forms


def generate(root: pathlib.Path, only: frozenset[str] | None = None) -> list[str]:
    """Write every file (of the networks in `only`, default all) into `root` (the issue-13
    networks into its REALISTIC folder); return one summary line per .onnx file."""
    torch.use_deterministic_algorithms(True)
    torch.set_num_threads(1)
    summary = []
    for index, name in enumerate(NETWORKS):
        if only is not None and name not in only:
            continue
        outdir = root / REALISTIC if name in REALISTIC_NETWORKS else root
        outdir.mkdir(parents=True, exist_ok=True)
        net = build(name)
        specs = input_specs(net)
        inputs = sample_inputs(specs, TEST_SAMPLES, SEED + 100 + index)
        save_inputs(outdir / f"{name}_inputs.npz", specs, inputs)
        forms = make_forms(name, net, SEED + 200 + index)
        expected = float_reference(net, inputs)
        for form, model in forms.items():
            outputs = run_ort(model, inputs)
            error = 0.0
            if form == "float":
                for got, want in zip(outputs, expected):
                    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)
            else:
                check_quantized_activity(f"{name}_{form}", model, inputs)
                error = max(float(np.abs(got - want).max() / np.abs(want).max())
                            for got, want in zip(outputs, expected))
                if error > QUANTIZED_TOLERANCE.get(name, 0.1):
                    raise RuntimeError(f"{name}_{form}: quantized output off by {error:.3f}")
            path = outdir / f"{name}_{form}.onnx"
            data = model.SerializeToString(deterministic=True)
            path.write_bytes(data)
            save_npz(outdir / f"{name}_{form}_ort.npz", "output", outputs)
            opset = OPSETS.get(name, OPSET)
            summary.append(f"{path.name}: opset {opset}, {len(data)} bytes, off by {error:.3f}; "
                           f"{op_counts(model)}")
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
            names = sorted(str(p.relative_to(fresh)) for p in fresh.rglob("*") if p.is_file())
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
    if args.out == HERE and (only is None or "lenet" in only):
        for file in EXAMPLE_FILES:
            (EXAMPLES / file).write_bytes((HERE / file).read_bytes())
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
