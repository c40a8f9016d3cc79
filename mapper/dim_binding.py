"""Give symbolic dimensions (`dim_param`) their sizes from the shapes of actual inputs.

Dimension variables are not scoped: a name stands for one size across the whole graph, so
binding "N" from one input fixes it in every other input, output and value_info entry.
"""

import dataclasses
import re
import warnings
from collections.abc import Mapping

from systolic.errors import ModelError
from systolic.ir import Model
from systolic.mapper.binding import bind_graph_marking
from systolic.mapper.shape_inference import infer_shapes, substitute

__all__ = ["DEFAULT_MAX_TENSOR_BYTES", "UnknownDimensionWarning", "bind_inputs", "bind_symbols"]

_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_.:/-]*")
"""A dimension name that can be a variable; others ('?', '-1', '') are exporters' way of
writing "unknown" (paddle2onnx writes '?' for every unknown size)."""


class UnknownDimensionWarning(UserWarning):
    """A dimension named like an unknown ('?') took different sizes in the given shapes."""

DEFAULT_MAX_TENSOR_BYTES = 8 << 30
"""The default limit on one tensor's size: 8 GiB."""


def bind_symbols(model: Model, input_shapes: Mapping[str, tuple[int, ...]]) -> dict[str, int]:
    """Return {symbol: size} from `input_shapes`, checking every given shape against its
    input's declared rank and sizes, and that each symbol gets a single size.

    A name that is no identifier ('?': paddle2onnx's "unknown") may take several sizes in
    the given shapes: it then binds nothing (a warning names it), and its other uses stay
    unknown until shape inference settles them."""
    graph = model.graph
    declared = {info.name: info.type for info in graph.inputs}
    symbols: dict[str, int] = {}
    origin: dict[str, str] = {}
    unknown: set[str] = set()
    for name, shape in input_shapes.items():
        if name not in declared:
            names = ", ".join(repr(n) for n in declared) or "none"
            raise ModelError(f"the model has no input {name!r}; its inputs are {names}")
        sizes = tuple(shape)
        if any(not isinstance(s, int) or isinstance(s, bool) or s < 0 for s in sizes):
            raise ModelError(f"shape {list(sizes)} given for input {name!r} is not a list of sizes")
        expected = declared[name]
        assert expected.shape is not None  # graph inputs always have a rank
        if len(expected.shape) != len(sizes):
            raise ModelError(
                f"input {name!r} is declared {expected.text()} (rank {len(expected.shape)}) but "
                f"was given shape {list(sizes)}"
            )
        for dim, size in zip(expected.shape, sizes):
            if isinstance(dim, int) and dim != size:
                raise ModelError(
                    f"input {name!r} is declared {expected.text()} but was given shape "
                    f"{list(sizes)}"
                )
            if isinstance(dim, str):
                if dim in symbols and symbols[dim] != size and not _IDENTIFIER.fullmatch(dim):
                    unknown.add(dim)
                elif dim in symbols and symbols[dim] != size:
                    raise ModelError(
                        f"dimension {dim!r} is {symbols[dim]} in input {origin[dim]!r} but "
                        f"{size} in input {name!r}: one name stands for one size"
                    )
                else:
                    symbols[dim] = size
                    origin[dim] = name
    for dim in sorted(unknown):
        del symbols[dim]
        warnings.warn(UnknownDimensionWarning(
            f"dimension {dim!r} stands for several sizes in the given shapes: taken as an "
            "unknown size, not one variable"), stacklevel=3)
    return symbols


def bind_inputs(
    model: Model,
    input_shapes: Mapping[str, tuple[int, ...]],
    *,
    max_tensor_bytes: int = DEFAULT_MAX_TENSOR_BYTES,
) -> Model:
    """Return `model` with its inputs' symbolic and unknown dimensions fixed by the shapes of
    actual inputs, and shapes inferred again through the whole graph.

    Every input without a default must end up fully static, either given in `input_shapes`
    or through symbols it shares with given ones; raises ModelError otherwise or when a
    given shape contradicts a declared one.
    """
    symbols = bind_symbols(model, input_shapes)
    graph = model.graph
    inputs = []
    for info in graph.inputs:
        if info.name in input_shapes:
            fixed = dataclasses.replace(info.type, shape=tuple(input_shapes[info.name]))
        else:
            fixed = substitute(info.type, symbols)
        if not fixed.is_static and graph.initializer(info.name) is None:
            raise ModelError(
                f"input {info.name!r} is {fixed.text()} after binding; give its shape "
                "(for example --input-shape) so every dimension is known"
            )
        inputs.append(dataclasses.replace(info, type=fixed))
    # A model holding unsupported nodes was read with mark_unsupported: they stay unbound.
    bound_graph, ops, _ = bind_graph_marking(
        dataclasses.replace(graph, inputs=tuple(inputs)), model_opsets(model)
    )
    inferred = infer_shapes(bound_graph, ops, max_tensor_bytes=max_tensor_bytes, symbols=symbols)
    return dataclasses.replace(model, graph=inferred)


def model_opsets(model: Model) -> dict[str, int]:
    """Return the model's imports as {canonical domain: version}."""
    return {("" if d == "ai.onnx" else d): v for d, v in model.opsets}
