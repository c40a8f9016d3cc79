"""Small hand-built integer graphs (domain "systolic") for the lowering tests."""

from collections.abc import Sequence

import numpy as np

from systolic.ir import (
    Attrs,
    AttrValue,
    DataType,
    Graph,
    Node,
    Tensor,
    TensorType,
    ValueInfo,
)
from systolic.isa.requant import quantize_multiplier

OPSETS = {"": 13, "systolic": 1}


def node(
    op: str, inputs: Sequence[str], output: str, domain: str = "systolic", **attrs: AttrValue
) -> Node:
    """Return a node bound to version 1 (systolic) or 13 (ONNX), named after its output."""
    version = 1 if domain == "systolic" else 13
    return Node(
        op,
        tuple(inputs),
        (output,),
        domain=domain,
        version=version,
        name=output,
        attrs=Attrs(attrs),
    )


def graph(
    inputs: dict[str, tuple[DataType, tuple[int, ...]]],
    outputs: dict[str, DataType],
    nodes: Sequence[Node],
    constants: Sequence[Tensor] = (),
) -> Graph:
    """Return a graph (shapes are inferred by the compiler)."""
    return Graph(
        "test",
        tuple(ValueInfo(n, TensorType(t, s)) for n, (t, s) in inputs.items()),
        tuple(ValueInfo(n, TensorType(t, None)) for n, t in outputs.items()),
        tuple(nodes),
        tuple(constants),
    )


def random_input(dtype: DataType, shape: tuple[int, ...], seed: int) -> np.ndarray:
    """Return seeded random values over the whole range of an 8-bit type."""
    info = np.iinfo(dtype.numpy)
    rng = np.random.default_rng(seed)
    return rng.integers(info.min, int(info.max) + 1, shape).astype(dtype.numpy)


def qconv(
    x: str,
    out: str,
    channels_in: int,
    channels_out: int,
    seed: int,
    *,
    kernel: int = 3,
    pads: int = 1,
    stride: int = 1,
    group: int = 1,
    x_zp: int = 0,
    y_zp: int = 0,
    y_type: DataType = DataType.UINT8,
) -> tuple[Node, list[Tensor]]:
    """Return a QConv node with seeded weights and bias, and its constants."""
    rng = np.random.default_rng(seed)
    w = rng.integers(-127, 128, (channels_out, channels_in // group, kernel, kernel))
    b = rng.integers(-2000, 2000, channels_out)
    real = 1.0 / (kernel * kernel * channels_in // group * 60.0)
    m, s = quantize_multiplier(real)
    constants = [
        Tensor(f"{out}_w", DataType.INT8, w.astype(np.int8)),
        Tensor(f"{out}_b", DataType.INT32, b.astype(np.int32)),
    ]
    qnode = node(
        "QConv",
        (x, f"{out}_w", f"{out}_b"),
        out,
        strides=(stride, stride),
        pads=(pads,) * 4,
        dilations=(1, 1),
        group=group,
        x_zero_point=x_zp,
        multiplier=(m,) * channels_out,
        shift=(s,) * channels_out,
        y_zero_point=y_zp,
        y_type=int(y_type),
    )
    return qnode, constants


def qmatmul(
    a: str, out: str, k: int, n: int, seed: int, *, a_zp: int = 0, y_type: DataType = DataType.INT8
) -> tuple[Node, list[Tensor]]:
    """Return a QMatMul node with seeded weights and bias, and its constants."""
    rng = np.random.default_rng(seed)
    b = rng.integers(-127, 128, (k, n))
    bias = rng.integers(-3000, 3000, n)
    m, s = quantize_multiplier(1.0 / (k * 50.0))
    constants = [
        Tensor(f"{out}_B", DataType.INT8, b.astype(np.int8)),
        Tensor(f"{out}_bias", DataType.INT32, bias.astype(np.int32)),
    ]
    qnode = node(
        "QMatMul",
        (a, f"{out}_B", f"{out}_bias"),
        out,
        a_zero_point=a_zp,
        multiplier=(m,) * n,
        shift=(s,) * n,
        y_zero_point=3,
        y_type=int(y_type),
    )
    return qnode, constants
