"""Whole-model conformance against the test data shipped in the onnx wheel.

The onnx package ships, under `onnx/backend/test/data/`:

- `light/light_NAME.onnx` with `light_NAME_output_0.pb`: full 224x224 ImageNet networks whose
  weights are made in the graph by ConstantOfShape, with the expected output for one input.
  onnx's runner (`onnx/backend/test/runner/__init__.py`, `_add_model_test` and
  `generate_dummy_data(..., random=False)`) feeds every non-initializer float input with
  `np.arange(n).reshape(shape) / n` as float32, unknown dimensions taken as 1; we do the same.
  Tolerances are the ones `onnx/backend/test/case/model/__init__.py` lists for these models:
  rtol=1e-3, atol=1e-7, except densenet121 with rtol=2e-3.
- `pytorch-converted/test_*/` and `pytorch-operator/test_*/`: small models with
  `test_data_set_0/input_*.pb` and `output_*.pb`; inputs bind by position to the graph inputs
  that are not initializers. onnx's loader (`onnx/backend/test/loader/__init__.py`) uses
  rtol=1e-3, atol=1e-7 unless a case has a data.json (none of these do).

Comparison is `np.testing.assert_allclose` after checking shape and dtype, as onnx's runner
`assert_similar_outputs` does. A pytorch case whose operators are all in the registry must
import and reproduce its outputs; a case using an operator the registry lacks must be refused
at import with UnsupportedError naming that operator. Nothing is skipped (only the whole
module, with its reason, where the onnx wheel that holds the data is not installed).

All nine light models together run in about 2 s here (VGG-19 0.6 s, ResNet-50 0.25 s), so
all of them are in the default run.
"""

import pathlib
import re

import numpy as np
import pytest

from systolic.errors import UnsupportedError
from systolic.mapper.importer import load_model
from systolic.reference import registry
from systolic.reference.executor import run_model

onnx = pytest.importorskip("onnx", reason="the onnx test data ships in the onnx wheel")
numpy_helper = onnx.numpy_helper

# The shipped models name values "0", "gpu_0/data_0" ...: the importer warns that these are
# not C90 identifiers; that is expected here and not what these tests check.
pytestmark = pytest.mark.filterwarnings("ignore::systolic.mapper.graph_checks.NameWarning")

DATA = pathlib.Path(onnx.__file__).parent / "backend" / "test" / "data"

# --- light ImageNet models ------------------------------------------------------------------

# (rtol, atol) from onnx/backend/test/case/model/__init__.py, collect_testcases().
LIGHT_TOLERANCES = {"densenet121": (2e-3, 1e-7)}
DEFAULT_TOLERANCE = (1e-3, 1e-7)

LIGHT_NAMES = sorted(p.stem.removeprefix("light_") for p in (DATA / "light").glob("light_*.onnx"))


def dummy_input(value_info: "onnx.ValueInfoProto") -> np.ndarray:
    """Return onnx's runner's deterministic input: arange(n).reshape(shape) / n, float32."""
    dims = value_info.type.tensor_type.shape.dim
    shape = tuple(d.dim_value if d.HasField("dim_value") else 1 for d in dims)
    n = int(np.prod(shape))
    return (np.arange(n).reshape(shape) / n).astype(np.float32)


def assert_similar_outputs(got: np.ndarray, want: np.ndarray, rtol: float, atol: float) -> None:
    """Shape, dtype, then allclose: onnx's runner's assert_similar_outputs for tensors."""
    assert got.shape == want.shape, f"shape {got.shape} != expected {want.shape}"
    assert got.dtype == want.dtype, f"dtype {got.dtype} != expected {want.dtype}"
    np.testing.assert_allclose(got, want, rtol=rtol, atol=atol)


@pytest.mark.parametrize("name", LIGHT_NAMES)
def test_light_model_gives_shipped_output(name: str) -> None:
    path = DATA / "light" / f"light_{name}.onnx"
    proto = onnx.load(path)
    initializers = {t.name for t in proto.graph.initializer}
    feeds = {vi.name: dummy_input(vi) for vi in proto.graph.input if vi.name not in initializers}
    expected = numpy_helper.to_array(onnx.load_tensor(DATA / "light" / f"light_{name}_output_0.pb"))
    rtol, atol = LIGHT_TOLERANCES.get(name, DEFAULT_TOLERANCE)

    outputs = run_model(load_model(path), feeds)

    assert set(outputs) == {o.name for o in proto.graph.output}
    assert_similar_outputs(outputs[proto.graph.output[0].name], expected, rtol, atol)


# --- pytorch-converted and pytorch-operator cases -------------------------------------------

PYTORCH_CASES = sorted(
    case
    for kind in ("pytorch-converted", "pytorch-operator")
    for case in (DATA / kind).iterdir()
    if (case / "model.onnx").is_file()
)


def unregistered_ops(proto: "onnx.ModelProto") -> list[str]:
    """Return the op types of `proto` that the registry has no version of, in node order."""
    opsets = {registry.canonical_domain(o.domain): o.version for o in proto.opset_import}
    missing: list[str] = []
    for node in proto.graph.node:
        domain = registry.canonical_domain(node.domain)
        version = opsets.get(domain, 0)
        if registry.resolve(domain, node.op_type, version) is None and node.op_type not in missing:
            missing.append(node.op_type)
    return missing


def case_id(case: pathlib.Path) -> str:
    return f"{case.parent.name}/{case.name}"


def split_cases() -> tuple[list[pathlib.Path], list[tuple[pathlib.Path, list[str]]]]:
    """Partition the cases into fully registered ones and ones with unregistered operators."""
    supported, unsupported = [], []
    for case in PYTORCH_CASES:
        missing = unregistered_ops(onnx.load(case / "model.onnx", load_external_data=False))
        if missing:
            unsupported.append((case, missing))
        else:
            supported.append(case)
    return supported, unsupported


SUPPORTED_CASES, UNSUPPORTED_CASES = split_cases()


def load_data_set(case: pathlib.Path, proto: "onnx.ModelProto") -> tuple[dict, list]:
    """Return ({input name: array}, [expected outputs]) of test_data_set_0."""
    data_set = case / "test_data_set_0"
    initializers = {t.name for t in proto.graph.initializer}
    names = [vi.name for vi in proto.graph.input if vi.name not in initializers]
    input_files = sorted(data_set.glob("input_*.pb"), key=lambda p: int(p.stem.split("_")[1]))
    output_files = sorted(data_set.glob("output_*.pb"), key=lambda p: int(p.stem.split("_")[1]))
    assert len(input_files) == len(names), f"{len(input_files)} inputs for graph inputs {names}"
    feeds = {
        name: numpy_helper.to_array(onnx.load_tensor(f)) for name, f in zip(names, input_files)
    }
    expected = [numpy_helper.to_array(onnx.load_tensor(f)) for f in output_files]
    return feeds, expected


@pytest.mark.parametrize("case", SUPPORTED_CASES, ids=case_id)
def test_supported_pytorch_case_gives_shipped_outputs(case: pathlib.Path) -> None:
    path = case / "model.onnx"
    proto = onnx.load(path)
    feeds, expected = load_data_set(case, proto)
    outputs = run_model(load_model(path), feeds)
    names = [o.name for o in proto.graph.output]
    assert set(outputs) == set(names)
    rtol, atol = DEFAULT_TOLERANCE
    for name, want in zip(names, expected, strict=True):
        assert_similar_outputs(outputs[name], want, rtol, atol)


def unsupported_other_cases() -> list[tuple[pathlib.Path, list[str]]]:
    """Return the onnx wheel's other shipped test models (simple/, real/) that use an
    operator the registry lacks: every pytorch-converted case is supported now, so these
    keep the refusal checked on real files."""
    found = []
    for folder in ("simple", "real"):
        for case in sorted((DATA / folder).glob("test_*")):
            if not (case / "model.onnx").is_file():
                continue
            missing = unregistered_ops(onnx.load(case / "model.onnx", load_external_data=False))
            if missing:
                found.append((case, missing))
    return found


@pytest.mark.parametrize(
    ("case", "missing"),
    [pytest.param(c, m, id=case_id(c)) for c, m in UNSUPPORTED_CASES + unsupported_other_cases()],
)
def test_an_unsupported_case_is_refused_naming_the_op(
    case: pathlib.Path, missing: list[str]
) -> None:
    # Named by the operator, or by its whole domain when the tool has no such opset.
    pattern = r"\b(" + "|".join(re.escape(op) for op in missing) + r")\b|opset domain"
    with pytest.raises(UnsupportedError, match=pattern):
        load_model(case / "model.onnx")


def test_every_pytorch_case_is_checked() -> None:
    assert len(SUPPORTED_CASES) + len(UNSUPPORTED_CASES) == len(PYTORCH_CASES) > 100
