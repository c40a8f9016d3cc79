"""MelWeightMatrix: the triangular filters that map a spectrogram's bins to mel bands."""

from collections.abc import Sequence

import numpy as np

from systolic.errors import UnsupportedError
from systolic.ir import Attrs, DataType
from systolic.reference.ops._shared import FOLD_LIMIT, int_attr, known_ints
from systolic.reference.ops.base import Op, TensorInfo


def mel_edges(bands: int, dft_length: int, rate: float, low: float, high: float) -> np.ndarray:
    """Return the bands + 2 filter edges as spectrogram bin indices: mel points evenly
    spaced by (high_mel - low_mel) / (bands + 2) from low_mel, mapped back to hertz and to
    bins as floor((dft_length + 1) * hz / rate), as onnxruntime computes them."""
    low_mel = 2595 * np.log1p(low / 700) / np.log(10)
    high_mel = 2595 * np.log1p(high / 700) / np.log(10)
    mel = np.arange(bands + 2) * ((high_mel - low_mel) / (bands + 2)) + low_mel
    hertz = 700 * np.expm1(mel / 2595 * np.log(10))
    return np.asarray(((dft_length + 1) * hertz) // rate).astype(np.int64)


def mel_matrix(bands: int, dft_length: int, edges: np.ndarray) -> np.ndarray:
    """Return the (dft_length // 2 + 1, bands) float64 matrix of triangles between `edges`:
    rising from edge i to 1 at edge i + 1, falling to 0 at edge i + 2."""
    out = np.zeros((dft_length // 2 + 1, bands))
    for band in range(bands):
        left, center, right = (int(e) for e in edges[band:band + 3])
        if center == left:
            out[center, band] = 1
        else:
            rising = np.arange(left, center + 1)
            out[rising, band] = (rising - left) / (center - left)
        if right > center:
            falling = np.arange(center, right)
            out[falling, band] = (right - falling) / (right - center)
    return out


class MelWeightMatrix(Op):
    """MelWeightMatrix-17: inputs num_mel_bins, dft_length, sample_rate (scalar integers),
    lower_edge_hertz, upper_edge_hertz (scalar floats), all known before running (they
    set the output, a constant); output (dft_length // 2 + 1, num_mel_bins) in
    `output_datatype` (a TensorProto type number, default float)."""

    op_type = "MelWeightMatrix"
    since_versions = (17,)

    def __init__(self, attrs: Attrs, version: int, node_label: str) -> None:
        super().__init__(attrs, version, node_label)
        code = int_attr(self, "output_datatype", int(DataType.FLOAT))
        try:
            self.dtype = DataType(code)
        except ValueError:
            raise self.error(f"output_datatype {code} is not an element type") from None
        if not self.dtype.has_numpy or self.dtype in (DataType.STRING, DataType.BOOL):
            raise UnsupportedError(f"node {node_label!r} (ai.onnx.MelWeightMatrix:{version}): "
                                   f"output_datatype {self.dtype.name} is not supported")

    def _matrix(self, values: Sequence[np.ndarray]) -> np.ndarray:
        bands, length, rate = (int(np.asarray(v).reshape(-1)[0]) for v in values[:3])
        low, high = (float(np.asarray(v).reshape(-1)[0]) for v in values[3:])
        if bands < 1 or length < 1 or rate < 1 or not 0 <= low < high:
            raise self.error(f"num_mel_bins {bands}, dft_length {length}, sample_rate {rate} "
                             f"must be positive and 0 <= lower {low} < upper {high}")
        edges = mel_edges(bands, length, rate, low, high)
        if edges.max() > length // 2:
            raise self.error(f"upper_edge_hertz {high} is above the Nyquist frequency")
        return mel_matrix(bands, length, edges).astype(self.dtype.numpy)

    def infer(self, inputs: Sequence[TensorInfo | None]) -> list[TensorInfo]:
        bands, length = (known_ints(self, info, what) for info, what in
                         zip(inputs[:2], ("num_mel_bins", "dft_length"), strict=True))
        assert bands is not None and length is not None
        shape = (length[0] // 2 + 1, bands[0])
        known = all(info is not None and info.value is not None for info in inputs)
        small = shape[0] * shape[1] <= FOLD_LIMIT
        values = [info.value for info in inputs if info is not None and info.value is not None]
        value = self._matrix(values) if known and small else None
        return [TensorInfo(self.dtype, shape, value)]

    def run(self, inputs: Sequence[np.ndarray | None]) -> list[np.ndarray]:
        return [self._matrix([x for x in inputs if x is not None])]


OPS = (MelWeightMatrix,)
