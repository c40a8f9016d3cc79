"""The harness's files: the command encoding and the report parser."""

import pytest

from systolic.errors import SimulationError
from systolic.sim.verilator.process import encode_commands, parse_report


def test_commands_are_flag_and_little_endian_words() -> None:
    data = encode_commands([(0x1_2345_6789, False), (5, True)], 40)
    assert data == (
        b"\0\0\0\0" + bytes.fromhex("8967452301000000")
        + b"\1\0\0\0" + bytes.fromhex("0500000000000000")
    )


def test_too_wide_command_is_refused() -> None:
    with pytest.raises(SimulationError, match=r"^command 0x100 does not fit the 8-bit command "
                                              r"port$"):
        encode_commands([(256, False)], 8)


def test_report_is_parsed() -> None:
    report = (
        "status watchdog\ncycle 51\nlast_issue 9 47\naccepted 10\n"
        "port cycles 00000033 00000000\nport wide ffffffff 00000001\n"
        "time 0 1 2 5\ntime 1 -1 -1 -1\n"
    )
    result = parse_report(report, bytearray(b"m"))
    assert (result.status, result.cycle, result.last_issue, result.last_issue_cycle,
            result.accepted, result.message) == ("watchdog", 51, 9, 47, 10, "")
    assert result.ports == {"cycles": 51, "wide": 0x1_FFFF_FFFF}
    assert result.times == ((1, 2, 5), (-1, -1, -1))
    assert result.memory == bytearray(b"m")


def test_incomplete_report_is_an_error() -> None:
    with pytest.raises(SimulationError, match=r"^the Verilator harness wrote an incomplete "
                                              r"report$"):
        parse_report("status done\n", bytearray())
