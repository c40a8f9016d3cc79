"""The progress bar: silent unless on a terminal and past the delay; clears its line."""

import io

from systolic.simulation.progress import ProgressBar


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
    assert stream.getvalue() == "\rrtl [#######.......................] 50/200 (25%, 4 s)"
    clock.now += 0.05
    bar.update(100)  # too soon to redraw
    assert stream.getvalue().count("\r") == 1
    clock.now += 1
    bar.update(400)  # clamped to the total
    assert stream.getvalue().endswith("200/200 (100%, 5 s)")
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
    assert stream.getvalue().endswith("20/40 (50%, 5 s)")
