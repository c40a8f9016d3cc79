"""Compile a model for one accelerator configuration: `compile`.

>>> import systolic
>>> program = systolic.compile(None, systolic.ArrayConfig(rows=4, cols=4))
>>> program.config.shape_text
'4x4'
>>> program.layers.columns
('layer', 'op', 'unit', 'instructions', 'macs')
>>> sum(program.layers.column("instructions")) + program.runs == program.instructions  # HALTs
True
"""

import dataclasses
import os
from typing import TYPE_CHECKING

from systolic.api.sources import ModelSource, model_source
from systolic.api.table import Table
from systolic.config import ArrayConfig

if TYPE_CHECKING:
    from systolic.ir import Model
    from systolic.mapper.lowering.compiled import CompiledModel

__all__ = ["Compiled", "compile"]


@dataclasses.dataclass(frozen=True)
class Compiled:
    """A model compiled for `config`: the program (`compiled`, a `CompiledModel`) and its
    layer table; `save(path)` writes the program file `systolic simulate`/`disasm` read."""

    compiled: "CompiledModel"
    config: ArrayConfig

    @property
    def instructions(self) -> int:
        """Instructions in the program, HALTs included."""
        return len(self.compiled.program.instructions)

    @property
    def runs(self) -> int:
        """Accelerator runs (host layers separate them), each ending in a HALT."""
        return self.compiled.accelerator_run_count

    @property
    def memory_size(self) -> int:
        """Bytes of external memory the program uses."""
        return self.compiled.memory_size

    @property
    def layers(self) -> Table:
        """One row per layer: name, op, unit (array, vector or host), instructions, MACs."""
        rows = tuple((layer.name, layer.op, layer.unit.value, layer.count, layer.macs)
                     for layer in self.compiled.program.layers)  # fmt: skip
        return Table(("layer", "op", "unit", "instructions", "macs"), rows,
                     title=f"{self.config.shape_text} {self.config.dataflow.value}")  # fmt: skip

    def save(self, path: str | os.PathLike[str]) -> None:
        """Write the program file (docs/isa.md, "Program format")."""
        self.compiled.save(os.fspath(path))

    def __str__(self) -> str:
        return (f"{self.layers}\n{self.instructions} instructions, "
                f"{self.memory_size:,} bytes of external memory")  # fmt: skip

    def _repr_html_(self) -> str:
        return self.layers._repr_html_()


def compile(
    model: "Model | ModelSource" = None, config: ArrayConfig | None = None, *, seed: int = 0
) -> Compiled:
    """Run the mapper passes on `model` (a loaded `Model`, an ONNX path, or None for the
    bundled LeNet; float models are quantized on a random calibration set seeded by `seed`)
    and compile the integer graph for `config` (default `ArrayConfig()`, 8x8 ws)."""
    from systolic.ir import Model
    from systolic.mapper.importer import load_model
    from systolic.mapper.lowering import compile_model
    from systolic.mapper.passes.pipeline import run_passes
    from systolic.sim.timing.layer_cycles import layer_cycles

    config = config if config is not None else ArrayConfig()
    loaded = model if isinstance(model, Model) else load_model(model_source(model)[0])
    integer, _ = run_passes(loaded, seed=seed)
    return Compiled(compile_model(integer, config, layer_cycles=layer_cycles), config)
