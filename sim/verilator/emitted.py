"""The Accelerator's Verilog (with the harness wrapper), emitted once and cached on disk.

Emitting the Verilog (elaborating the Amaranth design and converting it through Yosys's RTLIL
backend) takes seconds at 16x16 and much longer on a busy machine, and the Verilator build
cache needs the Verilog text for its key. So the build inputs (`design.HarnessParts`: the
Verilog with the wrapper, the header and the command width) are kept under
`<cache>/emitted/<key>.json`, where the key is a SHA-256 of the configuration, the Amaranth
version and the text of every source file the emission reads (`source_files()`: the
`systolic.hdl`, `systolic.isa` and `systolic.verilog` packages, the configuration and error
modules, and this backend's `ports`, `design` and `emitted` modules). Any edit to one of them,
or another Amaranth, gives a new key: a stale text is never used. Entries are written
atomically (a temporary file `.emit-<owner>-*` renamed into place; those of killed processes
are removed by the next write, `cache_entry.remove_stale`) and carry a digest of their fields:
an entry that does not parse or whose fields do not match its digest is emitted again, with
one line on standard error.
"""

import dataclasses
import hashlib
import importlib.metadata
import importlib.util
import json
import os
import tempfile
from pathlib import Path

from systolic.config import ArrayConfig
from systolic.fileio import digest_parts
from systolic.sim.verilator.build import cache_root
from systolic.sim.verilator.cache_entry import owner_tag, remove_stale, say_rebuilt
from systolic.sim.verilator.design import HarnessParts, harness_parts

__all__ = ["emit_accelerator", "emitted_accelerator", "source_files"]

SOURCE_PACKAGES = ("systolic.hdl", "systolic.isa")
"""Packages whose every module can change the emitted Verilog or its ports."""

SOURCE_MODULES = (
    "systolic.config", "systolic.errors", "systolic.sim.verilator.ports",
    "systolic.sim.verilator.design", __name__,
)
"""Single modules that can change the emitted Verilog, its ports or the cache format."""

FORMAT = 3
"""Version of the cache entry's layout (part of the key)."""


def source_files() -> list[tuple[str, Path]]:
    """Return (module-relative name, path) of every source file the emission depends on,
    sorted by name."""
    files: dict[str, Path] = {}
    for package in SOURCE_PACKAGES:
        spec = importlib.util.find_spec(package)
        assert spec is not None and spec.submodule_search_locations is not None, package
        for folder in spec.submodule_search_locations:
            for path in Path(folder).rglob("*.py"):
                files[f"{package}/{path.relative_to(folder).as_posix()}"] = path
    for module in SOURCE_MODULES:
        spec = importlib.util.find_spec(module)
        assert spec is not None and spec.origin is not None, module
        files[module] = Path(spec.origin)
    return sorted(files.items())


def _key(config: ArrayConfig) -> str:
    digest = hashlib.sha256()
    header = {"format": FORMAT, "amaranth": importlib.metadata.version("amaranth"),
              "config": config.to_dict()}
    digest.update(json.dumps(header, sort_keys=True, default=str).encode("utf-8"))
    for name, path in source_files():
        data = path.read_bytes()
        digest.update(b"\0" + name.encode("utf-8") + b"\0" + len(data).to_bytes(8, "little"))
        digest.update(data)
    return digest.hexdigest()[:32]


def emit_accelerator(config: ArrayConfig) -> HarnessParts:
    """Elaborate the Accelerator for `config` and return its build inputs (no cache)."""
    from systolic.hdl.emit import build_accelerator, to_verilog, top_name

    component = build_accelerator(config)
    top = top_name(config)
    return harness_parts(component, verilog=to_verilog(component, top), top=top,
                         bus_bytes=config.bus_bytes, mem_latency=config.mem_latency)


def _fields_digest(design: HarnessParts) -> str:
    return digest_parts(design.verilog, design.top, design.header, str(design.command_width))


def _read(path: Path) -> tuple[HarnessParts | None, str | None]:
    """Return (the entry at `path`, None), or (None, why it is damaged), or (None, None)
    when there is none."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None, None
    except (OSError, ValueError) as error:
        return None, f"it cannot be read ({error})"
    try:
        fields = json.loads(text)
        design = HarnessParts(verilog=str(fields["verilog"]), top=str(fields["top"]),
                              header=str(fields["header"]),
                              command_width=int(fields["command_width"]))
        digest = fields["digest"]
    except (ValueError, KeyError, TypeError):
        return None, "it is not a complete entry"
    if digest != _fields_digest(design):
        return None, "its fields do not match their digest"
    return design, None


def _write(path: Path, design: HarnessParts) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    remove_stale(path.parent)
    handle, staged = tempfile.mkstemp(prefix=f".emit-{owner_tag()}-", dir=path.parent)
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as out:
            json.dump({**dataclasses.asdict(design), "digest": _fields_digest(design)}, out)
        os.replace(staged, path)
    except BaseException:
        Path(staged).unlink(missing_ok=True)
        raise


def emitted_accelerator(config: ArrayConfig, *,
                        cache_dir: Path | None = None) -> tuple[HarnessParts, bool]:
    """Return the emitted design for `config` and whether it came from the cache.

    `cache_dir` replaces `build.cache_root()` (the entry lives in its `emitted` folder). A
    damaged entry is emitted again (one line on standard error); a cache folder that cannot
    be written only costs the next run another emission.
    """
    root = cache_root() if cache_dir is None else Path(cache_dir)
    path = root / "emitted" / f"{_key(config)}.json"
    cached, damage = _read(path)
    if cached is not None:
        return cached, True
    if damage is not None:
        say_rebuilt("emitted Verilog", path, damage)
    design = emit_accelerator(config)
    try:
        _write(path, design)
    except OSError:
        pass
    return design, False
