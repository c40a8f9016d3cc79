"""The engine's header isa.h: committed as generated, fields and row extents as Python has them."""

import ctypes
from importlib import resources

import numpy as np
import pytest

from systolic.isa.encode_batch import encode_words
from systolic.isa.instructions import INSTRUCTION_TYPES, Halt
from systolic.isa.patterns import RowPattern
from systolic.sim.native.isa_header import HEADER_NAME, isa_header

from ...support.random_programs import random_instruction
from .header_harness import compile_with_header

_CLASSES = [cls for cls in INSTRUCTION_TYPES if cls is not Halt]
_INT64 = (-(2**63), 2**63 - 1)


def test_the_committed_header_is_the_generated_one() -> None:
    committed = resources.files("systolic.sim.native").joinpath(HEADER_NAME).read_text("utf-8")
    assert committed == isa_header(), (
        "sim/native/isa.h is stale: python -m systolic.sim.native.isa_header > sim/native/isa.h")


def test_the_header_names_every_opcode() -> None:
    text = isa_header()
    for cls in INSTRUCTION_TYPES:
        assert f"#define OP_{cls.MNEMONIC.replace('.', '_').upper()} {cls.OPCODE}\n" in text


def _reader_source() -> str:
    """C code returning every field of an instruction word, in FIELDS order, by opcode."""
    cases = []
    for cls in _CLASSES:
        name = cls.MNEMONIC.replace(".", "_").upper()
        reads = "".join(
            f"        out[{i}] = FIELD(words, {name}_{field.name.upper()});\n"
            for i, field in enumerate(cls.FIELDS))
        cases.append(f"    case OP_{name}:\n{reads}        return {len(cls.FIELDS)};\n")
    return ("#include \"isa.h\"\n"
            "int read_fields(const uint64_t *words, int64_t *out) {\n"
            "    switch (OPCODE(words)) {\n" + "".join(cases) +
            "    default:\n        return -1;\n    }\n}\n")


def test_the_header_reads_every_field_as_python_encodes_it(tmp_path) -> None:
    read = compile_with_header(_reader_source(), tmp_path).read_fields
    read.restype = ctypes.c_int
    rng = np.random.default_rng(3)
    out = np.zeros(32, dtype=np.int64)
    for number in range(400):
        instr = random_instruction(_CLASSES[number % len(_CLASSES)], rng)
        words = np.ascontiguousarray(encode_words([instr])[0])
        count = read(words.ctypes.data_as(ctypes.c_void_p), out.ctypes.data_as(ctypes.c_void_p))
        assert count == len(instr.FIELDS)
        assert out[:count].tolist() == [int(getattr(instr, f.name)) for f in instr.FIELDS]


_EXTENT_SOURCE = """#include "isa.h"
int extent(int64_t ext, int64_t n0, int64_t s0, int64_t s1, int64_t count, int64_t *out) {
    return row_extent(ext, n0, s0, s1, count, out, out + 1);
}
"""


def _pattern_fields(rng: np.random.Generator) -> tuple[int, int, int, int, int]:
    """Return (ext, n0, stride0, stride1, count) within the encoded field widths (ext, n0 and
    count unsigned 32-bit, strides signed 32-bit), often at the ends of their ranges."""
    def pick(low: int, high: int) -> int:
        choice = rng.integers(4)
        if choice < 2:
            return (low, high)[choice]
        if choice == 2:
            return int(min(high, max(low, 0) + rng.integers(0, 9)))
        return int(rng.integers(low, high, endpoint=True))
    unsigned, signed = (0, 2**32 - 1), (-(2**31), 2**31 - 1)
    return (pick(*unsigned), max(1, pick(*unsigned)), pick(*signed), pick(*signed),
            max(1, pick(*unsigned)))


def _extent_function(folder):
    extent = compile_with_header(_EXTENT_SOURCE, folder).extent
    extent.restype = ctypes.c_int
    extent.argtypes = [ctypes.c_int64] * 5 + [ctypes.c_void_p]
    return extent


def test_row_extent_is_the_python_extent_for_every_encodable_pattern(tmp_path) -> None:
    extent = _extent_function(tmp_path)
    rng = np.random.default_rng(11)
    out = np.zeros(2, dtype=np.int64)
    for _ in range(4000):
        ext, n0, s0, s1, count = _pattern_fields(rng)
        assert extent(ext, n0, s0, s1, count, out.ctypes.data) == 0, (ext, n0, s0, s1, count)
        assert out.tolist() == list(RowPattern(ext, n0, s0, s1).extent(count))


def test_row_extent_beyond_the_field_widths_is_exact_or_rejected(tmp_path) -> None:
    extent = _extent_function(tmp_path)
    rng = np.random.default_rng(12)
    out = np.zeros(2, dtype=np.int64)
    big = [0, 1, 2, 3, 2**31, 2**32 + 5, 2**40, 2**62, 2**63 - 1]
    outcomes = set()
    for _ in range(3000):
        ext, s0, s1 = (int(rng.choice(big)) * int(rng.choice([-1, 1])) for _ in range(3))
        n0, count = (int(rng.choice(big[1:])) for _ in range(2))
        low, high = RowPattern(ext, n0, s0, s1).extent(count)
        status = extent(ext, n0, s0, s1, count, out.ctypes.data)
        if status == 0:
            assert out.tolist() == [low, high], (ext, n0, s0, s1, count)
        else:
            assert status == 1
        if not (_INT64[0] <= low and high <= _INT64[1]):
            assert status == 1, (ext, n0, s0, s1, count)
        outcomes.add(status)
    assert outcomes == {0, 1}


@pytest.mark.parametrize(("n0", "count"), [(0, 1), (1, 0), (-1, 5)])
def test_row_extent_rejects_an_empty_pattern(tmp_path, n0: int, count: int) -> None:
    extent = compile_with_header(_EXTENT_SOURCE, tmp_path).extent
    extent.argtypes = [ctypes.c_int64] * 5 + [ctypes.c_void_p]
    out = np.zeros(2, dtype=np.int64)
    assert extent(0, n0, 1, 1, count, out.ctypes.data) == 1
