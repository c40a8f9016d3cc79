"""`ExternalMemory`: read latency, strobed writes, bounds."""

import pytest

from systolic.errors import SimulationError
from systolic.sim.rtl.external_memory import ExternalMemory


def test_reads_arrive_after_the_latency_in_order() -> None:
    memory = ExternalMemory(bytearray(range(32)), bus_bytes=4, latency=3)
    memory.request(10, 4)
    memory.request(11, 28)
    assert [memory.response(c) for c in range(10, 13)] == [None, None, None]
    assert memory.response(13) == int.from_bytes(bytes([4, 5, 6, 7]), "little")
    assert memory.response(14) == int.from_bytes(bytes([28, 29, 30, 31]), "little")
    assert memory.in_flight == 0


def test_latency_zero_and_reads_past_the_end() -> None:
    memory = ExternalMemory(bytearray([1, 2, 3]), bus_bytes=4, latency=0)
    memory.request(0, 0)
    assert memory.response(0) == 0x030201


def test_strobed_writes_and_errors() -> None:
    memory = ExternalMemory(bytearray(8), bus_bytes=4, latency=1)
    memory.write_beat(4, 0x44332211, 0b1010)
    assert memory.image == bytearray([0, 0, 0, 0, 0, 0x22, 0, 0x44])
    with pytest.raises(SimulationError, match=r"^a write beat at external address 2 is not"):
        memory.write_beat(2, 0, 1)
    with pytest.raises(SimulationError, match=r"^a write to external byte 9 lies beyond"):
        memory.write_beat(8, 0, 0b0010)
    memory.write_beat(8, 0, 0)  # no byte enabled: nothing written, no error
