"""The external layout of params rows: what a LOAD into `params` reads.

One params row is 9 * cols contiguous bytes: `cols` biases (int32, little-endian), then `cols`
multipliers (int32, little-endian), then `cols` shifts (int8). Lane j of the row holds
bias[j], multiplier[j] and shift[j] (docs/isa.md, "Memories").
"""

import numpy as np

from systolic.errors import SystolicError

__all__ = ["ParamsError", "pack_params", "unpack_params"]

_INT32_MIN, _INT32_MAX = -(2**31), 2**31 - 1


class ParamsError(SystolicError, ValueError):
    """Per-lane output-stage parameters that do not fit their fields."""


def pack_params(bias: np.ndarray, multiplier: np.ndarray, shift: np.ndarray) -> bytes:
    """Return the external bytes of params rows holding `bias`, `multiplier` and `shift`.

    Each argument has shape (rows, cols) (or (cols,) for one row); values must fit int32,
    int32 and [-31, 31]. Rows follow each other with no gap (a row stride of 9 * cols).
    """
    arrays = [np.atleast_2d(np.asarray(a)) for a in (bias, multiplier, shift)]
    if not arrays[0].shape == arrays[1].shape == arrays[2].shape:
        raise ParamsError(
            f"bias, multiplier and shift must have one shape, not "
            f"{arrays[0].shape}, {arrays[1].shape} and {arrays[2].shape}"
        )
    for name, array, low, high in (
        ("bias", arrays[0], _INT32_MIN, _INT32_MAX),
        ("multiplier", arrays[1], _INT32_MIN, _INT32_MAX),
        ("shift", arrays[2], -31, 31),
    ):
        if array.size and (array.min() < low or array.max() > high):
            raise ParamsError(f"params {name} must lie in [{low}, {high}]")
    rows = [
        arrays[0][r].astype("<i4").tobytes()
        + arrays[1][r].astype("<i4").tobytes()
        + arrays[2][r].astype("i1").tobytes()
        for r in range(arrays[0].shape[0])
    ]
    return b"".join(rows)


def unpack_params(data: bytes, cols: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Return (bias, multiplier, shift) int64 arrays of shape (rows, cols) from packed rows."""
    row_bytes = 9 * cols
    if len(data) % row_bytes:
        raise ParamsError(f"params data of {len(data)} bytes is not whole rows of {row_bytes}")
    raw = np.frombuffer(data, dtype=np.uint8).reshape(-1, row_bytes)
    bias = raw[:, : 4 * cols].copy().view("<i4").astype(np.int64)
    multiplier = raw[:, 4 * cols : 8 * cols].copy().view("<i4").astype(np.int64)
    shift = raw[:, 8 * cols :].copy().view("i1").astype(np.int64)
    return bias, multiplier, shift
