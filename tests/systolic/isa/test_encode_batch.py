"""Whole-program encoding with numpy against `Instruction.encode`, and fields read back."""

import numpy as np
import pytest

from systolic.config import ArrayConfig, Dataflow
from systolic.isa.encode_batch import CLASS_OF_OPCODE, encode_words, field_columns, opcodes
from systolic.isa.instructions import INSTRUCTION_TYPES, Halt, decode
from systolic.isa.memories import Memory
from systolic.isa.program import Program

from ...support.random_programs import random_instruction, synthetic_program


@pytest.mark.parametrize("seed", range(4))
def test_encode_words_equals_encode_of_each_instruction(seed: int) -> None:
    rng = np.random.default_rng(seed)
    classes = [cls for cls in INSTRUCTION_TYPES if cls is not Halt]
    instructions = [random_instruction(classes[int(rng.integers(len(classes)))], rng)
                    for _ in range(600)] + [Halt()]
    words = encode_words(instructions)
    assert words.dtype == np.uint64 and words.shape == (len(instructions), 8)
    assert words.tobytes() == b"".join(instr.encode() for instr in instructions)
    codes = opcodes(words)
    assert codes.tolist() == [instr.OPCODE for instr in instructions]
    for cls in classes:
        where = np.flatnonzero(codes == cls.OPCODE)
        assert CLASS_OF_OPCODE[cls.OPCODE] is cls
        names = [field.name for field in cls.FIELDS]
        columns = field_columns(words[where], cls, names)
        for column, name in zip(columns, names, strict=True):
            assert column.tolist() == [int(getattr(instructions[i], name)) for i in where]


def test_an_object_repeated_in_the_sequence_encodes_at_every_place() -> None:
    rng = np.random.default_rng(7)
    classes = [cls for cls in INSTRUCTION_TYPES if cls is not Halt]
    shared = [random_instruction(classes[int(rng.integers(len(classes)))], rng)
              for _ in range(40)]
    instructions = [shared[int(rng.integers(len(shared)))] for _ in range(500)] + [Halt()]
    words = encode_words(instructions)
    assert words.tobytes() == b"".join(instr.encode() for instr in instructions)


def test_encode_words_of_no_instructions() -> None:
    assert encode_words([]).shape == (0, 8)


def test_program_words_are_cached_read_only_and_decode_back() -> None:
    config = ArrayConfig(rows=4, cols=4, dataflow=Dataflow.OS)
    program = Program(config, synthetic_program(config, 400, seed=3).instructions)
    words = program.words
    assert words is program.words
    assert not words.flags.writeable
    assert tuple(decode(row.tobytes()) for row in words) == program.instructions


def test_a_part_of_a_program_has_its_words_and_a_halt() -> None:
    config = ArrayConfig(rows=3, cols=5)
    program = Program(config, synthetic_program(config, 300, seed=1).instructions)
    part = program.part(10, 50)
    assert part.instructions == (*program.instructions[10:50], Halt())
    assert part.words.tobytes() == encode_words(part.instructions).tobytes()
    assert not part.words.flags.writeable


def test_the_part_of_the_whole_body_shares_the_instructions_and_words() -> None:
    config = ArrayConfig(rows=3, cols=5)
    program = Program(config, synthetic_program(config, 300, seed=2).instructions)
    whole = program.part(0, len(program.instructions) - 1)
    assert whole.instructions == program.instructions
    assert isinstance(whole.instructions[-1], Halt)
    assert whole.words is program.words
    assert whole.words.tobytes() == encode_words(whole.instructions).tobytes()
    assert not (whole.segments or whole.tensors or whole.layers)


@pytest.mark.parametrize("native", ["1", "0"])
def test_memory_end_covers_every_external_access(native: str, monkeypatch) -> None:
    # (with native code, the external ranges come from the instruction words in C)
    monkeypatch.setenv("SYSTOLIC_NATIVE", native)
    for seed, dataflow in enumerate((Dataflow.WS, Dataflow.OS)):
        config = ArrayConfig(rows=4, cols=3, dataflow=dataflow, bus_bytes=4)
        program = Program(config, synthetic_program(config, 500, seed=seed).instructions)
        ends = [access.last + 1 for instr in program.instructions
                for access in instr.footprint(config) if access.memory is Memory.EXTERNAL]
        assert program.memory_end == max(ends)
