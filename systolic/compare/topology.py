"""SCALE-Sim topology files: read them, and write a model's conv and GEMM layers in them.

SCALE-Sim (v1 and v2) describes a workload as a CSV with one convolution per row:
`Layer name, IFMAP Height, IFMAP Width, Filter Height, Filter Width, Channels, Num Filter,
Strides,` and no padding (the output is `(ifmap − filter) // stride + 1`, so the IFMAP sizes
include any padding). v2 also accepts the GEMM form `Layer Name, M, N, K,`. Extra trailing
columns are ignored, as SCALE-Sim does.

Our layers map onto it exactly: a convolution with padding is written with its padded input
size; a grouped convolution (SCALE-Sim has no groups) as one row per group, so the MACs are the
same; a GEMM of M×K by K×N as the 1×1 convolution of an M×1 input with K channels and N filters.

A layer whose tensors (int8 input, weights and output, int32 bias) take more than 4 GiB, the
accelerator's 32-bit external address space, is refused when it is made (ResourceError), before
any memory is allocated for it.
"""

import csv
import dataclasses
import io
import os

from systolic.errors import ModelError, ResourceError

__all__ = [
    "MAX_LAYER_BYTES",
    "MAX_TOPOLOGY_LAYERS",
    "TopologyLayer",
    "format_topology",
    "parse_topology",
    "read_topology",
]

MAX_LAYER_BYTES = 1 << 32
"""The most bytes one layer's tensors may take: the 32-bit external address space."""

MAX_TOPOLOGY_LAYERS = 4096
"""The most layers a topology file may hold: every configuration compiles them all into one
program (about 10 ms a layer, and the compiler's graph lookups grow with the layer count), so
a larger file would run for many minutes; real networks have hundreds of rows."""

CONV_HEADER = (
    "Layer name", "IFMAP Height", "IFMAP Width", "Filter Height", "Filter Width", "Channels",
    "Num Filter", "Strides",
)


@dataclasses.dataclass(frozen=True)
class TopologyLayer:
    """One SCALE-Sim layer: a convolution without padding (square stride)."""

    name: str
    ifmap_h: int
    ifmap_w: int
    filter_h: int
    filter_w: int
    channels: int
    filters: int
    stride: int

    def __post_init__(self) -> None:
        for field in dataclasses.fields(self)[1:]:
            value = getattr(self, field.name)
            if not isinstance(value, int) or value < 1:
                raise ModelError(
                    f"topology layer {self.name!r}: {field.name} must be a positive integer, "
                    f"not {value!r}"
                )
        if self.filter_h > self.ifmap_h or self.filter_w > self.ifmap_w:
            raise ModelError(
                f"topology layer {self.name!r}: the {self.filter_h}x{self.filter_w} filter is "
                f"larger than the {self.ifmap_h}x{self.ifmap_w} input (SCALE-Sim sizes include "
                f"padding)"
            )
        if self.tensor_bytes > MAX_LAYER_BYTES:
            raise ResourceError(
                f"topology layer {self.name!r}: its input, weights, bias and output take "
                f"{self.tensor_bytes:,} bytes, more than the 4 GiB of the accelerator's 32-bit "
                f"external address space: make the layer smaller or split it into several rows"
            )

    @classmethod
    def gemm(cls, name: str, m: int, n: int, k: int) -> "TopologyLayer":
        """The GEMM (M×K)·(K×N) as SCALE-Sim's equivalent 1×1 convolution."""
        return cls(name, m, 1, 1, 1, k, n, 1)

    @property
    def ofmap_h(self) -> int:
        return (self.ifmap_h - self.filter_h) // self.stride + 1

    @property
    def ofmap_w(self) -> int:
        return (self.ifmap_w - self.filter_w) // self.stride + 1

    @property
    def gemm_shape(self) -> tuple[int, int, int]:
        """(M, N, K) of the layer as a GEMM: output pixels, filters, filter elements."""
        return (
            self.ofmap_h * self.ofmap_w,
            self.filters,
            self.filter_h * self.filter_w * self.channels,
        )

    @property
    def tensor_bytes(self) -> int:
        """Bytes of the layer's int8 input, weights and output and its int32 bias."""
        m, n, k = self.gemm_shape
        return self.channels * self.ifmap_h * self.ifmap_w + k * n + 4 * n + m * n

    @property
    def macs(self) -> int:
        m, n, k = self.gemm_shape
        return m * n * k


def format_topology(layers: list[TopologyLayer]) -> str:
    """Return the layers as SCALE-Sim topology CSV text (conv form, trailing comma per row)."""
    out = io.StringIO()
    out.write(", ".join(CONV_HEADER) + ",\n")
    for layer in layers:
        name = layer.name.replace(",", "_").replace("\n", " ")
        cells = (
            name, layer.ifmap_h, layer.ifmap_w, layer.filter_h, layer.filter_w, layer.channels,
            layer.filters, layer.stride,
        )
        out.write(",".join(str(c) for c in cells) + ",\n")
    return out.getvalue()


def _int_cell(where: str, column: str, text: str) -> int:
    try:
        return int(text.strip())
    except ValueError:
        raise ModelError(f"{where}: {column} is {text.strip()!r}, not an integer") from None


def parse_topology(text: str, source: str = "topology") -> list[TopologyLayer]:
    """Parse SCALE-Sim topology CSV text (conv or M,N,K form); rows with an empty name and
    empty cells (spacers in SCALE-Sim's own files) are skipped."""
    try:
        rows = [row for row in csv.reader(io.StringIO(text)) if any(c.strip() for c in row)]
    except csv.Error as err:
        raise ModelError(f"{source}: not a CSV file ({err}): give a SCALE-Sim topology") from None
    if not rows:
        raise ModelError(f"{source}: the topology file is empty")
    header = [cell.strip().lower() for cell in rows[0]]
    gemm = header[1:4] == ["m", "n", "k"]
    if not gemm and not (len(header) >= 8 and header[1].startswith("ifmap")):
        raise ModelError(
            f"{source}: the first row is not a SCALE-Sim header (expected 'Layer name, IFMAP "
            f"Height, IFMAP Width, Filter Height, Filter Width, Channels, Num Filter, Strides' "
            f"or 'Layer Name, M, N, K')"
        )
    if len(rows) - 1 > MAX_TOPOLOGY_LAYERS:
        raise ResourceError(
            f"{source}: the topology has {len(rows) - 1} layers, more than the "
            f"{MAX_TOPOLOGY_LAYERS} compared at a time: split the file and compare the parts"
        )
    layers: list[TopologyLayer] = []
    for number, row in enumerate(rows[1:], start=2):
        cells = [cell.strip() for cell in row]
        if not cells[0] and not any(cells[1:]):
            continue
        where = f"{source} line {number}"
        needed = 4 if gemm else 8
        if len(cells) < needed or not all(cells[1:needed]):
            raise ModelError(f"{where}: expected {needed} columns, got {','.join(row)!r}")
        columns = [cell.strip() for cell in rows[0]]
        values = [_int_cell(where, columns[i], cells[i]) for i in range(1, needed)]
        name = cells[0] or f"layer{len(layers)}"
        if gemm:
            m, n, k = values
            layers.append(TopologyLayer.gemm(name, m, n, k))
        else:
            layers.append(TopologyLayer(name, *values))
    if not layers:
        raise ModelError(f"{source}: the topology file has no layers")
    return layers


def read_topology(path: str | os.PathLike[str]) -> list[TopologyLayer]:
    """Read a SCALE-Sim topology CSV file; a file that is not UTF-8 text is a ModelError."""
    text = os.fspath(path)
    try:
        with open(path, encoding="utf-8-sig") as handle:
            content = handle.read()
    except UnicodeDecodeError as err:
        raise ModelError(
            f"{text}: not a text file (byte {err.start} is not UTF-8): --topology needs a "
            f"SCALE-Sim topology CSV"
        ) from None
    return parse_topology(content, text)
