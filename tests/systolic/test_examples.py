import pytest

from systolic.commands.cli import main
from systolic.examples import DEFAULT_EXAMPLE, example_names, example_path


def test_bundled_examples_are_shipped():
    assert DEFAULT_EXAMPLE in example_names()
    assert {"lenet_qdq", "lenet_float"} <= set(example_names())
    assert example_path().name == f"{DEFAULT_EXAMPLE}.onnx"


def test_unknown_example_names_the_ones_there_are():
    with pytest.raises(FileNotFoundError, match=r"no bundled example 'vgg'; have \["):
        example_path("vgg")


def test_inspect_without_a_model_shows_the_bundled_example(capsys):
    assert main(["inspect"]) == 0
    out = capsys.readouterr().out
    assert "ai.onnx.QuantizeLinear:13" in out
    assert "conv1_Conv" in out
