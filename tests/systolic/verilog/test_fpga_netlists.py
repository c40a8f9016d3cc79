"""`systolic.verilog.fpga_netlists`: netlists kept whole or not at all."""

import gzip
from pathlib import Path

from systolic.verilog.fpga_netlists import netlist_key, restore_netlist, store_netlist


def test_kept_netlist_comes_back_byte_for_byte(tmp_path: Path) -> None:
    source = tmp_path / "netlist.json"
    source.write_bytes(b'{"modules": {}}\n' * 1000)
    key = netlist_key("design", "harness", "script", "0.69")
    assert key != netlist_key("design", "harness", "script", "0.70")
    store_netlist(tmp_path / "cache", key, source)
    kept = tmp_path / "cache" / f"netlist-{key}.json.gz"
    assert kept.stat().st_size < source.stat().st_size // 10
    assert restore_netlist(tmp_path / "cache", key, tmp_path / "copy.json")
    assert (tmp_path / "copy.json").read_bytes() == source.read_bytes()


def test_missing_or_broken_netlist_is_not_restored(tmp_path: Path) -> None:
    target = tmp_path / "netlist.json"
    assert not restore_netlist(tmp_path, "absent", target) and not target.exists()
    whole = gzip.compress(b'{"modules": {}}' * 100)
    (tmp_path / "netlist-cut.json.gz").write_bytes(whole[: len(whole) // 2])
    assert not restore_netlist(tmp_path, "cut", target) and not target.exists()
    (tmp_path / "netlist-text.json.gz").write_bytes(b"not gzip")
    assert not restore_netlist(tmp_path, "text", target) and not target.exists()
