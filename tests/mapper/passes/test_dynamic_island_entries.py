"""fusion_entries: a float Cast's result that a Concat copies (a bool mask made float, then
expanded by Concats of copies) is an entry of post-training quantization; an integer Cast's
result is not."""

import numpy as np

from systolic.mapper.passes.dynamic_island import fusion_entries
from systolic.mapper.passes.pipeline import finalize

from .table_models import make, node

S = 4


def _copied_cast(to):  # type: ignore[no-untyped-def]
    nodes = [node("Cast", ["keep"], ["x"], to=to),
             node("Concat", ["x", "x"], ["wide"], axis=1),
             node("Sub", ["one", "wide"], ["y"])]
    kind = np.float32 if to == 1 else np.int64
    return finalize(make(nodes, [("keep", np.bool_, (1, 1, S))], [("y", kind, (1, 2, S))],
                         {"one": np.array(1, kind)}, opset=17)[1])


def test_a_float_cast_copied_by_a_concat_is_an_entry():
    assert "x" in fusion_entries(_copied_cast(1).graph)


def test_an_integer_cast_copied_by_a_concat_is_not():
    assert "x" not in fusion_entries(_copied_cast(7).graph)
