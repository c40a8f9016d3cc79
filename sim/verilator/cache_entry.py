"""Cache entries checked before use, and the temporaries builds leave behind.

An entry is a folder renamed into place whole; its last file, `manifest.json`, lists every
other file with its size and SHA-256 (`write_manifest`, called on the staged folder before
the rename). `check_entry(folder)` returns None when the folder holds exactly what its
manifest lists, else one phrase saying what is wrong (a missing manifest, a missing, truncated
or changed file). A damaged entry is `discard`ed (renamed aside, then removed) and rebuilt,
and `say_rebuilt` prints one line on standard error.

Builds work in `temporary_folder(root, label)`: `.build-<label>-<host>-<pid>-<random>`.
`remove_stale(root)` removes the temporaries (`.build-*`, `.emit-*` and `.stale-*`) whose
process is gone (when it ran on this host) or that nothing has touched for `STALE_SECONDS`,
so a build killed mid-way leaves nothing behind for good.
"""

import hashlib
import json
import os
import re
import shutil
import socket
import sys
import tempfile
import time
from pathlib import Path

__all__ = [
    "MANIFEST",
    "STALE_SECONDS",
    "check_entry",
    "discard",
    "owner_tag",
    "remove_stale",
    "say_rebuilt",
    "temporary_folder",
    "write_manifest",
]

MANIFEST = "manifest.json"
"""The file of an entry that lists the others with their sizes and hashes."""

STALE_SECONDS = 3600
"""A temporary nothing has touched for this long is abandoned, whoever owns it."""

_TEMPORARY = re.compile(r"^\.(?:build|emit|stale)-(?:.*-)?([A-Za-z0-9]*)-p(\d+)-[^-]*$")
_PREFIXES = (".build-", ".emit-", ".stale-")


def _file_digest(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def write_manifest(folder: Path) -> None:
    """List every file of `folder` (not below it) with its size and SHA-256 in its manifest."""
    files = {path.name: [path.stat().st_size, _file_digest(path)]
             for path in sorted(folder.iterdir()) if path.is_file() and path.name != MANIFEST}
    (folder / MANIFEST).write_text(json.dumps(files, indent=1, sort_keys=True), encoding="utf-8")


def check_entry(folder: Path) -> str | None:
    """Return None when `folder` holds the files its manifest lists, as listed; else why not."""
    try:
        listed = json.loads((folder / MANIFEST).read_text(encoding="utf-8"))
        if not isinstance(listed, dict):
            return "its manifest is damaged"
        present = {path.name for path in folder.iterdir() if path.name != MANIFEST}
        if present != set(listed):
            return f"it holds {sorted(present)} instead of {sorted(listed)}"
        for name, (size, digest) in listed.items():
            path = folder / name
            if path.stat().st_size != size:
                return f"{name} has {path.stat().st_size} bytes instead of {size}"
            if _file_digest(path) != digest:
                return f"{name} differs from the file that was built"
    except FileNotFoundError:
        return "it has no manifest" if not (folder / MANIFEST).exists() else "a file is missing"
    except (OSError, ValueError, TypeError) as error:
        return f"it cannot be read ({error})"
    return None


def owner_tag() -> str:
    """Return `<host>-p<pid>`: the part of a temporary's name that says whose it is."""
    host = re.sub(r"[^A-Za-z0-9]", "", socket.gethostname())[:40]
    return f"{host}-p{os.getpid()}"


def temporary_folder(root: Path, label: str) -> Path:
    """Create and return a new build folder `.build-<label>-<owner_tag()>-<random>` in root."""
    return Path(tempfile.mkdtemp(prefix=f".build-{label}-{owner_tag()}-", dir=root))


def discard(folder: Path) -> None:
    """Remove a damaged entry: renamed aside first, so no process sees it half-removed."""
    aside = folder.parent / f".stale-{folder.name}-{owner_tag()}-{os.urandom(4).hex()}"
    try:
        os.rename(folder, aside)
    except OSError:  # (a concurrent process discarded it first, or it cannot be moved)
        aside = folder
    shutil.rmtree(aside, ignore_errors=True)


def _owner_gone(name: str, here: str) -> bool:
    """Return whether temporary `name` names a process of this host that is gone."""
    match = _TEMPORARY.match(name)
    if match is None or match.group(1) != here or int(match.group(2)) == os.getpid():
        return False
    try:
        os.kill(int(match.group(2)), 0)
    except ProcessLookupError:
        return True
    except OSError:  # (it exists but belongs to someone else)
        return False
    return False


def _last_touched(path: Path) -> float:
    """Return the newest modification time of `path` and of what is directly inside it."""
    times = [path.lstat().st_mtime]
    if path.is_dir() and not path.is_symlink():
        times.extend(child.lstat().st_mtime for child in path.iterdir())
    return max(times)


def remove_stale(root: Path, *, now: float | None = None) -> list[str]:
    """Remove the abandoned temporaries in `root` (see the module docstring); return their
    names. Errors (a folder that vanished meanwhile, no permission) are ignored."""
    here = re.sub(r"[^A-Za-z0-9]", "", socket.gethostname())[:40]
    now = time.time() if now is None else now
    removed: list[str] = []
    try:
        candidates = [path for path in root.iterdir() if path.name.startswith(_PREFIXES)]
    except OSError:
        return removed
    for path in candidates:
        try:
            if not _owner_gone(path.name, here) and now - _last_touched(path) < STALE_SECONDS:
                continue
            if path.is_dir() and not path.is_symlink():
                shutil.rmtree(path)
            else:
                path.unlink()
            removed.append(path.name)
        except OSError:
            continue
    return removed


def say_rebuilt(what: str, where: Path, why: str) -> None:
    """Print the one line that says a damaged cache entry is rebuilt."""
    print(f"systolic: warning: the cached {what} {where} is damaged ({why}); rebuilding it",
          file=sys.stderr)
