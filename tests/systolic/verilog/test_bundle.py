"""`systolic.verilog.bundle`: the output folder is written whole or not at all."""

from pathlib import Path

import pytest

from systolic.errors import ConfigError
from systolic.verilog.bundle import Bundle, write_bundle


def _bundle(text: str = "module t; endmodule\n") -> Bundle:
    return Bundle("t", "t.v", "t.vlt", "t.ys", files={
        "t.v": text, "t.vlt": "`verilator_config\n", "t.ys": "read_verilog t.v\n",
        "README.md": "# t\n",
    })


def _contents(folder: Path) -> dict[str, str]:
    return {p.name: p.read_text() for p in sorted(folder.iterdir())}


def test_new_folder_gets_every_file(tmp_path: Path) -> None:
    target = tmp_path / "deep" / "out"
    assert write_bundle(_bundle(), target) == target
    assert _contents(target) == _bundle().files
    assert sorted(p.name for p in (tmp_path / "deep").iterdir()) == ["out"]  # no staging left


def test_existing_folder_keeps_other_files_and_replaces_ours(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("mine")
    (tmp_path / "t.v").write_text("old")
    write_bundle(_bundle(), tmp_path)
    assert _contents(tmp_path) == {**_bundle().files, "notes.txt": "mine"}


def test_failing_check_writes_nothing(tmp_path: Path) -> None:
    seen = []

    def check(folder: Path) -> None:
        seen.append(_contents(folder))
        raise RuntimeError("lint failed")

    with pytest.raises(RuntimeError, match="lint failed"):
        write_bundle(_bundle(), tmp_path / "out", check=check)
    assert seen == [_bundle().files]  # the check saw the complete files
    assert list(tmp_path.iterdir()) == []
    (tmp_path / "kept").mkdir()
    (tmp_path / "kept" / "t.v").write_text("old")
    with pytest.raises(RuntimeError):
        write_bundle(_bundle(), tmp_path / "kept", check=check)
    assert _contents(tmp_path / "kept") == {"t.v": "old"}
    assert sorted(p.name for p in tmp_path.iterdir()) == ["kept"]


def test_leftovers_of_a_check_are_not_moved(tmp_path: Path) -> None:
    write_bundle(_bundle(), tmp_path / "out",
                 check=lambda folder: (folder / "scratch.json").write_text("{}"))
    assert _contents(tmp_path / "out") == _bundle().files


def test_output_that_is_a_file_is_refused(tmp_path: Path) -> None:
    (tmp_path / "out").write_text("a file")
    with pytest.raises(ConfigError, match=r"^-o '.*out' is a file: give a folder for the "
                                          r"Verilog files$"):
        write_bundle(_bundle(), tmp_path / "out")
    assert (tmp_path / "out").read_text() == "a file"
