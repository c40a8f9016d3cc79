"""copy_strided on the golden machine: a transposing copy, a gather with a lane stride, a copy
whose rows need more than one block per half of spad_in, and its LOAD/COPY pairing."""

import numpy as np
import pytest

from systolic.config import ArrayConfig
from systolic.isa.instructions import Copy, Halt, Load
from systolic.mapper.lowering.copy import copy_strided
from systolic.sim.golden.machine import Machine

SRC, DST, SIZE = 64, 4096, 8192


def run_copy(config: ArrayConfig, source: np.ndarray, src_strides: tuple[int, ...],
             dst_strides: tuple[int, ...], first_row: int = 0) -> np.ndarray:  # fmt: skip
    """Copy int8 `source` (placed at SRC with `src_strides`) to DST with `dst_strides` on the
    golden machine; return the destination's bytes read back as `source.shape`."""
    machine = Machine(config, SIZE)
    view = np.lib.stride_tricks.as_strided(
        machine.memory[SRC:].view(np.int8), source.shape, src_strides)
    view[...] = source
    code = copy_strided(config, source.shape, SRC, src_strides, DST, dst_strides, element=1,
                        first_row=first_row)  # fmt: skip
    machine.run([*code, Halt()])
    out = np.lib.stride_tricks.as_strided(
        machine.memory[DST:].view(np.int8), source.shape, dst_strides)
    return np.array(out)


@pytest.mark.parametrize("first_row", [0, 5])
def test_transposing_copy_moves_every_element(first_row: int) -> None:
    source = np.random.default_rng(1).integers(-128, 128, (3, 7, 6)).astype(np.int8)
    config = ArrayConfig(rows=4, cols=4)
    got = run_copy(config, source, (42, 6, 1), (1, 3, 21), first_row)  # to channel-last
    np.testing.assert_array_equal(got, source)


def test_gather_with_a_lane_stride_and_long_rows() -> None:
    source = np.random.default_rng(2).integers(-128, 128, (300, 5)).astype(np.int8)
    config = ArrayConfig(rows=2, cols=2, spad_kib=1)  # 300 rows > 128, half of spad_in
    got = run_copy(config, source, (1, 300), (5, 1))
    np.testing.assert_array_equal(got, source)


def test_each_load_is_followed_by_the_copy_of_its_rows() -> None:
    config = ArrayConfig(rows=4, cols=4)
    code = copy_strided(config, (3, 7, 6), SRC, (42, 6, 1), DST, (1, 3, 21), element=1)
    assert len(code) % 2 == 0 and code
    for load, copy in zip(code[::2], code[1::2], strict=True):
        assert isinstance(load, Load) and isinstance(copy, Copy)
        assert (copy.in_row, copy.m, copy.lanes) == (load.row, load.count, load.length)
