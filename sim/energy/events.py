"""The events that cost energy, counted per instruction as the RTL performs them.

`instruction_events(instr, config, weights)` returns the counts of one instruction (a dict
keyed by `EVENTS`, zero counts left out). It is a function of the instruction's fields and
the configuration, plus, for a weight-stationary COMPUTE, the shape `(k, n)` of the weights
it multiplies with (the last PRELOAD's: `ActiveWeights`). `program_events(instructions,
config)` folds a program in order (HALT resets the weights, as a new run starts from reset)
and returns one count dict per instruction; `sum_events` adds dicts.

Events (docs/energy.md: "Events" defines them, "RTL counters" names each one's RTL signal):

- `mac_slots`: PE-cycles of the array working on a COMPUTE (`rows*cols` per activation row
  of a WS COMPUTE, per column of a COMPUTE.OS); `macs`: the products among them with an
  active weight and operand (WS `m*k*n` with the active PRELOAD's `k x n`; OS `m*n*k`).
- `spad_in_reads`, `spad_wt_reads`, `params_reads`, `acc_reads`: row reads a unit uses
  (`acc_reads` are the STORE unit's); `*_writes`: rows a LOAD writes, `acc_writes` the rows
  EXECUTE writes; `acc_rmw`: the accumulating writes among them (old row read, `cols` adds).
- `ext_read_bytes`, `ext_read_beats`, `ext_write_bytes`, `ext_write_beats`: external bytes
  of the instruction's segments and the aligned bus beats that carry them.
- `output_stage_lanes`: lanes the output stage requantizes (`cols` per STORE row);
  `vector_lanes`: lanes the vector unit takes (`dim` per spad_in element read of POOL/ADD);
  `vector_mul_lanes`: the element products of ADD with `mul` (`dim` per output row) and of
  LAYERNORM (`dim` per chunk read: the squares of its sums pass, t * r of its outputs pass);
  `lut_lookups`: lanes the activation table maps (`dim` per row of STORE/COPY with `lut`: the
  table looks up every lane of the row, `hdl/lookup_table.py`), and SOFTMAX's exp table
  lookups (`dim` per chunk read in its sum and output passes);
  `lut_writes`: table bytes a TABLE writes (256; 512 for the exp table with `wide`).

SOFTMAX reads each row's `ceil(length/dim)` chunks three times (max, sum, outputs) through
the vector unit and writes each chunk's aligned beats on their own; LAYERNORM reads them twice
(the sums S1 and S2, the outputs: `vector_lanes` and `vector_mul_lanes` `dim` per chunk read)
and writes as SOFTMAX does (docs/isa.md, "LAYERNORM"); STORE with `raw` bypasses
the output stage (its bias add is not counted). External bytes of the STORE unit's writes are
their segments' bytes.
"""

import dataclasses
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np

from systolic.config import ArrayConfig
from systolic.isa.instructions import Instruction, Unit
from systolic.isa.memories import params_row_bytes
from systolic.isa.patterns import Segment, total_beats
from systolic.sim.timing.store_timing import reader_cycles

__all__ = [
    "EVENTS",
    "KNOWN",
    "POSITIONS",
    "ActiveWeights",
    "BeatCounter",
    "instruction_events",
    "program_events",
    "sum_events",
]

EVENTS = (
    "mac_slots", "macs",
    "spad_in_reads", "spad_in_writes", "spad_wt_reads", "spad_wt_writes",
    "params_reads", "params_writes", "acc_reads", "acc_writes", "acc_rmw",
    "ext_read_bytes", "ext_read_beats", "ext_write_bytes", "ext_write_beats",
    "output_stage_lanes", "vector_lanes", "vector_mul_lanes", "lut_lookups", "lut_writes",
)  # fmt: skip
"""Every event name, in report order."""

KNOWN = ("LOAD", "PRELOAD", "COMPUTE", "COMPUTE.OS", "STORE", "COPY", "POOL", "ADD", "TABLE",
         "SOFTMAX", "LAYERNORM", "HALT")  # fmt: skip
"""The instructions whose events this module defines (a STORE-unit instruction not listed
counts only its external writes)."""

TABLE_ENTRIES = 256
"""Entries of the activation table a TABLE writes (docs/isa.md, "Activation unit")."""

_LOAD_TARGET = {0: "spad_in", 1: "spad_wt", 2: "params"}
POSITIONS = ("row", "in_row", "acc_row", "a_row", "b_row", "wt_row", "param_row")
"""Fields that move an instruction's rows on chip without changing any of its events (with
`ext` modulo the bus width, what `BeatCounter` keys on)."""


@dataclasses.dataclass(frozen=True)
class ActiveWeights:
    """The shape of the weights a weight-stationary COMPUTE multiplies with: `k` rows of `n`
    columns (the last PRELOAD's); (0, 0) after reset, when every weight is 0."""

    k: int = 0
    n: int = 0


class BeatCounter:
    """Bytes and aligned bus beats of an instruction's external segments, cached by everything
    that decides them (the class, the fields other than on-chip rows, and `ext mod
    bus_bytes`)."""

    def __init__(self, config: ArrayConfig) -> None:
        self.config = config
        self._cache: dict[tuple[Any, ...], tuple[int, int]] = {}
        self._names: dict[type, tuple[str, ...]] = {}

    def beats(self, instr: Instruction) -> int:
        """Return `total_beats(instr.segments(config), bus_bytes)`."""
        return self.facts(instr)[1]

    def facts(self, instr: Instruction) -> tuple[int, int]:
        """Return (the segments' bytes, their aligned beats)."""
        cls = type(instr)
        names = self._names.get(cls)
        if names is None:
            fields = dataclasses.fields(instr)  # type: ignore[arg-type]
            names = self._names[cls] = tuple(
                f.name for f in fields if f.name not in POSITIONS and f.name != "ext")
        key = (cls, instr.ext % self.config.bus_bytes,  # type: ignore[attr-defined]
               *(getattr(instr, name) for name in names))
        found = self._cache.get(key)
        if found is None:
            segments = instr.segments(self.config)
            found = self._cache[key] = (sum(segment.length for segment in segments),
                                        total_beats(segments, self.config.bus_bytes))
        return found


def _ws_compute(instr: Any, config: ArrayConfig, weights: ActiveWeights) -> dict[str, int]:
    m = instr.m
    return {"mac_slots": config.pes * m, "macs": m * weights.k * weights.n,
            "spad_in_reads": m, "acc_writes": m, "acc_rmw": m if instr.accumulate else 0}


def _os_compute(instr: Any, config: ArrayConfig) -> dict[str, int]:
    m, n, k = instr.m, instr.n, instr.k
    chunks = -(-k // config.dim)
    return {"mac_slots": config.pes * k, "macs": m * n * k, "spad_in_reads": m * chunks,
            "spad_wt_reads": k, "acc_writes": m, "acc_rmw": m if instr.accumulate else 0}


def _load(instr: Any, config: ArrayConfig, beats: int) -> dict[str, int]:
    target = _LOAD_TARGET[int(instr.mem)]
    row_bytes = (params_row_bytes(config) if target == "params"
                 else instr.length * config.operand_bytes)  # fmt: skip
    return {f"{target}_writes": instr.count, "ext_read_bytes": instr.count * row_bytes,
            "ext_read_beats": beats}


def _reads(instr: Any, config: ArrayConfig) -> dict[str, int]:
    """The on-chip reads and datapath work of a STORE-unit instruction (module docstring)."""
    name, dim = instr.MNEMONIC, config.dim
    if name == "STORE":
        return {"acc_reads": instr.m, "params_reads": 1,
                "output_stage_lanes": 0 if getattr(instr, "raw", False) else instr.m * config.cols,
                "lut_lookups": instr.m * dim if instr.lut else 0}  # fmt: skip
    if name == "COPY":
        return {"spad_in_reads": instr.m,
                "lut_lookups": instr.m * dim if getattr(instr, "lut", False) else 0}
    if name == "POOL":
        reads = sum(reader_cycles(instr))
        return {"spad_in_reads": reads, "vector_lanes": reads * dim}
    if name == "ADD":  # rows a and b of every output row (b again with b_broadcast)
        return {"spad_in_reads": 2 * instr.m, "vector_lanes": 2 * instr.m * dim,
                "vector_mul_lanes": instr.m * dim if getattr(instr, "mul", False) else 0}
    if name == "SOFTMAX":  # every row's chunks read three times: max, sum, outputs
        reads = 3 * instr.m * -(-instr.length // dim)
        return {"spad_in_reads": reads, "vector_lanes": reads * dim,
                "lut_lookups": 2 * reads // 3 * dim}  # (exp table: sum and outputs)
    if name == "LAYERNORM":  # every row's chunks read twice: the sums, the outputs
        reads = 2 * instr.m * -(-instr.length // dim)
        return {"spad_in_reads": reads, "vector_lanes": reads * dim,
                "vector_mul_lanes": reads * dim}  # (d^2 in the sums pass, t * r in the outputs)
    return {}


def _softmax_write_beats(instr: Any, config: ArrayConfig) -> int:
    """SOFTMAX and LAYERNORM write each row's chunks of `dim` outputs on their own (hdl/softmax_unit.py):
    the aligned beats of every chunk (a beat a chunk boundary cuts goes out twice)."""
    chunks = [Segment(row.address + start, min(config.dim, row.length - start))
              for row in instr.segments(config) for start in range(0, row.length, config.dim)]
    return total_beats(chunks, config.bus_bytes)


def _store_unit(instr: Any, config: ArrayConfig, beats: BeatCounter) -> dict[str, int]:
    written, write_beats = beats.facts(instr)
    if instr.MNEMONIC in ("SOFTMAX", "LAYERNORM"):
        write_beats = _softmax_write_beats(instr, config)
    return _reads(instr, config) | {"ext_write_bytes": written, "ext_write_beats": write_beats}


def instruction_events(
    instr: Instruction,
    config: ArrayConfig,
    weights: ActiveWeights = ActiveWeights(),
    beats: BeatCounter | None = None,
    load_beats: int | None = None,
) -> dict[str, int]:
    """Return the event counts of `instr` on `config` (module docstring); `weights` matters
    only to a weight-stationary COMPUTE, `beats` caches external beats (made when None),
    `load_beats` gives a LOAD's beats when they are known (`load_timing.load_beats`)."""
    name = instr.MNEMONIC
    if name == "COMPUTE":
        events = _ws_compute(instr, config, weights)
    elif name == "COMPUTE.OS":
        events = _os_compute(instr, config)
    elif name == "PRELOAD":
        events = {"spad_wt_reads": instr.k}  # type: ignore[attr-defined]
    elif name == "TABLE":  # (with `wide`, the exp table: 512 bytes)
        size = 2 * TABLE_ENTRIES if getattr(instr, "wide", False) else TABLE_ENTRIES
        events = {"spad_in_reads": -(-size // config.dim), "lut_writes": size}
    elif name == "HALT":
        events = {}
    elif name == "LOAD":
        if load_beats is None:
            load_beats = (beats or BeatCounter(config)).beats(instr)
        events = _load(instr, config, load_beats)
    elif instr.UNIT is Unit.ST:
        events = _store_unit(instr, config, beats or BeatCounter(config))
    else:
        raise ValueError(f"no energy events are defined for {name}")
    return {key: value for key, value in events.items() if value}


def program_events(
    instructions: Sequence[Instruction],
    config: ArrayConfig,
    load_beats: "Sequence[int] | np.ndarray | None" = None,
) -> list[dict[str, int]]:
    """Return the event counts of every instruction, in program order: each weight-stationary
    COMPUTE with the weights of the latest PRELOAD since the latest HALT (a run starts from
    reset, with zero weights). `load_beats[i]`, when given, is instruction i's beats if it is
    a LOAD (as the native `external_facts` cost: any value elsewhere)."""
    beats = BeatCounter(config)
    weights = ActiveWeights()
    counts = []
    for index, instr in enumerate(instructions):
        known = int(load_beats[index]) if load_beats is not None else None
        counts.append(instruction_events(instr, config, weights, beats, known))
        if instr.MNEMONIC == "PRELOAD":
            weights = ActiveWeights(instr.k, instr.n)  # type: ignore[attr-defined]
        elif instr.MNEMONIC == "HALT":
            weights = ActiveWeights()
    return counts


def sum_events(counts: Iterable[Mapping[str, int]]) -> dict[str, int]:
    """Return the sum of event count dicts, every name of `EVENTS` present (zero if none)."""
    total: Counter[str] = Counter()
    for events in counts:
        total.update(events)
    return {name: total.get(name, 0) for name in EVENTS}

