"""Our bindings read every model and tensor of onnx's backend test data byte-exactly.

Each `.onnx` file under the onnx wheel's `backend/test/data/{light,pytorch-converted,
pytorch-operator,simple}` is parsed with our `ModelProto` and serialized again; the bytes must
equal what the onnx package itself produces. The tensors of the `test_data_set_*` folders go
through our `TensorProto` the same way (only those whose graph value is a tensor: the sequence
models store `SequenceProto`s, which are not part of our schema).
"""

import importlib.util
from pathlib import Path

import pytest

from systolic.proto import ModelProto, TensorProto

SUITES = ("light", "pytorch-converted", "pytorch-operator", "simple")


def _onnx_test_data() -> Path | None:
    """Return the onnx wheel's backend test data folder, or None if onnx is not installed."""
    spec = importlib.util.find_spec("onnx")
    if spec is None or spec.origin is None:
        return None
    return Path(spec.origin).parent / "backend" / "test" / "data"


DATA = _onnx_test_data()
MISSING_ONNX = "the onnx package (extra `test`) is not installed: no reference models"


def _models() -> list[Path]:
    if DATA is None:
        return []
    return sorted(path for suite in SUITES for path in (DATA / suite).rglob("*.onnx"))


def _tensor_files() -> list[Path]:
    """Return the `.pb` files of every test case whose matching graph value is a tensor."""
    files = []
    for model_path in _models():
        graph = ModelProto.FromString(model_path.read_bytes()).graph
        initialized = {tensor.name for tensor in graph.initializer}
        values = {
            "input": [value for value in graph.input if value.name not in initialized],
            "output": list(graph.output),
        }
        for data_set in sorted(model_path.parent.glob("test_data_set_*")):
            for pb in sorted(data_set.glob("*.pb")):
                kind, _, index = pb.stem.partition("_")
                if values[kind][int(index)].type.HasField("tensor_type"):
                    files.append(pb)
    return files


def _test_id(path: Path) -> str:
    assert DATA is not None
    return path.relative_to(DATA).as_posix()


MODELS = _models()
TENSORS = _tensor_files()


def test_reference_data_was_found() -> None:
    if DATA is None:
        pytest.skip(MISSING_ONNX)
    assert len(MODELS) > 100
    assert len(TENSORS) > 200


@pytest.mark.parametrize("path", MODELS, ids=_test_id)
def test_model_round_trips_byte_for_byte(path: Path) -> None:
    onnx = pytest.importorskip("onnx", reason=MISSING_ONNX)
    data = path.read_bytes()
    ours = ModelProto.FromString(data)
    assert ours.SerializeToString() == onnx.load(str(path)).SerializeToString()
    ours.DiscardUnknownFields()  # every byte must belong to a field our schema declares
    assert ours.SerializeToString() == data


@pytest.mark.parametrize("path", TENSORS, ids=_test_id)
def test_tensor_round_trips_byte_for_byte(path: Path) -> None:
    onnx = pytest.importorskip("onnx", reason=MISSING_ONNX)
    data = path.read_bytes()
    ours = TensorProto.FromString(data)
    assert ours.SerializeToString() == onnx.load_tensor(str(path)).SerializeToString()
    ours.DiscardUnknownFields()
    assert ours.SerializeToString() == data
