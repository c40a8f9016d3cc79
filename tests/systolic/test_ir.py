"""`LazyTensor`: a constant known by its header, decoded on first use."""

import dataclasses
import pickle

import numpy as np
import pytest

from systolic.ir import DataType, LazyTensor, Tensor

VALUES = np.arange(12, dtype=np.float32).reshape(3, 4)


def _lazy(calls: list[int], values: np.ndarray = VALUES) -> LazyTensor:
    def load() -> np.ndarray:
        calls.append(1)
        return values.copy()

    return LazyTensor("w", DataType.FLOAT, shape=(3, 4), load=load)


def test_a_lazy_tensor_describes_itself_without_decoding() -> None:
    calls: list[int] = []
    tensor = _lazy(calls)
    assert (tensor.shape, tensor.size, tensor.nbytes) == ((3, 4), 12, 48)
    assert tensor.type.text() == "f32[3,4]" and tensor.text() == "f32[3,4]"
    assert hash(tensor) == hash(Tensor("w", DataType.FLOAT, VALUES))
    assert not tensor.loaded and not calls


def test_a_lazy_tensor_decodes_once_read_only() -> None:
    calls: list[int] = []
    tensor = _lazy(calls)
    np.testing.assert_array_equal(tensor.data, VALUES)
    assert tensor.data is tensor.data and len(calls) == 1 and tensor.loaded
    assert not tensor.data.flags.writeable
    assert tensor == Tensor("w", DataType.FLOAT, VALUES)


def test_a_lazy_tensor_refuses_values_of_another_shape() -> None:
    tensor = _lazy([], VALUES.reshape(4, 3))
    with pytest.raises(ValueError, match=r"decoded to shape \(4, 3\), not its declared \(3, 4\)"):
        tensor.data  # noqa: B018 - reading decodes


def test_pickles_and_replacements_hold_the_values() -> None:
    tensor = _lazy([])
    copy = pickle.loads(pickle.dumps(tensor))
    assert type(copy) is Tensor and copy == tensor
    renamed = dataclasses.replace(tensor, name="v")
    assert renamed.name == "v" and renamed.shape == (3, 4)
    np.testing.assert_array_equal(renamed.data, VALUES)
