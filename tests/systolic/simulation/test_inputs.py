import numpy as np
import pytest

from systolic.errors import ModelError
from systolic.examples import example_path
from systolic.mapper.importer import load_model
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
