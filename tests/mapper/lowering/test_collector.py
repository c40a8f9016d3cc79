"""The collector is off inside `collector_paused`, back as it was after it (also after an
error, and when the block is nested or the collector was already off)."""

import gc

import pytest

from systolic.mapper.lowering.collector import collector_paused


@pytest.fixture
def collector_on():  # type: ignore[no-untyped-def]
    was = gc.isenabled()
    gc.enable()
    yield
    if not was:
        gc.disable()


def test_paused_inside_and_resumed_after(collector_on: None) -> None:
    with collector_paused():
        assert not gc.isenabled()
        with collector_paused():
            assert not gc.isenabled()
        assert not gc.isenabled()  # (the inner block leaves the outer pause alone)
    assert gc.isenabled()


def test_resumed_after_an_error(collector_on: None) -> None:
    with pytest.raises(KeyError), collector_paused():
        raise KeyError("x")
    assert gc.isenabled()


def test_left_off_when_it_was_off(collector_on: None) -> None:
    gc.disable()
    with collector_paused():
        pass
    assert not gc.isenabled()
    gc.enable()


def test_no_automatic_collection_inside(collector_on: None) -> None:
    collections = []

    def callback(phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            collections.append(info["generation"])

    gc.callbacks.append(callback)
    try:
        with collector_paused():
            before = len(collections)
            cycles = []
            for _ in range(20_000):  # (far beyond the young generation's threshold)
                node: list[object] = []
                node.append(node)
                cycles.append(node)
            inside = len(collections) - before
        del cycles
        gc.collect()
    finally:
        gc.callbacks.remove(callback)
    assert inside == 0
    assert collections  # (the explicit collection after the block ran)
