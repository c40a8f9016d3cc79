"""Writing output files whole or not at all, and the keys of on-disk caches."""

import hashlib
import os
import tempfile
from pathlib import Path

__all__ = ["digest_parts", "write_atomically"]


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def write_atomically(path: str | os.PathLike[str], data: bytes | str) -> None:
    """Write `data` to `path` through a temporary file in the same folder and a rename, so a
    failure never leaves a half-written file behind. Text is written as UTF-8; the file gets
    the permissions of a newly created file (0666 less the umask), as `open` would give it."""
    target = Path(path)
    payload = data.encode("utf-8") if isinstance(data, str) else data
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", dir=target.parent)
    try:
        os.chmod(tmp, 0o666 & ~_umask())  # mkstemp makes 0600; give the file normal permissions
        with os.fdopen(fd, "wb") as handle:
            handle.write(payload)
        os.replace(tmp, target)
    except BaseException:
        os.unlink(tmp)
        raise


def digest_parts(*parts: str, length: int = 32) -> str:
    """Return the first `length` hex digits of the SHA-256 of `parts`, each prefixed with its
    length (so no two different lists of parts give the same input): a cache folder's key."""
    digest = hashlib.sha256()
    for part in parts:
        data = part.encode("utf-8")
        digest.update(len(data).to_bytes(8, "little"))
        digest.update(data)
    return digest.hexdigest()[:length]
