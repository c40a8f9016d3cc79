"""The committed corpus of broken models is what make_bad_models.py builds, and is broken.

The defects are confirmed independently where the onnx package's checker can see them; the
others (operators or limits of this tool, contradictory dim_param bindings) are defects of
this tool's contract only, described in manifest.json.
"""

import importlib.util
import json
import os
import re
from pathlib import Path
from types import ModuleType

import pytest
from google.protobuf.message import DecodeError

from systolic import errors
from systolic.proto import ModelProto

HERE = Path(__file__).resolve().parent
MANIFEST = json.loads((HERE / "manifest.json").read_text())
CASES = sorted(MANIFEST["cases"])

ONNX_CHECKER_ACCEPTS = {
    "unknown_domain.onnx",  # a custom domain is legal ONNX
    "opset_too_new.onnx",  # the checker does not bound opset versions
    "unsupported_op.onnx",  # valid ONNX, an operator this tool lacks
    "external_too_short/model.onnx",  # the checker does not read the data
    "constant_of_shape_huge.onnx",  # valid, merely too large
    "dim_param_conflict.onnx",  # the checker does not bind dim_params
}
"""Cases onnx.checker.check_model(full_check=True) lets through; it rejects all the others."""


def _load_script() -> ModuleType:
    spec = importlib.util.spec_from_file_location("make_bad_models", HERE / "make_bad_models.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _tree(root: Path) -> dict[str, bytes | str]:
    """Map each generated file under `root` to its bytes, or each link to its target."""
    tree: dict[str, bytes | str] = {}
    for path in sorted(root.rglob("*")):
        name = path.relative_to(root).as_posix()
        if path.suffix == ".py" or "__pycache__" in path.parts:
            continue
        if path.is_symlink():
            tree[name] = os.readlink(path)
        elif path.is_file():
            tree[name] = path.read_bytes()
    return tree


def test_committed_corpus_matches_a_fresh_build(tmp_path: Path) -> None:
    _load_script().build(tmp_path)
    assert _tree(HERE) == _tree(tmp_path), (
        "stale corpus: run `python tests/data/bad_models/make_bad_models.py`"
    )


def test_manifest_lists_every_file() -> None:
    listed = {MANIFEST["baseline"], "manifest.json", *CASES, *MANIFEST["support_files"]}
    assert listed == set(_tree(HERE))


@pytest.mark.parametrize("case", CASES)
def test_case_is_well_described(case: str) -> None:
    entry = MANIFEST["cases"][case]
    assert entry["description"]
    assert issubclass(getattr(errors, entry["error"]), errors.SystolicError)
    re.compile(entry["match"])
    assert (HERE / case).stat().st_size <= 512


@pytest.mark.parametrize("case", ["not_protobuf.onnx", "truncated.onnx"])
def test_unparsable_cases_do_not_parse(case: str) -> None:
    with pytest.raises(DecodeError):
        ModelProto.FromString((HERE / case).read_bytes())


def test_truncated_is_a_prefix_of_the_baseline() -> None:
    truncated = (HERE / "truncated.onnx").read_bytes()
    baseline = (HERE / MANIFEST["baseline"]).read_bytes()
    assert len(baseline) // 2 <= len(truncated) < len(baseline)
    assert baseline.startswith(truncated)


def test_baseline_is_valid_and_computes_conv_relu() -> None:
    onnx = pytest.importorskip("onnx", reason="the onnx package (extra `test`) is not installed")
    np = pytest.importorskip("numpy")
    from onnx.reference import ReferenceEvaluator

    path = HERE / MANIFEST["baseline"]
    onnx.checker.check_model(str(path), full_check=True)
    x = np.arange(9, dtype=np.float32).reshape(1, 1, 3, 3)
    w = np.array([1.0, -2.0, 0.5, 3.0], dtype=np.float32).reshape(2, 2)
    expected = np.array(
        [
            [max(0.0, float((x[0, 0, i : i + 2, j : j + 2] * w).sum())) for j in range(2)]
            for i in range(2)
        ],
        dtype=np.float32,
    ).reshape(1, 1, 2, 2)
    (y,) = ReferenceEvaluator(str(path)).run(None, {"X": x})
    np.testing.assert_array_equal(y, expected)


@pytest.mark.parametrize("case", sorted(set(CASES) - ONNX_CHECKER_ACCEPTS))
def test_onnx_checker_also_rejects(case: str) -> None:
    onnx = pytest.importorskip("onnx", reason="the onnx package (extra `test`) is not installed")
    with pytest.raises(onnx.checker.ValidationError):
        onnx.checker.check_model(str(HERE / case), full_check=True)


@pytest.mark.parametrize("case", sorted(ONNX_CHECKER_ACCEPTS))
def test_onnx_checker_accepts_the_tool_specific_cases(case: str) -> None:
    onnx = pytest.importorskip("onnx", reason="the onnx package (extra `test`) is not installed")
    onnx.checker.check_model(str(HERE / case), full_check=True)
