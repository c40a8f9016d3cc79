"""Files `systolic simulate` writes (--json, --output, --vcd): all of them or none.

`PendingFiles` stages each file as a temporary file in its target's folder; `commit()`
renames them all into place at the end of a successful run, `discard()` (or leaving the
`with` block by an exception) deletes them, so an error never leaves a file behind.
"""

import io
import os
import tempfile
from collections.abc import Mapping
from pathlib import Path
from types import TracebackType
from typing import Any, Self

import numpy as np

from systolic.errors import ConfigError

__all__ = ["PendingFiles", "npz_bytes"]


def npz_bytes(arrays: Mapping[str, np.ndarray]) -> bytes:
    """Return an uncompressed .npz archive of `arrays` (by name) as bytes."""
    buffer = io.BytesIO()
    named: dict[str, Any] = {name: np.asarray(value) for name, value in arrays.items()}
    np.savez(buffer, **named)
    return buffer.getvalue()


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


class PendingFiles:
    """See the module docstring."""

    def __init__(self) -> None:
        self._staged: list[tuple[Path, Path]] = []  # (temporary, final)
        self._made_folders: list[Path] = []  # created for staged files, deepest last

    def temporary(self, final: str | os.PathLike[str]) -> Path:
        """Return a fresh temporary file beside `final` that `commit` will rename to it.
        Missing folders are created (and removed again by `discard`); a folder that cannot
        be made or written is a `ConfigError` naming `final`."""
        target = Path(final)
        missing = [p for p in reversed(target.parent.absolute().parents) if not p.exists()]
        if not target.parent.exists():
            missing.append(target.parent.absolute())
        try:
            for folder in missing:
                folder.mkdir()
                self._made_folders.append(folder)
            fd, name = tempfile.mkstemp(prefix=f".{target.name}.", dir=target.parent)
        except OSError as err:
            raise ConfigError(
                f"cannot write {os.fspath(final)!r}: {err.strerror or err}: choose a writable "
                f"folder"
            ) from None
        os.close(fd)
        os.chmod(name, 0o666 & ~_umask())  # mkstemp makes 0600; give normal permissions
        self._staged.append((Path(name), target))
        return Path(name)

    def stage(self, final: str | os.PathLike[str], data: bytes | str) -> None:
        """Write `data` (text as UTF-8) to a temporary file that `commit` renames to `final`."""
        payload = data.encode("utf-8") if isinstance(data, str) else data
        self.temporary(final).write_bytes(payload)

    def commit(self) -> list[Path]:
        """Rename every staged file into place; return the final paths."""
        done: list[Path] = []
        for temporary, final in self._staged:
            try:
                os.replace(temporary, final)
            except OSError as err:
                raise ConfigError(
                    f"cannot write {os.fspath(final)!r}: {err.strerror or err}"
                    + (f"; already written: {', '.join(map(str, done))}" if done else "")
                ) from None
            done.append(final)
        self._staged = []
        self._made_folders = []
        return done

    def discard(self) -> None:
        """Delete every staged file."""
        for temporary, _ in self._staged:
            temporary.unlink(missing_ok=True)
        self._staged = []
        for folder in reversed(self._made_folders):
            try:
                folder.rmdir()
            except OSError:  # not empty: something else wrote there meanwhile
                break
        self._made_folders = []

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        value: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.discard()
