"""Checking the files a command will write before it does the long work.

`check_output_file(option, path)` refuses, as one `ConfigError` naming the option and the
path the user gave (never a temporary file), a target that is a folder, a target below a
regular file, and a folder that cannot be written. Missing folders are allowed: the writers
create them. The check leaves nothing behind.
"""

import os
import tempfile
from pathlib import Path

from systolic.errors import ConfigError

__all__ = ["check_output_file", "check_output_folder"]


def _existing_ancestor(target: Path) -> Path:
    """Return the nearest ancestor of `target` that exists (the working folder at worst)."""
    for candidate in target.absolute().parents:
        if candidate.exists():
            return candidate
    return Path.cwd()  # pragma: no cover - the root always exists


def _check_writable_below(option: str, text: str, target: Path) -> None:
    ancestor = _existing_ancestor(target)
    if not ancestor.is_dir():
        raise ConfigError(
            f"{option} {text!r}: {str(ancestor)!r} is a file, not a folder: choose another path"
        )
    try:
        with tempfile.TemporaryFile(dir=ancestor):
            pass
    except OSError as err:
        raise ConfigError(
            f"{option} {text!r}: cannot write in {str(ancestor)!r} "
            f"({err.strerror or err}): choose a writable folder"
        ) from None


def check_output_file(option: str, path: str | os.PathLike[str]) -> None:
    """Refuse `path` as the file `option` names unless it can be written (module docstring)."""
    text = os.fspath(path)
    target = Path(text)
    if target.is_dir():
        raise ConfigError(f"{option} {text!r} is a folder: name a file to write")
    if target.exists() and not target.is_file():
        raise ConfigError(f"{option} {text!r} is not a regular file: name a file to write")
    _check_writable_below(option, text, target)


def check_output_folder(option: str, path: str | os.PathLike[str]) -> None:
    """Refuse `path` as the folder `option` names unless files can be written in it."""
    text = os.fspath(path)
    target = Path(text)
    if target.exists() and not target.is_dir():
        raise ConfigError(f"{option} {text!r} is a file: give a folder")
    if target.is_dir():
        try:
            with tempfile.TemporaryFile(dir=target):
                pass
        except OSError as err:
            raise ConfigError(
                f"{option} {text!r}: cannot write in it ({err.strerror or err}): choose a "
                f"writable folder"
            ) from None
        return
    _check_writable_below(option, text, target / "file")
