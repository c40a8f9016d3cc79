import numpy as np
import pytest

from systolic.errors import UnsupportedError

from ..oracle import check_op, make_op, rng

X = rng(47).standard_normal((2, 3)).astype(np.float32)


@pytest.mark.parametrize("opset", [7, 10, 12, 13, 22])
def test_dropout_is_identity_in_inference(opset):
    mask_type = np.bool_ if opset >= 10 else np.float32
    expected = [X, np.ones(X.shape, mask_type)]
    check_op("Dropout", [X], opset=opset, n_outputs=2, expected=expected)


def test_dropout_12_against_oracle():
    check_op("Dropout", [X, np.array(0.3, np.float32), np.array(False)], opset=13, n_outputs=2)


def test_dropout_training_is_unsupported():
    op = make_op("Dropout", {}, 13)
    with pytest.raises(UnsupportedError, match=r"training_mode=true is not supported"):
        op.run([X, np.array(0.3, np.float32), np.array(True)])
