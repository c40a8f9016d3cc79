"""Shared helpers of the lowering tests (the `harness` fixture): place tensors, run lowered code
on the golden model."""

import dataclasses
import types

import numpy as np
import pytest

from systolic.config import ArrayConfig
from systolic.ir import Attrs, DataType, Node
from systolic.isa.instructions import Halt
from systolic.isa.program import TensorPlacement, TensorRole
from systolic.mapper.lowering.layer_code import BumpAllocator, LayerCode
from systolic.sim.golden.machine import Machine


@dataclasses.dataclass
class Buffer:
    """A tensor placed in a padded channel-last buffer, with its fill bytes."""

    placement: TensorPlacement
    start: int
    data: bytes


def place_nhwc(
    name: str, role: TensorRole, address: int, shape: tuple[int, ...], dtype: DataType,
    halo: tuple[int, ...], channel_pad: int, fill: int, rng: np.random.Generator,
) -> Buffer:  # fmt: skip
    """Place an NCHW (or NCW) tensor channel-last inside a halo, channels padded by junk."""
    n, c, *spatial = shape
    rank = len(spatial)
    begins, ends = halo[:rank], halo[rank:]
    padded = [s + b + e for s, b, e in zip(spatial, begins, ends, strict=True)]
    cs = c + channel_pad
    spatial_strides = []
    step = cs
    for extent in reversed(padded):
        spatial_strides.append(step)
        step *= extent
    spatial_strides.reverse()
    size = n * step
    offset = sum(b * s for b, s in zip(begins, spatial_strides, strict=True))
    fill_bytes = np.full(size, fill & 0xFF, dtype=np.uint8)
    if channel_pad:  # junk in the padding channels: the lowering must never read it
        view = fill_bytes.reshape(n, *padded, cs)
        view[..., c:] = rng.integers(0, 256, size=view[..., c:].shape)
    strides = (step, 1, *spatial_strides)
    placement = TensorPlacement(name, role, address + offset, tuple(shape), dtype, strides)
    return Buffer(placement, address, fill_bytes.tobytes())


def run_layer(
    code: LayerCode, config: ArrayConfig, buffers: list[Buffer], x: np.ndarray,
    memory_size: int,
) -> np.ndarray:  # fmt: skip
    """Run `code` with X (buffers[0]) written, return Y (buffers[1]) from external memory."""
    machine = Machine(config, memory_size)
    for buffer in buffers:
        machine.memory[buffer.start : buffer.start + len(buffer.data)] = np.frombuffer(
            buffer.data, np.uint8
        )
    for segment in code.segments:
        machine.memory[segment.address : segment.end] = np.frombuffer(segment.data, np.uint8)
    machine.write_tensor(buffers[0].placement, x)
    machine.run([*code.instructions, Halt()])
    return machine.read_tensor(buffers[1].placement)


def node(op_type: str, inputs: tuple[str, ...], **attrs: object) -> Node:
    """Return a systolic-domain node named "layer"."""
    return Node(op_type, inputs, ("y",), domain="systolic", version=1, name="layer",
                attrs=Attrs(attrs))  # type: ignore[arg-type]  # fmt: skip


def allocator(address: int) -> BumpAllocator:
    """Return the allocator for constants placed from `address` on."""
    return BumpAllocator(address)


@pytest.fixture
def harness() -> types.SimpleNamespace:
    """The helpers above, for test modules (importlib import mode has no shared imports)."""
    return types.SimpleNamespace(
        place_nhwc=place_nhwc, run_layer=run_layer, node=node, allocator=allocator
    )
