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

__all__ = ["PendingFiles", "npz_bytes"]


def npz_bytes(arrays: Mapping[str, np.ndarray]) -> bytes:
    """Return an uncompressed .npz archive of `arrays` (by name) as bytes."""
    buffer = io.BytesIO()
    named: dict[str, Any] = {name: np.asarray(value) for name, value in arrays.items()}
    np.savez(buffer, **named)
    return buffer.getvalue()


class PendingFiles:
    """See the module docstring."""

    def __init__(self) -> None:
        self._staged: list[tuple[Path, Path]] = []  # (temporary, final)

    def temporary(self, final: str | os.PathLike[str]) -> Path:
        """Return a fresh temporary file beside `final` that `commit` will rename to it."""
        target = Path(final)
        target.parent.mkdir(parents=True, exist_ok=True)
        fd, name = tempfile.mkstemp(prefix=f".{target.name}.", dir=target.parent)
        os.close(fd)
        self._staged.append((Path(name), target))
        return Path(name)

    def stage(self, final: str | os.PathLike[str], data: bytes | str) -> None:
        """Write `data` (text as UTF-8) to a temporary file that `commit` renames to `final`."""
        payload = data.encode("utf-8") if isinstance(data, str) else data
        self.temporary(final).write_bytes(payload)

    def commit(self) -> list[Path]:
        """Rename every staged file into place; return the final paths."""
        done = []
        for temporary, final in self._staged:
            os.replace(temporary, final)
            done.append(final)
        self._staged = []
        return done

    def discard(self) -> None:
        """Delete every staged file."""
        for temporary, _ in self._staged:
            temporary.unlink(missing_ok=True)
        self._staged = []

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        value: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.discard()
