"""Read a tensor's bytes from an external data file next to the model.

The IR spec: the tensor gives `location`, a file name relative to the model's folder, and MAY
give `offset` and `length` within it (and a `checksum`, which this reader ignores). For safety
the file must stay inside the model's folder: absolute paths, `..` escapes and symbolic links
that resolve outside it are refused.
"""

import os
from pathlib import Path

from systolic.errors import ModelError
from systolic.proto import TensorProto

__all__ = [
    "external_entries", "locate_external_data", "read_external_data", "resolve_location",
]


def external_entries(proto: TensorProto, where: str) -> dict[str, str]:
    """Return the tensor's external_data key/value pairs; a key given twice is an error."""
    entries: dict[str, str] = {}
    for entry in proto.external_data:
        if entry.key in entries:
            raise ModelError(f"{where}: external_data key {entry.key!r} is given twice")
        entries[entry.key] = entry.value
    return entries


def resolve_location(location: str, base_dir: Path, where: str) -> Path:
    """Return the real path of `location` inside `base_dir`, refusing anything outside it."""
    if not location:
        raise ModelError(f"{where} uses external data but gives no 'location'")
    if any(ord(char) < 0x20 or ord(char) == 0x7F for char in location):
        raise ModelError(
            f"{where}: external data location {location!r} holds control characters; "
            "name a data file next to the model"
        )
    if os.path.isabs(location) or location.startswith(("/", "\\")) or ":" in location[:2]:
        raise ModelError(
            f"{where}: external data location {location!r} is an absolute path; only paths "
            "relative to the model's folder are allowed"
        )
    if ".." in Path(location).parts:
        raise ModelError(
            f"{where}: external data location {location!r} leaves the model's folder; "
            "put the data file next to the model"
        )
    root = base_dir.resolve()
    target = (root / location).resolve()
    if not target.is_relative_to(root):
        raise ModelError(
            f"{where}: external data location {location!r} resolves outside the model's "
            "folder (symbolic link?); put the data file next to the model"
        )
    return target


def locate_external_data(
    proto: TensorProto, where: str, *, base_dir: Path | None, expected: int
) -> tuple[Path, int]:
    """Return the file and offset of an externally stored tensor's `expected` bytes, after
    checking everything but the bytes themselves.

    Raises ModelError when there is no folder to resolve against (a model loaded from bytes
    without `base_dir`), the location is unsafe, the file is missing, or it is too short.
    """
    entries = external_entries(proto, where)
    location = entries.get("location", "")
    if base_dir is None:
        raise ModelError(
            f"{where} stores its data in external file {location!r}, but the model was loaded "
            "from bytes: pass base_dir (the folder holding the data files)"
        )
    offset = _non_negative(entries, "offset", where, default=0)
    length = _non_negative(entries, "length", where, default=None)
    if length is not None and length != expected:
        raise ModelError(
            f"{where}: external data length {length} does not match the {expected} bytes its "
            "shape and type need: the model is corrupt"
        )
    path = resolve_location(location, base_dir, where)
    if not path.is_file():
        raise ModelError(
            f"{where}: external data file {location!r} is missing from {base_dir}: copy it "
            "next to the model"
        )
    start = offset or 0
    available = max(path.stat().st_size - start, 0)
    if available < expected:
        raise ModelError(
            f"{where}: external data file {location!r} is too short: needs {expected} bytes "
            f"at offset {start}, found {available}"
        )
    return path, start


def read_external_data(
    proto: TensorProto, where: str, *, base_dir: Path | None, expected: int
) -> bytes:
    """Return the `expected` bytes of an externally stored tensor (checked as
    `locate_external_data` says; also a file that shrinks while it is read is a ModelError)."""
    path, start = locate_external_data(proto, where, base_dir=base_dir, expected=expected)
    with open(path, "rb") as handle:
        handle.seek(start)
        data = handle.read(expected)
    if len(data) != expected:
        location = external_entries(proto, where).get("location", "")
        raise ModelError(
            f"{where}: external data file {location!r} changed while it was read: needs "
            f"{expected} bytes at offset {start}, read {len(data)}"
        )
    return data


def _non_negative(entries: dict[str, str], key: str, where: str, default: int | None) -> int | None:
    if key not in entries:
        return default
    try:
        value = int(entries[key])
    except ValueError:
        raise ModelError(f"{where}: external data {key} {entries[key]!r} is not a number") from None
    if value < 0:
        raise ModelError(f"{where}: external data {key} {value} is negative")
    return value
