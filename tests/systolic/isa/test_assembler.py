"""Assembler and disassembler: Program -> ProgramProto -> bytes -> Program, and text."""

import dataclasses
import re
from pathlib import Path

import numpy as np
import pytest

from systolic.config import ArrayConfig, Dataflow
from systolic.errors import ConfigError
from systolic.ir import DataType
from systolic.isa.assembler import assemble, assemble_code, parse_instruction, parse_text
from systolic.isa.disassembler import (
    decode_code,
    disassemble,
    format_instruction,
    format_program,
)
from systolic.isa.fields import InstructionError
from systolic.isa.instructions import (
    Add,
    Compute,
    ComputeOS,
    Copy,
    Halt,
    Instruction,
    Load,
    LoadTarget,
    Pool,
    PoolMode,
    Preload,
    Store,
)
from systolic.isa.params import pack_params
from systolic.isa.patterns import Segment
from systolic.isa.program import MemorySegment, Program, ProgramError, TensorPlacement, TensorRole
from systolic.proto import ProgramProto

CONFIG = ArrayConfig(rows=4, cols=4, spad_kib=16, acc_kib=4)


def sample_program(config: ArrayConfig = CONFIG) -> Program:
    params = pack_params(np.arange(4), np.full(4, 2**30), np.array([-1, 0, 1, 2]))
    compute: list[Instruction] = []
    if config.dataflow.weight_stationary:
        compute += [Preload(row=0, k=4, n=4), Compute(in_row=0, m=6, acc_row=0, accumulate=True)]
    if config.dataflow.output_stationary:  # (BOTH: both families in one program)
        compute += [ComputeOS(in_row=0, m=4, n=4, k=8, wt_row=0, acc_row=0, a_stride=6)]
    instructions = (
        Load.dense(LoadTarget.SPAD_IN, 0, 6, 0, 8, 4, flip_sign=True),
        Load.dense(LoadTarget.SPAD_WT, 0, 8, 64, 4, 4),
        Load.params(0, 1, 128, 36),
        *compute,
        Store(0, 4, 4, 0, -3, -128, 127, 256, n0=2, row_stride0=4, row_stride1=16),
        Pool(
            PoolMode.AVG,
            0,
            4,
            2,
            3,
            2,
            2,
            1,
            1,
            0,
            1,
            2,
            3,
            -100,
            100,
            300,
            multiplier=2**30,
            shift=1,
            zp_in=-4,
            zp_out=7,
        ),
        Add(0, 2, 2, 4, 2**30, -(2**29), 0, 1, 2, 3, -128, 127, 400, flip_sign=True),
        Copy(1, 3, 4, 500, n0=3, row_stride0=-1, row_stride1=8),
        Halt(),
    )
    tensors = (
        TensorPlacement.contiguous(
            "x", TensorRole.INPUT, 0, (6, 8), DataType.UINT8, scale=(0.5,), zero_point=(128,)
        ),
        TensorPlacement.contiguous(
            "w",
            TensorRole.CONSTANT,
            64,
            (8, 4),
            DataType.INT8,
            scale=(0.1, 0.2, 0.3, 0.4),
            zero_point=(0, 0, 0, 0),
            axis=1,
        ),
        TensorPlacement("y", TensorRole.OUTPUT, 256, (4, 4), DataType.INT8, (4, 1)),
    )
    return Program(
        config,
        instructions,
        (MemorySegment(64, bytes(range(32))), MemorySegment(128, params)),
        tensors,
    )


@pytest.mark.parametrize("dataflow", list(Dataflow))
def test_program_round_trips_through_protobuf(dataflow: Dataflow) -> None:
    program = sample_program(dataclasses.replace(CONFIG, dataflow=dataflow))
    data = assemble(program).SerializeToString()
    message = ProgramProto()
    message.ParseFromString(data)
    assert message.instruction_bytes == 64
    assert len(message.code) == 64 * len(program.instructions)
    assert disassemble(message) == program


def test_text_round_trip() -> None:
    program = sample_program()
    listing = format_program(program)
    assert listing.count("\n") == 1 + len(program.tensors) + len(program.instructions)
    assert parse_text(listing) == program.instructions
    assert format_instruction(Halt()) == "HALT"
    line = format_instruction(program.instructions[0])
    assert line == (
        "LOAD mem=SPAD_IN row=0 count=6 ext=0 n0=1 row_stride0=0 row_stride1=8 k0=0 length=4 "
        "run=4 n_mid=1 stride_mid=0 stride_outer=0 flip_sign=1"
    )
    assert parse_instruction("compute in_row=0x10 m=3 acc_row=2  # comment") == Compute(16, 3, 2)


def test_code_round_trip() -> None:
    program = sample_program()
    assert decode_code(assemble_code(program.instructions)) == program.instructions


@pytest.mark.parametrize(
    ("line", "message"),
    [
        (
            "JUMP x=1",
            (
                "unknown instruction 'JUMP'; use one of LOAD, PRELOAD, COMPUTE, "
                "COMPUTE.OS, STORE, POOL, ADD, COPY, HALT, TABLE, SOFTMAX, LAYERNORM"
            ),
        ),
        ("COMPUTE in_row=0 m=1", "COMPUTE needs the fields acc_row"),
        (
            "COMPUTE in_row=0 m=1 acc_row=0 k=3",
            "COMPUTE has no field 'k' (its fields: accumulate, in_row, m, acc_row)",
        ),
        ("COMPUTE in_row=x m=1 acc_row=0", "COMPUTE in_row='x' is not a valid value for the field"),
        ("COMPUTE in_row=0 in_row=1", "COMPUTE field in_row is given twice"),
        ("COMPUTE in_row", "COMPUTE operand 'in_row' is not name=value"),
        ("LOAD mem=ACC row=0 count=1 ext=0", "LOAD mem='ACC' is not a valid value for the field"),
    ],
)
def test_bad_text_is_rejected(line: str, message: str) -> None:
    with pytest.raises(InstructionError, match=f"^{re.escape(message)}$"):
        parse_instruction(line)


def test_bad_text_names_its_line() -> None:
    with pytest.raises(InstructionError, match=r"^line 3: COMPUTE needs the fields acc_row$"):
        parse_text("# listing\n\nCOMPUTE in_row=0 m=1\nHALT\n")


def test_bad_messages_are_rejected() -> None:
    message = assemble(sample_program())
    message.code = message.code[:-1]
    with pytest.raises(InstructionError, match=r"^program code of 639 bytes is not whole 64"):
        disassemble(message)
    message = assemble(sample_program())
    message.format_version = 2
    with pytest.raises(ProgramError, match=r"^program format version 2 is not supported"):
        disassemble(message)
    message = assemble(sample_program())
    message.config.rows = 0
    with pytest.raises(ConfigError, match=r"^rows must be an integer from 1 to 128, not 0$"):
        disassemble(message)
    message = assemble(sample_program())
    message.code = message.code[:64] + bytes([0x05, 0, 0, 0, 0, 0, 0, 0, 0x80]) + message.code[73:]
    with pytest.raises(InstructionError, match=r"^instruction 1: STORE word has reserved bits"):
        disassemble(message)


def test_program_checks() -> None:
    with pytest.raises(ProgramError, match=r"^a program must end with HALT and have no other"):
        Program(CONFIG, (Compute(0, 1, 0),))
    with pytest.raises(ProgramError, match=r"^memory segments at 0 and 4 overlap$"):
        Program(CONFIG, (Halt(),), (MemorySegment(0, bytes(8)), MemorySegment(4, bytes(8))))
    with pytest.raises(InstructionError, match=r"^COMPUTE.OS needs a os"):
        Program(CONFIG, (ComputeOS(0, 1, 1, 1, 0, 0), Halt()))
    placed = TensorPlacement.contiguous("t", TensorRole.INPUT, 0, (2, 3), DataType.INT32)
    assert placed.strides == (12, 4) and placed.end == 24
    with pytest.raises(ProgramError, match=r"^tensor names must be unique: t$"):
        Program(CONFIG, (Halt(),), (), (placed, placed))
    with pytest.raises(ProgramError, match=r"^tensor 'q' has 2 scales for axis 0 of size 3$"):
        TensorPlacement.contiguous(
            "q",
            TensorRole.INPUT,
            0,
            (3,),
            DataType.INT8,
            scale=(1.0, 2.0),
            zero_point=(0, 0),
            axis=0,
        )


def test_the_documented_listing_parses() -> None:
    docs = (Path(__file__).resolve().parents[3] / "docs" / "isa.md").read_text()
    listing = docs.split("back (integers in any Python base")[1].split("```")[1]
    instructions = parse_text(listing)
    assert [type(i) for i in instructions] == [Load, Preload, Compute, Halt]
    assert instructions[0].segments(ArrayConfig())[:2] == [Segment(8, 1), Segment(33, 7)]
