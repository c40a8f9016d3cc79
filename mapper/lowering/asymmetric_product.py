"""A product of two computed tensors with asymmetric zero points, on the array unchanged.

With A and B in the int8 domain (after the LOADs' flip_sign) and their zero points α, β
(int8 domain: a uint8 zero point z is z − 128), the product the QMatMul defines is

    Σ_k (a − α)(b − β) = Σ_k a·b + Σ_k a·(−β) + Σ_k (−α)·b + K·α·β.

The two middle sums are the same kind of product with one constant factor, so the array
computes the whole sum exactly by extending the reduction: A' = [A, A, c_α], B' = [B; c_β; B]
(blocks of K elements), and K·α·β goes into the bias. A constant −α or −β of 128 does not fit
int8; it is two blocks of 64 (`pieces`). `Augmentation` is that block structure:

    A' = [A × copies | a_value × a_blocks]      (K elements per block)
    B' = b_blocks: B itself (None) or a constant K x N block of one value

- A' costs no instruction: the LOAD element pattern walks A's K contiguous elements `copies`
  times (`n_mid = copies`, `stride_mid = 0`) and then reads the constant blocks at a fixed
  offset D from each row (`stride_outer = D`), where a constant *shadow region* as large as
  A's address range holds the value (`shadow`). An A whose K is not contiguous is first copied
  to a row-major buffer (LOAD + COPY).
- B' is materialized once per layer in a scratch buffer (one K'·N block per batch entry of B,
  rows of N elements): the constant blocks are its initial memory image, the B blocks are
  written by LOAD + COPY from B's placement (`copy_strided`, flip_sign for a uint8 B, then
  the COPY repeated for each further B block). The jobs then read B' as an ordinary computed
  B with zero point 0.

Extra work: (copies + a_blocks − 1)·K MACs per output (2K typically: 3x the product's array
time; 3K when a uint8 operand has zero point 0, such as a softmax output), the B' copies on
the LOAD and STORE units, and A read `copies` times. Both zero points must be compile-time
constants (a QMatMul's attributes are).
"""

import dataclasses
import math

import numpy as np

from systolic.config import ArrayConfig
from systolic.errors import UnsupportedError
from systolic.isa.instructions import Copy, Instruction
from systolic.isa.memories import Memory, depth
from systolic.isa.program import MemorySegment, TensorPlacement
from systolic.mapper.lowering.copy import copy_strided
from systolic.mapper.lowering.gemm import ComputedWeights, ElementWalk
from systolic.mapper.lowering.layer_code import ConstantAllocator

__all__ = ["AsymmetricProduct", "Augmentation", "BPrime", "augmentation", "pieces", "prepare"]

_INT32_MIN, _INT32_MAX = -(2**31), 2**31 - 1


def pieces(value: int) -> list[int]:
    """Return int8 values summing to `value` (−128..128): none for 0, two 64s for 128."""
    if value == 0:
        return []
    if value == 128:
        return [64, 64]
    if not -128 <= value <= 127:
        raise ValueError(f"{value} is not a negated int8 zero point")
    return [value]


@dataclasses.dataclass(frozen=True)
class Augmentation:
    """The blocks of A' and B' along K' = `blocks`·K (module docstring)."""

    copies: int
    a_blocks: int
    a_value: int
    b_blocks: tuple[int | None, ...]
    alpha: int
    beta: int

    @property
    def blocks(self) -> int:
        """K' / K."""
        return self.copies + self.a_blocks

    def bias(self, k: int) -> int:
        """The constant part of the product, K·α·β."""
        return k * self.alpha * self.beta


def augmentation(alpha: int, beta: int) -> Augmentation:
    """Return the blocks that make Σ (a − α)(b − β) a plain product (module docstring)."""
    a_pieces, b_pieces = pieces(-alpha), pieces(-beta)
    copies = max(1 + len(b_pieces), len(a_pieces))
    padding = copies - 1 - len(b_pieces)  # A copies paired with zero rows (when 2 a_blocks)
    b_blocks = (None, *b_pieces, *(0,) * padding, *(None,) * len(a_pieces))
    return Augmentation(copies, len(a_pieces), a_pieces[0] if a_pieces else 0, b_blocks,
                        alpha, beta)  # fmt: skip


@dataclasses.dataclass(frozen=True)
class BPrime:
    """Where B' lies: one row-major K' x N matrix per batch entry of B (entries row-major
    from `address`). Row-major also for a transposed view of B (K^T): the copy then gathers
    B one element per bus beat, once, and the array's weight LOADs read whole rows (a
    column-major B' would make every weight LOAD gather, K' = 3K elements per column)."""

    address: int
    batch_shape: tuple[int, ...]
    k: int
    n: int
    blocks: int
    operand_bytes: int

    @property
    def strides(self) -> tuple[int, int]:
        """The byte strides of B' along K' and N."""
        return self.n * self.operand_bytes, self.operand_bytes

    @property
    def entry_bytes(self) -> int:
        """The bytes of one batch entry."""
        return self.blocks * self.k * self.n * self.operand_bytes

    @property
    def block_bytes(self) -> int:
        """The offset between consecutive K-blocks of an entry."""
        return self.k * self.strides[0]

    def image(self, aug: Augmentation) -> bytes:
        """Return B's initial bytes: the constant blocks, zeros where B is copied in."""
        shape = (self.k, self.n)
        blocks = [np.zeros(shape, np.int64) if value is None else np.full(shape, value, np.int64)
                  for value in aug.b_blocks]  # fmt: skip
        entry = np.concatenate(blocks)
        data = entry.astype({1: "i1", 2: "<i2"}[self.operand_bytes]).tobytes()
        return data * max(1, math.prod(self.batch_shape))

    def weights(self, index: tuple[int, ...]) -> ComputedWeights:
        """Return B' of batch entry `index` of B."""
        flat = 0
        for i, size in zip(index, self.batch_shape, strict=True):
            flat = flat * size + i
        row_stride, col_stride = self.strides
        return ComputedWeights(self.address + flat * self.entry_bytes, self.blocks * self.k,
                               self.n, row_stride, col_stride, False)  # fmt: skip


@dataclasses.dataclass(frozen=True)
class AsymmetricProduct:
    """What the QMatMul lowering uses instead of A, B and the bias (module docstring).

    `code` and `segments` come before the layer's jobs (B' copies, A's contiguous copy);
    `a` is the placement to read A from; `walk` gathers A' from it; `b_prime.weights(index)`
    is B' of batch entry `index` of B; `bias` is added to every column's bias.
    """

    code: tuple[Instruction, ...]
    segments: tuple[MemorySegment, ...]
    a: TensorPlacement
    walk: ElementWalk
    b_prime: BPrime
    bias: int

    def biased(self, bias: np.ndarray, label: str) -> np.ndarray:
        """Return the layer's bias plus K·α·β; raise when a column leaves int32."""
        total: np.ndarray = bias.astype(np.int64) + self.bias
        if total.size and (total.min() < _INT32_MIN or total.max() > _INT32_MAX):
            raise UnsupportedError(f"layer {label!r}: the bias plus K·α·β of the zero points "
                                   f"({self.bias}) leaves int32")  # fmt: skip
        return total


def prepare(
    label: str,
    a: TensorPlacement,
    a_flip: bool,
    alpha: int,
    b: TensorPlacement,
    b_flip: bool,
    beta: int,
    config: ArrayConfig,
    alloc: ConstantAllocator,
) -> AsymmetricProduct:
    """Return the augmented operands of A·B with int8-domain zero points α, β (not both 0);
    B has rank >= 2 (its last two axes K x N), A's last axis is K."""
    aug = augmentation(alpha, beta)
    bias = aug.bias(b.shape[-2])
    if not _INT32_MIN <= bias <= _INT32_MAX:
        raise UnsupportedError(f"layer {label!r}: K·α·β = {bias} of the zero points does not "
                               "fit the int32 bias")  # fmt: skip
    code: list[Instruction] = []
    segments: list[MemorySegment] = []
    a, walk = _a_side(label, a, a_flip, aug, config, alloc, code, segments)
    layout = _b_side(label, b, b_flip, aug, config, alloc, code, segments)
    return AsymmetricProduct(tuple(code), tuple(segments), a, walk, layout, bias)


def _a_side(
    label: str, a: TensorPlacement, flip: bool, aug: Augmentation, config: ArrayConfig,
    alloc: ConstantAllocator, code: list[Instruction], segments: list[MemorySegment],
) -> tuple[TensorPlacement, ElementWalk]:  # fmt: skip
    """Return where A is read from and the walk of A' (A `copies` times, then the constant
    blocks from the shadow region), adding the code and segments that needs."""
    ob, k = config.operand_bytes, a.shape[-1]
    if a.strides[-1] != ob and k > 1 and aug.a_blocks:
        a = _contiguous_copy(label, a, flip, config, alloc, code)
    if a.strides[-1] != ob and k > 1:  # copies of A only: each one element at a time
        return a, ElementWalk(1, k, a.strides[-1], 0)
    outer = _shadow(label, a, aug.a_value, flip, config, alloc, segments) if aug.a_blocks else 0
    return a, ElementWalk(k, aug.copies, 0, outer)


def _b_side(
    label: str, b: TensorPlacement, flip: bool, aug: Augmentation, config: ArrayConfig,
    alloc: ConstantAllocator, code: list[Instruction], segments: list[MemorySegment],
) -> BPrime:  # fmt: skip
    """Place B' (its constant blocks as a segment) and add the copies of B into it."""
    k, n = b.shape[-2:]
    layout = BPrime(0, tuple(b.shape[:-2]), k, n, aug.blocks, config.operand_bytes)
    size = max(1, math.prod(layout.batch_shape)) * layout.entry_bytes
    address = alloc.allocate(size, config.bus_bytes, f"{label}.b_prime")
    layout = dataclasses.replace(layout, address=address)
    segments.append(MemorySegment(address, layout.image(aug)))
    code += _b_copies(aug, b, flip, layout, config)
    return layout


def _extent(a: TensorPlacement, ob: int) -> tuple[int, int]:
    """Return the lowest address of A's elements and one past the last byte."""
    low = a.address + sum(min(0, (d - 1) * s) for d, s in zip(a.shape, a.strides, strict=True))
    high = a.address + sum(max(0, (d - 1) * s) for d, s in zip(a.shape, a.strides, strict=True))
    return low, high + ob


def _shadow(label: str, a: TensorPlacement, value: int, flip: bool, config: ArrayConfig,
            alloc: ConstantAllocator, segments: list[MemorySegment]) -> int:  # fmt: skip
    """Place the constant shadow region of A (`value` in every element, as the LOAD reads
    it) and return its offset D from A's addresses."""
    ob = config.operand_bytes
    low, high = _extent(a, ob)
    address = alloc.allocate(high - low, config.bus_bytes, f"{label}.a_constant")
    offset = address - low
    if not -(2**31) <= offset < 2**31:
        raise UnsupportedError(f"layer {label!r}: the constant operand lies {offset} bytes "
                               "from A, beyond the LOAD's 32-bit stride")  # fmt: skip
    element = _element_bytes(value ^ (-128 if flip else 0), ob)
    segments.append(MemorySegment(address, element * ((high - low) // ob)))
    return offset


def _element_bytes(value: int, ob: int) -> bytes:
    """Return one operand as it lies in external memory (little-endian, sign-extended)."""
    return int(value).to_bytes(ob, "little", signed=True)


def _contiguous_copy(
    label: str, a: TensorPlacement, flip: bool, config: ArrayConfig, alloc: ConstantAllocator,
    code: list[Instruction],
) -> TensorPlacement:  # fmt: skip
    """Copy A (same bytes, uint8 stays uint8) to a row-major buffer; return its placement."""
    ob = config.operand_bytes
    strides = _row_major(a.shape, ob)
    size = math.prod(a.shape) * ob
    address = alloc.allocate(size, config.bus_bytes, f"{label}.a_rows")
    code += copy_strided(config, a.shape, a.address, a.strides, address, strides, element=ob,
                         flip_load=flip, flip_store=flip,
                         first_row=_upper_half(config, math.prod(a.shape[:-1])))  # fmt: skip
    return dataclasses.replace(a, address=address, strides=strides)


def _row_major(shape: tuple[int, ...], unit: int) -> tuple[int, ...]:
    """Return the strides of `shape` stored row-major in elements of `unit` bytes."""
    strides = [unit] * len(shape)
    for axis in range(len(shape) - 2, -1, -1):
        strides[axis] = strides[axis + 1] * shape[axis + 1]
    return tuple(strides)


def _upper_half(config: ArrayConfig, rows: int) -> int:
    """Return the first spad_in row of the copies' two buffers of up to `rows` rows each: at
    the top of spad_in (at most its upper half), which the jobs' rings (from row 0) reach
    last, so their first LOADs need not wait for the COPYs."""
    total = depth(config, Memory.SPAD_IN)
    return total - 2 * min(rows, total // 4)


def _b_copies(aug: Augmentation, b: TensorPlacement, flip: bool, layout: BPrime,
              config: ArrayConfig) -> list[Instruction]:  # fmt: skip
    """Return LOAD + COPY of B into its first block of every entry of B', each COPY repeated
    for the further B blocks."""
    ob = config.operand_bytes
    first = aug.b_blocks.index(None)
    others = [j for j, value in enumerate(aug.b_blocks) if value is None and j != first]
    entries = _row_major(layout.batch_shape, layout.entry_bytes)
    code = copy_strided(config, tuple(b.shape), b.address, tuple(b.strides),
                        layout.address + first * layout.block_bytes, (*entries, *layout.strides),
                        element=ob, flip_load=flip,
                        first_row=_upper_half(config, math.prod(b.shape[:-1])))  # fmt: skip
    out: list[Instruction] = []
    for instr in code:
        out.append(instr)
        if isinstance(instr, Copy):
            shifts = ((j - first) * layout.block_bytes for j in others)
            out += [dataclasses.replace(instr, ext=instr.ext + shift) for shift in shifts]
    return out
