"""Where a transposed convolution's taps land: the two Conv forms `conv_transpose` writes.

Per spatial axis (input size H, kernel K, stride s, dilation d, resolved pads p_b and p_e,
output size O), input cell i adds x[i]·W[k] to output cell o = i·s + k·d − p_b.

- Zero insertion: x[i] at position P_b + i·s of a zero vector of length O + d(K−1),
  P_b = d(K−1) − p_b, then a stride-1 Conv of dilation d with the kernel flipped. The
  interleave puts `phase` fill cells before each x cell and s−1−phase after; the Conv's pads
  (or a crop, when a border must shrink) make up the rest.
- Polyphase: output phase q (cells o = j·s + q) takes the taps k with k·d ≡ q + p_b (mod s);
  tap k reads x[j + e_k], e_k = (q + p_b − k·d) / s. With the taps sorted by e_k (k
  descending) that is a stride-1 Conv of dilation e_{k'} − e_k (the same between all
  neighbours) and pads (−min e, J − 1 + max e − (H − 1)), J = O / s. Used when O is a
  multiple of s, every phase has a tap and no pad is negative; its MACs are exactly the
  transposed convolution's.
"""

import dataclasses

__all__ = ["AxisPhase", "ZeroInsertion", "axis_phases", "zero_insertion"]


@dataclasses.dataclass(frozen=True)
class ZeroInsertion:
    """Per spatial axis: stride, fill cells before each input cell (`phases`), and the Conv's
    pads and the crops (begins then ends) around the interleaved input."""

    strides: tuple[int, ...]
    phases: tuple[int, ...]
    pads: tuple[int, ...]
    crops: tuple[int, ...]


@dataclasses.dataclass(frozen=True)
class AxisPhase:
    """One output phase along one axis: the kernel taps in the phase Conv's order, its
    dilation and pads (begin, end)."""

    taps: tuple[int, ...]
    dilation: int
    pads: tuple[int, int]


def zero_insertion(in_spatial: tuple[int, ...], kernel: tuple[int, ...],
                   strides: tuple[int, ...], dilations: tuple[int, ...],
                   pads: tuple[int, ...], out: tuple[int, ...]) -> ZeroInsertion:  # fmt: skip
    """Return where the zeros go for a ConvTranspose of this geometry (pads: its resolved
    begins then ends; out: its output's spatial shape)."""
    phases, begins, ends = [], [], []
    for i in range(len(kernel)):
        s, reach = strides[i], dilations[i] * (kernel[i] - 1)
        before = reach - pads[i]
        after = out[i] + reach - before - (in_spatial[i] - 1) * s - 1
        low, high = max(0, s - 1 - after), min(s - 1, before)
        phase = high if low <= high else min(max(before, 0), s - 1)
        phases.append(phase)
        begins.append(before - phase)
        ends.append(after - (s - 1 - phase))
    edges = begins + ends
    return ZeroInsertion(tuple(strides), tuple(phases), tuple(max(0, e) for e in edges),
                         tuple(max(0, -e) for e in edges))


def axis_phases(size: int, kernel: int, stride: int, dilation: int, pad_begin: int,
                out: int) -> list[AxisPhase] | None:  # fmt: skip
    """Return the `stride` output phases of one axis, or None when the polyphase form does
    not apply (see the module docstring)."""
    if out % stride:
        return None
    cells = out // stride
    phases = []
    for q in range(stride):
        taps = sorted((k for k in range(kernel) if (q + pad_begin - k * dilation) % stride == 0),
                      reverse=True)
        if not taps:
            return None
        offsets = [(q + pad_begin - k * dilation) // stride for k in taps]
        step = offsets[1] - offsets[0] if len(taps) > 1 else 1
        pads = (-offsets[0], cells - 1 + offsets[-1] - (size - 1))
        if min(pads) < 0:
            return None
        phases.append(AxisPhase(tuple(taps), step, pads))
    return phases
