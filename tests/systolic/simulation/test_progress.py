"""The progress bar: silent unless on a terminal and past the delay; rate and time left;
clears its line."""

import io

import pytest

from systolic.simulation.progress import ProgressBar, _duration, _rate


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


class _Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_draws_after_the_delay_and_clears() -> None:
    stream, clock = _Terminal(), _Clock()
    bar = ProgressBar(200, "rtl", stream=stream, delay=3.0, clock=clock)
    bar.update(50)
    assert stream.getvalue() == ""  # within the delay
    clock.now += 4
    bar.update(50)
    assert stream.getvalue() == (
        "\rrtl [#######.......................] 50/200 (25%, 4 s, 12.5/s, 12 s left)"
    )
    clock.now += 0.05
    bar.update(100)  # too soon to redraw
    assert stream.getvalue().count("\r") == 1
    clock.now += 1
    bar.update(400)  # clamped to the total
    assert stream.getvalue().endswith("200/200 (100%, 5 s, 39.6/s, 0 s left)")
    bar.close()
    assert stream.getvalue().endswith("\r\033[K")


def test_silent_when_not_a_terminal() -> None:
    stream, clock = io.StringIO(), _Clock()
    bar = ProgressBar(10, "rtl", stream=stream, delay=0.0, clock=clock)
    clock.now += 10
    bar.update(5)
    bar.close()
    assert stream.getvalue() == ""


def test_a_computed_total_is_computed_only_when_drawn() -> None:
    calls: list[int] = []

    def total() -> int:
        calls.append(1)
        return 40

    quiet = ProgressBar(total, "rtl", stream=io.StringIO(), delay=0.0, clock=_Clock())
    quiet.update(10)
    assert calls == []  # no terminal: the estimate is never made
    stream, clock = _Terminal(), _Clock()
    bar = ProgressBar(total, "rtl", stream=stream, delay=3.0, clock=clock)
    bar.update(10)
    assert calls == []  # within the delay
    clock.now += 4
    bar.update(10)
    clock.now += 1
    bar.update(20)
    assert calls == [1]  # once
    assert stream.getvalue().endswith("20/40 (50%, 5 s, 4.0/s, 5 s left)")


def test_rate_and_time_left_of_a_long_run() -> None:
    stream, clock = _Terminal(), _Clock()
    bar = ProgressBar(10_000_000, "rtl cycles", stream=stream, delay=3.0, clock=clock)
    clock.now += 4
    bar.update(0)
    assert stream.getvalue().endswith("0/10,000,000 (0%, 4 s, 0.0/s, time left unknown)")
    clock.now += 496  # 500 s in: 2,500 cycles per second, 3,500 s to go
    bar.update(1_250_000)
    assert stream.getvalue().endswith(
        "1,250,000/10,000,000 (12%, 8 min 20 s, 2.5 k/s, 58 min 20 s left)"
    )


@pytest.mark.parametrize(("seconds", "text"), [
    (0.4, "0 s"), (59.4, "59 s"), (60, "1 min 00 s"), (3599, "59 min 59 s"),
    (3600, "1 h 00 min"), (7620, "2 h 07 min"),
])  # fmt: skip
def test_duration(seconds: float, text: str) -> None:
    assert _duration(seconds) == text


@pytest.mark.parametrize(("rate", "text"), [
    (0.25, "0.2/s"), (12.5, "12.5/s"), (999.9, "999.9/s"), (3400, "3.4 k/s"),
    (1_234_567, "1.2 M/s"),
])  # fmt: skip
def test_rate(rate: float, text: str) -> None:
    assert _rate(rate) == text
