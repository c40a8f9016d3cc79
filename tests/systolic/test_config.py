import dataclasses

import pytest

from systolic.config import ArrayConfig, Dataflow
from systolic.errors import ConfigError


def test_defaults_are_an_8x8_int8_weight_stationary_array():
    config = ArrayConfig()
    assert (config.rows, config.cols, config.dataflow) == (8, 8, Dataflow.WS)
    assert (config.input_width, config.weight_width, config.acc_width) == (8, 8, 32)
    assert config.pes == 64
    assert config.spad_row_bytes == 8
    assert config.spad_depth == 256 * 1024 // 8
    assert config.acc_row_bytes == 32
    assert config.acc_depth == 64 * 1024 // 32


def test_replace_rechecks_invariants():
    config = dataclasses.replace(ArrayConfig(), rows=16, cols=4, dataflow=Dataflow.OS)
    assert config.dim == 16 and config.shape_text == "16x4"
    with pytest.raises(ConfigError):
        dataclasses.replace(config, rows=0)


def test_config_error_is_a_value_error():
    with pytest.raises(ValueError):
        ArrayConfig(cols=129)


@pytest.mark.parametrize(
    "fields, message",
    [
        ({"rows": 0}, r"^rows must be an integer from 1 to 128, not 0$"),
        ({"cols": 129}, r"^cols must be an integer from 1 to 128, not 129$"),
        ({"rows": 2.5}, r"^rows must be an integer from 1 to 128, not 2\.5$"),
        (
            {"dataflow": "ws"},
            r"^dataflow must be Dataflow\.WS, Dataflow\.OS or Dataflow\.BOTH, not 'ws'$",
        ),
        ({"input_width": 3}, r"^input_width must be an integer from 4 to 16 bits, not 3$"),
        ({"weight_width": 17}, r"^weight_width must be an integer from 4 to 16 bits, not 17$"),
        (
            {"acc_width": 15},
            r"^acc_width must be from input_width \+ weight_width \(16\) to 64 bits, not 15$",
        ),
        ({"acc_width": 65}, r"^acc_width must be from .* to 64 bits, not 65$"),
        ({"bus_bytes": 12}, r"^bus_bytes must be a power of two from 1 to 256, not 12$"),
        ({"bus_bytes": 512}, r"^bus_bytes must be a power of two from 1 to 256, not 512$"),
        ({"mem_latency": -1}, r"^mem_latency must be a whole number of cycles from 0 to 1024, not -1$"),
        ({"mem_latency": 2000}, r"^mem_latency must be a whole number of cycles from 0 to 1024, not 2000$"),
        ({"spad_kib": 0}, r"^spad_kib must be a positive whole number of KiB, not 0$"),
        ({"acc_kib": -1}, r"^acc_kib must be a positive whole number of KiB, not -1$"),
        (
            {"spad_kib": 99999999},
            r"^spad_kib=99999999 is larger than the 16384 KiB \(16 MiB\) .*: use at most 16384$",
        ),
        ({"acc_kib": 16385}, r"^acc_kib=16385 is larger than the 16384 KiB"),
        (
            {"rows": 128, "cols": 128, "spad_kib": 32},
            (
                r"^spad_kib=32 is too small for a 128x128 array: double-buffered operand tiles "
                r"need at least 64 KiB; raise spad_kib or use a smaller array$"
            ),
        ),
        (
            {"rows": 128, "cols": 128, "acc_kib": 64},
            (
                r"^acc_kib=64 is too small for a 128x128 array: two accumulator tiles need at "
                r"least 128 KiB; raise acc_kib or use a smaller array$"
            ),
        ),
    ],
)
def test_impossible_configurations_say_what_to_change(fields, message):
    with pytest.raises(ConfigError, match=message):
        ArrayConfig(**fields)


@pytest.mark.parametrize(
    "text, shape", [("8x8", (8, 8)), ("16X4", (16, 4)), ("32", (32, 32)), (" 2 x 3 ", (2, 3))]
)
def test_parse_shape(text, shape):
    assert ArrayConfig.parse_shape(text) == shape


@pytest.mark.parametrize("text", ["", "8x", "x8", "8x8x8", "eight"])
def test_parse_shape_rejects_malformed_text(text):
    with pytest.raises(ConfigError, match=r"^array size .* is not of the form RxC, for example 8x8$"):
        ArrayConfig.parse_shape(text)


def test_dataflow_parse():
    assert Dataflow.parse("WS") is Dataflow.WS
    assert Dataflow.parse("os") is Dataflow.OS
    assert Dataflow.parse(" Both ") is Dataflow.BOTH
    with pytest.raises(ConfigError, match=r"^unknown dataflow 'is': use 'ws' .*, 'os' .* or "
                                          r"'both' .*$"):
        Dataflow.parse("is")


def test_dataflow_families():
    """BOTH runs the instructions of either dataflow; WS and OS only their own."""
    assert [(d.weight_stationary, d.output_stationary) for d in Dataflow] == [
        (True, False), (False, True), (True, True)]
    assert ArrayConfig(dataflow=Dataflow.BOTH).to_dict()["dataflow"] == "both"


def test_to_dict_is_json_ready():
    assert ArrayConfig(rows=4, cols=4, dataflow=Dataflow.OS).to_dict() == {
        "rows": 4,
        "cols": 4,
        "dataflow": "os",
        "input_width": 8,
        "weight_width": 8,
        "acc_width": 32,
        "spad_kib": 256,
        "acc_kib": 64,
        "bus_bytes": 16,
        "mem_latency": 8,
    }
