"""The cycles of some layers' instructions run alone: the mapper's per-layer dataflow choice.

`layer_cycles(instructions, config)` is the cycle model's total (`ProgramModel`: the cycle
HALT is accepted in) of a program made of `instructions` and a HALT, from reset. The mapper
(`systolic.mapper.lowering.dataflow_choice.DataflowChooser`) takes it as its `LayerCycles` to
compare a layer's weight-stationary and output-stationary lowerings under `Dataflow.BOTH`,
each between its neighbour layers.
"""

from collections.abc import Sequence

from systolic.config import ArrayConfig
from systolic.isa.instructions import Halt, Instruction
from systolic.sim.timing.program_model import ProgramModel

__all__ = ["layer_cycles"]


def layer_cycles(instructions: Sequence[Instruction], config: ArrayConfig) -> int:
    """Return the cycles of `instructions` (no HALT) run alone on `config` (module docstring)."""
    return ProgramModel(config).run([*instructions, Halt()]).total_cycles
