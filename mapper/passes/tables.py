"""Tables of functions of one 8-bit tensor: evaluate a small subgraph on all 256 values of its
input with the reference executor and store the results as a systolic.QTable table.

The table is in the int8 (flipped) domain of the QTable contract: entry i holds the result
for the input whose int8 form is i - 128 (int8 input i - 128, uint8 input i), written as
int8 (an int8 result as it is, a uint8 result minus 128). Evaluating the very nodes of the
graph with the project's reference makes the table bit-exact with running them.
"""

from collections.abc import Iterable, Mapping

import numpy as np

from systolic.errors import SystolicError
from systolic.ir import DataType, Graph, Node, Tensor, TensorType, ValueInfo
from systolic.mapper.passes.graph_tools import tensor
from systolic.mapper.passes.quant_params import NotFusable
from systolic.reference.executor import run_graph

__all__ = ["TABLE_SIZE", "all_inputs", "table_of", "to_table"]

TABLE_SIZE = 256
_FLIP = 128


def all_inputs(dtype: DataType) -> np.ndarray:
    """Return the 256 values of an 8-bit type in table order (int8 form -128 .. 127)."""
    if dtype == DataType.INT8:
        return np.arange(-_FLIP, _FLIP).astype(np.int8)
    if dtype == DataType.UINT8:
        return np.arange(TABLE_SIZE).astype(np.uint8)
    raise NotFusable(f"the table's input is {dtype.name.lower()}, not uint8 or int8")


def to_table(results: np.ndarray) -> np.ndarray:
    """Return the int8 table of 256 results (uint8 or int8) in table order."""
    flat = results.reshape(-1)
    if flat.size != TABLE_SIZE or flat.dtype not in (np.uint8, np.int8):
        raise NotFusable(f"the function gives {flat.size} {flat.dtype} values, not 256 "
                         "8-bit ones")
    if flat.dtype == np.uint8:
        return (flat.astype(np.int16) - _FLIP).astype(np.int8)
    return flat.copy()


def table_of(
    nodes: Iterable[Node],
    constants: Mapping[str, np.ndarray],
    source: str,
    dtype: DataType,
    result: str,
    opsets: Mapping[str, int],
    *,
    real: str = "",
) -> np.ndarray:
    """Return the int8 table of `result` as a function of the 8-bit value `source` (of
    `dtype`), computed by running `nodes` (in graph order; they read `source`, constants and
    each other's outputs) on the 256 input values as a 1-D tensor. A node the reference
    cannot run on them raises NotFusable with the reference's message; so does a NaN in the
    float value `real` (if named: the value a QuantizeLinear quantizes), which has no
    defined quantization (infinities saturate)."""
    chosen = list(nodes)
    read = {name for node in chosen for name in node.inputs if name}
    initializers: list[Tensor] = [tensor(name, constants[name])
                                  for name in sorted(read) if name in constants]
    graph = Graph(
        "table",
        (ValueInfo(source, TensorType(dtype, (TABLE_SIZE,))),),
        tuple(ValueInfo(name, TensorType(DataType.UNDEFINED, None))
              for name in (result, real) if name),
        tuple(chosen),
        tuple(initializers),
    )
    try:
        with np.errstate(all="ignore"):  # log(0), 1/0 ... are checked below, not warned
            values = run_graph(graph, {source: all_inputs(dtype)}, opsets=opsets)
    except SystolicError as err:
        raise NotFusable(f"its table cannot be computed: {err}") from None
    if real:
        bad = np.flatnonzero(np.isnan(values[real].reshape(-1)))
        if bad.size:
            shown = ", ".join(str(int(v)) for v in all_inputs(dtype)[bad[:4]])
            raise NotFusable(f"the function is NaN for {bad.size} input value(s) ({shown}"
                             f"{' ...' if bad.size > 4 else ''}): no defined table")
    return to_table(np.asarray(values[result]))
