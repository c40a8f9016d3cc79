"""Fourier transforms of audio front ends: DFT and STFT. Complex values travel as a last
axis of 2 (real, imaginary); a real signal has a last axis of 1."""

from collections.abc import Sequence
from typing import TypeVar

import numpy as np

from systolic.ir import Attrs
from systolic.reference.ops._shared import FLOAT_TYPES, check_type, fold, int_attr, known_ints
from systolic.reference.ops.base import Op, TensorInfo

T = TypeVar("T")


def as_complex(op: Op, x: np.ndarray) -> np.ndarray:
    """Return `x` (..., 1 or 2) as a complex128 array without its last axis."""
    if x.shape[-1] == 1:
        return x[..., 0].astype(np.complex128)
    return x[..., 0].astype(np.float64) + 1j * x[..., 1].astype(np.float64)


def as_pairs(z: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """Return complex `z` as (..., 2) real and imaginary parts in `dtype`."""
    return np.stack([z.real, z.imag], axis=-1).astype(dtype)


def _padded(inputs: Sequence[T | None], count: int) -> list[T | None]:
    """Return `inputs` with None for the omitted trailing optional inputs, `count` long."""
    return [*inputs, *[None] * (count - len(inputs))]


def _one(op: Op, info: TensorInfo | None, what: str) -> int | None:
    """Return the one integer of a scalar input known before running, None when omitted."""
    found = known_ints(op, info, what)
    if found is not None and len(found) != 1:
        raise op.error(f"{what} must be one integer, got {list(found)}")
    return None if found is None else found[0]


class DFT(Op):
    """DFT-17 (`axis` an attribute, default 1), -20 (`axis` an optional scalar input,
    default -2). The transform runs along `axis` (not the last, complex axis) over
    dft_length points (an optional scalar input known before running: the axis is
    zero-padded or cut to it; default its size). `inverse`=1 gives the inverse transform
    scaled by 1/n; `onesided`=1 keeps the first n//2 + 1 bins of a forward transform, and
    makes an inverse one read those bins (n default 2·(bins - 1)) and give the real signal
    of n points (last axis 1), as numpy's irfft. Computed in complex128, rounded once."""

    op_type = "DFT"
    since_versions = (17, 20)

    def __init__(self, attrs: Attrs, version: int, node_label: str) -> None:
        super().__init__(attrs, version, node_label)
        self.inverse = int_attr(self, "inverse", 0) != 0
        self.onesided = int_attr(self, "onesided", 0) != 0
        self.axis_attr = int_attr(self, "axis", 1) if version < 20 else None

    def _geometry(self, shape: tuple[int, ...], length: int | None, axis: int | None
                  ) -> tuple[int, int, tuple[int, ...]]:
        """Return (axis, n, output shape) for an input of `shape`."""
        rank = len(shape)
        if rank < 2 or shape[-1] not in (1, 2):
            raise self.error(f"input {list(shape)} must end in an axis of 1 (real) or 2 (complex)")
        axis = self.axis_attr if self.axis_attr is not None else (-2 if axis is None else axis)
        if not (-rank <= axis <= -2 or 0 <= axis <= rank - 2):
            raise self.error(f"axis {axis} must be in [-{rank}, -2] or [0, {rank - 2}]")
        axis %= rank
        half_input = self.inverse and self.onesided
        n = length if length is not None else 2 * (shape[axis] - 1) if half_input else (
            shape[axis])
        if n < 1:
            raise self.error(f"dft_length must be positive, got {n}")
        bins = n // 2 + 1 if self.onesided and not self.inverse else n
        return axis, n, (*shape[:axis], bins, *shape[axis + 1:-1], 1 if half_input else 2)

    def infer(self, inputs: Sequence[TensorInfo | None]) -> list[TensorInfo]:
        x, *rest = _padded(inputs, 3)
        assert x is not None
        check_type(self, x, FLOAT_TYPES, "input")
        length = _one(self, rest[0], "dft_length")
        axis = _one(self, rest[1], "axis") if self.version >= 20 else None
        _, _, shape = self._geometry(x.shape, length, axis)
        return fold(self, inputs, [TensorInfo(x.dtype, shape)])

    def run(self, inputs: Sequence[np.ndarray | None]) -> list[np.ndarray]:
        x, *rest = _padded(inputs, 3)
        assert x is not None
        length, axis = (None if v is None else int(np.asarray(v).reshape(-1)[0])
                        for v in rest[:2])
        axis, n, shape = self._geometry(x.shape, length, axis)
        signal = as_complex(self, x)
        if self.inverse and self.onesided:
            return [np.fft.irfft(signal, n=n, axis=axis)[..., None].astype(x.dtype)]
        z = np.fft.ifft(signal, n=n, axis=axis) if self.inverse else np.fft.fft(
            signal, n=n, axis=axis)
        return [as_pairs(np.take(z, range(shape[axis]), axis=axis), x.dtype)]


class STFT(Op):
    """STFT-17: signal (B, L, 1 or 2); frames of frame_length samples (an optional scalar
    input, default the window's length, else L) every frame_step (a scalar input) samples,
    1 + (L - frame_length) // frame_step of them, each multiplied by `window` (optional,
    default ones) and transformed. Output (B, frames, bins, 2) with bins = frame_length // 2
    + 1 when `onesided` (default 1), else frame_length. frame_step, frame_length and the
    window's length must be known before running; computed in complex128, rounded once."""

    op_type = "STFT"
    since_versions = (17,)

    def __init__(self, attrs: Attrs, version: int, node_label: str) -> None:
        super().__init__(attrs, version, node_label)
        self.onesided = int_attr(self, "onesided", 1) != 0

    def _geometry(self, shape: tuple[int, ...], step: int, window: tuple[int, ...] | None,
                  length: int | None) -> tuple[int, int]:
        """Return (frame length, frame count), or raise ModelError."""
        if len(shape) != 3 or shape[2] not in (1, 2):
            raise self.error(f"signal {list(shape)} must be (batch, length, 1 or 2)")
        if window is not None and (len(window) != 1 or length not in (None, window[0])):
            raise self.error(f"window {list(window)} must be 1-D of frame_length {length}")
        frame = length if length is not None else window[0] if window else shape[1]
        if step < 1 or not 1 <= frame <= shape[1]:
            raise self.error(f"frame_step {step} must be positive and frame_length {frame} "
                             f"between 1 and the signal's length {shape[1]}")
        return frame, 1 + (shape[1] - frame) // step

    def _bins(self, frame: int) -> int:
        return frame // 2 + 1 if self.onesided else frame

    def infer(self, inputs: Sequence[TensorInfo | None]) -> list[TensorInfo]:
        x, step, window, length = _padded(inputs, 4)
        assert x is not None
        check_type(self, x, FLOAT_TYPES, "signal")
        frame, frames = self._geometry(x.shape, _one(self, step, "frame_step") or 0,
                                       None if window is None else window.shape,
                                       _one(self, length, "frame_length"))
        return fold(self, inputs, [TensorInfo(x.dtype, (x.shape[0], frames,
                                                        self._bins(frame), 2))])

    def run(self, inputs: Sequence[np.ndarray | None]) -> list[np.ndarray]:
        x, step_value, window, length_value = _padded(inputs, 4)
        assert x is not None and step_value is not None
        step = int(np.asarray(step_value).reshape(-1)[0])
        length = None if length_value is None else int(np.asarray(length_value).reshape(-1)[0])
        frame, frames = self._geometry(x.shape, step, None if window is None else window.shape,
                                       length)
        starts = np.arange(frames)[:, None] * step + np.arange(frame)[None, :]
        weights = np.ones(frame) if window is None else window.astype(np.float64)
        spectrum = np.fft.fft(as_complex(self, x)[:, starts] * weights, axis=-1)
        return [as_pairs(spectrum[..., :self._bins(frame)], x.dtype)]


OPS = (DFT, STFT)
