"""Per-layer dataflow for an array that runs both (`Dataflow.BOTH`).

`lower_either(lower, config, plan, layer_cycles, previous)` lowers one array layer. For a WS or
OS configuration it is `lower(config)`. For `Dataflow.BOTH` it lowers the layer twice, as the
weight-stationary and as the output-stationary array of the same size and memories would
(`lower(variant)`, each from the same free address of the memory plan), times each lowering
after `previous` (the instructions of the layer before it, already chosen) with
`layer_cycles(previous + instructions, config)` (the cycle model of that program on the BOTH
array: `systolic.sim.timing.layer_cycles.layer_cycles`, injected by the caller because the
mapper sits below the simulators), and keeps the one that ends sooner: the fewer cycles from
the previous layer's end to its own, as the per-layer table counts them, including the overlap
with the previous layer and the drain of the array when the dataflow changes. On a tie it
keeps the weight-stationary one (the default dataflow). The discarded lowering's constants are given
back to the plan (its addresses were never used). A variant the lowering refuses
(UnsupportedError, ResourceError) leaves the other; when both refuse, the weight-stationary
refusal is raised. Inside `jobs.planning_only()` (no instructions to time) only the
weight-stationary lowering runs, unless it refuses.
"""

import dataclasses
from collections.abc import Callable, Sequence

from systolic.config import ArrayConfig, Dataflow
from systolic.errors import ConfigError, ResourceError, UnsupportedError
from systolic.isa.instructions import Instruction
from systolic.mapper.lowering.layer_code import LayerCode
from systolic.mapper.lowering.memory_plan import MemoryPlan

__all__ = ["LayerCycles", "lower_either"]

LayerCycles = Callable[[Sequence[Instruction], ArrayConfig], int]
"""The cycles of a program made of one layer's instructions (HALT added) on a configuration."""


def lower_either(lower: Callable[[ArrayConfig], LayerCode], config: ArrayConfig,
                 plan: MemoryPlan, layer_cycles: LayerCycles | None,
                 previous: Sequence[Instruction] = ()) -> LayerCode:
    """Return the layer lowered for `config`, under `Dataflow.BOTH` the faster of its two
    dataflows (module docstring). Raises ConfigError when `config` is BOTH and no
    `layer_cycles` is given."""
    if config.dataflow is not Dataflow.BOTH:
        return lower(config)
    start = plan.next_free
    options: list[tuple[int, int, LayerCode, int]] = []  # (cycles, order, code, next_free)
    refusal: UnsupportedError | ResourceError | None = None
    for order, dataflow in enumerate((Dataflow.WS, Dataflow.OS)):
        variant = dataclasses.replace(config, dataflow=dataflow)
        plan.next_free = start
        try:
            code = lower(variant)
        except (UnsupportedError, ResourceError) as err:
            refusal = refusal or err
            continue
        if not code.instructions:  # planning only: the decision needs no timing
            return code
        if layer_cycles is None:
            raise ConfigError(
                "dataflow both chooses each layer's dataflow with the cycle model: compile "
                "with layer_cycles=systolic.sim.timing.layer_cycles.layer_cycles")
        cycles = layer_cycles([*previous, *code.instructions], config)
        options.append((cycles, order, code, plan.next_free))
    if not options:
        assert refusal is not None
        raise refusal
    _, _, code, next_free = min(options, key=lambda option: option[:2])
    plan.next_free = next_free
    return code
