"""Tensors declared without data: refused with the reason, or placeholders for cycle counts."""

import numpy as np
import pytest
from onnx import TensorProto

from systolic.errors import ModelError
from systolic.ir import DataType
from systolic.proto import TensorProto as OurTensorProto
from systolic.proto.onnx_tensors import placeholder_values, tensor_to_numpy


def _empty(data_type: int, dims: list[int]) -> OurTensorProto:
    proto = TensorProto(name="w", data_type=data_type, dims=dims, raw_data=b"")
    ours = OurTensorProto()
    ours.ParseFromString(proto.SerializeToString())
    return ours


def test_a_weightless_float_tensor_is_refused_naming_the_reason() -> None:
    with pytest.raises(ModelError, match=(
        r"^initializer 'w' of shape \[4, 2\] has no data \(a weight-less model\): running it "
        r"needs the weights, as every value is computed and checked; `systolic compare` gives "
        r"its cycles without them$"
    )):  # fmt: skip
        tensor_to_numpy(_empty(TensorProto.FLOAT, [4, 2]), "initializer 'w'", base_dir=None,
                        max_bytes=1 << 20)  # fmt: skip


def test_weightless_gives_placeholders_of_the_declared_type_and_shape() -> None:
    dtype, values = tensor_to_numpy(_empty(TensorProto.FLOAT16, [3, 5]), "initializer 'w'",
                                    base_dir=None, max_bytes=1 << 20, weightless=True)  # fmt: skip
    assert dtype == DataType.FLOAT16
    np.testing.assert_array_equal(values, placeholder_values(DataType.FLOAT16, (3, 5)))
    assert values.dtype == np.float16 and values.shape == (3, 5)
    assert values.min() >= 0.25 and values.max() < 0.75


def test_integer_constants_are_needed_even_for_cycles() -> None:
    with pytest.raises(ModelError, match=r"^initializer 'w' of shape \[2\] has no data: the "
                       r"model is corrupt$"):  # fmt: skip
        tensor_to_numpy(_empty(TensorProto.INT64, [2]), "initializer 'w'", base_dir=None,
                        max_bytes=1 << 20, weightless=True)  # fmt: skip
