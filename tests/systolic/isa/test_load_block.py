"""LOAD blocks: the LOADs, words and checks of a prototype and columns equal those of the
LOAD objects `copy_with` makes."""

import random
import re

import numpy as np
import pytest

from systolic.config import ArrayConfig, Dataflow
from systolic.isa.encode_batch import encode_words
from systolic.isa.field_copies import copy_with
from systolic.isa.fields import InstructionError
from systolic.isa.load import Load, LoadTarget
from systolic.isa.load_block import COLUMNS, LoadBlock

CONFIGS = (
    ArrayConfig(rows=4, cols=4, spad_kib=1, acc_kib=1),
    ArrayConfig(rows=8, cols=4, dataflow=Dataflow.OS, spad_kib=2, acc_kib=1),
    ArrayConfig(rows=4, cols=8, input_width=16, spad_kib=2, acc_kib=1),
)


def _prototype(rng: random.Random) -> Load:
    mem = rng.choice(list(LoadTarget))
    if mem is LoadTarget.PARAMS:
        return Load(mem, 0, 1, 0)
    run = rng.randrange(1, 9)
    return Load(mem, 0, 1, 0, k0=rng.randrange(0, 6), length=rng.randrange(1, 10), run=run,
                n_mid=rng.randrange(1, 4), stride_mid=rng.choice((run, -7, 40)),
                stride_outer=rng.choice((0, 100, -300)), flip_sign=rng.random() < 0.5)


def _rows(rng: random.Random, count: int) -> list[tuple[int, int, int, int, int, int]]:
    """Free fields near the limits of the configurations (rows near the scratchpad depth,
    addresses near both ends of the address space, negative and huge strides)."""
    rows = []
    for _ in range(count):
        edge = rng.choice((0, 2**32 - 1, 2**31, rng.randrange(2**32)))
        stride = rng.choice((0, 1, -1, 64, -64, 2**31 - 1, -(2**31), rng.randrange(-999, 999)))
        rows.append((rng.choice((0, 3, 60, 120, 250, 1020)), rng.randrange(1, 9),
                     min(2**32 - 1, max(0, edge + rng.randrange(-5, 5))),
                     rng.choice((1, 1, 2, 3, 5)), rng.choice((0, 16, -16, stride)), stride))
    return rows


def _copies(prototype: Load, rows: list[tuple[int, ...]]) -> list[Load]:
    return [copy_with(prototype, **dict(zip(COLUMNS, row, strict=True))) for row in rows]


def test_loads_and_words_are_those_of_the_copies():
    rng = random.Random(3)
    for _ in range(40):
        prototype, rows = _prototype(rng), _rows(rng, rng.randrange(0, 12))
        block = LoadBlock.of(prototype, rows)
        copies = _copies(prototype, rows)
        loads = block.loads()
        assert len(block) == len(rows)
        assert loads == copies
        assert [load.__dict__ for load in loads] == [copy.__dict__ for copy in copies]
        assert np.array_equal(block.words(), encode_words(copies))


def test_a_value_outside_its_field_raises_the_constructors_error():
    prototype = Load(LoadTarget.SPAD_IN, 0, 1, 0, length=4, run=4, n_mid=1)
    with pytest.raises(InstructionError, match="count"):
        LoadBlock.of(prototype, [(0, 1, 0, 1, 0, 0), (0, 0, 0, 1, 0, 0)])
    with pytest.raises(InstructionError, match="ext"):
        LoadBlock.of(prototype, [(0, 1, 2**32, 1, 0, 0)])


def test_checks_agree_with_each_loads_check():
    rng = random.Random(5)
    for config in CONFIGS:
        valid_seen = invalid_seen = 0
        for _ in range(150):
            prototype, rows = _prototype(rng), _rows(rng, rng.randrange(1, 5))
            block = LoadBlock.of(prototype, rows)
            valid = []
            for load in _copies(prototype, rows):
                try:
                    load.check(config)
                    valid.append(True)
                except InstructionError:
                    valid.append(False)
            accepted = block.accepted(config)
            assert not (accepted & ~np.array(valid)).any()  # (accepts only valid LOADs)
            if all(valid):
                block.check(config)
                valid_seen += 1
            else:
                first = _copies(prototype, [rows[valid.index(False)]])[0]
                with pytest.raises(InstructionError) as expected:
                    first.check(config)
                with pytest.raises(InstructionError, match=re.escape(str(expected.value))):
                    block.check(config)
                invalid_seen += 1
        assert valid_seen and invalid_seen  # (both cases occur)
