import io
import zipfile

import numpy as np
import pytest
from onnx import TensorProto, helper

from systolic.errors import ModelError, ResourceError
from systolic.examples import example_path
from systolic.mapper.importer import load_model, load_model_bytes
from systolic.simulation.inputs import load_inputs, model_inputs, random_inputs


@pytest.fixture(scope="module")
def model():
    return load_model(example_path())


def test_random_inputs_are_seeded_and_typed(model):
    first = random_inputs(model, seed=3)
    again = random_inputs(model, seed=3)
    other = random_inputs(model, seed=4)
    (info,) = model_inputs(model)
    array = first[info.name]
    assert array.dtype == info.type.dtype.numpy
    assert list(array.shape) == list(info.type.shape)
    np.testing.assert_array_equal(array, again[info.name])
    assert not np.array_equal(array, other[info.name])


def test_npy_and_npz_round_trip(model, tmp_path):
    (info,) = model_inputs(model)
    value = random_inputs(model, seed=1)[info.name]
    np.save(tmp_path / "x.npy", value.astype(np.float64))
    loaded = load_inputs(model, tmp_path / "x.npy")
    assert loaded[info.name].dtype == value.dtype
    np.testing.assert_array_equal(loaded[info.name], value)
    np.savez(tmp_path / "x.npz", **{info.name: value})
    np.testing.assert_array_equal(load_inputs(model, tmp_path / "x.npz")[info.name], value)


def test_bad_files_name_the_problem(model, tmp_path):
    (info,) = model_inputs(model)
    value = random_inputs(model)[info.name]
    np.savez(tmp_path / "wrong.npz", nope=value)
    with pytest.raises(ModelError, match="'nope' is not an input of the model"):
        load_inputs(model, tmp_path / "wrong.npz")
    np.savez(tmp_path / "empty.npz")
    with pytest.raises(ModelError, match=f"has no array named '{info.name}'"):
        load_inputs(model, tmp_path / "empty.npz")
    np.save(tmp_path / "shape.npy", value[..., :-1])
    with pytest.raises(ModelError, match="has shape .* the model expects"):
        load_inputs(model, tmp_path / "shape.npy")
    np.save(tmp_path / "ints.npy", value.astype(np.int32))
    with pytest.raises(ModelError, match="has dtype int32; the model expects float32"):
        load_inputs(model, tmp_path / "ints.npy")
    (tmp_path / "junk.npy").write_bytes(b"not numpy")
    with pytest.raises(ModelError, match="not a readable numpy file"):
        load_inputs(model, tmp_path / "junk.npy")
    with pytest.raises(ModelError, match="must be a .npy file"):
        load_inputs(model, tmp_path / "x.txt")


def _symbolic_model():
    graph = helper.make_graph(
        [helper.make_node("Relu", ["x"], ["y"])], "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 8])],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
    return load_model_bytes(model.SerializeToString())


def _npy_header(shape: tuple[int, ...]) -> bytes:
    stream = io.BytesIO()
    np.lib.format.write_array_header_1_0(
        stream, {"descr": "<f4", "fortran_order": False, "shape": shape}
    )
    return stream.getvalue()


def _bomb(path, name):
    """An .npz whose member declares 2 GiB; the data behind it (1 MiB) is never read."""
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr(f"{name}.npy", _npy_header((2**26, 8)) + bytes(1 << 20))
    return path


@pytest.mark.parametrize("suffix", [".npy", ".npz"])
def test_an_empty_file_is_named(model, tmp_path, suffix):
    (tmp_path / f"x{suffix}").write_bytes(b"")
    with pytest.raises(ModelError, match=rf"^\S+x\{suffix} is empty: save the input arrays"):
        load_inputs(model, tmp_path / f"x{suffix}")


def test_a_huge_npy_header_is_refused_before_reading(tmp_path):
    path = tmp_path / "huge.npy"
    path.write_bytes(_npy_header((10**15, 8)))  # 3.5 PiB declared, no data
    with pytest.raises(ResourceError, match=r"^\S+huge.npy of shape \[1000000000000000, 8\] "
                       r"\(float32\) needs 32000000000000000 bytes, more than the limit of "
                       r"8589934592: raise the limit \(--max-memory\)"):
        load_inputs(_symbolic_model(), path)


def test_npz_members_are_checked_by_header_before_decompressing(tmp_path):
    path = _bomb(tmp_path / "bomb.npz", "x")
    with pytest.raises(ResourceError, match=r"array 'x' of shape \[67108864, 8\] .* needs "
                       r"2147483648 bytes, more than the limit of 1048576"):
        load_inputs(_symbolic_model(), path, max_bytes=1 << 20)
    with pytest.raises(ModelError, match=r"^input 'input' has shape \[67108864, 8\]; the model "
                       r"expects f32\[1,1,16,16\]$"):
        load_inputs(load_model(example_path()), _bomb(tmp_path / "lenet.npz", "input"))
