"""Writing output files whole or not at all."""

import os
import tempfile
from pathlib import Path

__all__ = ["write_atomically"]


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
