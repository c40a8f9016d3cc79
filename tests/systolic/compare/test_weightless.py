"""`compare` on a model without weights gives the weighted model's cycles; `simulate` says
why it needs them."""

import json
from pathlib import Path

from systolic.commands.cli import main

from ...support.weightless import strip_weights

MODELS = Path(__file__).resolve().parents[2] / "models"


def _layers(report: Path) -> list[list[tuple[str, int]]]:
    document = json.loads(report.read_text())
    return [[(layer["name"], layer["cycles"]) for layer in config["layers"]]
            for config in document["configurations"]]  # fmt: skip


def test_compare_counts_the_same_cycles_without_weights(tmp_path: Path) -> None:
    bare = tmp_path / "resnet_tiny_bare.onnx"
    assert strip_weights(MODELS / "resnet_tiny_float.onnx", bare) > 0
    options = ["--array", "4x4,16x16", "--dataflow", "ws,os", "--quiet", "--json"]
    assert main(["compare", str(MODELS / "resnet_tiny_float.onnx"), *options,
                 str(tmp_path / "weighted.json")]) == 0  # fmt: skip
    assert main(["compare", str(bare), *options, str(tmp_path / "bare.json")]) == 0
    weighted = _layers(tmp_path / "weighted.json")
    assert _layers(tmp_path / "bare.json") == weighted
    assert all(sum(cycles for _, cycles in layers) > 0 for layers in weighted)


def test_simulate_says_in_one_line_why_it_needs_weights(tmp_path: Path, capsys) -> None:
    bare = tmp_path / "bare.onnx"
    strip_weights(MODELS / "resnet_tiny_float.onnx", bare)
    assert main(["simulate", str(bare), "--backend", "model", "--quiet"]) == 2
    err = capsys.readouterr().err.splitlines()
    assert err == [(
        "systolic: error: initializer 'stem_weight' of shape [8, 3, 3, 3] has no data (a "
        "weight-less model): running it needs the weights, as every value is computed and "
        "checked; `systolic compare` gives its cycles without them"
    )]  # fmt: skip
