"""PendingFiles: every file or none; npz bytes round trip."""

import io
import os
import stat
from pathlib import Path

import numpy as np
import pytest

from systolic.errors import ConfigError
from systolic.simulation.outputs import PendingFiles, npz_bytes


def test_commit_renames_everything(tmp_path: Path) -> None:
    with PendingFiles() as files:
        files.stage(tmp_path / "a.json", "{}\n")
        files.stage(tmp_path / "sub" / "b.bin", b"\x00\x01")
        assert min(p.name for p in tmp_path.iterdir() if p.is_file()).startswith(".a.json")
        written = files.commit()
    assert written == [tmp_path / "a.json", tmp_path / "sub" / "b.bin"]
    assert (tmp_path / "a.json").read_text() == "{}\n"
    assert (tmp_path / "sub" / "b.bin").read_bytes() == b"\x00\x01"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.json", "sub"]


def test_an_error_leaves_nothing(tmp_path: Path) -> None:
    with pytest.raises(RuntimeError), PendingFiles() as files:
        files.stage(tmp_path / "a.json", "{}")
        files.temporary(tmp_path / "w.vcd").write_text("partial")
        raise RuntimeError("boom")
    assert list(tmp_path.iterdir()) == []


def test_npz_bytes_keep_names_and_dtypes() -> None:
    arrays = {"y": np.arange(6, dtype=np.uint8).reshape(2, 3), "z": np.ones(2, np.float32)}
    with np.load(io.BytesIO(npz_bytes(arrays))) as loaded:
        assert loaded.files == ["y", "z"]
        for name, value in arrays.items():
            assert loaded[name].dtype == value.dtype
            np.testing.assert_array_equal(loaded[name], value)


def test_an_error_removes_the_folders_staging_made(tmp_path: Path) -> None:
    (tmp_path / "kept").mkdir()
    with pytest.raises(RuntimeError), PendingFiles() as files:
        files.stage(tmp_path / "new" / "deeper" / "a.json", "{}")
        files.stage(tmp_path / "kept" / "b.json", "{}")
        raise RuntimeError("boom")
    assert [p.name for p in tmp_path.iterdir()] == ["kept"]
    assert list((tmp_path / "kept").iterdir()) == []


def test_a_folder_that_cannot_be_made_names_the_target(tmp_path: Path) -> None:
    (tmp_path / "plain").write_text("a file")
    with PendingFiles() as files, pytest.raises(ConfigError, match=r"cannot write '.*plain/x/a\.json'"):
        files.stage(tmp_path / "plain" / "x" / "a.json", "{}")
    assert [p.name for p in tmp_path.iterdir()] == ["plain"]


def test_a_rename_onto_a_folder_names_the_target(tmp_path: Path) -> None:
    (tmp_path / "d").mkdir()
    with PendingFiles() as files:
        files.stage(tmp_path / "d", "{}")
        with pytest.raises(ConfigError, match=r"cannot write '.*/d': Is a directory"):
            files.commit()
    assert [p.name for p in tmp_path.iterdir()] == ["d"]


def test_staged_files_get_the_permissions_open_would_give(tmp_path: Path) -> None:
    old = os.umask(0o027)
    try:
        with PendingFiles() as files:
            files.stage(tmp_path / "a.json", "{}")
            files.commit()
    finally:
        os.umask(old)
    assert stat.S_IMODE((tmp_path / "a.json").stat().st_mode) == 0o640
