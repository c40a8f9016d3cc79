# amaranth: UnusedElaboratable=no

"""`VerilatedDesign` on the tiny `CopyEngine`: memory, times and counters equal its exact model."""

import random

import pytest

from .copy_engine import HALT_UNIT, copy_command, expected_run

# (bus bytes, read latency): a 32-bit read port (a scalar in C++) answered in the request's own
# cycle, and a 128-bit one (a VlWide array) answered three cycles later.
SETUPS = [(4, 0), (16, 3)]


def random_copies(rng: random.Random, bus: int, size: int, count: int):
    """Return `count` random (src, dst, strobe, unit) copies inside (src: partly beyond) `size`."""
    copies = []
    for _ in range(count):
        src = rng.randrange(0, size + 2 * bus, bus)
        dst = rng.randrange(0, size, bus)
        copies.append((src, dst, rng.randrange(1 << bus), rng.randrange(3)))
    return copies


def commands(copies):
    return [(copy_command(s, d, m, u), False) for s, d, m, u in copies] + [
        (copy_command(0, 0, 0, HALT_UNIT), True)]


@pytest.mark.parametrize(("bus", "latency"), SETUPS)
def test_copies_match_the_model(copy_design, bus: int, latency: int) -> None:
    design = copy_design(bus, latency)
    rng = random.Random(f"copies-{bus}-{latency}")
    size = 64 * bus
    memory = bytes(rng.randrange(256) for _ in range(size))
    copies = random_copies(rng, bus, size, 40)
    result = design.run(commands(copies), memory, watchdog=10_000)
    expected = expected_run(copies, memory, bus_bytes=bus, mem_latency=latency)
    assert (result.status, result.message) == ("done", "")
    assert result.memory == expected.memory
    assert result.times == expected.times
    assert result.ports == expected.ports
    assert result.accepted == len(copies) + 1
    assert result.last_issue == len(copies) - 1


def test_program_of_only_halt(copy_design) -> None:
    result = copy_design(4, 0).run(commands([]), b"\1\2\3\4", watchdog=100)
    assert result.status == "done"
    assert result.times == ((1, 1, 1),)
    assert result.memory == bytearray(b"\1\2\3\4")
    assert result.ports["cycles"] == 1
    assert result.last_issue == -1


def test_watchdog_stops_a_long_run(copy_design) -> None:
    # Each copy takes latency + 2 = 5 cycles: HALT is accepted in cycle 1 + 5 * 10 = 51.
    design = copy_design(16, 3)
    copies = [(0, 16, 0xFFFF, 1)] * 10
    expected = expected_run(copies, bytes(64), bus_bytes=16, mem_latency=3)
    assert expected.times[-1][0] == 51
    assert design.run(commands(copies), bytes(64), watchdog=52).status == "done"
    stopped = design.run(commands(copies), bytes(64), watchdog=51)
    assert stopped.status == "watchdog"
    assert stopped.cycle == 51
    assert (stopped.last_issue, stopped.last_issue_cycle) == (9, expected.times[9][1])
    assert stopped.accepted == 10
    assert stopped.times[-1] == (-1, -1, -1)


@pytest.mark.parametrize(("copy", "message"), [
    ((0, 64, 1, 0), "write to byte 64 in cycle 2 lies beyond the 64-byte memory image"),
    ((2, 0, 1, 0), "a read beat at external address 2 in cycle 2 is not aligned to the 4-byte bus"),
])
def test_memory_errors_end_the_run(copy_design, copy, message: str) -> None:
    result = copy_design(4, 0).run(commands([copy]), bytes(64), watchdog=100)
    assert (result.status, result.message) == ("error", message)


def test_unstrobed_bytes_beyond_the_image_are_not_written(copy_design) -> None:
    # A 6-byte image; the beat written at 4 covers bytes 4..7, only 4 and 5 are strobed.
    result = copy_design(4, 0).run(commands([(0, 4, 0b0011, 2)]), b"abcdef", watchdog=100)
    assert (result.status, result.message) == ("done", "")
    assert result.memory == bytearray(b"abcdab")


def test_progress_is_reported_every_65536_cycles(copy_design) -> None:
    # No HALT: the run goes on until the watchdog.
    seen: list[int] = []
    result = copy_design(4, 0).run([], bytes(4), watchdog=200_000, progress=seen.append)
    assert result.status == "watchdog"
    assert seen == [65536, 131072, 196608]


@pytest.mark.parametrize(("bus", "latency"), SETUPS)
def test_stall_limit_stops_a_run_without_progress(copy_design, bus: int, latency: int) -> None:
    # Ten copies and no HALT: the last completion is the last event; the run stops
    # `stall_limit` cycles later, long before the watchdog.
    copies = [(0, bus, 1, 1)] * 10
    expected = expected_run(copies, bytes(4 * bus), bus_bytes=bus, mem_latency=latency)
    last_event = max(max(t) for t in expected.times[:10])
    listed = [(copy_command(s, d, m, u), False) for s, d, m, u in copies]
    result = copy_design(bus, latency).run(listed, bytes(4 * bus), watchdog=1 << 40,
                                           stall_limit=100)
    assert result.status == "stalled"
    assert result.cycle == last_event + 100
    assert result.times == tuple(expected.times[:10])
    # With progress the stall limit does not stop the run.
    done = copy_design(bus, latency).run(commands(copies), bytes(4 * bus), watchdog=10_000,
                                         stall_limit=latency + 3)
    assert (done.status, done.times) == ("done", tuple(expected.times))
