"""The window walk of POOL: which tile position the STORE unit reads in each cycle."""

from typing import NamedTuple

from amaranth.hdl import Module, Mux, Signal, Value, signed

__all__ = ["WindowWalk", "emit_window_walk"]


class WindowWalk(NamedTuple):
    """The current tile position (`y`, `x`) and whether it opens or closes its window."""

    y: Value
    x: Value
    first: Value
    last: Value


def _clip_low(value: Value) -> Value:
    return Mux(value < 0, 0, value)


def emit_window_walk(m: Module, pool, start: Value, start_pad_top: Value,
                     start_pad_left: Value, step: Value) -> WindowWalk:
    """Add to `m` the counters that walk POOL's windows, one tile position per `step`.

    Output pixels go in row-major order (oy, ox); each window's positions in row-major order
    from `(max(y0, 0), max(x0, 0))` to `(min(y0 + kh, h) - 1, min(x0 + kw, w) - 1)` with
    `y0 = oy·sh − pad_top`, `x0 = ox·sw − pad_left`: positions outside the tile are skipped,
    so a window costs exactly its element count in steps and windows follow back to back.
    `pool` maps field names (h, w, kh, kw, sh, sw, pad_left, ow) to the held instruction's
    values; `start` (with `start_pad_top`/`start_pad_left` of the incoming instruction) puts
    the walk on the first position of the first window in the next cycle.
    """
    ox = Signal(16)
    y0 = Signal(signed(20))
    x0 = Signal(signed(20))
    y = Signal(16)
    x = Signal(16)
    ys, xs = _clip_low(y0), _clip_low(x0)
    ye = Mux(y0 + pool["kh"] > pool["h"], pool["h"], y0 + pool["kh"])
    xe = Mux(x0 + pool["kw"] > pool["w"], pool["w"], x0 + pool["kw"])
    x_last, y_last = x + 1 == xe, y + 1 == ye
    with m.If(start):
        m.d.sync += [ox.eq(0), y0.eq(-start_pad_top), x0.eq(-start_pad_left),
                     y.eq(_clip_low(-start_pad_top)), x.eq(_clip_low(-start_pad_left))]
    with m.Elif(step):
        with m.If(~x_last):
            m.d.sync += x.eq(x + 1)
        with m.Elif(~y_last):
            m.d.sync += [y.eq(y + 1), x.eq(xs)]
        with m.Else():
            same_row = ox + 1 < pool["ow"]
            next_y0 = Mux(same_row, y0, y0 + pool["sh"])
            next_x0 = Mux(same_row, x0 + pool["sw"], -pool["pad_left"])
            m.d.sync += [ox.eq(Mux(same_row, ox + 1, 0)), y0.eq(next_y0), x0.eq(next_x0),
                         y.eq(_clip_low(next_y0)), x.eq(_clip_low(next_x0))]
    return WindowWalk(y, x, (y == ys) & (x == xs), x_last & y_last)
