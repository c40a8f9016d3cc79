"""`ExternalMemory`: the fixed-latency external memory of docs/isa.md, for testbenches.

A read request for an aligned beat taken in cycle t is answered in cycle t + `latency`
(`ArrayConfig.mem_latency`), requests may come every cycle and responses are never
back-pressured; writes are aligned beats with byte strobes, always accepted. The image is a
`bytearray` from address 0: bytes read beyond its end are zero, a write beyond it is an error
(the program writes outside the memory it was given).
"""

from collections import deque

from systolic.errors import SimulationError

__all__ = ["ExternalMemory"]


class ExternalMemory:
    """External memory with a read pipeline of `latency` cycles and strobed writes."""

    def __init__(self, image: bytearray, *, bus_bytes: int, latency: int) -> None:
        if latency < 0:
            raise ValueError(f"latency must be at least 0, not {latency}")
        self.image = image
        self.bus_bytes = bus_bytes
        self.latency = latency
        self.reads = 0
        self.writes = 0
        self._pending: deque[tuple[int, int]] = deque()  # (due cycle, data)

    def read_beat(self, address: int) -> int:
        """Return the aligned beat at `address` as an integer (little-endian, zeros past the end)."""
        self._check_aligned("read", address)
        chunk = bytes(self.image[address:address + self.bus_bytes])
        return int.from_bytes(chunk, "little")

    def request(self, cycle: int, address: int) -> None:
        """Take a read request in `cycle`; its data is due in `cycle + latency`."""
        self.reads += 1
        self._pending.append((cycle + self.latency, self.read_beat(address)))

    def response(self, cycle: int) -> int | None:
        """Return the data due in `cycle` (and retire it), or None when nothing is due."""
        if self._pending and self._pending[0][0] == cycle:
            return self._pending.popleft()[1]
        return None

    @property
    def in_flight(self) -> int:
        """Read requests taken and not yet answered."""
        return len(self._pending)

    def write_beat(self, address: int, data: int, strobe: int) -> None:
        """Write the bytes of the aligned beat `data` at `address` whose strobe bit is set."""
        self._check_aligned("write", address)
        self.writes += 1
        end = address + self.bus_bytes
        if strobe and end > len(self.image):
            last = address + strobe.bit_length() - 1
            if last >= len(self.image):
                raise SimulationError(
                    f"a write to external byte {last} lies beyond the {len(self.image)}-byte "
                    f"memory image; pass a larger image"
                )
        for lane in range(self.bus_bytes):
            if strobe >> lane & 1:
                self.image[address + lane] = data >> (8 * lane) & 0xFF

    def _check_aligned(self, what: str, address: int) -> None:
        if address % self.bus_bytes:
            raise SimulationError(
                f"a {what} beat at external address {address} is not aligned to the "
                f"{self.bus_bytes}-byte bus"
            )
