"""einsum_to_matmul: a two-operand Einsum becomes layout ops around one MatMul with the
Einsum's values (float rounding of the sums' order), and runs on the array once quantized;
forms outside the rule stay."""

import numpy as np

from systolic.mapper.passes.einsum_matmul import einsum_to_matmul
from systolic.mapper.passes.pipeline import finalize, run_passes
from systolic.mapper.passes.report import PassReport
from systolic.reference.executor import run_model

from .table_models import make, node, op_types


def _einsum(equation, a_shape, b_shape, out_shape, *, b_constant=False):  # type: ignore[no-untyped-def]
    rng = np.random.default_rng(8)
    constants = {"b": rng.normal(0, 0.5, b_shape).astype(np.float32)} if b_constant else {}
    inputs = [("a", np.float32, a_shape)] + ([] if b_constant else [("b", np.float32, b_shape)])
    nodes = [node("Einsum", ["a", "b"], ["y"], equation=equation, name="einsum")]
    return make(nodes, inputs, [("y", np.float32, out_shape)], constants, opset=13)[1]


def _feed(model):  # type: ignore[no-untyped-def]
    rng = np.random.default_rng(4)
    return {i.name: rng.normal(0, 1, tuple(i.type.shape)).astype(np.float32)
            for i in model.graph.inputs}


def _check(model):  # type: ignore[no-untyped-def]
    rewritten = finalize(einsum_to_matmul(model, PassReport()))
    assert "Einsum" not in op_types(rewritten) and op_types(rewritten).count("MatMul") == 1
    feed = _feed(model)
    np.testing.assert_allclose(run_model(rewritten, feed)["y"], run_model(model, feed)["y"],
                               rtol=1e-5, atol=1e-5)


def test_funnels_relative_attention_and_a_plain_batched_product():  # type: ignore[no-untyped-def]
    _check(_einsum("bind,jnd->bnij", (1, 6, 2, 4), (5, 2, 4), (1, 2, 6, 5)))
    _check(_einsum("bij,bjk->bik", (2, 3, 4), (2, 4, 5), (2, 3, 5)))
    _check(_einsum("bnij,jnd->bind", (1, 2, 6, 5), (5, 2, 4), (1, 6, 2, 4)))


def test_forms_outside_the_rule_stay():  # type: ignore[no-untyped-def]
    for model in (_einsum("...ij,...jk->...ik", (2, 3, 4), (2, 4, 5), (2, 3, 5)),
                  _einsum("bij,bjk->bk", (2, 3, 4), (2, 4, 5), (2, 5))):  # i summed in a alone
        assert einsum_to_matmul(model, PassReport()) is model


def test_quantized_it_is_a_qmatmul():  # type: ignore[no-untyped-def]
    fused, _ = run_passes(_einsum("bind,jnd->bnij", (1, 6, 2, 4), (5, 2, 4), (1, 2, 6, 5),
                                  b_constant=True))
    assert "QMatMul" in op_types(fused) and "Einsum" not in op_types(fused)
