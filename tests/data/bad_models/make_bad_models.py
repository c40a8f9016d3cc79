"""Build the corpus of broken ONNX models that the importer's bad-input tests read.

Every case is a tiny model (a few hundred bytes at most) with exactly one defect, built with
the project's own bindings (`systolic.proto`) from one valid baseline: a 3x3 single-channel
image `X`, a 2x2 convolution with the initializer `W`, then `Relu`, giving `Y`
(ir_version 8, ai.onnx opset 17). `baseline.onnx` is that valid model, so a test can check
that the importer accepts it and that each failure comes from the one defect.

`manifest.json` is written from the `CASES` table below: for each file (path relative to this
folder) a description, the `SystolicError` subclass the importer should raise, and `match`, a
regular expression (`re.search`) that the importer's one-line message must match. Files that
are not models (external data, the target of the escaping links) are listed under
`support_files`.

External-data cases each live in their own folder next to their data file. Two of them point
outside their folder at `outside_weights.bin` (16 valid bytes) so that the only thing wrong is
where the data lives: `external_parent_escape` through a `../` location and `external_symlink`
through `weights.bin`, a relative symbolic link to it (git stores it as a link).

Regenerate, from the repository root, after changing anything here:

    python tests/data/bad_models/make_bad_models.py            # rewrites this folder
    python tests/data/bad_models/make_bad_models.py --out DIR  # or writes into DIR

The output is deterministic; tests/data/bad_models/test_make_bad_models.py checks that the
committed files equal a fresh build.
"""

import argparse
import json
import os
import struct
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from google.protobuf.message import DecodeError

from systolic.proto import (
    AttributeProto,
    AttributeType,
    DataLocation,
    DataType,
    GraphProto,
    ModelProto,
    NodeProto,
    OperatorSetIdProto,
    StringStringEntryProto,
    TensorProto,
    ValueInfoProto,
)

HERE = Path(__file__).resolve().parent

BASE_IR_VERSION = 8
BASE_OPSET = 17
W_VALUES = (1.0, -2.0, 0.5, 3.0)
"""The baseline convolution weights, stored as 16 bytes of little-endian float32."""
W_BYTES = struct.pack("<4f", *W_VALUES)
OUTSIDE_DATA = "outside_weights.bin"
"""A valid data file in this folder that the escaping external-data cases point at."""

# ---------------------------------------------------------------------------------------------
# Building blocks
# ---------------------------------------------------------------------------------------------

Dim = int | str


def tensor_value(name: str, elem_type: int, shape: Sequence[Dim] | None) -> ValueInfoProto:
    """Return a tensor ValueInfo; `shape` None leaves the rank unknown, str dims are symbolic."""
    value = ValueInfoProto(name=name)
    value.type.tensor_type.elem_type = elem_type
    if shape is not None:
        value.type.tensor_type.shape.SetInParent()
        for size in shape:
            dim = value.type.tensor_type.shape.dim.add()
            if isinstance(size, str):
                dim.dim_param = size
            else:
                dim.dim_value = size
    return value


def ints_attribute(name: str, values: Sequence[int]) -> AttributeProto:
    return AttributeProto(name=name, type=AttributeType.INTS, ints=list(values))


def node(
    op_type: str,
    inputs: Sequence[str],
    outputs: Sequence[str],
    name: str,
    domain: str = "",
    attributes: Sequence[AttributeProto] = (),
) -> NodeProto:
    return NodeProto(
        op_type=op_type,
        input=list(inputs),
        output=list(outputs),
        name=name,
        domain=domain,
        attribute=list(attributes),
    )


def weights(raw: bytes = W_BYTES) -> TensorProto:
    """Return the baseline initializer `W` (float32, shape [1, 1, 2, 2]) holding `raw`."""
    return TensorProto(name="W", data_type=DataType.FLOAT, dims=[1, 1, 2, 2], raw_data=raw)


def external_weights(location: str, offset: int = 0, length: int = len(W_BYTES)) -> TensorProto:
    """Return `W` with its 16 bytes stored in the external file `location`."""
    tensor = TensorProto(name="W", data_type=DataType.FLOAT, dims=[1, 1, 2, 2])
    tensor.data_location = DataLocation.EXTERNAL
    for key, value in (("location", location), ("offset", str(offset)), ("length", str(length))):
        tensor.external_data.append(StringStringEntryProto(key=key, value=value))
    return tensor


def conv_node(strides: AttributeProto | None = None) -> NodeProto:
    attributes = [ints_attribute("kernel_shape", [2, 2])]
    attributes.append(strides or ints_attribute("strides", [1, 1]))
    return node("Conv", ["X", "W"], ["C"], "conv", attributes=attributes)


def model(
    graph: GraphProto,
    ir_version: int | None = BASE_IR_VERSION,
    opsets: Sequence[tuple[str, int]] = (("", BASE_OPSET),),
) -> ModelProto:
    result = ModelProto(producer_name="systolic-bad-models", graph=graph)
    if ir_version is not None:
        result.ir_version = ir_version
    for domain, version in opsets:
        result.opset_import.append(OperatorSetIdProto(domain=domain, version=version))
    return result


def baseline_graph(initializer: TensorProto | None = None) -> GraphProto:
    """Return the valid graph Y = Relu(Conv(X, W)) with `initializer` in place of W."""
    return GraphProto(
        name="baseline",
        node=[conv_node(), node("Relu", ["C"], ["Y"], "relu")],
        initializer=[initializer or weights()],
        input=[tensor_value("X", DataType.FLOAT, [1, 1, 3, 3])],
        output=[tensor_value("Y", DataType.FLOAT, [1, 1, 2, 2])],
    )


def relu_chain(
    nodes: Sequence[NodeProto],
    inputs: Sequence[ValueInfoProto] | None = None,
    outputs: Sequence[str] = ("Y",),
) -> GraphProto:
    """Return a graph of float [1, 4] values around `nodes`."""
    return GraphProto(
        name="graph",
        node=list(nodes),
        input=list(inputs) if inputs is not None else [tensor_value("X", DataType.FLOAT, [1, 4])],
        output=[tensor_value(name, DataType.FLOAT, [1, 4]) for name in outputs],
    )


def serialize(proto: ModelProto) -> bytes:
    return proto.SerializeToString(deterministic=True)


def baseline_bytes() -> bytes:
    return serialize(model(baseline_graph()))


# ---------------------------------------------------------------------------------------------
# The cases
# ---------------------------------------------------------------------------------------------


def not_protobuf() -> bytes:
    data = b"This is a plain text file, not an ONNX model.\n"
    _require_undecodable(data)
    return data


def truncated() -> bytes:
    whole = baseline_bytes()
    for cut in range(len(whole) // 2, len(whole)):
        try:
            ModelProto.FromString(whole[:cut])
        except DecodeError:
            return whole[:cut]
    raise AssertionError("no cut of the baseline fails to parse")


def missing_ir_version() -> bytes:
    return serialize(model(baseline_graph(), ir_version=None))


def ir_version_too_new() -> bytes:
    return serialize(model(baseline_graph(), ir_version=99))


def ir_version_too_old() -> bytes:
    return serialize(model(baseline_graph(), ir_version=2))


def unknown_domain() -> bytes:
    graph = relu_chain([node("Frobnicate", ["X"], ["Y"], "frob", domain="com.example")])
    return serialize(model(graph, opsets=[("", BASE_OPSET), ("com.example", 1)]))


def opset_too_new() -> bytes:
    return serialize(model(baseline_graph(), opsets=[("", 99)]))


def unsupported_op() -> bytes:
    graph = GraphProto(
        name="nms",
        node=[node("NonMaxSuppression", ["boxes", "scores"], ["selected"], "nms")],
        input=[
            tensor_value("boxes", DataType.FLOAT, [1, 4, 4]),
            tensor_value("scores", DataType.FLOAT, [1, 1, 4]),
        ],
        output=[tensor_value("selected", DataType.INT64, ["num_selected", 3])],
    )
    return serialize(model(graph))


def cycle() -> bytes:
    graph = relu_chain(
        [node("Relu", ["b"], ["a"], "first"), node("Relu", ["a"], ["b"], "second")],
        outputs=["b"],
    )
    return serialize(model(graph))


def value_assigned_twice() -> bytes:
    graph = relu_chain(
        [node("Relu", ["X"], ["dup"], "first"), node("Relu", ["X"], ["dup"], "second")],
        outputs=["dup"],
    )
    return serialize(model(graph))


def undefined_input() -> bytes:
    return serialize(model(relu_chain([node("Relu", ["ghost"], ["Y"], "relu")])))


def domain_not_imported() -> bytes:
    graph = relu_chain([node("Gelu", ["X"], ["Y"], "gelu", domain="com.microsoft")])
    return serialize(model(graph))


def output_not_produced() -> bytes:
    graph = relu_chain([node("Relu", ["X"], ["Y"], "relu")], outputs=["Y", "orphan"])
    return serialize(model(graph))


def constant_of_shape_huge() -> bytes:
    shape = (100_000, 100_000, 10)  # 1e11 float32 elements: 400 GB
    value = TensorProto(name="value", data_type=DataType.FLOAT, dims=[1], float_data=[0.0])
    graph = GraphProto(
        name="huge",
        node=[
            node(
                "ConstantOfShape",
                ["shape"],
                ["Z"],
                "fill",
                attributes=[AttributeProto(name="value", type=AttributeType.TENSOR, t=value)],
            )
        ],
        initializer=[
            TensorProto(name="shape", data_type=DataType.INT64, dims=[3], int64_data=shape)
        ],
        output=[tensor_value("Z", DataType.FLOAT, shape)],
    )
    return serialize(model(graph))


def input_without_type() -> bytes:
    graph = relu_chain([node("Relu", ["X"], ["Y"], "relu")], inputs=[ValueInfoProto(name="X")])
    return serialize(model(graph))


def input_without_rank() -> bytes:
    inputs = [tensor_value("X", DataType.FLOAT, None)]
    return serialize(model(relu_chain([node("Relu", ["X"], ["Y"], "relu")], inputs=inputs)))


def raw_data_wrong_length() -> bytes:
    return serialize(model(baseline_graph(weights(W_BYTES[:12]))))


def attribute_wrong_type() -> bytes:
    strides = AttributeProto(name="strides", type=AttributeType.FLOAT, f=1.0)
    graph = baseline_graph()
    graph.node[0].CopyFrom(conv_node(strides))
    return serialize(model(graph))


def dim_param_conflict() -> bytes:
    # Both inputs carry a default value (an initializer of the same name, IR version 4+):
    # A binds "batch" to 2, B binds it to 3.
    def default(name: str, rows: int) -> TensorProto:
        return TensorProto(
            name=name, data_type=DataType.FLOAT, dims=[rows, 4], float_data=[0.0] * (rows * 4)
        )

    graph = GraphProto(
        name="batch",
        node=[node("Relu", ["A"], ["RA"], "relu_a"), node("Relu", ["B"], ["RB"], "relu_b")],
        initializer=[default("A", 2), default("B", 3)],
        input=[
            tensor_value("A", DataType.FLOAT, ["batch", 4]),
            tensor_value("B", DataType.FLOAT, ["batch", 4]),
        ],
        output=[
            tensor_value("RA", DataType.FLOAT, ["batch", 4]),
            tensor_value("RB", DataType.FLOAT, ["batch", 4]),
        ],
    )
    return serialize(model(graph))


def external_model(location: str, offset: int = 0, length: int = len(W_BYTES)) -> bytes:
    return serialize(model(baseline_graph(external_weights(location, offset, length))))


def _require_undecodable(data: bytes) -> None:
    try:
        ModelProto.FromString(data)
    except DecodeError:
        return
    raise AssertionError(f"{data[:20]!r}... parses as a ModelProto")


@dataclass(frozen=True)
class Case:
    """One broken model: where it goes, what is wrong, and what the importer must say."""

    path: str
    build: Callable[[], bytes]
    description: str
    error: str
    match: str
    data_files: tuple[tuple[str, bytes], ...] = ()
    """Extra files written next to the model: (name, content)."""
    symlinks: tuple[tuple[str, str], ...] = ()
    """Symbolic links created next to the model: (name, target relative to the link)."""


# fmt: off
CASES: tuple[Case, ...] = (
    Case(
        "not_protobuf.onnx", not_protobuf,
        "plain text, not a serialized protobuf", "ModelError",
        r"(?i)(protobuf|parse|decode|not an? (valid )?onnx)",
    ),
    Case(
        "truncated.onnx", truncated,
        "the valid baseline cut in the middle of a field", "ModelError",
        r"(?i)(truncated|protobuf|parse|decode)",
    ),
    Case(
        "empty.onnx", lambda: b"",
        "a zero-byte file", "ModelError",
        r"(?i)empty",
    ),
    Case(
        "missing_ir_version.onnx", missing_ir_version,
        "the baseline without ir_version", "ModelError",
        r"(?i)ir.?version",
    ),
    Case(
        "ir_version_too_new.onnx", ir_version_too_new,
        "ir_version 99, newer than any ONNX release", "UnsupportedError",
        r"(?i)(?=.*ir.?version)(?=.*\b99\b)",
    ),
    Case(
        "ir_version_too_old.onnx", ir_version_too_old,
        "ir_version 2, older than the oldest version the tool reads", "UnsupportedError",
        r"(?i)(?=.*ir.?version)(?=.*\b2\b)",
    ),
    Case(
        "unknown_domain.onnx", unknown_domain,
        "opset_import and a node use the operator domain com.example", "UnsupportedError",
        r"(?i)(?=.*com\.example)(?=.*domain)",
    ),
    Case(
        "opset_too_new.onnx", opset_too_new,
        "imports ai.onnx opset 99", "UnsupportedError",
        r"(?i)(?=.*opset)(?=.*\b99\b)",
    ),
    Case(
        "unsupported_op.onnx", unsupported_op,
        "a single ai.onnx NonMaxSuppression node, an operator the tool lacks", "UnsupportedError",
        r"(?i)(?=.*NonMaxSuppression)(?=.*support)",
    ),
    Case(
        "cycle.onnx", cycle,
        "nodes 'first' and 'second' each consume the other's output", "ModelError",
        r"(?i)cycl",
    ),
    Case(
        "value_assigned_twice.onnx", value_assigned_twice,
        "two nodes both output the value 'dup'", "ModelError",
        r"(?i)(?=.*\bdup\b)(?=.*(twice|more than once|duplicate|already))",
    ),
    Case(
        "undefined_input.onnx", undefined_input,
        "a node reads 'ghost', which no input, initializer or node defines", "ModelError",
        r"(?i)(?=.*\bghost\b)(?=.*(undefined|not defined|unknown|never produced|no producer))",
    ),
    Case(
        "domain_not_imported.onnx", domain_not_imported,
        "a node of domain com.microsoft while opset_import lists only ai.onnx", "ModelError",
        r"(?i)(?=.*com\.microsoft)(?=.*(opset|import))",
    ),
    Case(
        "output_not_produced.onnx", output_not_produced,
        "graph output 'orphan' is produced by no node, input or initializer", "ModelError",
        r"(?i)(?=.*\borphan\b)(?=.*(output|produce))",
    ),
    Case(
        "external_absolute_path/model.onnx", lambda: external_model("/etc/passwd", 0, 16),
        "initializer W's external data location is the absolute path /etc/passwd", "ModelError",
        r"(?i)absolute",
    ),
    Case(
        "external_parent_escape/model.onnx", lambda: external_model(f"../{OUTSIDE_DATA}"),
        "initializer W's external data location ../outside_weights.bin leaves the model's folder",
        "ModelError",
        r"(?i)(outside|escape|\.\./)",
    ),
    Case(
        "external_symlink/model.onnx", lambda: external_model("weights.bin"),
        "external data weights.bin is a symbolic link to a file outside the model's folder",
        "ModelError",
        r"(?i)(outside|escape|symbolic|symlink)",
        symlinks=(("weights.bin", f"../{OUTSIDE_DATA}"),),
    ),
    Case(
        "external_missing_file/model.onnx", lambda: external_model("weights.bin"),
        "initializer W's external data file weights.bin does not exist", "ModelError",
        r"(?i)(?=.*weights\.bin)(?=.*(missing|not found|does not exist|no such))",
    ),
    Case(
        "external_too_short/model.onnx", lambda: external_model("weights.bin", 8, 16),
        "W needs bytes 8..24 of weights.bin, which holds only 16 bytes", "ModelError",
        r"(?i)(?=.*weights\.bin)(?=.*(short|beyond|past|end|exceed|only))",
        data_files=(("weights.bin", W_BYTES),),
    ),
    Case(
        "constant_of_shape_huge.onnx", constant_of_shape_huge,
        "ConstantOfShape of shape [100000, 100000, 10] float32 would allocate 400 GB",
        "ResourceError",
        r"(?i)(bytes|\bGB\b|\bGiB\b|memory|too large)",
    ),
    Case(
        "input_without_type.onnx", input_without_type,
        "graph input X has no type", "ModelError",
        r"(?i)(?=.*\bX\b)(?=.*type)",
    ),
    Case(
        "input_without_rank.onnx", input_without_rank,
        "graph input X is a float tensor without a shape (unknown rank)", "ModelError",
        r"(?i)(?=.*\bX\b)(?=.*(rank|shape))",
    ),
    Case(
        "raw_data_wrong_length.onnx", raw_data_wrong_length,
        "initializer W is float32 [1, 1, 2, 2] (16 bytes) but raw_data holds 12", "ModelError",
        r"(?i)(?=.*\bW\b)(?=.*\b12\b)(?=.*\b16\b)",
    ),
    Case(
        "attribute_wrong_type.onnx", attribute_wrong_type,
        "Conv attribute strides is a FLOAT instead of INTS", "ModelError",
        r"(?i)(?=.*strides)(?=.*(type|float|ints))",
    ),
    Case(
        "dim_param_conflict.onnx", dim_param_conflict,
        "inputs A and B share dim_param 'batch'; their default initializers make it 2 and 3",
        "ModelError",
        r"(?i)(?=.*\bbatch\b)(?=.*\b2\b)(?=.*\b3\b)",
    ),
)
# fmt: on

SUPPORT_FILES: tuple[tuple[str, bytes], ...] = ((OUTSIDE_DATA, W_BYTES),)
"""Files that are not models: the 16 valid bytes the escaping external-data cases point at."""


# ---------------------------------------------------------------------------------------------
# Writing the corpus
# ---------------------------------------------------------------------------------------------


def manifest() -> dict[str, object]:
    """Return the content of manifest.json."""
    support_files = [name for name, _ in SUPPORT_FILES]
    for case in CASES:
        folder = Path(case.path).parent.as_posix()
        extras = [name for name, _ in case.data_files] + [name for name, _ in case.symlinks]
        support_files.extend(f"{folder}/{name}" for name in extras)
    return {
        "about": "Broken ONNX models, one defect each; built by make_bad_models.py.",
        "baseline": "baseline.onnx",
        "cases": {
            case.path: {"description": case.description, "error": case.error, "match": case.match}
            for case in CASES
        },
        "support_files": support_files,
    }


def _write(path: Path, content: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(content)


def build(out: Path) -> list[Path]:
    """Write the baseline, every case, its extra files and manifest.json into `out`.

    Returns the paths written (links included), in writing order.
    """
    written = []
    for path, content in [("baseline.onnx", baseline_bytes()), *SUPPORT_FILES]:
        _write(out / path, content)
        written.append(out / path)
    for case in CASES:
        target = out / case.path
        _write(target, case.build())
        written.append(target)
        for name, content in case.data_files:
            _write(target.parent / name, content)
            written.append(target.parent / name)
        for name, link_target in case.symlinks:
            link = target.parent / name
            if link.is_symlink() or link.exists():
                link.unlink()
            os.symlink(link_target, link)
            written.append(link)
    manifest_path = out / "manifest.json"
    _write(manifest_path, (json.dumps(manifest(), indent=2) + "\n").encode())
    written.append(manifest_path)
    return written


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Build the corpus of broken ONNX models.")
    parser.add_argument("--out", type=Path, default=HERE, help="folder to write (default: here)")
    args = parser.parse_args(argv)
    for path in build(args.out):
        print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
