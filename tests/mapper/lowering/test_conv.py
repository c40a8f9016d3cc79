"""lower_qconv on the golden machine against the reference QConv, bit for bit."""

import dataclasses
import math

import numpy as np
import pytest

from systolic.config import ArrayConfig, Dataflow
from systolic.errors import ResourceError, UnsupportedError
from systolic.ir import Attrs, DataType
from systolic.isa.program import TensorRole
from systolic.mapper.lowering.conv import lower_qconv
from systolic.reference.kernels.conv import conv_nd
from systolic.reference.ops.op_systolic_qconv import QConv

ARRAYS = [(1, 1), (2, 3), (4, 4), (8, 8), (16, 16)]


def small_config(rows: int, cols: int, dataflow: Dataflow, tight: bool) -> ArrayConfig:
    """The array with the smallest spad and acc it accepts (tight) or roomy ones."""
    if not tight:
        return ArrayConfig(rows=rows, cols=cols, dataflow=dataflow, spad_kib=64, acc_kib=16)
    spad_row = max(rows, cols)
    spad_kib = max(1, math.ceil(2 * (rows + cols) * spad_row / 1024))
    acc_kib = max(1, math.ceil(2 * rows * cols * 4 / 1024))
    return ArrayConfig(rows=rows, cols=cols, dataflow=dataflow, spad_kib=spad_kib, acc_kib=acc_kib)


@dataclasses.dataclass
class ConvCase:
    """A random QConv layer: shapes, attributes, constants and the input."""

    attrs: dict[str, object]
    x: np.ndarray
    w: np.ndarray
    b: np.ndarray | None
    halo: tuple[int, ...]
    channel_pad: int


def shifts_for(acc: np.ndarray, axis: int, multiplier: np.ndarray) -> tuple[int, ...]:
    """Per-channel shifts that map each channel's accumulator spread to about +-40 (so the
    outputs use the int8 range instead of saturating)."""
    moved = np.moveaxis(acc, axis, 0).reshape(acc.shape[axis], -1).astype(np.float64)
    spread = np.maximum(moved.std(axis=1), 1.0) * multiplier / 2.0**31
    return tuple(int(min(31, max(-31, math.ceil(math.log2(s / 40))))) for s in spread)


def random_case(rng: np.random.Generator) -> ConvCase:
    rank = 1 if rng.random() < 0.15 else 2
    kind = rng.choice(["dense", "dense", "wide", "depthwise", "grouped"])
    if kind == "wide":  # several column tiles and K chunks even on a 16x16 array
        group, cg, mg = 1, int(rng.integers(12, 40)), int(rng.integers(17, 40))
    elif kind == "dense":
        group, cg, mg = 1, int(rng.integers(1, 12)), int(rng.integers(1, 14))
    elif kind == "depthwise":
        group = int(rng.integers(2, 9))
        cg, mg = 1, int(rng.integers(1, 3))
    else:
        group, cg, mg = int(rng.integers(2, 4)), int(rng.integers(1, 5)), int(rng.integers(1, 6))
    kernel = [int(rng.integers(1, 4)) for _ in range(rank)]
    strides = [int(rng.integers(1, 4)) for _ in range(rank)]
    dilations = [int(rng.choice([1, 1, 2])) for _ in range(rank)]
    pads = [int(rng.integers(0, 3)) for _ in range(2 * rank)]
    spatial = []
    for axis in range(rank):
        reach = dilations[axis] * (kernel[axis] - 1) + 1
        low = max(1, reach - pads[axis] - pads[axis + rank])
        spatial.append(int(rng.integers(low, low + 8)))
    pads = [min(p, kernel[i % rank] * dilations[i % rank] - 1) for i, p in enumerate(pads)]
    batch = int(rng.integers(1, 3))
    c, m = group * cg, group * mg
    x_type = int(rng.choice([2, 3]))
    y_type = int(rng.choice([2, 3]))
    x_dtype = np.uint8 if x_type == 2 else np.int8
    info = np.iinfo(x_dtype)
    x = rng.integers(info.min, int(info.max) + 1, size=(batch, c, *spatial)).astype(x_dtype)
    w = rng.integers(-128, 128, size=(m, cg, *kernel)).astype(np.int8)
    b = rng.integers(-(2**12), 2**12, size=m).astype(np.int32) if rng.random() < 0.8 else None
    x_zp = int(rng.integers(info.min, int(info.max) + 1))
    acc = conv_nd(x.astype(np.int64) - x_zp, w.astype(np.int64), strides=strides, pads=pads,
                  dilations=dilations, group=group, acc_dtype=np.int64)  # fmt: skip
    multiplier = rng.integers(2**30, 2**31, size=m)
    y_info = np.iinfo(np.uint8 if y_type == 2 else np.int8)
    y_zp = int(rng.integers(y_info.min, int(y_info.max) + 1))
    lo, hi = int(y_info.min), int(y_info.max)
    if rng.random() < 0.3:  # a fused ReLU
        lo = y_zp
    attrs: dict[str, object] = {
        "group": group,
        "strides": tuple(strides),
        "dilations": tuple(dilations),
        "pads": tuple(pads),
        "x_zero_point": x_zp,
        "multiplier": tuple(int(v) for v in multiplier),
        "shift": shifts_for(acc, 1, multiplier),
        "y_zero_point": y_zp,
        "y_type": y_type,
        "y_lo": lo,
        "y_hi": hi,
    }
    extra = [int(rng.integers(0, 2)) for _ in range(2 * rank)]
    halo = tuple(p + e for p, e in zip(pads, extra, strict=True))
    return ConvCase(attrs, x, w, b, halo, int(rng.choice([0, 0, 3])))


def run_case(case: ConvCase, config: ArrayConfig, harness: object) -> None:
    h = harness
    inputs = ("x", "w", "b") if case.b is not None else ("x", "w")
    node = h.node("QConv", inputs, **case.attrs)  # type: ignore[attr-defined]
    reference = QConv(Attrs(case.attrs), 1, "layer")  # type: ignore[arg-type]
    expected = reference.run([case.x, case.w, case.b])[0]
    rng = np.random.default_rng(7)
    x_kind = DataType.UINT8 if case.x.dtype == np.uint8 else DataType.INT8
    y_kind = DataType.UINT8 if expected.dtype == np.uint8 else DataType.INT8
    x_buf = h.place_nhwc("x", TensorRole.INPUT, 64, case.x.shape, x_kind, case.halo,  # type: ignore[attr-defined]
                         case.channel_pad, int(case.attrs["x_zero_point"]), rng)  # type: ignore[arg-type]  # fmt: skip
    rank = case.x.ndim - 2
    y_start = x_buf.start + len(x_buf.data) + 40
    y_buf = h.place_nhwc("y", TensorRole.OUTPUT, y_start, expected.shape, y_kind,  # type: ignore[attr-defined]
                         (0,) * (2 * rank), case.channel_pad, 0, rng)  # fmt: skip
    alloc = h.allocator(y_buf.start + len(y_buf.data) + 8)  # type: ignore[attr-defined]
    constants = {"w": case.w, "b": case.b} if case.b is not None else {"w": case.w}
    code = lower_qconv(node, x_buf.placement, y_buf.placement, case.halo, config, alloc,
                       constants=constants)  # fmt: skip
    got = h.run_layer(code, config, [x_buf, y_buf], case.x, alloc.next_address + 64)  # type: ignore[attr-defined]
    np.testing.assert_array_equal(got, expected)
    assert code.stats.macs == expected.size * case.w[0].size
    assert 0 < code.stats.utilization <= 1.0


CASES = [(seed, ARRAYS[seed % 5], Dataflow.WS if seed % 2 else Dataflow.OS) for seed in range(50)]


@pytest.mark.parametrize(("seed", "array", "dataflow"), CASES)
def test_random_conv_matches_reference(
    seed: int, array: tuple[int, int], dataflow: Dataflow, harness: object
) -> None:
    rng = np.random.default_rng(1000 + seed)
    case = random_case(rng)
    config = small_config(*array, dataflow, tight=seed % 3 != 0)
    run_case(case, config, harness)


def test_overflowing_accumulator_names_the_layer(harness: object) -> None:
    rng = np.random.default_rng(3)
    case = random_case(rng)
    case.w[...] = -128
    config = ArrayConfig(rows=4, cols=4, acc_width=16)
    with pytest.raises(ResourceError, match=r"^layer 'layer': sums of \d+ products can reach"):
        run_case(case, config, harness)


def test_halo_smaller_than_the_padding_is_refused(harness: object) -> None:
    rng = np.random.default_rng(5)
    case = random_case(rng)
    while not any(case.attrs["pads"]):  # type: ignore[arg-type]
        case = random_case(rng)
    case.halo = (0,) * len(case.halo)
    with pytest.raises(UnsupportedError, match=r"beyond its halo .*; place X with a larger halo$"):
        run_case(case, ArrayConfig(rows=4, cols=4), harness)
