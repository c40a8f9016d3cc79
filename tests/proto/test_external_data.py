"""External tensor data: offset and length honoured, unsafe locations refused."""

import os
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from systolic.errors import ModelError
from systolic.mapper.importer import load_model, load_model_bytes

WEIGHT = np.arange(6, dtype=np.float32).reshape(2, 3) - 2.5


def _model(location: str, offset: int | None = None, length: int | None = None) -> onnx.ModelProto:
    tensor = numpy_helper.from_array(WEIGHT, "w")
    tensor.ClearField("raw_data")
    tensor.data_location = TensorProto.EXTERNAL
    entries = {"location": location, "checksum": "ignored"}
    if offset is not None:
        entries["offset"] = str(offset)
    if length is not None:
        entries["length"] = str(length)
    for key, value in entries.items():
        entry = tensor.external_data.add()
        entry.key, entry.value = key, value
    graph = helper.make_graph(
        [helper.make_node("Add", ["x", "w"], ["y"], name="add")],
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])],
        initializer=[tensor],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 14)])


def _write(folder: Path, model: onnx.ModelProto) -> Path:
    path = folder / "model.onnx"
    path.write_bytes(model.SerializeToString())
    return path


def test_offset_and_length_are_honoured(tmp_path: Path) -> None:
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "w.bin").write_bytes(b"\xff" * 8 + WEIGHT.tobytes() + b"\xee" * 4)
    model = load_model(_write(tmp_path, _model("data/w.bin", offset=8, length=24)))
    w = model.graph.initializer("w")
    assert w is not None
    np.testing.assert_array_equal(w.data, WEIGHT)


def test_without_offset_reads_from_the_start(tmp_path: Path) -> None:
    (tmp_path / "w.bin").write_bytes(WEIGHT.tobytes())
    model = load_model_bytes(_model("w.bin").SerializeToString(), base_dir=tmp_path)
    w = model.graph.initializer("w")
    assert w is not None
    np.testing.assert_array_equal(w.data, WEIGHT)


def test_bytes_without_base_dir_are_refused() -> None:
    with pytest.raises(
        ModelError,
        match=r"^initializer 'w' stores its data in external file 'w.bin', but the model was loaded from bytes: pass base_dir",
    ):
        load_model_bytes(_model("w.bin").SerializeToString())


@pytest.mark.parametrize(
    ("location", "match"),
    [
        ("/etc/passwd", r"is an absolute path"),
        ("../w.bin", r"leaves the model's folder"),
        ("sub/../../w.bin", r"leaves the model's folder"),
        ("", r"gives no 'location'"),
    ],
)
def test_unsafe_locations_are_refused(tmp_path: Path, location: str, match: str) -> None:
    (tmp_path / "w.bin").write_bytes(WEIGHT.tobytes())
    folder = tmp_path / "model"
    folder.mkdir()
    with pytest.raises(ModelError, match=match):
        load_model(_write(folder, _model(location)))


def test_symlink_out_of_the_folder_is_refused(tmp_path: Path) -> None:
    (tmp_path / "w.bin").write_bytes(WEIGHT.tobytes())
    folder = tmp_path / "model"
    folder.mkdir()
    os.symlink(tmp_path / "w.bin", folder / "w.bin")
    with pytest.raises(ModelError, match=r"resolves outside the model's folder"):
        load_model(_write(folder, _model("w.bin")))


def test_symlink_inside_the_folder_is_allowed(tmp_path: Path) -> None:
    (tmp_path / "real.bin").write_bytes(WEIGHT.tobytes())
    os.symlink(tmp_path / "real.bin", tmp_path / "w.bin")
    model = load_model(_write(tmp_path, _model("w.bin")))
    assert model.graph.initializer("w") is not None


def test_missing_and_short_files(tmp_path: Path) -> None:
    path = _write(tmp_path, _model("w.bin"))
    with pytest.raises(ModelError, match=r"external data file 'w.bin' is missing"):
        load_model(path)
    (tmp_path / "w.bin").write_bytes(WEIGHT.tobytes()[:10])
    with pytest.raises(
        ModelError, match=r"'w.bin' is too short: needs 24 bytes at offset 0, found 10"
    ):
        load_model(path)


def test_length_that_contradicts_the_shape_is_refused(tmp_path: Path) -> None:
    (tmp_path / "w.bin").write_bytes(WEIGHT.tobytes())
    with pytest.raises(ModelError, match=r"length 20 does not match the 24 bytes"):
        load_model(_write(tmp_path, _model("w.bin", length=20)))


@pytest.mark.parametrize("location", ["\0", "w\0.bin", "w\n.bin", "\x1b[2Jw.bin"])
def test_location_with_control_characters_is_refused(tmp_path: Path, location: str) -> None:
    (tmp_path / "w.bin").write_bytes(WEIGHT.tobytes())
    with pytest.raises(
        ModelError,
        match=r"^initializer 'w': external data location .* holds "
        r"control characters; name a data file next to the model$",
    ):
        load_model(_write(tmp_path, _model(location)))


@pytest.mark.parametrize("offset", [2**63, 2**63 - 1, 2**40, 8])
def test_offset_past_the_end_is_too_short(tmp_path: Path, offset: int) -> None:
    (tmp_path / "w.bin").write_bytes(WEIGHT.tobytes())
    with pytest.raises(
        ModelError,
        match=rf"'w.bin' is too short: needs 24 bytes at offset {offset}, found "
        rf"{max(24 - offset, 0)}$",
    ):
        load_model(_write(tmp_path, _model("w.bin", offset=offset)))
