"""Interleaving a vector layer's blocks into its producer's instruction stream: the blocks,
the last producer write each block reads, and where the blocks go."""

import numpy as np

from systolic.config import ArrayConfig
from systolic.isa.instructions import Add, Compute, Load, LoadTarget, Preload, Store
from systolic.mapper.lowering.interleave import WriterMap, blocks_of, interleave, last_writers

CONFIG = ArrayConfig(rows=4, cols=4)


def _store(ext: int, rows: int = 2) -> Store:
    """A STORE of `rows` rows of 4 bytes at `ext`, `ext + 4`, ..."""
    return Store(acc_row=0, m=rows, n=4, param_row=0, zero_point=0, lo=-128, hi=127, ext=ext,
                 n0=1, row_stride1=4)  # fmt: skip


def _load(ext: int, row: int = 100, rows: int = 1) -> Load:
    return Load(LoadTarget.SPAD_IN, row=row, count=rows, ext=ext, n0=1, row_stride1=4,
                length=4, run=4, n_mid=1)  # fmt: skip


def _add(row: int = 100) -> Add:
    return Add(a_row=row, b_row=row + 1, m=1, lanes=4, multiplier_a=1 << 30,
               multiplier_b=1 << 30, shift=0, zp_a=0, zp_b=0, zp_out=0, lo=-128, hi=127,
               ext=4096)  # fmt: skip


def test_blocks_start_at_each_load_after_a_vector_instruction():
    a, b, c, d = _load(0), _load(8), _load(16), _load(24)
    assert blocks_of([a, b, _add(), c, d, _add()]) == [[a, b, _add()], [c, d, _add()]]
    assert blocks_of([]) == []


def test_each_block_waits_for_the_last_store_of_a_byte_it_reads():
    producer = [Preload(row=0, k=4, n=4), Compute(in_row=0, m=2, acc_row=0),
                _store(0), _store(8), _store(0, rows=1)]  # fmt: skip
    blocks = [[_load(4), _add()], [_load(12), _add()], [_load(2048), _add()]]
    # bytes 4..7 are written by the STOREs at 2 (rows 0, 1) only; 12..15 by the one at 3
    assert last_writers(producer, blocks, CONFIG) == [2, 3, -1]
    assert last_writers(producer, [[_load(0), _add()]], CONFIG) == [4]  # rewritten later


def _newest_by_byte(producer: list[Store], blocks: list[list[Load]]) -> list[int]:
    """`last_writers` byte by byte: the reference the segment map must equal."""
    last: dict[int, int] = {}
    for index, store in enumerate(producer):
        for row in range(store.m):
            for byte in range(store.ext + 4 * row, store.ext + 4 * row + 4):
                last[byte] = index
    return [max((last.get(byte, -1) for load in block for row in range(load.count)
                 for byte in range(load.ext + 4 * row, load.ext + 4 * row + 4)), default=-1)
            for block in blocks]  # fmt: skip


def test_the_segment_map_finds_what_a_map_of_every_byte_finds():
    rng = np.random.default_rng(5)
    producer = [_store(int(rng.integers(0, 60)) * 2, rows=int(rng.integers(1, 4)))
                for _ in range(40)]  # (overlapping, unaligned rewrites)
    blocks = [[_load(int(rng.integers(0, 70)) * 2, rows=int(rng.integers(1, 3)))
               for _ in range(int(rng.integers(1, 3)))] for _ in range(60)]
    expected = _newest_by_byte(producer, blocks)
    assert WriterMap(producer, CONFIG).newest(blocks) == expected
    assert -1 in expected and max(expected) == 39  # (both cases occur)


def test_blocks_go_after_their_writer_and_lag_stores_in_their_own_order():
    producer = [_store(0), Compute(in_row=0, m=1, acc_row=0), _store(8),
                Compute(in_row=0, m=1, acc_row=0), _store(16)]  # fmt: skip
    first, second = [_load(0), _add()], [_load(8), _add()]
    merged = interleave(producer, [first, second], [0, 0], lag=1, spacing=0)
    assert merged == [*producer[:3], *first, *second, *producer[3:]]
    merged = interleave(producer, [first, second], [0, 2], lag=0, spacing=0)
    assert merged == [producer[0], *first, *producer[1:3], *second, *producer[3:]]


def test_spacing_spreads_the_blocks_and_the_rest_follow_the_producer():
    producer = [Compute(in_row=0, m=1, acc_row=0)] * 6
    blocks = [[_load(8 * i), _add()] for i in range(3)]
    merged = interleave(producer, blocks, [-1, -1, -1], lag=0, spacing=2)
    kinds = [type(i).__name__[0] for i in merged]
    assert "".join(kinds) == "LACCLACCLACC"
    merged = interleave(producer, blocks, [5, 5, 5], lag=0)
    assert merged == [*producer, *blocks[0], *blocks[1], *blocks[2]]


def _placed_one_by_one(producer: list, blocks: list, writers: list[int], lag: int,
                       spacing: int) -> list:
    """The placement rule of `interleave`, walked instruction by instruction (the former
    implementation, kept as the specification)."""
    stores = [i for i, instr in enumerate(producer) if isinstance(instr, Store)]
    after, floor = [], -1 - spacing
    for writer in writers:
        position = sum(1 for s in stores if s <= writer) + lag - 1
        spot = writer if position < 0 else (stores[position] if position < len(stores)
                                            else len(producer) - 1)  # fmt: skip
        floor = max(floor + spacing, spot, writer)
        after.append(floor)
    merged, block = [], 0
    for index in range(-1, len(producer)):
        if index >= 0:
            merged.append(producer[index])
        while block < len(blocks) and after[block] == index:
            merged += blocks[block]
            block += 1
    for rest in blocks[block:]:
        merged += rest
    return merged


def test_placement_matches_the_rule_walked_one_instruction_at_a_time():
    rng = np.random.default_rng(7)
    compute = Compute(in_row=0, m=1, acc_row=0)
    for _ in range(200):
        size = int(rng.integers(0, 12))
        producer = [_store(8 * i) if rng.random() < 0.4 else compute for i in range(size)]
        blocks = [[_load(8 * b), _add()] for b in range(int(rng.integers(0, 6)))]
        writers = sorted(int(w) for w in rng.integers(-1, max(size, 1), len(blocks)))
        if rng.random() < 0.3:
            writers = writers[::-1]  # (not in order: the blocks after a step back follow)
        lag, spacing = int(rng.integers(0, 3)), int(rng.integers(0, 4))
        expected = _placed_one_by_one(producer, blocks, writers, lag, spacing)
        assert interleave(producer, blocks, writers, lag, spacing) == expected
