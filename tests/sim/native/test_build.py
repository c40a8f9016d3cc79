"""Native builds: the generated field header against the Python encoding, caching, fallback."""

import ctypes

import numpy as np
import pytest

from systolic.isa.encode_batch import encode_words
from systolic.isa.instructions import INSTRUCTION_TYPES, Halt
from systolic.sim.native import build
from systolic.sim.native.isa_header import isa_header

from ...systolic.isa.random_instructions import random_instruction

_CLASSES = [cls for cls in INSTRUCTION_TYPES if cls is not Halt]


def _reader_source() -> str:
    """C code returning every field of an instruction word, in FIELDS order, by opcode."""
    cases = []
    for cls in _CLASSES:
        name = cls.MNEMONIC.replace(".", "_").upper()
        reads = "".join(
            f"        out[{i}] = FIELD(words, {name}_{field.name.upper()});\n"
            for i, field in enumerate(cls.FIELDS))
        cases.append(f"    case OP_{name}:\n{reads}        return {len(cls.FIELDS)};\n")
    return ("#include \"isa_fields.h\"\n"
            "int read_fields(const uint64_t *words, int64_t *out) {\n"
            "    switch (OPCODE(words)) {\n" + "".join(cases) +
            "    default:\n        return -1;\n    }\n}\n")


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("SYSTOLIC_CACHE_DIR", str(tmp_path))
    return tmp_path


def test_the_header_reads_every_field_as_python_encodes_it(cache) -> None:
    library = build.build_library("field_reader", _reader_source())
    if library is None:
        pytest.skip(build.unavailable_reason("field_reader") or "no native build")
    read = library.read_fields
    read.restype = ctypes.c_int
    rng = np.random.default_rng(3)
    out = np.zeros(32, dtype=np.int64)
    for number in range(400):
        instr = random_instruction(_CLASSES[number % len(_CLASSES)], rng)
        words = np.ascontiguousarray(encode_words([instr])[0])
        count = read(words.ctypes.data_as(ctypes.c_void_p), out.ctypes.data_as(ctypes.c_void_p))
        assert count == len(instr.FIELDS)
        assert out[:count].tolist() == [int(getattr(instr, f.name)) for f in instr.FIELDS]
    # a second build of the same source comes from the cache folder
    folders = sorted(p.name for p in (cache / "native").iterdir())
    assert build.build_library("field_reader", _reader_source()) is not None
    assert sorted(p.name for p in (cache / "native").iterdir()) == folders


def test_a_failing_build_is_reported_not_raised(cache) -> None:
    if build._compiler() is None:
        pytest.skip("no C compiler")
    assert build.build_library("broken", "this is not C;") is None
    reason = build.unavailable_reason("broken")
    assert reason is not None and "compiling the native broken engine failed" in reason
    assert (cache / "native" / "failed-broken.log").is_file()


def test_native_code_can_be_switched_off(monkeypatch) -> None:
    monkeypatch.setenv("SYSTOLIC_NATIVE", "0")
    assert build.load_library("timing") is None
    assert build.unavailable_reason("timing") == "native code is switched off (SYSTOLIC_NATIVE=0)"


def test_the_header_names_every_opcode() -> None:
    text = isa_header()
    for cls in INSTRUCTION_TYPES:
        assert f"#define OP_{cls.MNEMONIC.replace('.', '_').upper()} {cls.OPCODE}\n" in text


def test_an_unwritable_cache_folder_is_reported_not_raised(tmp_path, monkeypatch) -> None:
    if build._compiler() is None:
        pytest.skip("no C compiler")
    blocked = tmp_path / "file"
    blocked.write_text("not a folder")
    monkeypatch.setenv("SYSTOLIC_CACHE_DIR", str(blocked))
    assert build.build_library("field_reader_2", _reader_source()) is None
    reason = build.unavailable_reason("field_reader_2")
    assert reason is not None and "set SYSTOLIC_CACHE_DIR to a writable folder" in reason
