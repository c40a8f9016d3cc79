import pytest

from systolic.compare.grid import config_grid, config_label, parse_int_list, parse_list
from systolic.config import ArrayConfig, Dataflow
from systolic.errors import ConfigError


def test_grid_is_the_product_in_order():
    configs = config_grid(ArrayConfig(), arrays=["4x4", "8x8"], dataflows=["ws", "os"],
                          bus_bytes=[4, 16])
    assert [(c.rows, c.dataflow, c.bus_bytes) for c in configs] == [
        (4, Dataflow.WS, 4), (4, Dataflow.WS, 16), (4, Dataflow.OS, 4), (4, Dataflow.OS, 16),
        (8, Dataflow.WS, 4), (8, Dataflow.WS, 16), (8, Dataflow.OS, 4), (8, Dataflow.OS, 16),
    ]
    assert config_label(configs[-1], ["array", "dataflow", "bus_bytes"]) == "8x8 os bus 16"


def test_empty_lists_keep_the_base_and_duplicates_collapse():
    base = ArrayConfig(rows=2, cols=3)
    assert config_grid(base) == [base]
    assert len(config_grid(base, arrays=["2x3", "2x3"])) == 1


def test_bad_values_name_the_option_and_combination():
    with pytest.raises(ConfigError, match="--array needs at least one value"):
        parse_list("--array", " , ")
    with pytest.raises(ConfigError, match="--bus-bytes: 'x' is not a whole number"):
        parse_int_list("--bus-bytes", "8,x")
    with pytest.raises(ConfigError, match="configuration 64x64 ws spad 1 KiB .*spad_kib=1 is too small"):
        config_grid(ArrayConfig(), arrays=["64x64"], spad_kib=[1])
    with pytest.raises(ConfigError, match="unknown dataflow 'is'"):
        config_grid(ArrayConfig(), dataflows=["is"])
