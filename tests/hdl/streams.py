"""Async testbench helpers for `amaranth.lib.stream` interfaces, with cycle stamps.

Payloads are handled as raw integers (the bits of the payload layout): build them with
`pack` and read them with `unpack_array`/`field`, so that a testbench sets each bus once per
beat (every `ctx.set` re-settles the design). Cycle stamps count clock edges from the moment the
helper is called: start every helper of a testbench at time zero and their stamps agree.
"""

import random
from collections.abc import Sequence
from typing import Any

from amaranth.lib import data

__all__ = ["field", "pack", "stream_get", "stream_put", "unpack_array"]

#: A helper that has not finished after this many cycles has hung.
TIMEOUT_CYCLES = 100_000


def pack(layout: data.Layout, value: Any) -> int:
    """Return the bits of `value` (a dict/list in the shape of `layout`) as an integer."""
    return int(layout.const(value).as_bits())


def field(layout: data.StructLayout, bits: int, name: str) -> int:
    """Return the raw (unsigned) bits of field `name` of a packed struct."""
    member = layout[name]
    return (bits >> member.offset) & ((1 << member.width) - 1)


def unpack_array(bits: int, width: int, count: int) -> list[int]:
    """Return `count` signed `width`-bit elements packed from bit 0 of `bits`."""
    mask, sign = (1 << width) - 1, 1 << (width - 1)
    out = []
    for index in range(count):
        element = (bits >> (index * width)) & mask
        out.append(element - (1 << width) if element & sign else element)
    return out


async def stream_put(ctx: Any, stream: Any, beats: Sequence[int], *,
                     rng: random.Random | None = None, valid_probability: float = 1.0) -> list[int]:
    """Send `beats` (raw payload bits) in order; return the cycle in which each was taken.

    With `rng`, `valid` is offered in each cycle with `valid_probability` (a beat once offered
    stays offered until taken, as the stream rules require).
    """
    taken: list[int] = []
    cycle, index, offered = 0, 0, False
    payload = stream.payload.as_value()
    while index < len(beats):
        if not offered:
            offered = rng is None or rng.random() < valid_probability
            ctx.set(stream.valid, offered)
            if offered:
                ctx.set(payload, beats[index])
        _, _, ready = await ctx.tick().sample(stream.ready)
        if offered and ready:
            taken.append(cycle)
            index += 1
            offered = False
            if index == len(beats):
                ctx.set(stream.valid, 0)
        cycle += 1
        if cycle > TIMEOUT_CYCLES:
            raise AssertionError(f"stream_put hung after {index} of {len(beats)} beats")
    return taken


async def stream_get(ctx: Any, stream: Any, count: int, *, rng: random.Random | None = None,
                     ready_probability: float = 1.0) -> tuple[list[int], list[int]]:
    """Receive `count` beats; return their raw payload bits and the cycle each was taken in.

    With `rng`, `ready` is asserted in each cycle with `ready_probability`. Checks the stream
    rule that a beat, once valid, stays valid and unchanged until it is taken.
    """
    beats: list[int] = []
    cycles: list[int] = []
    cycle, ready, offered = 0, None, None
    payload = stream.payload.as_value()
    while len(beats) < count:
        want = rng is None or rng.random() < ready_probability
        if want != ready:
            ready = want
            ctx.set(stream.ready, ready)
        _, _, valid, bits = await ctx.tick().sample(stream.valid, payload)
        if offered is not None:
            assert valid and bits == offered, f"cycle {cycle}: an untaken beat changed"
        offered = bits if valid and not ready else None
        if valid and ready:
            beats.append(bits)
            cycles.append(cycle)
        cycle += 1
        if cycle > TIMEOUT_CYCLES:
            raise AssertionError(f"stream_get hung after {len(beats)} of {count} beats")
    ctx.set(stream.ready, 0)
    return beats, cycles
