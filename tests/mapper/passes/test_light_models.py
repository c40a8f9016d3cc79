"""The light ImageNet models of the onnx wheel go through the whole pipeline: constant
folding (their weights are ConstantOfShape nodes), BatchNormalization folding and
post-training quantization, then the fusions. The fast test calibrates on one input; the
slow one uses the default seeded random set (8 inputs) on all nine models."""

import glob
import os

import numpy as np
import onnx
import pytest

from systolic.mapper.importer import load_model
from systolic.mapper.passes.pipeline import run_passes

pytestmark = pytest.mark.filterwarnings("ignore::systolic.mapper.graph_checks.NameWarning")

LIGHT = sorted(glob.glob(os.path.join(os.path.dirname(onnx.__file__),
                                      "backend/test/data/light/*.onnx")))
NAMES = [os.path.basename(p).removeprefix("light_").removesuffix(".onnx") for p in LIGHT]
SLOW = {"vgg19", "densenet121", "inception_v1", "inception_v2", "zfnet512", "bvlc_alexnet"}
"""Over 5 s even with one calibration input (zfnet512 and alexnet 16-22 s under load: their
large fully connected layers); ResNet-50 (about 6 s) stays in the fast set."""


def one_feed(model):
    frozen = {t.name for t in model.graph.initializers}
    return [{info.name: np.random.default_rng(0).standard_normal(
        tuple(d if isinstance(d, int) else 1 for d in info.type.shape or ())).astype(np.float32)
        for info in model.graph.inputs if info.name not in frozen}]


def check(name, calibration):
    model = load_model(LIGHT[NAMES.index(name)])
    fused, report = run_passes(model, calibration=calibration)
    ops = [n.op_type for n in fused.graph.nodes]
    convs = sum(n.op_type in ("Conv", "LRN") for n in model.graph.nodes)  # decompose_lrn
    assert ops.count("QConv") == convs and "Conv" not in ops
    assert "BatchNormalization" not in ops  # after a Concat too: channel_affine
    if name in ("densenet121", "inception_v2"):  # Caffe2's BN + Mul(scale) + Add(shift)
        assert "Mul" not in ops and "Add" not in ops
    assert [o.type for o in fused.graph.outputs] == [o.type for o in model.graph.outputs]
    assert all(f.reason for f in report.fates if f.action == "host")


@pytest.mark.parametrize("name", [n for n in NAMES if n not in SLOW])
def test_light_model_goes_through_the_pipeline(name):
    model = load_model(LIGHT[NAMES.index(name)])
    check(name, one_feed(model))


@pytest.mark.slow
@pytest.mark.parametrize("name", NAMES)
def test_light_model_with_default_calibration(name):
    check(name, None)
