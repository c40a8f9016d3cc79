import numpy as np

from systolic.ir import DataType
from systolic.mapper.passes.graph_tools import tensor


def test_tensor_of_a_writeable_array_does_not_alias_it():
    value = np.arange(6, dtype=np.int8).reshape(2, 3)
    made = tensor("t", value)
    value[0, 0] = 100
    assert made.dtype == DataType.INT8 and not made.data.flags.writeable
    np.testing.assert_array_equal(made.data, np.arange(6, dtype=np.int8).reshape(2, 3))


def test_tensor_of_a_transposed_view_is_a_contiguous_read_only_copy():
    base = np.arange(6, dtype=np.float32).reshape(2, 3)
    made = tensor("t", base.T)
    base[0, 0] = -1.0
    assert made.data.flags.c_contiguous and not made.data.flags.writeable
    assert not np.may_share_memory(made.data, base)
    np.testing.assert_array_equal(made.data, np.arange(6, dtype=np.float32).reshape(2, 3).T)


def test_a_scalar_constant_stays_a_scalar():
    # np.ascontiguousarray would make it [1]: a Gather by it would then keep the axis
    from systolic.mapper.passes.graph_tools import tensor
    assert tensor("s", np.array(7, np.int64)).data.shape == ()
    assert tensor("v", np.arange(6).reshape(2, 3).T).data.flags.c_contiguous


def test_splice_replaces_and_removes_nodes_in_order():
    from systolic.mapper.passes.graph_tools import make_node, splice
    a, b, c = (make_node("Relu", [f"{n}_in"], [f"{n}_out"], name=n) for n in "abc")
    x, y = (make_node("Neg", [f"{n}_in"], [f"{n}_out"], name=n) for n in "xy")
    assert splice([a, b, c], {id(b): [x, y]}, {id(c)}) == (a, x, y)
    assert splice([a, b], {}, set()) == (a, b)
