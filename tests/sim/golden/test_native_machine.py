"""The C golden machine against the Python `Machine`, state for state.

Every comparison covers the whole architectural state: external memory, both scratchpads, the
accumulators, the params rows, the active and shadow PE weights and the halted flag. Random
instructions of every class with edge fields (negative and overlapping strides, padding,
flip_sign, 16-bit operands, acc_width from the smallest to 64, shifts -31..31, negative
multipliers) are compared one instruction at a time with `Machine.execute`; synthetic and
compiled programs as a whole with `Machine.run`; errors raise Python's exact message.
"""

import dataclasses
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from systolic.config import ArrayConfig, Dataflow
from systolic.errors import SimulationError, SystolicError
from systolic.isa.encode_batch import encode_words
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
from systolic.isa.memories import Memory, depth
from systolic.isa.params import pack_params
from systolic.isa.program import Program, TensorRole
from systolic.mapper.importer import load_model
from systolic.mapper.lowering import CompiledModel, compile_model
from systolic.mapper.passes.pipeline import run_passes
from systolic.sim.golden import native_machine
from systolic.sim.golden.machine import Machine
from systolic.sim.golden.native_machine import NativeStatus, native_execute, run_native
from systolic.sim.native.build import load_library, unavailable_reason

from ...hdl.accelerator_programs import (
    gemm_program,
    operands,
    program_image,
    small_config,
    vector_program,
)
from ...support.random_programs import random_program

MODELS = Path(__file__).resolve().parents[2] / "models"
WS, OS = Dataflow.WS, Dataflow.OS


requires_native = pytest.mark.skipif(
    load_library("golden") is None,
    reason=f"the native golden machine is unavailable: {unavailable_reason('golden')}")


def config(rows: int, cols: int, dataflow: Dataflow = WS, **fields: int) -> ArrayConfig:
    """A configuration with memories just large enough for double buffering."""
    dim = max(rows, cols)
    operand_bytes = (max(fields.get("input_width", 8), fields.get("weight_width", 8)) + 7) // 8
    acc_bytes = (fields.get("acc_width", 32) + 7) // 8
    fields.setdefault("spad_kib", -(-2 * (rows + cols) * dim * operand_bytes // 1024) + 1)
    fields.setdefault("acc_kib", -(-2 * rows * cols * acc_bytes // 1024) + 1)
    return ArrayConfig(rows=rows, cols=cols, dataflow=dataflow, **fields)


CONFIGS = [
    config(1, 1, acc_width=16),
    config(3, 5, acc_width=20),
    config(8, 8),
    config(5, 3, OS),
    config(4, 4, input_width=4, weight_width=6, acc_width=10),
    config(4, 6, OS, input_width=16, weight_width=16, acc_width=32),
    config(6, 4, input_width=12, weight_width=8, acc_width=40, bus_bytes=1),
    config(16, 16, OS, acc_width=64, bus_bytes=256),
    config(3, 9, input_width=16, weight_width=16, acc_width=64),
    config(128, 2, acc_width=24),
    config(2, 128, OS, input_width=5, weight_width=16, acc_width=21),
]


# -- comparing states --------------------------------------------------------------------------


def assert_same_state(native: Machine, python: Machine, where: str = "") -> None:
    for name in ("memory", "spad_in", "spad_wt", "acc", "bias", "multiplier", "shift", "weights"):
        np.testing.assert_array_equal(getattr(native, name), getattr(python, name),
                                      err_msg=f"{name} {where}")
    assert (native.shadow is None) == (python.shadow is None), where
    if python.shadow is not None:
        np.testing.assert_array_equal(native.shadow, python.shadow, err_msg=f"shadow {where}")
    assert native.halted == python.halted, where


def machines(cfg: ArrayConfig, image: np.ndarray) -> tuple[Machine, Machine]:
    native, python = Machine(cfg, image.size), Machine(cfg, image.size)
    native.memory[:] = image
    python.memory[:] = image
    return native, python


StateCheck = Callable[[Machine, Machine, str], None]
"""A comparison of two machines beyond `assert_same_state` (e.g. their tables), `where` named."""


def compare_step_by_step(cfg: ArrayConfig, instructions: list[Instruction],
                         image: np.ndarray, also: StateCheck | None = None) -> None:
    """Execute each instruction natively (it must run there) and with `Machine.execute`;
    compare the state, and `also` what it compares, after each."""
    native, python = machines(cfg, image)
    words = encode_words(instructions)
    for index, instr in enumerate(instructions):
        status, failed = native_execute(cfg, words[index : index + 1], native.memory, native)
        python.execute(instr)
        expected = NativeStatus.OK if isinstance(instr, Halt) else NativeStatus.NO_HALT
        assert (status, failed) == (expected, 1), f"{instr} on {cfg}"
        assert_same_state(native, python, f"after {index}: {instr} on {cfg}")
        if also is not None:
            also(native, python, f"after {index}: {instr}")


def compare_run(cfg: ArrayConfig, instructions: list[Instruction], image: np.ndarray,
                also: StateCheck | None = None) -> Machine:
    """Run the whole program natively (every instruction must run there) and with
    `Machine.run`; compare the state and `also` what it compares; return the native machine."""
    native, python = machines(cfg, image)
    python.run(instructions)
    status, _ = native_execute(cfg, encode_words(instructions), native.memory, native)
    assert status == NativeStatus.OK  # (the C engine ran every instruction itself)
    assert_same_state(native, python)
    if also is not None:
        also(native, python, "")
    return native


def kinds_of(program: list[Instruction]) -> set[str]:
    """The instruction classes of `program`, with " wide" or " raw" where those flags are set."""
    return {" ".join([type(i).__name__, *(f for f in ("wide", "raw") if getattr(i, f, False))])
            for i in program}


def compare_generated(cfg: ArrayConfig, rng: np.random.Generator, programs: int,
                      also: StateCheck | None = None, **options: object) -> set[str]:
    """Run `programs` programs of `random_program(cfg, rng, **options)` natively (every
    instruction must run there) and with `Machine.run`; compare the state and `also` what it
    compares; return the `kinds_of` instruction seen."""
    seen: set[str] = set()
    for _ in range(programs):
        synthetic = random_program(cfg, rng, **options)  # type: ignore[arg-type]
        seen |= kinds_of(list(synthetic.program.instructions))
        image = np.frombuffer(bytes(synthetic.memory), np.uint8)
        native, python = machines(cfg, image)
        status, _ = native_execute(cfg, synthetic.program.words, native.memory, native)
        assert status == NativeStatus.OK  # (the C engine ran every instruction itself)
        python.run(synthetic.program.instructions)
        assert_same_state(native, python)
        if also is not None:
            also(native, python, "")
    return seen


# -- random instructions with edge fields ----------------------------------------------------

MEMORY_BYTES = 10000
PARAMS_AT = 5000  # params rows (never written: writes go below WRITES_END)
WRITES_END = 4000


class Fuzzer:
    """Random valid instructions of every class for one configuration."""

    def __init__(self, cfg: ArrayConfig, rng: np.random.Generator) -> None:
        self.cfg, self.rng = cfg, rng
        self.ob = cfg.operand_bytes
        self.spad = depth(cfg, Memory.SPAD_IN)
        self.params_rows = 4

    def int(self, low: int, high: int) -> int:
        return int(self.rng.integers(low, high, endpoint=True))

    def image(self) -> np.ndarray:
        image = self.rng.integers(0, 256, MEMORY_BYTES, dtype=np.uint8)
        cols, rows = self.cfg.cols, self.params_rows
        bias = self.rng.integers(-(2**31), 2**31, (rows, cols))
        multiplier = self.rng.integers(-(2**31), 2**31, (rows, cols))
        multiplier[0] = self.rng.integers(2**30, 2**31, cols)  # (realistic ones too)
        shift = self.rng.integers(-31, 32, (rows, cols))
        shift[1, :2] = [-31, 31][: min(2, cols)]
        data = np.frombuffer(pack_params(bias, multiplier, shift), np.uint8)
        image[PARAMS_AT : PARAMS_AT + data.size] = data
        return image

    def flip(self, width: int) -> bool:
        return width == 8 and self.ob == 1 and bool(self.rng.integers(2))

    def clamp(self) -> tuple[int, int, int]:
        lo, hi = sorted(self.rng.integers(-128, 128, 2).tolist())
        return self.int(-128, 127), lo, hi

    def row_pattern(self, rows: int, row_bytes: int, end: int) -> dict[str, int] | None:
        """A random (possibly negative, overlapping) row pattern placed inside [0, end)."""
        n0 = self.int(1, 3)
        s0, s1 = self.int(-3 * row_bytes, 3 * row_bytes), self.int(-9 * row_bytes, 9 * row_bytes)
        corners = [(r // n0) * s1 + (r % n0) * s0 for r in range(rows)]
        low, high = min(corners), max(corners) + row_bytes - 1
        if high - low >= end:
            return None
        return {"ext": self.int(-low, end - 1 - high), "n0": n0, "row_stride0": s0,
                "row_stride1": s1}

    def load(self) -> Instruction | None:
        cfg, dim = self.cfg, self.cfg.dim
        if self.rng.integers(5) == 0:
            count = self.int(1, 2)
            return Load.params(self.int(0, 512 - count), count, PARAMS_AT
                               + 9 * cfg.cols * self.int(0, self.params_rows - count),
                               9 * cfg.cols)
        wt = bool(self.rng.integers(2))
        count = self.int(1, min(6, self.spad))
        run, n_mid = self.int(1, 5), self.int(1, 3)
        fields = {"k0": self.int(0, 7), "length": self.int(1, dim), "run": run, "n_mid": n_mid,
                  "stride_mid": self.int(-4 * run, 4 * run) * self.ob,
                  "stride_outer": self.int(-12 * run, 12 * run) * self.ob}
        probe = Load(LoadTarget.SPAD_IN, 0, 1, 0, **fields)
        low, high = probe._external_range(cfg)
        pattern = self.row_pattern(count, high - low + 1, MEMORY_BYTES)
        if pattern is None or pattern["ext"] < low:
            return None
        pattern["ext"] -= low
        target = LoadTarget.SPAD_WT if wt else LoadTarget.SPAD_IN
        width = cfg.weight_width if wt else cfg.input_width
        return Load(target, self.int(0, self.spad - count), count, **pattern, **fields,
                    flip_sign=self.flip(width))

    def execute(self) -> Instruction:
        cfg, acc = self.cfg, self.cfg.acc_depth
        if cfg.dataflow is WS:
            if self.rng.integers(2):
                k = self.int(1, cfg.rows)
                return Preload(self.int(0, self.spad - k), k, self.int(1, cfg.cols))
            m = self.int(1, min(20, self.spad, acc))
            return Compute(self.int(0, self.spad - m), m, self.int(0, acc - m),
                           bool(self.rng.integers(2)))
        m, n = self.int(1, min(cfg.rows, acc)), self.int(1, cfg.cols)
        k = self.int(1, min(3 * cfg.dim, self.spad))
        chunks = -(-k // cfg.dim)
        a_stride = 0 if chunks == 1 else self.int(m, m + 2)
        span = (chunks - 1) * a_stride + m
        if span > self.spad:
            k, a_stride, span = min(k, cfg.dim), 0, m
        return ComputeOS(self.int(0, self.spad - span), m, n, k, self.int(0, self.spad - k),
                         self.int(0, acc - m), a_stride, bool(self.rng.integers(2)))

    def store(self) -> Instruction | None:
        cfg = self.cfg
        m, n = self.int(1, min(6, cfg.acc_depth)), self.int(1, cfg.cols)
        pattern = self.row_pattern(m, n * self.ob, WRITES_END)
        if pattern is None:
            return None
        zero_point, lo, hi = self.clamp()
        return Store(self.int(0, cfg.acc_depth - m), m, n, self.int(0, 1), zero_point, lo, hi,
                     **pattern, flip_sign=self.flip(cfg.input_width))

    def vector(self) -> Instruction | None:
        cfg = self.cfg
        lanes = self.int(1, cfg.dim)
        flip = self.flip(cfg.input_width)
        zero_point, lo, hi = self.clamp()
        kind = self.rng.integers(3)
        if kind == 0:
            h, w = self.int(1, 4), self.int(1, 4)
            if h * w > self.spad:
                return None
            kh, kw, sh, sw = self.int(1, 3), self.int(1, 3), self.int(1, 2), self.int(1, 2)
            pad_top, pad_left = self.int(-(h - 1), kh - 1), self.int(-(w - 1), kw - 1)
            oh = self.int(1, (h - 1 + pad_top) // sh + 1)
            ow = self.int(1, (w - 1 + pad_left) // sw + 1)
            pattern = self.row_pattern(oh * ow, lanes * self.ob, WRITES_END)
            if pattern is None:
                return None
            avg = bool(self.rng.integers(2))
            scaled = {"multiplier": self.int(-(2**31), 2**31 - 1), "shift": self.int(-31, 31),
                      "zp_in": self.int(-128, 127), "zp_out": zero_point} if avg else {}
            return Pool(PoolMode.AVG if avg else PoolMode.MAX, self.int(0, self.spad - h * w),
                        lanes, h, w, kh, kw, sh, sw, pad_top, pad_left, oh, ow, lo, hi,
                        **pattern, **scaled, flip_sign=flip)
        m = self.int(1, min(6, self.spad))
        pattern = self.row_pattern(m, lanes * self.ob, WRITES_END)
        if pattern is None:
            return None
        if kind == 1:
            return Add(self.int(0, self.spad - m), self.int(0, self.spad - m), m, lanes,
                       self.int(-(2**31), 2**31 - 1), self.int(-(2**31), 2**31 - 1),
                       self.int(-31, 31), self.int(-128, 127), self.int(-128, 127), zero_point,
                       lo, hi, **pattern, flip_sign=flip)
        return Copy(self.int(0, self.spad - m), m, lanes, **pattern, flip_sign=flip)

    def makers(self) -> tuple[Callable[[], Instruction | None], ...]:
        """The instruction makers `program` draws from, uniformly (repeats weigh more)."""
        return (self.load, self.load, self.execute, self.execute, self.store, self.vector)

    def program(self, size: int) -> list[Instruction]:
        """Return a params LOAD, then random valid instructions of `makers` up to `size`,
        then HALT."""
        instrs: list[Instruction] = [Load.params(0, 2, PARAMS_AT, 9 * self.cfg.cols)]
        makers = self.makers()
        while len(instrs) < size:
            instr = makers[int(self.rng.integers(len(makers)))]()
            if instr is not None:
                instr.check(self.cfg)
                instrs.append(instr)
        return [*instrs, Halt()]


@requires_native
@pytest.mark.parametrize("cfg", CONFIGS, ids=lambda c: f"{c.shape_text}{c.dataflow.value}"
                         f"-{c.input_width}/{c.weight_width}/{c.acc_width}")
def test_random_instructions_match_execute(cfg: ArrayConfig) -> None:
    rng = np.random.default_rng(cfg.rows * 1000 + cfg.cols + cfg.acc_width)
    fuzzer = Fuzzer(cfg, rng)
    for _ in range(2):
        compare_step_by_step(cfg, fuzzer.program(120), fuzzer.image())


@requires_native
@pytest.mark.parametrize("cfg", CONFIGS, ids=lambda c: f"{c.shape_text}{c.dataflow.value}"
                         f"-{c.input_width}/{c.weight_width}/{c.acc_width}")
def test_synthetic_programs_match_run(cfg: ArrayConfig) -> None:
    rng = np.random.default_rng(7 + cfg.rows)
    for _ in range(3):
        synthetic = random_program(cfg, rng, layers=3)
        image = np.frombuffer(bytes(synthetic.memory), np.uint8)
        native, python = machines(cfg, image)
        python.run(synthetic.program.instructions)
        assert run_native(cfg, synthetic.program.words, native.memory, state=native)
        assert_same_state(native, python)


@requires_native
@pytest.mark.parametrize("dataflow", [WS, OS], ids=lambda d: d.value)
@pytest.mark.parametrize(("rows", "cols", "extreme"), [(2, 3, False), (4, 4, True), (3, 2, True)])
def test_accelerator_test_programs_match_run(dataflow: Dataflow, rows: int, cols: int,
                                             extreme: bool) -> None:
    cfg = small_config(rows, cols, dataflow)
    rng = np.random.default_rng(rows * cols)
    a, b = operands(rng, 7, 11, 5, extreme=extreme)
    programs = [gemm_program(cfg, a, b, rng), gemm_program(cfg, a, b, rng, k_chunk=rows),
                vector_program(cfg, rng, 3, 5, min(cfg.dim, 4))]
    for program in programs:
        image = np.frombuffer(bytes(program_image(program)), np.uint8)
        native, python = machines(cfg, image)
        python.run(program.instructions)
        assert run_native(cfg, program.words, native.memory, state=native)
        assert_same_state(native, python)


# -- arithmetic edges ----------------------------------------------------------------------------


def extreme_gemm(cfg: ArrayConfig, repeats: int) -> tuple[list[Instruction], np.ndarray]:
    """Operands all at the most negative value, accumulated `repeats` times (the sums wrap)."""
    ob, dim = cfg.operand_bytes, cfg.dim
    value = -(2 ** (max(cfg.input_width, cfg.weight_width) - 1))
    row = np.full(dim, value, dtype="<i2" if ob == 2 else "i1").view(np.uint8)
    image = np.tile(row, 64)
    instrs: list[Instruction] = [
        Load.dense(LoadTarget.SPAD_IN, 0, cfg.rows, 0, dim * ob, dim),
        Load.dense(LoadTarget.SPAD_WT, 0, cfg.rows, 0, dim * ob, dim),
    ]
    if cfg.dataflow is WS:
        instrs.append(Preload(0, cfg.rows, cfg.cols))
        instrs += [Compute(0, cfg.rows, 0, accumulate=i > 0) for i in range(repeats)]
    else:
        instrs += [ComputeOS(0, cfg.rows, cfg.cols, cfg.rows, 0, 0, accumulate=i > 0)
                   for i in range(repeats)]
    return [*instrs, Halt()], image


@pytest.mark.parametrize("cfg", [
    config(16, 16, input_width=16, weight_width=16, acc_width=32),
    config(16, 16, OS, input_width=16, weight_width=16, acc_width=32),
    config(8, 8, acc_width=20),
    config(8, 8, OS, acc_width=17),
    config(16, 16, input_width=16, weight_width=16, acc_width=64),
    config(16, 16, OS, input_width=16, weight_width=16, acc_width=40),
], ids=lambda c: f"{c.dataflow.value}-{c.input_width}/{c.acc_width}")
@requires_native
def test_accumulators_wrap(cfg: ArrayConfig) -> None:
    instrs, image = extreme_gemm(cfg, 9)
    compare_step_by_step(cfg, instrs, image)


@requires_native
@pytest.mark.parametrize("acc_width", [16, 32, 33, 64])
def test_store_of_extreme_accumulators(acc_width: int) -> None:
    """Accumulators at the ends of their range, bias and multiplier at the ends of int32 and
    shifts -31 and 31: products far beyond int64 round exactly."""
    cfg = config(4, 8, acc_width=acc_width)
    rng = np.random.default_rng(acc_width)
    half = 2 ** (acc_width - 1)
    bias = np.array([[-(2**31), 2**31 - 1] * 4, rng.integers(-(2**31), 2**31, 8)])
    multiplier = np.array([[-(2**31), 2**31 - 1, 2**30, -1] * 2, rng.integers(-(2**31), 2**31, 8)])
    shift = np.array([[-31, 31, -31, 31, 0, -30, 30, 1], rng.integers(-31, 32, 8)])
    image = np.zeros(1024, np.uint8)
    image[512 : 512 + 144] = np.frombuffer(pack_params(bias, multiplier, shift), np.uint8)
    native, python = machines(cfg, image)
    acc = np.concatenate([np.full((1, 8), -half), np.full((1, 8), half - 1),
                          rng.integers(-half, half, (2, 8), dtype=np.int64)])
    for machine in (native, python):
        machine.acc[:4] = acc
    instrs = [Load.params(0, 2, 512, 72)] + [
        Store(row, 1, 8, param_row, zp, lo, hi, 32 * row + 16 * param_row)
        for row in range(4) for param_row, (zp, lo, hi) in enumerate([(0, -128, 127),
                                                                      (-7, -100, 90)])
    ] + [Halt()]
    words = encode_words(instrs)
    assert run_native(cfg, words, native.memory, state=native)
    python.run(instrs)
    assert_same_state(native, python)


# -- compiled models -------------------------------------------------------------------------


def compiled_or_skip(path: Path, cfg: ArrayConfig) -> CompiledModel:
    """Compile the quantized test model at `path` for `cfg`, or skip the test when the mapper
    refuses it (a SystolicError: these tests check the engine on what compiles, not the
    mapper; the reason is shown in the skip)."""
    try:
        model, _ = run_passes(load_model(path))
        return compile_model(model, cfg)
    except SystolicError as error:
        pytest.skip(f"{path.name} does not compile: {error}")


@requires_native
@pytest.mark.parametrize("dataflow", [WS, OS], ids=lambda d: d.value)
@pytest.mark.parametrize("path", sorted([*MODELS.glob("*_q*.onnx"),
                                         *(MODELS / "realistic").glob("*_q*.onnx")]),
                         ids=lambda p: p.stem)
def test_compiled_models_match_run(path: Path, dataflow: Dataflow) -> None:
    compiled = compiled_or_skip(path, config(8, 8, dataflow, spad_kib=32, acc_kib=8))
    program = compiled.program
    python = Machine.for_program(program)
    rng = np.random.default_rng(3)
    for placement in compiled.inputs:
        python.memory[placement.address : placement.end] = rng.integers(
            0, 256, placement.end - placement.address, dtype=np.uint8)
    memory = python.memory.copy()
    python.run(program.instructions)
    assert run_native(program.config, program.words, memory)
    np.testing.assert_array_equal(memory, python.memory)


# -- errors and fallbacks ------------------------------------------------------------------------


def run_both(cfg: ArrayConfig, instrs: list[Instruction], image: np.ndarray,
             words: np.ndarray | None = None) -> tuple[Machine, Machine, str]:
    """Run natively and in Python, both expected to raise; return the machines and message."""
    native, python = machines(cfg, image)
    with pytest.raises(Exception) as expected:
        python.run(instrs)
    code = encode_words(instrs) if words is None else words
    with pytest.raises(type(expected.value)) as raised:
        run_native(cfg, code, native.memory, state=native)
    assert str(raised.value) == str(expected.value)
    assert_same_state(native, python)
    return native, python, str(raised.value)


def assert_refused(cfg: ArrayConfig, program: list[Instruction], image: np.ndarray,
                   message: str) -> None:  # fmt: skip
    """The C engine refuses instruction 1 of `program` as invalid, and then both machines
    raise the same error, which contains `message`."""
    native, _ = machines(cfg, image)
    status, failed = native_execute(cfg, encode_words(program), native.memory, native)
    assert (status, failed) == (NativeStatus.INVALID, 1)
    _, _, raised = run_both(cfg, program, image)
    assert message in raised


def compare_compiled(program: Program, seed: int, also: StateCheck | None = None) -> None:
    """Run a compiled `program` on random inputs natively (every instruction must run there)
    and with `Machine.run`; compare the state and `also` what it compares."""
    python = Machine.for_program(program)
    rng = np.random.default_rng(seed)
    for placement in program.placements(TensorRole.INPUT):
        python.memory[placement.address : placement.end] = rng.integers(
            0, 256, placement.end - placement.address, dtype=np.uint8)
    native = Machine(program.config, python.memory.size)
    native.memory[:] = python.memory
    python.run(program.instructions)
    status, _ = native_execute(program.config, program.words, native.memory, native)
    assert status == NativeStatus.OK  # (the C engine ran every instruction itself)
    assert_same_state(native, python)
    if also is not None:
        also(native, python, "")


def bad_shift_program(cfg: ArrayConfig) -> tuple[list[Instruction], np.ndarray]:
    image = np.zeros(512, np.uint8)
    params = pack_params(np.zeros(cfg.cols), np.full(cfg.cols, 2**30), np.zeros(cfg.cols))
    image[256 : 256 + len(params)] = np.frombuffer(params, np.uint8)
    image[256 + 8 * cfg.cols + 1] = 40  # lane 1's shift
    instrs = [Load.dense(LoadTarget.SPAD_IN, 0, 2, 0, 4, 4), Load.params(3, 1, 256, 0),
              Copy(0, 2, 4, 100, row_stride1=4), Store(0, 1, 4, 3, 0, -128, 127, 64), Halt()]
    return instrs, image


@requires_native
def test_store_with_a_shift_out_of_range_stops_with_pythons_error() -> None:
    cfg = config(4, 4)
    instrs, image = bad_shift_program(cfg)
    native, _ = machines(cfg, image)
    status, failed = native_execute(cfg, encode_words(instrs), native.memory, native)
    assert (status, failed) == (NativeStatus.ARITHMETIC, 3)
    _, _, message = run_both(cfg, instrs, image)
    assert message == ("STORE uses params row 3 whose lane 1 has shift 40, outside -31..31; "
                       "fix the params image")


@requires_native
def test_access_beyond_memory_and_invalid_instructions_raise_pythons_errors() -> None:
    ws = config(4, 4)
    beyond = [Load.dense(LoadTarget.SPAD_IN, 0, 4, 100, 4, 4), Halt()]
    _, _, message = run_both(ws, beyond, np.zeros(110, np.uint8))
    assert "beyond the 110 bytes of simulated memory" in message
    wrong_dataflow = [Load.dense(LoadTarget.SPAD_IN, 0, 1, 0, 4, 4), Compute(0, 1, 0), Halt()]
    run_both(config(4, 4, OS), wrong_dataflow, np.zeros(64, np.uint8))
    _, _, message = run_both(ws, [Copy(0, 1, 4, 0)], np.zeros(64, np.uint8))
    assert message == "the program ended without HALT"
    words = encode_words([Copy(0, 1, 4, 0), Halt()])
    words[0, 7] |= np.uint64(1) << np.uint64(60)  # a reserved bit
    with pytest.raises(InstructionError, match="reserved bits"):
        run_native(ws, words, np.zeros(64, np.uint8))


@requires_native
def test_a_halted_state_and_state_beyond_16_bits_fall_back_to_python() -> None:
    cfg = config(4, 4)
    native, python = machines(cfg, np.zeros(64, np.uint8))
    for machine in (native, python):
        machine.spad_in[0, 0] = 70000  # (no LOAD makes this; Python computes with it)
        machine.weights = np.full((4, 4), 3, dtype=np.int64)
    status, failed = native_execute(cfg, encode_words([Halt()]), native.memory, native)
    assert (status, failed) == (NativeStatus.STATE, 0)
    program = [Compute(0, 2, 0), Store(0, 2, 4, 0, 0, -128, 127, 0), Halt()]
    for machine in (native, python):
        machine.multiplier[0] = 2**30
    assert run_native(cfg, encode_words(program), native.memory, state=native)
    python.run(program)
    assert_same_state(native, python)
    with pytest.raises(SimulationError, match="^HALT executed after HALT$"):
        run_native(cfg, encode_words([Halt()]), native.memory, state=native)


def test_unavailable_library_returns_false(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(native_machine, "load_library", lambda name: None)
    memory = np.arange(16, dtype=np.uint8)
    cfg = config(2, 2)
    assert not run_native(cfg, encode_words([Copy(0, 1, 2, 0), Halt()]), memory)
    np.testing.assert_array_equal(memory, np.arange(16))


@requires_native
def test_arguments_are_checked() -> None:
    cfg = config(2, 2)
    with pytest.raises(ValueError, match="shape"):
        run_native(cfg, np.zeros((1, 7), np.uint64), np.zeros(8, np.uint8))
    with pytest.raises(ValueError, match="uint8"):
        run_native(cfg, encode_words([Halt()]), np.zeros(8, np.int8))
    other = Machine(dataclasses.replace(cfg, rows=3), 8)
    with pytest.raises(ValueError, match="configuration"):
        native_execute(cfg, encode_words([Halt()]), other.memory, other)
