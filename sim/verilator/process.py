"""Running a built simulator: files in, one subprocess, files out.

The harness (harness.cpp) reads the commands and the memory image from files and writes the
final memory image and a text report; this module writes and parses those files.
"""

import dataclasses
import os
import subprocess
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path

from systolic.errors import SimulationError

__all__ = ["HarnessResult", "encode_commands", "parse_report", "run_harness"]


@dataclasses.dataclass(frozen=True)
class HarnessResult:
    """What one harness run reports.

    `status` is "done" (the design raised `done`), "watchdog" (HALT was not accepted within
    the watchdog limit), "stalled" (no instruction was accepted, issued or completed for the
    stall limit) or "error" (`message` says why); `cycle` is the cycle the run stopped
    in; `last_issue` the highest command index issued (-1 for none) and `last_issue_cycle` its
    cycle; `accepted` the number of commands taken; `ports` the counter ports by Verilog name,
    as unsigned integers; `times` (accept, issue, complete) per command, -1 where the event did
    not happen.
    """

    memory: bytearray
    status: str
    cycle: int
    last_issue: int
    last_issue_cycle: int
    accepted: int
    message: str
    ports: dict[str, int]
    times: tuple[tuple[int, int, int], ...]


def encode_commands(commands: Sequence[tuple[int, bool]], width: int) -> bytes:
    """Return the harness's command file: per command a flags word (bit 0: HALT) and the
    `width`-bit command integer as little-endian 32-bit words."""
    words = (width + 31) // 32
    out = bytearray()
    for value, is_halt in commands:
        if not 0 <= value < 1 << width:
            raise SimulationError(f"command {value:#x} does not fit the {width}-bit command port")
        out += int(is_halt).to_bytes(4, "little")
        out += value.to_bytes(4 * words, "little")
    return bytes(out)


def parse_report(text: str, memory: bytearray) -> HarnessResult:
    """Return the `HarnessResult` of the harness's report `text` and final `memory`."""
    fields: dict[str, str] = {}
    ports: dict[str, int] = {}
    times: list[tuple[int, int, int]] = []
    for line in text.splitlines():
        key, _, rest = line.partition(" ")
        if key == "port":
            name, *words = rest.split()
            ports[name] = sum(int(w, 16) << (32 * i) for i, w in enumerate(words))
        elif key == "time":
            index, accept, issue, complete = (int(v) for v in rest.split())
            if index != len(times):
                raise SimulationError(f"the Verilator harness reported times out of order: {line}")
            times.append((accept, issue, complete))
        else:
            fields[key] = rest
    try:
        last_issue, last_issue_cycle = (int(v) for v in fields["last_issue"].split())
        return HarnessResult(
            memory=memory, status=fields["status"], cycle=int(fields["cycle"]),
            last_issue=last_issue, last_issue_cycle=last_issue_cycle,
            accepted=int(fields["accepted"]), message=fields.get("message", ""),
            ports=ports, times=tuple(times),
        )
    except (KeyError, ValueError):
        raise SimulationError("the Verilator harness wrote an incomplete report") from None


def run_harness(executable: Path, commands: bytes, memory: bytes | bytearray, *,
                watchdog: int, stall_limit: int = 0,
                progress: Callable[[int], None] | None = None) -> HarnessResult:
    """Run the simulator `executable` on encoded `commands` and `memory` for at most
    `watchdog` cycles, and at most `stall_limit` cycles without an instruction accepted,
    issued or completed (0: no such limit); return its report (the memory image after the run
    included).

    `progress(cycle)` is called every 65536 simulated cycles while the simulator runs.
    """
    with tempfile.TemporaryDirectory(prefix="systolic-verilator-") as folder:
        work = Path(folder)
        paths = {name: work / name for name in ("commands.bin", "memory.bin", "out.bin",
                                                 "report.txt", "stderr.txt")}
        paths["commands.bin"].write_bytes(commands)
        with open(paths["memory.bin"], "wb") as image:
            image.write(memory)  # no copy of a large image
        arguments = [str(executable), *(str(paths[n]) for n in ("commands.bin", "memory.bin",
                                                                "out.bin", "report.txt")),
                     str(watchdog), str(stall_limit)]
        with (open(paths["stderr.txt"], "wb") as errors,
              subprocess.Popen(arguments, stdout=subprocess.PIPE, stderr=errors) as process):
            assert process.stdout is not None
            for line in process.stdout:
                key, _, value = line.decode("ascii", "replace").partition(" ")
                if key == "cycle" and progress is not None:
                    progress(int(value))
            status = process.wait()
        if status != 0:
            detail = paths["stderr.txt"].read_text("utf-8", "replace").strip().splitlines()
            raise SimulationError(
                f"the Verilator simulator {executable} failed with exit status "
                f"{status}: {detail[-1] if detail else 'no message'}"
            )
        with open(paths["out.bin"], "rb") as image:
            result_memory = bytearray(os.fstat(image.fileno()).st_size)
            image.readinto(result_memory)  # straight into the result, no intermediate copy
        return parse_report(paths["report.txt"].read_text(encoding="utf-8"), result_memory)
