import os

import pytest

from systolic.fileio import write_atomically


def test_writes_whole_file_with_umask_permissions(tmp_path):
    old = os.umask(0o022)
    try:
        write_atomically(tmp_path / "sub" / "out.txt", "héllo\n")
    finally:
        os.umask(old)
    target = tmp_path / "sub" / "out.txt"
    assert target.read_text(encoding="utf-8") == "héllo\n"
    assert target.stat().st_mode & 0o777 == 0o644


def test_failure_leaves_no_file(tmp_path):
    with pytest.raises(TypeError):
        write_atomically(tmp_path / "out.bin", 123)  # type: ignore[arg-type]
    assert list(tmp_path.iterdir()) == []
