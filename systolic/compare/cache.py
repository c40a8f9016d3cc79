"""The results cache of `systolic compare`: one JSON file per (model, passes, configuration,
backend) point, so a sweep that grows computes only its new points.

Entries live in `$SYSTOLIC_CACHE_DIR/compare/` (else `~/.cache/systolic/compare/`, the folder
the Verilator builds and FPGA results use), one folder per model key, one file per point. The
model key digests the model file's bytes and what the passes calibrate on (the --input file's
bytes, or the seed of the random set). The point key digests the model key, `passes_version()`
(a digest of the source of everything between the model file and a point's cycles: importer,
passes, lowering, ISA, backends, reference operators, per-layer rows), the backend and the
`ArrayConfig` fields, and a user's energy table (`energy_key`). Files are written atomically (`systolic.fileio.write_atomically`); an
entry that does not read back as a result of its configuration (truncated, edited, an older
format) is treated as missing, recomputed and overwritten. Failed points are not kept.
"""

import dataclasses
import functools
import hashlib
import json
import os
from pathlib import Path

from systolic.compare.result import ConfigResult
from systolic.config import ArrayConfig
from systolic.fileio import digest_parts, write_atomically
from systolic.sim.energy.table import EnergyTable
from systolic.simulation.report import LayerResult

__all__ = ["FORMAT", "ResultCache", "cache_root", "energy_key", "model_key", "passes_version"]

FORMAT = "systolic.compare.cache/2"
"""The entries' format; a change makes every older entry a miss (2: layers carry energies)."""

_PACKAGES = ("mapper", "isa", "sim", "hdl", "reference", "simulation", "proto")
_MODULES = ("config.py", "ir.py", "compare/point.py", "compare/layer_cycles.py",
            "compare/result.py")  # fmt: skip
_SUFFIXES = (".py", ".c", ".h", ".cpp")


def cache_root() -> Path:
    """Return the folder of cached compare results."""
    base = os.environ.get("SYSTOLIC_CACHE_DIR")
    root = Path(base) if base else Path.home() / ".cache" / "systolic"
    return root / "compare"


@functools.cache
def passes_version() -> str:
    """Return a digest of the source files a point's result depends on (module docstring)."""
    package = Path(__file__).resolve().parent.parent
    files = [package / name for name in _MODULES]
    for name in _PACKAGES:
        folder = (package / name).resolve()
        files += sorted(p for p in folder.rglob("*")
                        if p.suffix in _SUFFIXES and "__pycache__" not in p.parts)  # fmt: skip
    digest = hashlib.sha256()
    for path in files:
        digest.update(path.relative_to(path.parents[1]).as_posix().encode() + b"\0")
        digest.update(hashlib.sha256(path.read_bytes()).digest())
    return digest.hexdigest()[:32]


def _file_digest(path: str | os.PathLike[str]) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def model_key(
    model_path: str | os.PathLike[str], input_path: str | os.PathLike[str] | None, seed: int
) -> str:
    """Return the key of a model file and its calibration inputs (module docstring)."""
    inputs = f"file {_file_digest(input_path)}" if input_path is not None else f"seed {seed}"
    return digest_parts("model", _file_digest(model_path), inputs)


def energy_key(table: EnergyTable | None) -> str:
    """Return the cache key part of an energy table: "" for None (the bundled table), else a
    digest of its numbers and overrides."""
    if table is None:
        return ""
    return digest_parts("energy", json.dumps(
        {"numbers": table.to_json()["numbers"], "overrides": dict(table.overrides)},
        sort_keys=True))


@dataclasses.dataclass(frozen=True)
class ResultCache:
    """The cached points of one model (module docstring)."""

    model: str
    root: Path = dataclasses.field(default_factory=cache_root)
    energy: str = ""
    """What the energy table adds to the key ("" for the bundled table; else
    `energy_key(table)`): the layers' energies depend on it."""

    def path(self, config: ArrayConfig, backend: str) -> Path:
        """Return the entry file of a point."""
        fields = json.dumps(config.to_dict(), sort_keys=True)
        key = digest_parts(FORMAT, passes_version(), self.model, backend, fields,
                           *([self.energy] if self.energy else []))  # fmt: skip
        return self.root / self.model[:24] / f"{key}.json"

    def load(self, config: ArrayConfig, backend: str, label: str) -> ConfigResult | None:
        """Return the cached result of a point under `label`, or None (missing or unreadable)."""
        try:
            entry = json.loads(self.path(config, backend).read_text("utf-8"))
            if entry["format"] != FORMAT or entry["config"] != config.to_dict():
                return None
            layers = tuple(LayerResult(**(layer | {"energy": tuple(layer.get("energy", ()))}))
                           for layer in entry["layers"])  # fmt: skip
            return ConfigResult(config, label, layers, int(entry["total_cycles"]))
        except (OSError, ValueError, KeyError, TypeError):
            return None

    def store(self, result: ConfigResult, backend: str) -> None:
        """Keep a point's result (a failed one is not kept)."""
        if result.failed:
            return
        entry = {"format": FORMAT, "config": result.config.to_dict(), "backend": backend,
                 "total_cycles": result.total_cycles,
                 "layers": [dataclasses.asdict(layer) for layer in result.layers]}  # fmt: skip
        write_atomically(self.path(result.config, backend), json.dumps(entry) + "\n")
