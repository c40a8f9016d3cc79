from pathlib import Path

import systolic
from systolic.mapper.lowering.compiled import CompiledModel


def test_a_loaded_model_compiles_like_its_path(tmp_path: Path) -> None:
    from systolic.examples import example_path

    config = systolic.ArrayConfig(rows=4, cols=8, dataflow=systolic.Dataflow.OS)
    by_path = systolic.compile(example_path(), config)
    by_model = systolic.compile(systolic.load(example_path()), config)
    assert by_path.layers == by_model.layers
    by_path.save(tmp_path / "lenet.program")
    saved = CompiledModel.load(tmp_path / "lenet.program")
    assert len(saved.program.instructions) == by_model.instructions
    assert "instructions" in str(by_model) and "<table>" in by_model._repr_html_()
