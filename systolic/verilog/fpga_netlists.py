"""Yosys netlists kept between FPGA runs, so other parts of one family skip synthesis.

Synthesis depends on the family's flow, not on the part: the netlist of `synth_ecp5` serves
ECP5-25K, -45K and -85K alike. It is kept gzip-compressed (a 2x2 accelerator's netlist is
about 100 MB of JSON, a tenth of that compressed) as `<cache>/netlist-<key>.json.gz`, the key a
hash of the Yosys inputs and version. Writes are atomic; a file that cannot be read back whole
is ignored, and synthesis runs again.
"""

import gzip
import shutil
import zlib
from pathlib import Path

from systolic.fileio import digest_parts, write_atomically

__all__ = ["netlist_key", "restore_netlist", "store_netlist"]


def netlist_key(*inputs: str) -> str:
    """Return the key of the netlist made from `inputs` (Yosys' files, script and version)."""
    return digest_parts("netlist", *inputs, length=32)


def _path(cache: Path, key: str) -> Path:
    return cache / f"netlist-{key}.json.gz"


def restore_netlist(cache: Path, key: str, target: Path) -> bool:
    """Write the kept netlist of `key` to `target`; return False when there is none whole."""
    try:
        with gzip.open(_path(cache, key), "rb") as source, open(target, "wb") as handle:
            shutil.copyfileobj(source, handle)
        return True
    except (OSError, EOFError, zlib.error):
        target.unlink(missing_ok=True)
        return False


def store_netlist(cache: Path, key: str, source: Path) -> None:
    """Keep the netlist `source` under `key`."""
    write_atomically(_path(cache, key), gzip.compress(source.read_bytes(), compresslevel=6))
