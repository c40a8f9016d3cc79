"""The bulk instruction checks: acceptance tests agree with `check`, errors and marks as before."""

import random
from collections.abc import Callable

import pytest

from systolic.config import ArrayConfig, Dataflow
from systolic.isa.batch_check import accepted, check_instructions
from systolic.isa.encode_batch import encode_words
from systolic.isa.execute import Compute, ComputeOS, Preload
from systolic.isa.fields import InstructionError
from systolic.isa.instruction_base import Instruction
from systolic.isa.instructions import Halt
from systolic.isa.load import Load, LoadTarget
from systolic.isa.memories import Memory, depth
from systolic.isa.program import Program, ProgramError
from systolic.isa.store import Add, Copy, Store

CONFIGS = (
    ArrayConfig(rows=4, cols=4, spad_kib=1, acc_kib=1),
    ArrayConfig(rows=8, cols=4, dataflow=Dataflow.OS, spad_kib=2, acc_kib=1),
    ArrayConfig(rows=4, cols=8, input_width=16, spad_kib=2, acc_kib=1),
    ArrayConfig(rows=4, cols=4, dataflow=Dataflow.OS, weight_width=12, spad_kib=2, acc_kib=1),
    ArrayConfig(rows=4, cols=8, dataflow=Dataflow.BOTH, spad_kib=2, acc_kib=1),
)


def _near(rng: random.Random, limit: int) -> int:
    """A value around `limit` (the edges where checks flip), or a small one."""
    return max(0, rng.choice((rng.randrange(0, 8), limit + rng.randrange(-3, 4))))


def _load(rng: random.Random, config: ArrayConfig) -> Load:
    mem = rng.choice(list(LoadTarget))
    spad = depth(config, Memory.SPAD_IN)
    edge = rng.choice((0, 2**32 - 1, 2**31, rng.randrange(2**32)))
    stride = rng.choice((0, 1, -1, 64, -64, 2**31 - 1, -(2**31), rng.randrange(-999, 999)))
    common = {"row": _near(rng, spad - 4), "count": rng.randrange(1, 9),
              "ext": min(2**32 - 1, _near(rng, edge)), "n0": rng.choice((1, 1, 2, 3, 5)),
              "row_stride0": rng.choice((0, 16, -16, stride)), "row_stride1": stride}
    if mem is LoadTarget.PARAMS:
        return Load(mem, **common)  # type: ignore[arg-type]
    run = rng.randrange(1, 9)
    return Load(mem, **common, k0=rng.randrange(0, 6),
                length=_near(rng, config.dim) or 1, run=run, n_mid=rng.randrange(1, 4),
                stride_mid=rng.choice((run, -7, 40)), stride_outer=rng.choice((0, 100, -300)),
                flip_sign=rng.random() < 0.5)


def _preload(rng: random.Random, config: ArrayConfig) -> Preload:
    return Preload(row=_near(rng, depth(config, Memory.SPAD_WT) - 4),
                   k=_near(rng, config.rows) or 1, n=_near(rng, config.cols) or 1)


def _compute(rng: random.Random, config: ArrayConfig) -> Compute:
    return Compute(in_row=_near(rng, depth(config, Memory.SPAD_IN) - 4), m=rng.randrange(1, 9),
                   acc_row=_near(rng, depth(config, Memory.ACC) - 4),
                   accumulate=rng.random() < 0.5)


def _compute_os(rng: random.Random, config: ArrayConfig) -> ComputeOS:
    m = _near(rng, config.rows) or 1
    return ComputeOS(in_row=_near(rng, depth(config, Memory.SPAD_IN) - 20), m=m,
                     n=_near(rng, config.cols) or 1, k=rng.randrange(1, 4 * config.dim),
                     wt_row=_near(rng, depth(config, Memory.SPAD_WT) - 20),
                     acc_row=_near(rng, depth(config, Memory.ACC) - 4),
                     a_stride=rng.choice((0, m, m + 1, m - 1 if m > 1 else 0, 2**31)))


def _row_pattern(rng: random.Random) -> dict[str, int]:
    """An external row pattern near the ends of the address space (a RowWriter's)."""
    edge = rng.choice((0, 2**32 - 1, 2**31, rng.randrange(2**32)))
    stride = rng.choice((0, 1, -1, 64, -64, 2**31 - 1, -(2**31), rng.randrange(-999, 999)))
    return {"ext": min(2**32 - 1, _near(rng, edge)), "n0": rng.choice((1, 1, 2, 3, 5)),
            "row_stride0": rng.choice((0, 16, -16, stride)), "row_stride1": stride}


def _store(rng: random.Random, config: ArrayConfig) -> Store:
    raw = rng.random() < 0.3
    return Store(acc_row=_near(rng, depth(config, Memory.ACC) - 4), m=rng.randrange(1, 9),
                 n=_near(rng, config.cols) or 1, param_row=rng.randrange(0, 512),
                 zero_point=0 if raw else rng.randrange(-128, 128), lo=-128 if not raw else 0,
                 hi=127 if not raw else 0, raw=raw,
                 flip_sign=not raw and rng.random() < 0.5, **_row_pattern(rng))


def _add(rng: random.Random, config: ArrayConfig) -> Add:
    spad = depth(config, Memory.SPAD_IN)
    mul = rng.random() < 0.3
    return Add(a_row=_near(rng, spad - 4), b_row=_near(rng, spad - 4), m=rng.randrange(1, 9),
               lanes=_near(rng, config.dim) or 1, multiplier_a=1 << 20,
               multiplier_b=0 if mul else -(1 << 19), shift=8, zp_a=0, zp_b=0, zp_out=0,
               lo=-128, hi=127, mul=mul, b_broadcast=rng.random() < 0.5,
               flip_sign=rng.random() < 0.5, **_row_pattern(rng))


MAKERS: tuple[Callable[[random.Random, ArrayConfig], Instruction], ...] = (
    _load, _preload, _compute, _compute_os, _store, _add)


DATAFLOW = {Preload: Dataflow.WS, Compute: Dataflow.WS, ComputeOS: Dataflow.OS}
"""The dataflow each execute instruction needs (no instance passes on the other)."""


def _passes(instr: Instruction, config: ArrayConfig) -> bool:
    try:
        instr.check(config)
    except InstructionError:
        return False
    return True


@pytest.mark.parametrize("make", MAKERS, ids=lambda make: make.__name__.strip("_"))
@pytest.mark.parametrize("config", CONFIGS, ids=range(len(CONFIGS)))
def test_acceptance_tests_accept_exactly_what_check_accepts(
        make: Callable[[random.Random, ArrayConfig], Instruction], config: ArrayConfig) -> None:
    """On random instructions at the limits, an acceptance test never accepts an instruction
    `check` refuses, and accepts every one `check` accepts (so `check` rarely runs)."""
    rng = random.Random(f"{make.__name__}{config}")
    instructions: list[Instruction] = []
    while len(instructions) < 600:
        try:
            instructions.append(make(rng, config))
        except InstructionError:  # (a construction rule: not what is compared here)
            continue
    cls = type(instructions[0])
    ok = accepted(cls, encode_words(instructions), config)
    assert ok is not None
    expected = [_passes(instr, config) for instr in instructions]
    assert ok.tolist() == expected
    assert sum(expected) < len(expected)  # refusals were exercised, and acceptances too
    assert sum(expected) > 0 or DATAFLOW.get(cls, config.dataflow) is not config.dataflow


def test_classes_without_an_acceptance_test_are_left_to_check() -> None:
    config = CONFIGS[0]
    copy = Copy(in_row=0, m=1, lanes=1, ext=0)
    assert accepted(Copy, encode_words([copy]), config) is None


def _program_body(config: ArrayConfig, count: int) -> list[Instruction]:
    return [Compute(in_row=i % 8, m=1, acc_row=i % 4) for i in range(count)]


def test_a_large_program_names_its_first_bad_instruction_as_check_does() -> None:
    """A program checked in bulk refuses its first invalid instruction with `check`'s message."""
    config = CONFIGS[0]
    body = _program_body(config, 1000)
    spad = depth(config, Memory.SPAD_IN)
    first_bad, second_bad = Compute(in_row=spad, m=1, acc_row=0), Preload(row=0, k=9, n=1)
    body[700], body[300] = first_bad, second_bad
    with pytest.raises(InstructionError) as expected:
        second_bad.check(config)
    with pytest.raises(InstructionError) as raised:
        Program(config, (*body, Halt()))
    assert str(raised.value) == str(expected.value)
    assert "\n" not in str(raised.value)


def test_a_large_program_marks_its_instructions_checked_and_keeps_its_words() -> None:
    config = CONFIGS[0]
    body = _program_body(config, 1000)
    program = Program(config, (*body, Halt()))
    assert all(instr.__dict__["_checked_for"] is config for instr in program.instructions)
    assert program.words.tobytes() == encode_words(program.instructions).tobytes()


def test_check_instructions_checks_what_no_acceptance_test_covers() -> None:
    config = CONFIGS[0]
    bad = Store(acc_row=depth(config, Memory.ACC), m=1, n=1, param_row=0, zero_point=0, lo=-128,
                hi=127, ext=0)
    instructions = [*_program_body(config, 10), bad]
    with pytest.raises(InstructionError, match="STORE"):
        check_instructions(instructions, config, encode_words(instructions))


def test_a_non_instruction_is_refused_before_any_check() -> None:
    config = CONFIGS[0]
    body: list[object] = list(_program_body(config, 300))
    body[5] = "LOAD"
    with pytest.raises(ProgramError, match="instruction 5 is not an Instruction"):
        Program(config, (*body, Halt()))  # type: ignore[arg-type]


def test_a_program_needs_exactly_one_halt_at_its_end() -> None:
    config = CONFIGS[0]
    body = _program_body(config, 300)
    with pytest.raises(ProgramError, match=r"must end with HALT .*\(HALT at \[5, 301\] of 302"):
        Program(config, (*body[:5], Halt(), *body[5:], Halt()))
    with pytest.raises(ProgramError, match=r"\(HALT at no index of 300 instructions\)"):
        Program(config, tuple(body))
