"""Constants of a lowered layer: folded bias, the accumulator bound, and their memory images.

- The activation zero point is folded into the bias (docs/numeric-contract.md):
  `Σ (x − zp)·w + b = Σ x·w + (b − zp·Σ w)`, with x in the int8 domain the array sees.
- The accumulator bound is checked from the actual weights: every partial sum of
  `Σ x·w` over any inputs of `input_width` bits must fit `acc_width` signed bits. For a B
  computed at run time (8-bit, |w| <= 128) the bound is K·2^(input_width−1)·128.
- Weights are laid out for the LOAD patterns of `schedule.py`: column tile t (cols outputs)
  holds K rows of `cols` elements (`operand_bytes` each, zero beyond N), tiles one after the
  other, so row κ of tile t is at `(t·K + κ)·cols·operand_bytes`.
- Params rows: one per column tile (lane j = output column t·cols + j), packed by
  `systolic.isa.params.pack_params`.
"""

import numpy as np

from systolic.config import ArrayConfig
from systolic.errors import ResourceError, UnsupportedError
from systolic.isa.params import pack_params

__all__ = [
    "check_accumulator",
    "check_computed_accumulator",
    "check_weight_width",
    "fold_zero_point",
    "params_image",
    "weight_image",
]

_INT32_MIN, _INT32_MAX = -(2**31), 2**31 - 1


def fold_zero_point(
    weights: np.ndarray, bias: np.ndarray, zero_point: int, label: str
) -> np.ndarray:
    """Return `bias − zero_point · Σ_k weights[k, n]` per column; raise if it leaves int32."""
    folded: np.ndarray = bias.astype(np.int64) - int(zero_point) * weights.sum(
        axis=0, dtype=np.int64
    )
    if folded.size and (folded.min() < _INT32_MIN or folded.max() > _INT32_MAX):
        raise UnsupportedError(
            f"layer {label!r}: the bias with the folded input zero point {zero_point} leaves "
            f"int32 (up to {int(np.abs(folded).max())}); requantize the layer with a smaller "
            f"bias or input zero point"
        )
    return folded


def check_weight_width(weights: np.ndarray, config: ArrayConfig, label: str) -> None:
    """Raise unless every weight fits `config.weight_width` signed bits."""
    low, high = -(1 << (config.weight_width - 1)), (1 << (config.weight_width - 1)) - 1
    if weights.size and (weights.min() < low or weights.max() > high):
        raise UnsupportedError(
            f"layer {label!r}: weights from {int(weights.min())} to {int(weights.max())} do not "
            f"fit weight_width {config.weight_width}; use a wider weight_width"
        )


def check_accumulator(weights: np.ndarray, config: ArrayConfig, label: str) -> None:
    """Raise ResourceError when some partial sum of Σ x·w could overflow the accumulator.

    x ranges over all `input_width`-bit signed values; the largest and the smallest sum per
    column bound every partial sum (each term's extreme has the sign the bound needs): with
    P and N the sums of a column's positive and negative weights, the largest is
    x_high·P + x_low·N and the smallest x_low·P + x_high·N.
    """
    x_low, x_high = -(1 << (config.input_width - 1)), (1 << (config.input_width - 1)) - 1
    if weights.size:
        positive = np.sum(weights, axis=0, dtype=np.int64, where=weights > 0)
        negative = np.sum(weights, axis=0, dtype=np.int64) - positive
    else:
        positive = negative = np.zeros(1, np.int64)
    most, least = x_high * positive + x_low * negative, x_low * positive + x_high * negative
    limit = 1 << (config.acc_width - 1)
    if most.max() > limit - 1 or least.min() < -limit:
        raise ResourceError(
            f"layer {label!r}: sums of {weights.shape[0]} products can reach "
            f"{max(int(most.max()), -int(least.min()))}, beyond the {config.acc_width}-bit "
            f"accumulator; use a wider acc_width"
        )


def check_computed_accumulator(k: int, config: ArrayConfig, label: str) -> None:
    """Raise ResourceError when K products of an `input_width`-bit input and an 8-bit
    computed weight (|w| <= 128) could overflow the accumulator."""
    peak = k * (1 << (config.input_width - 1)) * 128
    if peak > (1 << (config.acc_width - 1)) - 1:
        raise ResourceError(
            f"layer {label!r}: sums of {k} products of computed 8-bit operands can reach "
            f"{peak}, beyond the {config.acc_width}-bit accumulator; use a wider acc_width"
        )


def _tiles(n: int, cols: int) -> int:
    return -(-n // cols)


def weight_image(weights: np.ndarray, config: ArrayConfig) -> bytes:
    """Return the external bytes of `weights` (K x N) in column tiles (module docstring)."""
    k, n = weights.shape
    cols = config.cols
    tiles = _tiles(n, cols)
    padded = np.zeros((k, tiles * cols), dtype={1: "i1", 2: "<i2"}[config.operand_bytes])
    padded[:, :n] = weights  # (each fits: check_weight_width)
    return padded.reshape(k, tiles, cols).transpose(1, 0, 2).tobytes()  # (tiles, K, cols)


def params_image(
    bias: np.ndarray, multiplier: np.ndarray, shift: np.ndarray, config: ArrayConfig
) -> bytes:
    """Return one params row per column tile of `cols` outputs (lanes beyond N are zero)."""
    n = bias.shape[0]
    cols = config.cols
    tiles = _tiles(n, cols)
    rows = []
    for values in (bias, multiplier, shift):
        padded = np.zeros(tiles * cols, dtype=np.int64)
        padded[:n] = values
        rows.append(padded.reshape(tiles, cols))
    return pack_params(rows[0], rows[1], rows[2])
