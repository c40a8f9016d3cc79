"""ResNet-50 layer shapes on a 16x16 array: the lowered code keeps the array busy.

The array time (estimate.array_cycles) is compared with the ideal MACs / (rows * cols), and
the whole layer's cycles from the analytic cycle model (sim/timing/program_model) with it.
"""

import numpy as np
import pytest

from systolic.config import ArrayConfig, Dataflow
from systolic.ir import Attrs, DataType, Node
from systolic.isa.instructions import Halt
from systolic.isa.program import TensorPlacement, TensorRole
from systolic.mapper.lowering.conv import lower_qconv
from systolic.mapper.lowering.layer_code import BumpAllocator
from systolic.sim.timing.program_model import ProgramModel


def _nhwc(name: str, address: int, shape: tuple[int, int, int, int], halo: int) -> TensorPlacement:
    _, c, h, w = shape
    row = (w + 2 * halo) * c
    strides = ((h + 2 * halo) * row, 1, row, c)
    role = TensorRole.INPUT if name == "x" else TensorRole.OUTPUT
    return TensorPlacement(
        name, role, address + halo * row + halo * c, shape, DataType.UINT8, strides
    )


# (channels in, channels out, input size, kernel, stride, padding, occupied/ideal, total/ideal)
LAYERS = {
    (Dataflow.WS, "conv1"): (3, 64, 224, 7, 2, 3, 1.09, 1.10),
    (Dataflow.WS, "3x3 64 @56"): (64, 64, 56, 3, 1, 1, 1.0, 1.01),
    (Dataflow.WS, "3x3/2 128 @56"): (128, 128, 56, 3, 2, 1, 1.0, 1.01),
    (Dataflow.WS, "3x3 512 @7"): (512, 512, 7, 3, 1, 1, 1.0, 1.01),
    (Dataflow.WS, "1x1 2048-512 @7"): (2048, 512, 7, 1, 1, 0, 1.0, 1.01),
    (Dataflow.OS, "3x3 64 @56"): (64, 64, 56, 3, 1, 1, 1.0, 1.01),
    (Dataflow.OS, "3x3 256 @14"): (256, 256, 14, 3, 1, 1, 1.07, 1.08),
}


@pytest.mark.parametrize(("dataflow", "label"), list(LAYERS))
def test_resnet_layers_keep_the_array_busy(dataflow: Dataflow, label: str) -> None:
    c, m, size, k, s, p, occupied, total = LAYERS[dataflow, label]
    config = ArrayConfig(rows=16, cols=16, dataflow=dataflow)
    out = (size + 2 * p - k) // s + 1
    x = _nhwc("x", 0, (1, c, size, size), p)
    y = _nhwc("y", x.end + 64, (1, m, out, out), 0)
    w = np.random.default_rng(0).integers(-20, 20, size=(m, c, k, k)).astype(np.int8)
    attrs = {"strides": (s, s), "pads": (p,) * 4, "x_zero_point": 128,
             "multiplier": (1 << 30,) * m, "shift": (10,) * m, "y_type": 2}  # fmt: skip
    node = Node("QConv", ("x", "w"), ("y",), "systolic", 1, label, Attrs(attrs))  # type: ignore[arg-type]
    code = lower_qconv(node, x, y, (p,) * 4, config, BumpAllocator(y.end + 64), constants={"w": w})
    assert code.stats.macs == out * out * m * c * k * k
    assert code.stats.ratio <= occupied
    timing = ProgramModel(config).run([*code.instructions, Halt()])
    assert timing.total_cycles <= total * code.stats.ideal_cycles
