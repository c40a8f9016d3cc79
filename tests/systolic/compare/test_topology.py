import pytest

from systolic.compare import topology
from systolic.compare.topology import (
    MAX_LAYER_BYTES,
    MAX_TOPOLOGY_LAYERS,
    TopologyLayer,
    format_topology,
    parse_topology,
    read_topology,
)
from systolic.errors import ModelError, ResourceError

CONV_HEADER_LINE = (
    "Layer name, IFMAP Height, IFMAP Width, Filter Height, Filter Width, Channels, Num Filter, "
    "Strides,\n"
)

SCALESIM_RESNET_HEAD = """Layer name, IFMAP Height, IFMAP Width, Filter Height, Filter Width, Channels, Num Filter, Strides,,,Eh,Ew,e2
,,,,,,,,,,,,
Conv1,224,224,7,7,3,64,2,,,110,110,12100
CB2a_2,56,56,3,3,64,64,1,,,,,
FC6,1,1,1,1,2048,1000,1,,,,,
"""


def test_reads_scalesim_conv_form_with_spacers_and_extra_columns():
    conv1, cb, fc = parse_topology(SCALESIM_RESNET_HEAD)
    assert conv1 == TopologyLayer("Conv1", 224, 224, 7, 7, 3, 64, 2)
    assert (conv1.ofmap_h, conv1.ofmap_w) == (109, 109)
    assert cb.gemm_shape == (54 * 54, 64, 3 * 3 * 64)
    assert fc.macs == 2048 * 1000


def test_reads_mnk_form():
    (layer,) = parse_topology("Layer Name, M, N, K,\nTest 1, 256, 128, 64,\n")
    assert layer.gemm_shape == (256, 128, 64)


def test_write_then_read_is_identity():
    layers = [
        TopologyLayer("a,b", 30, 31, 3, 5, 7, 9, 2),
        TopologyLayer.gemm("fc", 4, 10, 128),
    ]
    text = format_topology(layers)
    assert text.splitlines()[0].startswith("Layer name, IFMAP Height")
    again = parse_topology(text)
    assert again[0] == dataclasses_replace_name(layers[0], "a_b")
    assert again[1] == layers[1]


def dataclasses_replace_name(layer, name):
    import dataclasses

    return dataclasses.replace(layer, name=name)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "the topology file is empty"),
        ("a,b,c\n1,2,3\n", "is not a SCALE-Sim header"),
        ("Layer Name, M, N, K,\n", "has no layers"),
        ("Layer Name, M, N, K,\nx, 2, y, 3,\n", "line 2: N is 'y', not an integer"),
        ("Layer Name, M, N, K,\nx, 2, 0, 3,\n", "must be a positive integer"),
        (SCALESIM_RESNET_HEAD.splitlines()[0] + "\nc,3,3,5,5,1,1,1,\n", "larger than the 3x3"),
    ],
)
def test_bad_topologies_name_the_problem(text, message):
    with pytest.raises(ModelError, match=message):
        parse_topology(text)


def test_tensor_bytes_counts_input_weights_bias_and_output():
    layer = TopologyLayer("c", 10, 12, 3, 3, 4, 5, 1)  # output 8x10
    assert layer.tensor_bytes == 4 * 10 * 12 + 3 * 3 * 4 * 5 + 4 * 5 + 5 * 8 * 10


def test_a_layer_larger_than_the_address_space_is_refused_when_read():
    text = CONV_HEADER_LINE + "c1, 100000, 100000, 3, 3, 3000, 4000, 1,\n"
    with pytest.raises(ResourceError, match=r"^topology layer 'c1': .* bytes, more than the "
                       r"4 GiB of the accelerator's 32-bit external address space: make"):  # fmt: skip
        parse_topology(text)
    # a GEMM just inside the limit is kept: 2**31 input bytes + small weights and output
    (gemm,) = parse_topology(f"Layer Name, M, N, K,\ng, {2**31 // 1024}, 1, 1024,\n")
    assert gemm.tensor_bytes <= MAX_LAYER_BYTES


def test_a_binary_file_is_one_model_error(tmp_path):
    path = tmp_path / "t.csv"
    path.write_bytes(bytes(range(256)))
    with pytest.raises(ModelError, match=r"t\.csv: not a text file \(byte 128 is not UTF-8\)"):
        read_topology(path)


def test_a_utf8_bom_file_reads(tmp_path):
    path = tmp_path / "t.csv"
    path.write_bytes(b"\xef\xbb\xbf" + SCALESIM_RESNET_HEAD.encode())
    assert [layer.name for layer in read_topology(path)] == ["Conv1", "CB2a_2", "FC6"]


def test_a_topology_over_the_layer_limit_is_refused_before_parsing_rows(monkeypatch) -> None:
    rows = [f"l{i},8,8,3,3,4,4,1,\n" for i in range(100_000)]
    built: list[str] = []
    real_int_cell = topology._int_cell
    monkeypatch.setattr(topology, "_int_cell",
                        lambda *args: built.append(args[0]) or real_int_cell(*args))
    with pytest.raises(ResourceError, match=r"^big.csv: the topology has 100000 layers, more than "
                       rf"the {MAX_TOPOLOGY_LAYERS} compared at a time: split the file"):
        parse_topology(CONV_HEADER_LINE + "".join(rows), "big.csv")
    assert built == []  # refused from the row count, before any row's cells are read
    most = parse_topology(CONV_HEADER_LINE + "".join(rows[:MAX_TOPOLOGY_LAYERS]), "ok.csv")
    assert len(most) == MAX_TOPOLOGY_LAYERS
