"""A seeded corpus of mutated ONNX models for the fuzzing test (test_fuzz.py).

Every mutant comes from one of the models in tests/models and systolic/examples, changed by one
seeded mutation: bytes flipped, the file truncated, or one field of the parsed model changed
(an operator type, a node's inputs or outputs, a dimension, an element type, an attribute, a
tensor's data, a name, the IR or opset version). The same seed always gives the same corpus.

Run it as a script to write the corpus to a folder, for example to replay it against an
installed tool: `python tests/systolic/commands/fuzz_corpus.py OUT --count 1000 --seed 0`.
"""

import argparse
import random
from collections.abc import Callable, Iterator
from pathlib import Path

from systolic.proto import ModelProto, NodeProto, TensorProto

ROOT = Path(__file__).resolve().parents[3]
SEEDS = sorted([*(ROOT / "tests" / "models").glob("*.onnx"),
                *(ROOT / "systolic" / "examples").glob("*.onnx")])  # fmt: skip
"""The models every mutant starts from."""

_OP_TYPES = ("Relu", "Add", "Conv", "MatMul", "Gemm", "Reshape", "Concat", "Split", "Range",
             "QuantizeLinear", "Softmax", "Identity", "NoSuchOp", "")  # fmt: skip
_TEXT = ("\x1b[2J", "\r\nsystolic: error: fake", "x" * 300, "", "\0", "é", "../../etc/passwd")
_NUMBERS = (0, -1, 1, 2, 3, 7, 255, 2**31 - 1, 2**31, 2**63 - 1, -(2**63), 10**12)

Mutation = Callable[[random.Random, ModelProto], None]


def _node(rng: random.Random, model: ModelProto) -> NodeProto | None:
    nodes = model.graph.node
    return nodes[rng.randrange(len(nodes))] if len(nodes) else None


def _tensor(rng: random.Random, model: ModelProto) -> TensorProto | None:
    tensors = model.graph.initializer
    return tensors[rng.randrange(len(tensors))] if len(tensors) else None


def _op_type(rng: random.Random, model: ModelProto) -> None:
    if (node := _node(rng, model)) is not None:
        node.op_type = rng.choice(_OP_TYPES)


def _arity(rng: random.Random, model: ModelProto) -> None:
    if (node := _node(rng, model)) is None:
        return
    field = node.input if rng.random() < 0.6 else node.output
    if len(field) and rng.random() < 0.5:
        del field[rng.randrange(len(field))]
    else:
        field.append(rng.choice(["", "x", *(n.output[0] for n in model.graph.node[:3])]))


def _rewire(rng: random.Random, model: ModelProto) -> None:
    node, other = _node(rng, model), _node(rng, model)
    if node is not None and other is not None and len(node.input) and len(other.output):
        node.input[rng.randrange(len(node.input))] = other.output[0]  # may make a cycle


def _dims(rng: random.Random, model: ModelProto) -> None:
    tensor = _tensor(rng, model)
    if tensor is not None and len(tensor.dims):
        tensor.dims[rng.randrange(len(tensor.dims))] = rng.choice(_NUMBERS)
    elif len(model.graph.input):
        shape = model.graph.input[0].type.tensor_type.shape
        if len(shape.dim):
            shape.dim[rng.randrange(len(shape.dim))].dim_value = rng.choice(_NUMBERS[:8])


def _data(rng: random.Random, model: ModelProto) -> None:
    tensor = _tensor(rng, model)
    if tensor is None:
        return
    choice = rng.randrange(4)
    if choice == 0:
        tensor.data_type = rng.randrange(0, 25)
    elif choice == 1 and tensor.raw_data:
        tensor.raw_data = tensor.raw_data[: rng.randrange(len(tensor.raw_data))]
    elif choice == 2 and tensor.raw_data:  # NaN and infinity patterns into float data
        data = bytearray(tensor.raw_data)
        at = rng.randrange(0, max(len(data) - 4, 1))
        data[at : at + 4] = rng.choice([b"\x00\x00\xc0\x7f", b"\x00\x00\x80\x7f"])
        tensor.raw_data = bytes(data)
    else:
        tensor.data_location = TensorProto.EXTERNAL
        entry = tensor.external_data.add()
        entry.key, entry.value = "location", rng.choice(_TEXT + ("data.bin",))


def _attribute(rng: random.Random, model: ModelProto) -> None:
    node = _node(rng, model)
    if node is None or not len(node.attribute):
        return
    attribute = node.attribute[rng.randrange(len(node.attribute))]
    if len(attribute.ints):
        attribute.ints[rng.randrange(len(attribute.ints))] = rng.choice(_NUMBERS)
    elif attribute.HasField("i"):
        attribute.i = rng.choice(_NUMBERS)
    elif attribute.HasField("f"):
        attribute.f = rng.choice([float("nan"), float("inf"), -1.0, 0.0, 1e30])
    else:
        attribute.type = rng.randrange(0, 16)


def _name(rng: random.Random, model: ModelProto) -> None:
    text = rng.choice(_TEXT)
    target = rng.randrange(4)
    if target == 0 and (node := _node(rng, model)) is not None:
        node.name = text
    elif target == 1:
        model.producer_name = text
    elif target == 2:
        entry = model.metadata_props.add()
        entry.key, entry.value = text, text
    elif (node := _node(rng, model)) is not None and len(node.output):
        node.output[0] = text


def _version(rng: random.Random, model: ModelProto) -> None:
    if rng.random() < 0.5:
        model.ir_version = rng.choice([0, 1, 2, 3, 7, 8, 10, 14, 15, 99])
    elif len(model.opset_import):
        model.opset_import[0].version = rng.choice([0, 1, 6, 9, 13, 17, 23, 24, 999])


FIELD_MUTATIONS: tuple[Mutation, ...] = (
    _op_type, _arity, _rewire, _dims, _data, _attribute, _name, _version,
)  # fmt: skip


def _flip(rng: random.Random, data: bytes) -> bytes:
    mutable = bytearray(data)
    for _ in range(rng.choice([1, 1, 2, 8])):
        at = rng.randrange(len(mutable))
        mutable[at] ^= 1 << rng.randrange(8)
    return bytes(mutable)


def mutant(rng: random.Random) -> tuple[str, bytes]:
    """Return one mutant: a name saying how it was made, and its bytes."""
    seed = rng.choice(SEEDS)
    data = seed.read_bytes()
    kind = rng.randrange(10)
    if kind < 3:
        return f"{seed.stem}-flip", _flip(rng, data)
    if kind < 4:
        return f"{seed.stem}-cut", data[: rng.randrange(len(data))]
    model = ModelProto()
    model.ParseFromString(data)
    mutation = rng.choice(FIELD_MUTATIONS)
    mutation(rng, model)
    return f"{seed.stem}-{mutation.__name__.lstrip('_')}", model.SerializeToString()


def corpus(count: int, seed: int = 0) -> Iterator[tuple[str, bytes]]:
    """Yield `count` mutants, numbered, from one seeded generator."""
    rng = random.Random(seed)
    for index in range(count):
        name, data = mutant(rng)
        yield f"{index:05d}-{name}", data


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out", type=Path, help="folder to write the .onnx mutants to")
    parser.add_argument("--count", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    for name, data in corpus(args.count, args.seed):
        (args.out / f"{name}.onnx").write_bytes(data)


if __name__ == "__main__":
    main()
