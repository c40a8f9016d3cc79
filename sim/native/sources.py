"""The native engine's source files and their digest.

setup.py reads this file by path (it cannot import the package it is building) to list the
extension's sources and to compile their digest into the library (`engine_sources()` in
engine.c); `systolic.sim.native.build` computes the digest of the sources installed next to the
library and uses the library only when the two agree. Standard library only.
"""

import hashlib
from pathlib import Path

__all__ = ["HEADER", "SOURCES", "source_digest"]

SOURCES = ("engine.c", "golden.c", "timing.c", "facts.c")
"""The C files of the one library, in link order."""

HEADER = "isa.h"
"""The one header they share (generated: `systolic.sim.native.isa_header`)."""


def source_digest(folder: Path) -> str:
    """Return the SHA-256 (hex, 32 digits) of the sources and header in `folder`, by name;
    raises OSError when one is missing."""
    digest = hashlib.sha256()
    for name in (*SOURCES, HEADER):
        data = (folder / name).read_bytes()
        digest.update(name.encode("ascii") + b"\0" + len(data).to_bytes(8, "little") + data)
    return digest.hexdigest()[:32]
